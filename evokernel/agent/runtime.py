"""Opening a campaign: the build, its backend, the lake (created with the backend's seed knowledge
beyond its scaffold if new), the LLM provider and the verification settings, assembled once per process.

:func:`runtime_for` is the one way code gets a runtime: it opens it on first use and hands the same
object to every later caller in the process with the same settings and campaign id (the flow, the
tasks it runs in threads, a Dask worker's tasks), so the LLM client and the lake are opened once.
Each caller hands it back with :func:`release_runtime`; the last one closes it, so a Dask worker
that outlives its campaigns (a `dask worker` process serves night after night) keeps no lake
connection open between tasks.
The backend of a campaign is the build's: an explicit ``backend`` setting that disagrees is a
one-line :class:`CampaignError`.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from evokernel.agent.context import AgentContext
from evokernel.agent.methods import method_policy
from evokernel.config import Settings
from evokernel.llm.base import LLM
from evokernel.llm.registry import make_llm
from kernelbench_npu.spec import Build, load_build
from memory_lake import Lake
from verifier.backends import get_backend
from evokernel.prompts.dedup import ShownTexts
from verifier.backends.base import Backend, SeedItem
from verifier.settings import VerifySettings


class CampaignError(ValueError):
    """A campaign cannot start or resume as asked (one line, names what is wrong)."""


@dataclass(frozen=True)
class Runtime:
    """What every step of a campaign in this process shares."""

    ctx: AgentContext
    build: Build
    llm: LLM
    verify_settings: VerifySettings

    @property
    def campaign_id(self) -> str:
        return self.ctx.campaign_id


def default_campaign_id(method: str, model: str) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"{method}-{re.sub(r'[^A-Za-z0-9._-]+', '-', model)}-{stamp}"


def campaign_backend(settings: Settings, build: Build) -> str:
    """The build's backend; an explicit setting that names another one is an error."""
    if settings.backend and settings.backend != build.backend:
        raise CampaignError(f"{build.root}/build.json: the build is for backend {build.backend!r}, but the "
                            f"settings ask for {settings.backend!r} (drop EVOKERNEL_BACKEND / backend, or use "
                            f"a {settings.backend} build)")
    return build.backend


def memory_seeds(backend: Backend) -> tuple[SeedItem, ...]:
    """The backend's seed knowledge that becomes memory items: what its scaffold does not already
    show. The scaffold is in every prompt (it keeps the candidate contract), so a seed it covers
    would be an item no prompt ever needs (evokernel.agent.retrieval leaves such items out)."""
    shown = ShownTexts(backend.scaffold(None))
    return tuple(s for s in backend.seed_items() if not shown.in_scaffold(s.body, s.code or None))


def open_lake(uri: str | Path, backend: Backend, q_init: float = 0.0) -> Lake:
    """Open the lake (a directory or a ``ducklake:`` URI), or create it (with ``q_init``) seeded with
    the backend's knowledge beyond its scaffold (:func:`memory_seeds`); when campaign processes race
    to create it, one does and the others open it."""
    lake = Lake.open_existing(uri)  # before the seeds: the cpu backend's take ~0.4 s to find
    if lake is not None:
        return lake
    return Lake.open_or_create(uri, backend.name, seed_items=memory_seeds(backend), q_init=q_init)


def verify_settings(settings: Settings) -> VerifySettings:
    return VerifySettings(threads=settings.verify_threads, timeout_s=settings.verify_timeout_s,
                          correctness_trials=settings.correctness_trials, latency_rounds=settings.latency_rounds,
                          window_ms=settings.latency_window_ms, settle_ci=settings.latency_settle_ci)


def open_runtime(settings: Settings, campaign_id: str | None = None) -> Runtime:
    """Open a new runtime (use :func:`runtime_for` to share one per process)."""
    build = load_build(settings.build)
    backend = get_backend(campaign_backend(settings, build))
    llm = make_llm(settings.llm, settings)
    lake = open_lake(settings.lake, backend, settings.q_init)
    campaign_id = campaign_id or default_campaign_id(settings.method, llm.model)
    _check_resumable(lake, campaign_id, build, settings, llm.model)
    ctx = agent_context(settings, backend, lake, llm.model, campaign_id)
    return Runtime(ctx=ctx, build=build, llm=llm, verify_settings=verify_settings(settings))


def agent_context(settings: Settings, backend: Backend, lake: Lake, model: str, campaign_id: str) -> AgentContext:
    return AgentContext(campaign_id=campaign_id, settings=settings, policy=method_policy(settings.method), lake=lake,
                        model=model, backend=backend.name, scaffold=backend.scaffold(None),
                        fence_language=backend.fence_language)


_RUNTIMES: dict[tuple[str, str], Runtime] = {}
_HOLDERS: dict[int, int] = {}  # id(runtime) -> callers holding it (runtime_for without release_runtime yet)
_RUNTIMES_LOCK = threading.Lock()


def runtime_for(settings: Settings, campaign_id: str | None) -> Runtime:
    """This process's runtime for (settings, campaign id): opened on first use, then shared until its
    last holder releases it (:func:`release_runtime`).

    ``campaign_id=None`` names a new campaign (:func:`default_campaign_id`); later callers pass the
    runtime's own id."""
    with _RUNTIMES_LOCK:
        runtime = _RUNTIMES.get((settings.model_dump_json(), campaign_id)) if campaign_id else None
        if runtime is None:
            runtime = open_runtime(settings, campaign_id)
            _RUNTIMES[(settings.model_dump_json(), runtime.campaign_id)] = runtime
        _HOLDERS[id(runtime)] = _HOLDERS.get(id(runtime), 0) + 1
        return runtime


def release_runtime(runtime: Runtime) -> None:
    """Hand back a runtime from :func:`runtime_for`; the last holder closes it (a later
    ``runtime_for`` opens a new one)."""
    with _RUNTIMES_LOCK:
        left = _HOLDERS.get(id(runtime), 1) - 1
        if left > 0:
            _HOLDERS[id(runtime)] = left
            return
        _forget(runtime)  # under the lock: no runtime_for can pick it up while it closes
    runtime.ctx.lake.close()


def close_runtime(runtime: Runtime) -> None:
    """Close the runtime's lake and forget it, whoever still holds it."""
    with _RUNTIMES_LOCK:
        _forget(runtime)
    runtime.ctx.lake.close()


def _forget(runtime: Runtime) -> None:
    for key in [k for k, v in _RUNTIMES.items() if v is runtime]:
        del _RUNTIMES[key]
    _HOLDERS.pop(id(runtime), None)


def _check_resumable(lake: Lake, campaign_id: str, build: Build, settings: Settings, model: str) -> None:
    state = lake.campaign_state(campaign_id)
    if state is None:
        return
    for field, want in (("build_hash", build.build_hash), ("method", settings.method), ("model", model),
                        ("backend", build.backend)):
        if getattr(state, field) != want:
            raise CampaignError(f"campaign {campaign_id!r} exists with {field}={getattr(state, field)!r}; "
                                f"cannot resume it with {field}={want!r} (use a new --campaign-id)")
