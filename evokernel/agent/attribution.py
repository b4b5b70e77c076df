"""Who an outcome belongs to: the candidate's (its code passed or failed a gate) or the machine's.

The one rule every part of the agent applies (rewards, value updates, traces, budgets, reports).
It rests on the verifier's contract and nothing else:

- a Verdict whose ``infrastructure_error`` is non-empty is the machine's outcome (building inputs,
  a toolchain or reference-worker crash, the harness out of memory, a timeout under load);
- a gate whose reason starts with "<gate> unavailable here:" (verifier.gate_plan.is_unavailable)
  is one this machine cannot judge.

So an outcome is the machine's when the verifier failed, or when the first gate that did not pass
is one this machine cannot run and the stage needs that gate's answer: drafting is scored on
feasibility (hack, compile, correctness), refining on speed too (the latency gate). Everything
else is the candidate's: a gate it failed, every gate it passed, or an answer with no usable
kernel in it. Only the candidate's outcomes become rewards and value updates; the machine's are
recorded with their reason (``attempts.outcome_owner``, ``attempts.machine_reason``), retried
within a bound (evokernel.agent.verification: the verification; ``MACHINE_STREAK_LIMIT``: the
task), and counted apart in reports.

``latency_unmeasurable`` is set when the latency gate cannot run here even though the candidate is
feasible: a campaign then does not refine (a refinement could not be scored; see state.py).

``latency_untrusted`` is set when the latency gate ran but could not stand behind its figure (too many
timed windows disturbed by other work on the machine: verifier.result.UNTRUSTED_LATENCY): the kernel
stays the candidate's (its feasibility counts: a trace, a start point), while its speed is the
machine's outcome: a refinement earns no reward from it and no value moves (scoring.py), and it never
becomes a task's best kernel (state.py). A cost per call that kept rising through the rounds is untrusted
too (verifier.gates.trend): the kernel's doing, but with no steady speed there is nothing to reward; the
same no-reward rule applies (a slow kernel that also rises escapes its negative reward, a lesser harm
than paying a fast early figure that a user's loop never sees).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from verifier.gate_plan import is_unavailable
from verifier.result import FEASIBILITY_GATES, GateResult, Verdict

CANDIDATE, MACHINE = "candidate", "machine"
# Machine outcomes in a row after which a task stops for this run (a rerun of the campaign id resumes
# it): the machine is broken for this task, and further LLM calls would only be spent on nothing.
MACHINE_STREAK_LIMIT = 3


@dataclass(frozen=True)
class Attribution:
    owner: str  # CANDIDATE | MACHINE
    reason: str = ""  # the machine's outcome: why (one line); "" for the candidate's
    latency_unmeasurable: str = ""  # the latency gate's "unavailable here" reason, when it is one
    latency_untrusted: str = ""  # the latency gate's "not measured trustworthily" reason, when it is one

    @property
    def scored(self) -> bool:
        """Whether the outcome earns a reward (and moves values)."""
        return self.owner == CANDIDATE


def attribute(verdict: Verdict | None, stage: int) -> Attribution:
    """The owner of a verification's outcome at a stage (1 drafting, 2 refining); None: no kernel."""
    if verdict is None:
        return Attribution(CANDIDATE)
    if verdict.infrastructure_error:
        return Attribution(MACHINE, _line(verdict.infrastructure_error))
    return attribute_gates(verdict.gates, stage)


def attribute_gates(gates: tuple[GateResult, ...] | list[GateResult], stage: int) -> Attribution:
    """The rule on gate results alone (what a stored attempt's gates_json holds)."""
    latency = next((g for g in gates if g.name == "latency"), None)
    unmeasurable = latency.reason if latency is not None and is_unavailable(latency) else ""
    failed = next((g for g in gates if not g.passed), None)
    if failed is None and latency is not None and latency.untrusted_latency:
        return Attribution(CANDIDATE, latency_untrusted=_line(latency.reason))
    if failed is None or not is_unavailable(failed):
        return Attribution(CANDIDATE, latency_unmeasurable=unmeasurable)
    if failed.name in FEASIBILITY_GATES or stage == 2:
        return Attribution(MACHINE, _line(failed.reason), latency_unmeasurable=unmeasurable)
    return Attribution(CANDIDATE, latency_unmeasurable=unmeasurable)  # drafting: feasibility was judged


def gates_from_json(gates_json: str | None) -> tuple[GateResult, ...]:
    """The gate results stored in ``attempts.gates_json`` (reasons and pass flags; no details)."""
    if not gates_json:
        return ()
    return tuple(GateResult(g["name"], bool(g["passed"]), g.get("reason") or "", float(g.get("seconds") or 0.0))
                 for g in json.loads(gates_json))


def owner_of(row: dict) -> str:
    """A stored attempt's owner; rows written before attribution was recorded are the candidate's
    (they were scored as such)."""
    return row.get("outcome_owner") or CANDIDATE


def _line(text: str) -> str:
    return text.strip().splitlines()[0][:300] if text.strip() else "machine failure (no reason given)"
