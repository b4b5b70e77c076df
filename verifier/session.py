"""One verification after the static checks: the gate loop over the sandbox child's typed reports.

:func:`Session.run_gates` is the whole procedure: for compile, correctness and latency in order,
run the gate's phase if the :class:`~verifier.gate_plan.GatePlan` says it runs here, otherwise
record "<gate> unavailable here: ..." and go on; stop at the first real failure. Each phase reads
the messages it expects (verifier.sandbox.messages, parsed once by the channel) and returns a
:class:`GateResult`; a runtime integrity violation comes back as a failed "hack" gate, which
replaces the static verdict. The reference worker (started only when correctness runs) computes
the reference outputs from the same secret seed while the candidate compiles.

Deadlines: compile gets ``compile_timeout_s`` (plus interpreter start-up); loading the candidate
gets ``timeout_s``; correctness and latency share one ``timeout_s``. A child that dies or stops
answering fails the gate of its phase with its exit reason; a reference worker that fails is an
infrastructure error (retryable), never the candidate's fault.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from kernelbench_npu.spec import TaskSpec
from verifier.gate_plan import GatePlan, is_unavailable
from verifier.gates import compile as compile_gate
from verifier.gates.correctness import Tolerance, check_trials
from verifier.gates.hack import runtime_failure
from verifier.gates.hack_build import policy_gate
from verifier.gates.latency import audit_problem, latency_gate, summarise, validate_times
from verifier.result import GateResult, LatencyResult, SessionFacts
from verifier.roofline import MachinePeaks, Workload
from verifier.sandbox import messages as msg
from verifier.sandbox.channel import ChannelClosed, ChannelError, ChannelTimeout
from verifier.sandbox.runner import SandboxProcess, deadline_in
from verifier.settings import VerifySettings

READER_STOP_S = 10.0  # the reader ends within ms of EOF; this only bounds a pathology
STARTUP_S = 60.0  # interpreter + torch import on a loaded 2-core machine


class InfrastructureError(RuntimeError):
    """The verifier itself failed (retryable); never the candidate's fault."""


class _Failed(Exception):
    """A phase ended with a failed gate (carried), e.g. a timeout or a candidate error."""

    def __init__(self, gate: GateResult) -> None:
        self.gate = gate


@dataclass(frozen=True)
class Secrets:
    """Per-verification secrets, never shown to the candidate before it has answered."""

    init_seed: int
    input_seed: int
    child_nonce: str
    reference_nonce: str


@dataclass(frozen=True)
class SessionResult:
    gates: tuple[GateResult, ...]
    latency: LatencyResult | None
    facts: SessionFacts


