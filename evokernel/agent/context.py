"""What the steps of one campaign read: its id, settings, method policy, lake, model name and the
backend's scaffold. Plain data and the lake; the LLM call and the verification are made by the
loop that drives the steps (evokernel.agent.campaign, or the Prefect tasks), never injected here."""

from __future__ import annotations

from dataclasses import dataclass

from evokernel.agent.methods import MethodPolicy
from evokernel.config import Settings
from memory_lake import Lake


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
