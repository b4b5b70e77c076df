"""Everything one campaign's steps share: settings, the method policy, the lake, the LLM, the
verifier entry point. ``generate`` and ``verify`` are injectable so the Prefect flow can wrap them
as retryable tasks while the core stays Prefect-free."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from evokernel.agent.methods import MethodPolicy
from evokernel.config import Settings
from evokernel.llm.base import Completion, LLMRequest
from kernelbench_npu.spec import TaskSpec
from memory_lake import Lake
from verifier.result import Verdict


class VerifierInfrastructureError(RuntimeError):
    """The verifier itself failed (not the candidate): retry the verification, never score it."""


@dataclass(frozen=True)
class AgentContext:
    campaign_id: str
    settings: Settings
    policy: MethodPolicy
    lake: Lake
    model: str
    backend: str
    scaffold: str
    fence_language: str
    generate: Callable[[LLMRequest], Completion]
    verify: Callable[[TaskSpec, str], Verdict]
    clock: Callable[[], float] = field(default=time.monotonic)


def attempt_id_for(campaign_id: str, task_id: str, iteration: int) -> str:
    """Deterministic, so a resumed campaign redoes an uncommitted step under the same id."""
    return f"{campaign_id}/{task_id}/{iteration:03d}"


def trace_item_id_for(attempt_id: str) -> str:
    return f"trace/{attempt_id}"


def seed_for(*parts: object) -> int:
    """A reproducible 63-bit seed from identifying parts (stable across processes)."""
    import hashlib

    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1
