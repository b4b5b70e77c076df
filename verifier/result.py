"""Typed, frozen results of verification: one per gate, one latency measurement, one verdict.

Failures are results, never exceptions and never fake metric values: a failed gate has
``passed=False`` and a reason the LLM can act on.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from verifier.roofline import RooflinePosition

GATES = ("hack", "compile", "correctness", "latency")
FEASIBILITY_GATES = ("hack", "compile", "correctness")
# A passed latency gate whose reason starts with this measured the kernel but cannot stand behind the
# figure (too many timed windows disturbed by other work on the machine): the machine's outcome for a
# speed reward (evokernel.agent.attribution), while the kernel's feasibility stands.
UNTRUSTED_LATENCY = "latency not measured trustworthily"


@dataclass(frozen=True)
class GateResult:
    name: str  # one of GATES
    passed: bool
    reason: str  # one line, trimmed; "" when passed
    seconds: float
    detail: str = ""  # longer text (trimmed diagnostics, first mismatch), shown to the LLM

    @property
    def untrusted_latency(self) -> bool:
        return self.name == "latency" and self.passed and self.reason.startswith(UNTRUSTED_LATENCY)


@dataclass(frozen=True)
class LatencyTime:
    """Where the latency gate's wall-clock seconds went (verifier.monitor.timing): the timed windows hold
    the kernels' work; the rest is what the protocol costs around them."""

    windows_s: float = 0.0  # every side's timed windows: calibration, warm-up, observed, retimed rounds too
    drawing_s: float = 0.0  # the reference worker drawing every call's fresh input set
    staging_s: float = 0.0  # everything of a side's turn but its window (the record side's with the empty window
    # after it): the four below, stopping and continuing the side, raising and lowering its priority
    checking_s: float = 0.0  # every window's outputs checked against the reference's
    spares_s: float = 0.0  # stopping the spare processes still booting (verifier.monitor.pool.paused)
    other_s: float = 0.0  # the rest: window sizing, the post-timing trials, the bootstrap
    rounds_played: int = 0  # every round: calibration, warm-up, observed, counted and retimed ones
    # parts of staging_s:
    inputs_s: float = 0.0  # the round's inputs written into each side's arena just before its turn
    outputs_s: float = 0.0  # each window's outputs read out of the stopped side's memory
    stage_s: float = 0.0  # the sides' Stage commands: views of a new layout, the heap grown before a larger window
    # (its pages faulted in), a device's copies
    settle_s: float = 0.0  # a continued side's threads going back to sleep before its window (verifier.monitor.freeze)

    def line(self) -> str:
        return (f"{self.rounds_played} rounds: timed windows {self.windows_s:.2f} s, drawing inputs "
                f"{self.drawing_s:.2f} s, staging {self.staging_s:.2f} s (writing inputs {self.inputs_s:.2f}, "
                f"reading outputs {self.outputs_s:.2f}, Stage {self.stage_s:.2f}, settling {self.settle_s:.2f}), "
                f"checking outputs {self.checking_s:.2f} s, pausing booting spares {self.spares_s:.2f} s, "
                f"other {self.other_s:.2f} s")


@dataclass(frozen=True)
class LatencyResult:
    candidate_ms: float  # median over rounds
    reference_ms: float  # median over rounds, timed in the same child, interleaved
    speedup: float  # exp(median log(ref/cand)) over paired rounds
    ci_low: float  # 95% bootstrap confidence interval of the speedup
    ci_high: float
    rounds: int
    flagged: bool = False  # faster than the roofline allows, or noisy timing: review before trusting
    flag_reason: str = ""
    roofline: RooflinePosition | None = None  # bytes and FLOPs over candidate_ms against the probed peaks
    note: str = ""  # a hint that is not a flag (a speedup above the ratio bound but within the roofline)
    calls_per_window: int = 1  # calls each side made per timed window (its time over them is one sample)
    rounds_retimed: int = 0  # rounds played again: other work on the machine disturbed a timed window
    trusted: bool = True  # False: too many windows were disturbed to stand behind the figure (the
    untrusted_reason: str = ""  # machine's outcome, never a kernel's score: evokernel.agent.attribution)
    priority: str = ""  # "raised" (the timed processes first in line for a CPU), or why not
    window_fixed_ms: float = 0.0  # what every window cost besides its calls (an empty window), subtracted
    window_cold_ms: float = 0.0  # what a window's first call took beyond the others (its threads woken), subtracted
    late_ms: float = 0.0  # what collecting the candidate's outputs took beyond the reference's, per window: added
    early_ms: float = 0.0  # what the candidate computed before its clock started, per window on average: added
    time: LatencyTime | None = None  # where the gate's own seconds went


@dataclass(frozen=True)
class SessionFacts:
    """How a verification ran (not what it found): for logs, reports and tests."""

    seed: int | None = None  # the secret master seed, revealed after the verdict
    compile_cached: bool = False
    compile_s: float = 0.0
    seccomp: bool = False  # the no-exec/no-signal filter was on while candidate code ran
    seccomp_off_reason: str = ""  # why not, when the backend must start processes (see Backend)
    skipped_trials: int = 0  # correctness trials whose reference is non-finite for that distribution
    isolation: str = ""  # how the sandbox processes were confined (e.g. "landlock abi 7, uid 64000")
    reference_primed: bool = False  # the reference worker had computed this verification's trials beforehand
    timed_inputs_drawn: str = ""  # with what the timed calls' inputs were drawn (verifier.sandbox.fast_fill)


@dataclass(frozen=True)
class Verdict:
    task_id: str
    backend: str
    code_sha256: str
    gates: tuple[GateResult, ...]
    latency: LatencyResult | None = None
    feedback: str = ""  # the structured text an LLM gets back
    infrastructure_error: str = ""  # non-empty: the verifier itself failed (retryable), not the candidate
    seconds: float = 0.0  # wall clock of the whole verification, static checks to the last gate
    facts: SessionFacts = field(default_factory=SessionFacts, compare=False)
    warnings: tuple[str, ...] = ()  # for the user, not the LLM: e.g. "isolation unavailable: <why>"

    @property
    def passed(self) -> bool:
        return not self.infrastructure_error and len(self.gates) == len(GATES) and all(g.passed for g in self.gates)

    @property
    def failed_gate(self) -> str | None:
        for gate in self.gates:
            if not gate.passed:
                return gate.name
        return None

    @property
    def feasible(self) -> bool:
        """hack, compile and correctness passed (the paper's g_feas); latency is not part of it."""
        passed = {g.name for g in self.gates if g.passed}
        return not self.infrastructure_error and all(name in passed for name in FEASIBILITY_GATES)

    def gate(self, name: str) -> GateResult | None:
        return next((g for g in self.gates if g.name == name), None)

    def to_json_dict(self) -> dict:
        """The shape `evokernel verify --json` prints."""
        return {
            "task_id": self.task_id,
            "passed": self.passed,
            "failed_gate": self.failed_gate,
            "gates": [
                {"name": g.name, "passed": g.passed, "reason": g.reason, "seconds": round(g.seconds, 4)}
                for g in self.gates
            ],
            "latency": asdict(self.latency) if self.latency else None,
            "feedback": self.feedback,
            "warnings": list(self.warnings),
        }
