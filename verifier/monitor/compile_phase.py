"""The compile gate, driven by the monitor: the runner imports the candidate, each native loader call
it makes becomes a build the monitor runs and checks (verifier.monitor.builds), then ModelNew is
constructed from the reference worker's init values.

The gate fails (with the build's diagnostics) when a build fails, when the import or the constructor
raises, or when a backend that requires native code saw none; a build the static policy refuses
fails the hack gate instead. Builds the backend asks for itself (triton's ahead-of-time compile) run
first, while the runner imports.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

from verifier.backends.base import BuildRejected
from verifier.gate_plan import UNAVAILABLE_HERE, unavailable_gate
from verifier.gates import compile as compile_gate
from verifier.monitor.builds import BuildOutcome, BuildService
from verifier.monitor.peers import PeerFailure, receive
from verifier.monitor.reference import Reference
from verifier.result import GateResult
from verifier.sandbox import messages as msg
from verifier.sandbox.spawn import Sandboxed

MAX_REQUEST = 16 << 20  # a loader call's sources and flags
NO_NATIVE = ("no native code: call load_c(SOURCE, {...}) (or load_inline) when the module is imported or in "
             "ModelNew.__init__; "
             "all arithmetic must run in native code")


@dataclass
class CompileState:
    builds: BuildService
    outcomes: list[BuildOutcome] = field(default_factory=list)

    def gate_or_none(self, seconds: float) -> GateResult | None:
        """The failed gate of the first failed build (a hack or a compile failure, or "compile
        unavailable here" for a toolchain this machine lacks), else None."""
        for outcome in self.outcomes:
            if outcome.ok:
                continue
            if outcome.gate == "machine":
                return replace(unavailable_gate("compile", _without_prefix(outcome.reason)), seconds=seconds)
            name = "hack" if outcome.gate == "hack" else "compile"
            return GateResult(name, False, outcome.reason[:300], seconds, detail=outcome.detail[:4000])
        return None

    def passed(self, seconds: float) -> GateResult:
        built = [o for o in self.outcomes if o.ok]
        return compile_gate.passed(seconds, len(built), sum(o.cached for o in built), sum(o.seconds for o in built),
                                   tuple(dict.fromkeys(o.note for o in built if o.note)))


def run_own_jobs(state: CompileState, backend, source: str, context: dict[str, str], timeout_s: float) -> dict[str, str]:
    """The builds the backend asks for itself, before the runner imports; {job label: placed directory}."""
    try:
        jobs = backend.compile_jobs(source, context)
    except BuildRejected as exc:
        state.outcomes.append(BuildOutcome(False, exc.gate, exc.reason[:300], exc.reason))
        return {}
    placed = {}
    for job in jobs:
        outcome = state.builds.build(job, timeout_s)
        state.outcomes.append(outcome)
        if not outcome.ok:
            break
        placed[job.label] = outcome.path
    return placed


def serve_builds(runner: Sandboxed, state: CompileState, start: float, build_s: float, wait_s: float,
                 until: tuple[type, ...], during: str):
    """Serve the runner's build requests until it sends one of ``until``; that message, or the failed
    gate of a build the static policy refused (nothing more runs then). ``wait_s`` bounds the runner's own
    time (a candidate spinning at import gets no share of the build budget), ``build_s`` the builds'."""
    while True:
        waited = time.monotonic()
        message = receive(runner, waited + max(wait_s, 0.0), (msg.BuildRequest, msg.LoadFailed, *until), during,
                          MAX_REQUEST)
        wait_s -= time.monotonic() - waited
        if not isinstance(message, msg.BuildRequest):
            return message
        began = time.monotonic()
        outcome = state.builds.run(message.loader, message.args, max(1.0, build_s))
        build_s -= time.monotonic() - began
        state.outcomes.append(outcome)
        if not outcome.ok and outcome.gate == "hack":
            return state.gate_or_none(time.perf_counter() - start)
        runner.send(msg.BuildReply(outcome.ok, outcome.path, "" if outcome.ok else outcome.detail or outcome.reason))


def import_candidate(runner: Sandboxed, state: CompileState, start: float, compile_s: float,
                     import_s: float) -> GateResult | msg.Imported:
    """The runner's import of the candidate, its builds served; a failed gate or Imported."""
    message = serve_builds(runner, state, start, compile_s, import_s, (msg.Imported,), "the import of the candidate")
    return _settle(message, state, start, "import")


def construct(runner: Sandboxed, reference: Reference, state: CompileState, start: float, compile_s: float,
              wait_s: float) -> GateResult | None:
    """ModelNew built in the runner from the reference worker's init values (its builds served); a failed
    gate or None."""
    init = reference.wait_init(time.monotonic() + wait_s)
    runner.send(msg.Init(init.values, init.arrays))
    message = serve_builds(runner, state, start, compile_s, wait_s, (msg.Constructed,), "the construction of ModelNew")
    settled = _settle(message, state, start, "construct")
    return settled if isinstance(settled, GateResult) else None


def _settle(message, state: CompileState, start: float, phase: str):
    if isinstance(message, GateResult):
        return message
    failed = state.gate_or_none(time.perf_counter() - start)
    if failed is not None:
        return failed
    if isinstance(message, msg.LoadFailed):
        return compile_gate.load_failed(phase, message.error, time.perf_counter() - start)
    return message


def _without_prefix(reason: str) -> str:
    """A reason that already says "compile unavailable here: " (e.g. CUDA headers), without it."""
    prefix = f"compile {UNAVAILABLE_HERE}: "
    return reason[len(prefix):] if reason.startswith(prefix) else reason


def peer_failure_gate(gate: str, failure: PeerFailure, seconds: float) -> GateResult:
    """A runner that broke protocol fails the hack gate; one that died, hung or raised fails ``gate``."""
    if failure.kind in ("malformed", "integrity"):
        return GateResult("hack", False, f"runtime integrity: {failure.reason}"[:300], seconds, detail=failure.detail)
    return GateResult(gate, False, failure.reason[:300], seconds, detail=failure.detail[:4000])
