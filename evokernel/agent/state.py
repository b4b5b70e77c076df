"""A task's progress within a campaign: start points, the incumbent, feedback, budget used.

The incumbent (``best``) is the task's best kernel by the one definition the log, the lake and the
report share (memory_lake/sql/best_kernels.sql): the feasible kernel with the highest paired speedup
over the reference (median over rounds, each kernel measured against the reference in its own
verification) whose timing is not flagged implausible, ties to the earlier iteration; not the lowest
raw latency: raw latencies of two verifications follow machine load, paired speedups mostly do not.

State is a frozen value: each step returns the next state (``TaskState.after``). On resume the
state is rebuilt by replaying the task's attempts from the lake (``replay``), so a campaign killed
at any point continues with exactly what it had committed.

The machine's outcomes (evokernel.agent.attribution) use an iteration of the budget (their LLM call
was made) but change nothing else: no start point, no normaliser sample. After
``MACHINE_STREAK_LIMIT`` of them in a row the task stops for this run; a rerun resumes it (the
streak is not replayed). A task whose feasible kernel cannot be timed here stops too: refinements
could not be scored (no blind refinement; README).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from evokernel.agent.attribution import CANDIDATE, MACHINE, MACHINE_STREAK_LIMIT
from evokernel.agent.methods import MethodPolicy
from evokernel.agent.rewards import PairedSpeedup, RunningStats


@dataclass(frozen=True)
class StartPoint:
    """A feasible kernel of this task that refinement may start from (a trace item)."""

    item_id: str
    code: str
    latency_ms: float | None
    speedup: float | None
    iteration: int


@dataclass(frozen=True)
class StepOutcome:
    """What one iteration produced (the attempt row holds the full record)."""

    attempt_id: str
    task_id: str
    iteration: int
    stage: int
    feasible: bool
    failed_gate: str | None
    candidate_ms: float | None
    speedup: float | None
    reward: float | None  # None: the machine's outcome
    reward_normalized: float | None
    feedback: str
    trace_item_id: str | None
    code: str | None
    tokens: int
    seconds: float
    ci_low: float | None = None  # the speedup's 95% interval (None when not measured)
    ci_high: float | None = None
    owner: str = CANDIDATE  # attribution.CANDIDATE | MACHINE
    latency_unmeasurable: str = ""  # the latency gate's "unavailable here" reason, when it is one
    latency_untrusted: str = ""  # the latency was measured but not trustworthily: no refining reward
    machine_reason: str = ""  # the machine's outcome: why
    reward_applied: float | None = None  # what the value updates used (None: no update)
    timing_flag: str | None = None  # clean | noisy | implausible (records.timing_class); None: not timed

    @property
    def paired(self) -> PairedSpeedup | None:
        """The paired speedup that can make this kernel the best (None for an implausible timing)."""
        if self.timing_flag == "implausible":
            return None
        return PairedSpeedup.of(self.speedup, self.ci_low, self.ci_high)


@dataclass(frozen=True)
class TaskState:
    task_id: str
    iterations_done: int = 0
    start_points: tuple[StartPoint, ...] = ()
    best_ms: float | None = None  # the incumbent's latency (as measured in its own verification)
    best_item_id: str | None = None
    best: PairedSpeedup | None = None  # the incumbent's paired speedup over the reference
    first_feasible_iteration: int | None = None
    last_feedback: str | None = None
    tokens_used: int = 0
    seconds_used: float = 0.0
    refine_stats: RunningStats = RunningStats()  # the campaign's refining rewards seen so far
    machine_streak: int = 0  # the machine's outcomes in a row (this run)
    machine_reason: str = ""  # the last one's reason
    latency_unmeasurable: str = ""  # why this task's feasible kernels cannot be timed here

    def stage(self, policy: MethodPolicy) -> int:
        """1 (drafting) until a feasible kernel exists, then 2 (refining); pass@k always drafts."""
        return 2 if policy.refines and self.start_points else 1

    def stop_reason(self, budget: int, max_tokens: int, max_seconds: float) -> str | None:
        if self.iterations_done >= budget:
            return f"iteration budget spent ({budget})"
        if self.machine_streak >= MACHINE_STREAK_LIMIT:
            return (f"the machine failed {self.machine_streak} verifications in a row ({self.machine_reason}); "
                    "rerun the campaign id to resume this task")
        if self.start_points and self.latency_unmeasurable:
            return (f"feasible; latency is not measured on this machine ({self.latency_unmeasurable}): "
                    "refinements could not be scored, so the task ends here")
        if self.tokens_used >= max_tokens:
            return f"token budget spent ({self.tokens_used} >= {max_tokens})"
        if self.seconds_used >= max_seconds:
            return f"wall-clock budget spent ({self.seconds_used:.0f} s >= {max_seconds:.0f} s)"
        return None

    def after(self, outcome: StepOutcome, policy: MethodPolicy) -> "TaskState":
        state = replace(
            self,
            iterations_done=max(self.iterations_done, outcome.iteration + 1),
            last_feedback=outcome.feedback if policy.uses_feedback else None,
            tokens_used=self.tokens_used + outcome.tokens,
            seconds_used=self.seconds_used + outcome.seconds,
            refine_stats=self.refine_stats.add(outcome.reward)
            if outcome.stage == 2 and outcome.reward is not None and outcome.owner == CANDIDATE else self.refine_stats,
            machine_streak=self.machine_streak + 1 if outcome.owner == MACHINE else 0,
            machine_reason=outcome.machine_reason if outcome.owner == MACHINE else self.machine_reason,
        )
        if outcome.owner == MACHINE:
            return state
        if outcome.feasible and outcome.latency_unmeasurable:
            state = replace(state, latency_unmeasurable=outcome.latency_unmeasurable)
        if not outcome.feasible or outcome.trace_item_id is None or outcome.code is None:
            return state
        point = StartPoint(outcome.trace_item_id, outcome.code, outcome.candidate_ms, outcome.speedup,
                           outcome.iteration)
        state = replace(state, start_points=state.start_points + (point,))
        if state.first_feasible_iteration is None:
            state = replace(state, first_feasible_iteration=outcome.iteration)
        paired = outcome.paired  # an untrusted figure counts at its median, as best_kernels.sql counts it
        if paired is not None and (state.best is None or paired.speedup > state.best.speedup):
            state = replace(state, best=paired, best_ms=outcome.candidate_ms, best_item_id=outcome.trace_item_id)
        return state


def replay(task_id: str, outcomes: list[StepOutcome], policy: MethodPolicy,
           refine_stats: RunningStats = RunningStats()) -> TaskState:
    """Rebuild a task's state from its committed outcomes, in iteration order; ``refine_stats`` is
    the campaign's normaliser as committed (it already counts this task's refining rewards)."""
    state = TaskState(task_id=task_id)
    for outcome in sorted(outcomes, key=lambda o: o.iteration):
        state = state.after(outcome, policy)
    return replace(state, refine_stats=refine_stats, machine_streak=0)  # a rerun gives the machine a new chance
