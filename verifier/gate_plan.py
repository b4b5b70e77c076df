"""Which gates one verification runs here, decided from the backend's per-gate capabilities.

A fully available backend runs every gate. Otherwise each gate its :class:`GateCapability` says
it can run here still runs (hack always; compile, e.g. nvcc or Triton's AOT compile without a
GPU; correctness, e.g. the Triton interpreter), and each gate it cannot run becomes a failed
:class:`GateResult` whose reason reads "<gate> unavailable here: <note>", so such a verdict never
passes and its feedback says which gates ran. Latency runs only after correctness (the child times
the model it checked). A backend that can run nothing beyond hack has an empty plan: ``verify``
reports it as "unavailable: <reason>" instead of a verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

from verifier.backends.base import Availability
from verifier.result import GATES, GateResult

UNAVAILABLE_HERE = "unavailable here"
_RUNTIME_GATES = GATES[1:]  # compile, correctness, latency


@dataclass(frozen=True)
class GatePlan:
    runnable: frozenset[str]  # always contains "hack"
    missing: tuple[tuple[str, str], ...] = ()  # (gate, why it cannot run here), in gate order

    def runs(self, gate: str) -> bool:
        return gate in self.runnable

    def without(self, gate: str, why: str) -> "GatePlan":
        """This plan with ``gate`` (and every later runtime gate, which needs it) unavailable: ``why``."""
        later = _RUNTIME_GATES[_RUNTIME_GATES.index(gate):]
        missing = dict(self.missing) | {g: why for g in later if g in self.runnable}
        return GatePlan(self.runnable - set(later), tuple((g, missing[g]) for g in _RUNTIME_GATES if g in missing))

    @property
    def substantive(self) -> bool:
        """Something beyond the static hack gate can run here."""
        return bool(self.runnable - {"hack"})

    def unavailable(self, gate: str) -> GateResult:
        note = dict(self.missing).get(gate, "not supported by this backend")
        return unavailable_gate(gate, note)


def unavailable_gate(gate: str, note: str) -> GateResult:
    return GateResult(gate, False, f"{gate} {UNAVAILABLE_HERE}: {note}"[:300], 0.0)


def is_unavailable(gate: GateResult) -> bool:
    return not gate.passed and is_unavailable_text(gate.name, gate.reason)


def is_unavailable_text(gate: str, reason: str) -> bool:
    """``reason`` says that ``gate`` cannot run on this machine (the machine's outcome, not the candidate's)."""
    return reason.startswith(f"{gate} {UNAVAILABLE_HERE}:")


QUOTED = "the candidate's output reads: "


def quoted(text: str) -> str:
    """Text a process the candidate controls wrote (a compiler's diagnostics on its source, an exception, a
    runner's message), made safe to begin a gate's reason: a reason that says a gate is unavailable here is
    composed by the monitor from facts it checked itself, so such text never reads as one, whatever gate it
    ends up in (it is prefixed; anything else is left as it is)."""
    head = text.lstrip().lower()
    if any(head.startswith(f"{gate} {UNAVAILABLE_HERE}") for gate in GATES) or UNAVAILABLE_HERE in head[:120]:
        return QUOTED + text.lstrip()
    return text


def plan_gates(availability: Availability) -> GatePlan:
    if availability.available:
        return GatePlan(frozenset(GATES))
    caps = {c.gate: c for c in availability.gates}
    runnable, missing = {"hack"}, []
    for gate in _RUNTIME_GATES:
        cap = caps.get(gate)
        if cap is not None and cap.available and (gate != "latency" or "correctness" in runnable):
            runnable.add(gate)
        elif cap is not None and cap.available:
            missing.append((gate, "needs the correctness gate, which cannot run here"))
        else:
            missing.append((gate, (cap.note if cap is not None and cap.note else availability.reason)))
    return GatePlan(frozenset(runnable), tuple(missing))
