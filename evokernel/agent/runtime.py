"""Opening a campaign: the build, the lake (created with the backend's seed knowledge if new),
the LLM provider, the backend's scaffold and the verifier, assembled into an AgentContext."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Callable

from evokernel.agent.context import AgentContext
from evokernel.agent.methods import method_policy
from evokernel.agent.retrieval import sql
from evokernel.config import Settings
from evokernel.llm.base import LLM
from evokernel.llm.registry import make_llm
from kernelbench_npu.spec import Build, TaskSpec, load_build
from memory_lake import Lake
from memory_lake.storage import META_FILE as LAKE_META
from verifier.api import verify
from verifier.backends import get_backend
from verifier.backends.base import Backend
from verifier.result import Verdict
from verifier.settings import VerifySettings


class CampaignError(ValueError):
    """A campaign cannot start or resume as asked (one line, names what is wrong)."""


@dataclass(frozen=True)
class Runtime:
    ctx: AgentContext
    build: Build
    llm: LLM


def default_campaign_id(method: str, model: str) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"{method}-{re.sub(r'[^A-Za-z0-9._-]+', '-', model)}-{stamp}"


def open_lake(root: Path, backend: Backend) -> Lake:
    """Open the lake, or create it seeded with the backend's API templates."""
    if (Path(root) / LAKE_META).exists():
        return Lake.open(root)
    return Lake.create(root, backend.name, seed_items=backend.seed_items())


def verify_settings(settings: Settings) -> VerifySettings:
    return VerifySettings(threads=settings.verify_threads, timeout_s=settings.verify_timeout_s,
                          correctness_trials=settings.correctness_trials, latency_rounds=settings.latency_rounds)


def open_runtime(settings: Settings, campaign_id: str | None = None,
                 generate: Callable | None = None,
                 verify_fn: Callable[[TaskSpec, str], Verdict] | None = None) -> Runtime:
    build = load_build(settings.build)
    if build.backend != settings.backend:
        raise CampaignError(f"{settings.build}/build.json: backend is {build.backend!r}, campaign asks for {settings.backend!r}")
    backend = get_backend(settings.backend)
    llm = make_llm(settings.llm, settings)
    lake = open_lake(settings.lake, backend)
    campaign_id = campaign_id or default_campaign_id(settings.method, llm.model)
    _check_resumable(lake, campaign_id, build, settings, llm.model)
    ctx = AgentContext(
        campaign_id=campaign_id, settings=settings, policy=method_policy(settings.method), lake=lake,
        model=llm.model, backend=backend.name, scaffold=backend.scaffold(None),
        fence_language=backend.fence_language, generate=generate or llm.complete,
        verify=verify_fn or partial(_verify, backend=backend.name, vsettings=verify_settings(settings),
                                    concurrency=settings.verify_concurrency),
    )
    return Runtime(ctx=ctx, build=build, llm=llm)


_VERIFY_SLOTS: dict[str, threading.BoundedSemaphore] = {}
_SLOTS_LOCK = threading.Lock()


def verify_slots(backend: str, concurrency: int) -> threading.BoundedSemaphore:
    """The process-wide bound on simultaneous verifications of one backend (its device is shared).

    Across processes (Dask workers, several campaigns) use the Prefect tag concurrency limit on
    ``verify-<backend>`` instead; see tasks/defaults.py.
    """
    with _SLOTS_LOCK:
        return _VERIFY_SLOTS.setdefault(backend, threading.BoundedSemaphore(concurrency))


def _verify(task: TaskSpec, code: str, *, backend: str, vsettings: VerifySettings, concurrency: int) -> Verdict:
    with verify_slots(backend, concurrency):
        return verify(task, code, backend, vsettings)


def _check_resumable(lake: Lake, campaign_id: str, build: Build, settings: Settings, model: str) -> None:
    rows = lake.query(sql("campaign_state"), {"campaign_id": campaign_id}).to_pylist()
    if not rows:
        return
    row = rows[0]
    for field, want in (("build_hash", build.build_hash), ("method", settings.method), ("model", model),
                        ("backend", settings.backend)):
        if row[field] != want:
            raise CampaignError(f"campaign {campaign_id!r} exists with {field}={row[field]!r}; "
                                f"cannot resume it with {field}={want!r} (use a new --campaign-id)")
