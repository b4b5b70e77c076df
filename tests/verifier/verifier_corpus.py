"""The fixture corpus: tests/fixtures/kernels/<name>.py, each with a header naming its task
fixture, the expected first failing gate (or "pass"), what it covers, and optionally the backend
(cpu unless said: cuda, triton), static checks to disable (so an exploit reaches the runtime
layers), a timeout and a reason substring.

"pass" means every gate that can run here passes: a cuda or triton candidate on a machine
without a GPU must reach the first gate that is unavailable here and fail only there."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from verifier_taskutil import FIXTURES

KEYS = ("task", "expect", "covers", "backend", "disable", "timeout_s", "reason")
BACKENDS = ("cpu", "cuda", "triton")
EXPECTATIONS = ("pass", "hack", "compile", "correctness", "latency")


@dataclass(frozen=True)
class CorpusEntry:
    path: Path
    task: str
    expect: str
    covers: str
    disable: tuple[str, ...] = ()
    timeout_s: float | None = None
    reason: str = ""
    backend: str = "cpu"

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def kind(self) -> str:
        """honest | hack | broken | sandbox | moot (an attack on machinery the zero-trust verifier no longer
        has, e.g. the runner's own timer: it must gain nothing, so it passes as the kernel it is)"""
        return self.name.split("_")[0]


def parse(path: Path) -> CorpusEntry:
    fields: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if not line.startswith("# "):
            break
        key, _, value = line[2:].partition(":")
        if key.strip() not in KEYS:
            raise ValueError(f"{path}: unknown header field {key.strip()!r}")
        fields[key.strip()] = value.strip()
    for key in ("task", "expect", "covers"):
        if key not in fields:
            raise ValueError(f"{path}: header field {key!r} missing")
    if fields["expect"] not in EXPECTATIONS:
        raise ValueError(f"{path}: expect must be one of {EXPECTATIONS}")
    if fields.get("backend", "cpu") not in BACKENDS:
        raise ValueError(f"{path}: backend must be one of {BACKENDS}")
    return CorpusEntry(path, fields["task"], fields["expect"], fields["covers"],
                       tuple(x.strip() for x in fields.get("disable", "").split(",") if x.strip()),
                       float(fields["timeout_s"]) if "timeout_s" in fields else None, fields.get("reason", ""),
                       fields.get("backend", "cpu"))


def corpus() -> list[CorpusEntry]:
    return [parse(p) for p in sorted(FIXTURES.glob("*.py"))]