class Session:
    def __init__(self, task: TaskSpec, candidate_source: str, backend: str, settings: VerifySettings,
                 workdir: Path, secrets: Secrets, plan: GatePlan, task_source: str,
                 backend_context: dict[str, str] | None = None, peaks: MachinePeaks | None = None) -> None:
        self.settings, self.workdir, self.plan, self.peaks = settings, workdir, plan, peaks
        trials = msg.TrialSpec(task_source=task_source, dtype=task.dtype, init_seed=secrets.init_seed,
                               input_seed=secrets.input_seed, correctness_trials=settings.correctness_trials,
                               threads=settings.threads)
        self.ref_config = msg.ReferenceConfig(nonce=secrets.reference_nonce, workdir=str(workdir / "reference"),
                                              trials=trials)
        self.child_config = msg.ChildConfig(
            nonce=secrets.child_nonce, workdir=str(workdir / "child"), trials=trials,
            candidate_source=candidate_source, backend=backend, gates=tuple(sorted(plan.runnable)),
            cache_dir=str(settings.cache_dir), atol=task.atol, rtol=task.rtol,
            backend_context=tuple(sorted((backend_context or {}).items())),
            compile_timeout_s=settings.compile_timeout_s, timeout_s=settings.timeout_s,
            latency_rounds=settings.latency_rounds, calls_per_round=settings.calls_per_round,
            warmup_calls=settings.warmup_calls, memory_limit_mb=settings.memory_limit_mb,
            file_size_limit_mb=settings.file_size_limit_mb,
            disabled_checks=tuple(settings.disabled_checks))
        self.tol = Tolerance(task.atol, task.rtol, settings.trivial_margin)
        self.child: SandboxProcess | None = None
        self.ref: SandboxProcess | None = None
        self.ref_thread: threading.Thread | None = None
        self.references: dict[int, msg.ReferenceOutputs] = {}
        self.workload: Workload | None = None  # counted by the reference worker, for the roofline
        self.ref_error = ""
        self.facts = SessionFacts()
        self.compile_report: msg.CompileReport | None = None  # artifact hashes for the compile cache
        self.latency: LatencyResult | None = None
        self.runtime_deadline = 0.0

    # ---- the gate loop -----------------------------------------------------------------------
    def run_gates(self, hack: GateResult) -> SessionResult:
        self.start()
        gates = [hack]
        for name, phase in (("compile", self._compile), ("correctness", self._correctness),
                            ("latency", self._latency)):
            if name != "compile" and not self.plan.runs(name):  # compile's phase also loads ModelNew
                gates.append(self.plan.unavailable(name))
                continue
            try:
                gate = phase()
            except _Failed as failed:
                gate = failed.gate
            if gate.name == "hack":  # a runtime integrity violation replaces the static verdict
                gates[0] = gate
                break
            gates.append(gate)
            if not gate.passed and not is_unavailable(gate):
                break
        return SessionResult(tuple(gates), self.latency if gates[-1].name == "latency" else None, self.facts)

    # ---- processes ---------------------------------------------------------------------------
    def start(self) -> None:
        self.settings.cache_dir.mkdir(parents=True, exist_ok=True)
        threads = self.settings.threads
        if self.plan.runs("correctness"):
            self.ref = SandboxProcess("verifier.sandbox.reference_worker", self.ref_config, threads)
        self.child = SandboxProcess("verifier.sandbox.child", self.child_config, threads)
        if self.ref is not None:
            self.ref_thread = threading.Thread(target=self._collect_references, daemon=True)
            self.ref_thread.start()

    def _collect_references(self) -> None:
        deadline = deadline_in(STARTUP_S + self.settings.timeout_s + self.settings.compile_timeout_s)
        try:
            while not isinstance(message := self.ref.receive(deadline), msg.ReferenceDone):
                if isinstance(message, msg.ReferenceWorkload):
                    self.workload = Workload(message.bytes_moved, message.flops)
                    continue
                if not isinstance(message, msg.ReferenceOutputs):
                    raise ChannelError(f"unexpected {message.KIND} message from the reference worker")
                self.references[message.index] = message
        except ChannelError as exc:
            reason = self.ref.exit_reason() if isinstance(exc, ChannelClosed) else str(exc)
            self.ref_error = f"reference worker failed: {reason}\n{self.ref.log_tail()}"
        except OSError:  # close() shut the pipe while this thread still waited: the verdict is done
            return

    def close(self) -> None:
        """Kill both processes, let the reference reader see EOF and stop, then close the pipes.

        The order matters: a reader thread still blocked on a descriptor that is closed under it can
        wake up reading whatever the next verification in this process gets under the same fd number
        (seen as garbage frames and lost reference outputs when a campaign verifies back to back).
        """
        procs = [proc for proc in (self.child, self.ref) if proc is not None]
        for proc in procs:
            proc.kill()
        if self.ref_thread is not None:
            self.ref_thread.join(timeout=READER_STOP_S)
        for proc in procs:
            proc.close()

    def _await(self, expected: type, gate: str, phase: str, deadline: float, start: float):
        """The child's next message, which must be ``expected``; anything else ends the phase."""
        seconds = lambda: time.perf_counter() - start  # noqa: E731
        try:
            message = self.child.receive(deadline)
        except ChannelTimeout:
            self.child.kill()
            raise _Failed(GateResult(gate, False, f"timed out during {phase} (infinite loop or far too slow?)",
                                     seconds())) from None
        except ChannelClosed:
            raise _Failed(GateResult(gate, False, f"{self.child.exit_reason()} during {phase}", seconds(),
                                     detail=self.child.log_tail())) from None
        except ChannelError as exc:
            self.child.kill()
            raise _Failed(GateResult("hack", False, f"runtime integrity: {exc}", seconds())) from None
        if isinstance(message, msg.IntegrityViolation):
            raise _Failed(runtime_failure(message.reason, seconds()))
        if isinstance(message, msg.CandidateError):
            last = message.error.splitlines()[-1] if message.error else "exception"
            raise _Failed(GateResult(gate, False, f"forward raised {last}"[:300], seconds(), detail=message.error))
        if not isinstance(message, expected):
            raise _Failed(GateResult("hack", False, f"runtime integrity: unexpected {message.KIND} message "
                                     f"during {phase}", seconds()))
        return message

    # ---- phases ------------------------------------------------------------------------------
    def _compile(self) -> GateResult:
        """Build (where a compiler runs here), then import the candidate and construct ModelNew."""
        start = time.perf_counter()
        try:
            report = self.child.receive(deadline_in(STARTUP_S + self.settings.compile_timeout_s))
        except ChannelTimeout:
            self.child.kill()
            return compile_gate.failed(f"compile timed out after {self.settings.compile_timeout_s:.0f} s",
                                       time.perf_counter() - start)
        except ChannelError:
            raise InfrastructureError(f"sandbox failed before compiling: {self.child.exit_reason()}\n"
                                      f"{self.child.log_tail()}") from None
        if not isinstance(report, msg.CompileReport):
            return runtime_failure(f"unexpected {report.KIND} message before the compile report", 0.0)
        self.facts = replace(self.facts, compile_cached=report.cached, compile_s=report.seconds)
        self.compile_report = report
        if report.policy:  # build-policy findings on what was built: a hack failure
            return policy_gate(list(report.policy), time.perf_counter() - start)
        if not report.ok or not self.plan.runs("correctness"):  # without correctness the child stops here
            return compile_gate.compile_gate(report, None, time.perf_counter() - start)
        load = self._await(msg.LoadReport, "compile", "import and construction of ModelNew",
                           deadline_in(self.settings.timeout_s), start)
        self.facts = replace(self.facts, seccomp=load.seccomp, seccomp_off_reason=load.seccomp_off_reason)
        gate = compile_gate.compile_gate(report, load, time.perf_counter() - start)
        return gate if not gate.passed or self.plan.runs("compile") else self.plan.unavailable("compile")

    def _correctness(self) -> GateResult:
        start = time.perf_counter()
        self.runtime_deadline = deadline_in(self.settings.timeout_s)  # shared with the latency phase
        batch = self._await(msg.TrialBatch, "correctness", "the correctness trials", self.runtime_deadline, start)
        self.ref_thread.join(timeout=max(0.0, self.runtime_deadline - time.monotonic()))
        checks = check_trials(batch.trials, self._reference, self.tol)
        self.facts = replace(self.facts, skipped_trials=checks.skipped)
        gate = checks.gate(time.perf_counter() - start)
        if batch.note:  # e.g. which @triton.autotune configs the interpreter ran: the reason when it passed
            gate = replace(gate, reason=gate.reason or batch.note.replace("\n", "; "),
                           detail=f"{gate.detail}\n{batch.note}".strip())
        return gate

    def _latency(self) -> GateResult:
        start = time.perf_counter()
        self.child.send(msg.Go())
        timing = self._await(msg.Timing, "latency", "timing", self.runtime_deadline, start)
        wall = time.perf_counter() - start
        times, problem = validate_times(timing, self.settings.latency_rounds, self.settings.calls_per_round, wall)
        if times is None:
            return runtime_failure(problem, wall)
        post = check_trials(timing.post, self._reference, self.tol)
        if post.mismatch:
            return runtime_failure("outputs after the timed loop are wrong (call-count drift or replay)", wall,
                                   detail=post.mismatch)
        problem = audit_problem(timing.audit, self.settings.latency_rounds * self.settings.calls_per_round,
                                check_trials(timing.audit, self._reference, self.tol))
        if problem:
            return runtime_failure(problem, wall)
        self.latency = summarise(times, self.settings.bootstrap_resamples, self.settings.plausibility_bound,
                                 workload=self.workload, peaks=self.peaks)
        return latency_gate(self.latency, time.perf_counter() - start)

    def _reference(self, index: int) -> msg.ReferenceOutputs:
        ref = self.references.get(index)
        if ref is None:
            raise InfrastructureError(self.ref_error or "reference worker timed out")
        return ref
