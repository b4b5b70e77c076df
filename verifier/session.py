"""One verification after the static checks: drives the sandbox child and the reference worker
through the compile, correctness and latency phases and turns their reports into gate results.

Which phases run comes from the :class:`~verifier.gate_plan.GatePlan`: a gate the backend cannot
run here is appended as "<gate> unavailable here: ..." (failed) and the phases after it that can
run still do; the reference worker starts only when correctness runs.

Phase deadlines: compile gets ``compile_timeout_s`` (plus interpreter start-up), everything after
shares ``timeout_s``. A child that dies or stops answering fails the gate of the phase it was in
with its exit reason; a reference worker that fails is an infrastructure error.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from kernelbench_npu.spec import TaskSpec
from verifier.gate_plan import GatePlan
from verifier.gates import compile as compile_gate_mod
from verifier.gates.correctness import SKIPPED, Tolerance, TrialOutputs, compare_trial, correctness_gate
from verifier.gates.hack import runtime_failure
from verifier.gates.hack_build import policy_gate
from verifier.gates.latency import latency_gate, summarise, validate_times
from verifier.result import GateResult, LatencyResult
from verifier.sandbox.channel import ChannelClosed, ChannelError, ChannelTimeout, Message
from verifier.sandbox.runner import SandboxProcess, deadline_in
from verifier.settings import VerifySettings

READER_STOP_S = 10.0  # the reader ends within ms of EOF; this only bounds a pathology
STARTUP_S = 60.0  # interpreter + torch import on a loaded 2-core machine


class InfrastructureError(RuntimeError):
    """The verifier itself failed (retryable); never the candidate's fault."""


class _Stop(Exception):
    """A gate failed: carries the gates so far."""

    def __init__(self, gate: GateResult) -> None:
        self.gate = gate


class Session:
    def __init__(self, task: TaskSpec, candidate_source: str, backend: str, settings: VerifySettings,
                 workdir: Path, init_seed: int, input_seed: int, nonces: tuple[str, str],
                 plan: GatePlan | None = None, task_source: str | None = None) -> None:
        self.task, self.settings, self.workdir = task, settings, workdir
        self.plan = plan or GatePlan(frozenset(("hack", "compile", "correctness", "latency")))
        common = {"task_source": task.source if task_source is None else task_source, "init_seed": init_seed, "input_seed": input_seed,
                  "correctness_trials": settings.correctness_trials, "threads": settings.threads}
        self.ref_cfg = {**common, "nonce": nonces[0]}
        self.child_cfg = {**common, "nonce": nonces[1], "candidate_source": candidate_source, "backend": backend,
                          "gates": sorted(self.plan.runnable), "cache_dir": str(settings.cache_dir), "atol": task.atol, "rtol": task.rtol,
                          "disabled_checks": list(settings.disabled_checks),
                          **{k: getattr(settings, k) for k in (
                              "compile_timeout_s", "timeout_s", "latency_rounds", "calls_per_round",
                              "warmup_calls", "memory_limit_mb", "file_size_limit_mb")}}
        self.tol = Tolerance(task.atol, task.rtol, settings.trivial_margin)
        self.child: SandboxProcess | None = None
        self.ref: SandboxProcess | None = None
        self.ref_thread: threading.Thread | None = None
        self.references: dict[int, TrialOutputs] = {}
        self.ref_error = ""
        self.extra: dict = {}
        self.compile_report: dict = {}  # the child's build report (artifact hashes for the compile cache)

    # ---- processes ---------------------------------------------------------------------------
    def start(self) -> None:
        self.settings.cache_dir.mkdir(parents=True, exist_ok=True)
        threads = self.settings.threads
        if self.plan.runs("correctness"):
            self.ref = SandboxProcess("verifier.sandbox.reference_worker", self.ref_cfg, self.workdir / "reference", threads)
        self.child = SandboxProcess("verifier.sandbox.child", self.child_cfg, self.workdir / "child", threads)
        if self.ref is not None:
            self.ref_thread = threading.Thread(target=self._collect_references, daemon=True)
            self.ref_thread.start()

    def _collect_references(self) -> None:
        deadline = deadline_in(STARTUP_S + self.settings.timeout_s + self.settings.compile_timeout_s)
        try:
            while True:
                msg = self.ref.read(deadline)
                if msg.kind == "done":
                    return
                h = msg.header
                self.references[int(h["index"])] = TrialOutputs(int(h["index"]), "", tuple(h["dtypes"]),
                                                                tuple(msg.arrays), tuple(h.get("trivial", ())))
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

    # ---- phases ------------------------------------------------------------------------------
    def run(self, hack: GateResult) -> tuple[list[GateResult], LatencyResult | None, dict]:
        self.start()
        gates: list[GateResult] = [hack]
        try:
            gates.append(self._compile_phase())
            if not self.plan.runs("correctness"):
                gates += [self.plan.unavailable("correctness"), self.plan.unavailable("latency")]
                return gates, None, self.extra
            runtime_deadline = deadline_in(self.settings.timeout_s)
            gates.append(self._correctness_phase(runtime_deadline))
            if not self.plan.runs("latency"):
                self.child.send({"kind": "stop"})
                return gates + [self.plan.unavailable("latency")], None, self.extra
            latency_gate_result, latency = self._latency_phase(runtime_deadline)
            gates.append(latency_gate_result)
            return gates, latency, self.extra
        except _Stop as stop:
            if stop.gate.name == "hack":  # a runtime integrity violation replaces the static verdict
                gates[0] = stop.gate
            else:
                gates.append(stop.gate)
            return gates, None, self.extra

    def _read(self, deadline: float, gate: str, phase: str, start: float) -> Message:
        try:
            return self.child.read(deadline)
        except ChannelTimeout:
            self.child.kill()
            raise _Stop(GateResult(gate, False, f"timed out during {phase} (infinite loop or far too slow?)",
                                   time.perf_counter() - start)) from None
        except ChannelClosed:
            reason = self.child.exit_reason()
            raise _Stop(GateResult(gate, False, f"{reason} during {phase}", time.perf_counter() - start,
                                   detail=self.child.log_tail())) from None
        except ChannelError as exc:
            self.child.kill()
            raise _Stop(GateResult("hack", False, f"runtime integrity: {exc}", time.perf_counter() - start)) from None

    def _expect(self, msg: Message, gate: str, start: float) -> Message:
        """Turn integrity/error reports into failed gates."""
        if msg.kind == "integrity":
            raise _Stop(runtime_failure(GateResult("hack", True, "", 0.0), str(msg.header.get("reason", "")),
                                        str(msg.header.get("reason", "")), time.perf_counter() - start))
        if msg.kind == "error":
            error = str(msg.header.get("error", ""))
            last = error.splitlines()[-1] if error else "exception"
            raise _Stop(GateResult(gate, False, f"forward raised {last}"[:300], time.perf_counter() - start, detail=error))
        return msg

    def _compile_phase(self) -> GateResult:
        start = time.perf_counter()
        try:
            report = self.child.read(deadline_in(STARTUP_S + self.settings.compile_timeout_s))
        except ChannelTimeout:
            self.child.kill()
            raise _Stop(compile_gate_mod.failed(f"compile timed out after {self.settings.compile_timeout_s:.0f} s",
                                                time.perf_counter() - start)) from None
        except ChannelError:
            raise InfrastructureError(f"sandbox failed before compiling: {self.child.exit_reason()}\n"
                                      f"{self.child.log_tail()}") from None
        self.compile_report = report.header
        self.extra["compile_cached"] = bool(report.header.get("cached"))
        self.extra["compile_s"] = float(report.header.get("seconds", 0.0))
        if report.header.get("policy"):  # build-policy findings (verifier.gates.hack_build): a hack failure
            raise _Stop(policy_gate(list(report.header["policy"]), time.perf_counter() - start))
        if not report.header.get("ok"):
            raise _Stop(compile_gate_mod.compile_gate(report.header, None, time.perf_counter() - start))
        if not self.plan.runs("correctness"):  # the child stops after compiling: nothing to load here
            return compile_gate_mod.compile_gate(report.header, None, time.perf_counter() - start)
        load = self._read(deadline_in(self.settings.timeout_s), "compile", "import and construction of ModelNew", start)
        gate = compile_gate_mod.compile_gate(report.header, load.header, time.perf_counter() - start)
        self.extra["seccomp"] = bool(load.header.get("seccomp"))
        if load.header.get("seccomp_off_reason"):
            self.extra["seccomp_off_reason"] = str(load.header["seccomp_off_reason"])
        if not gate.passed:
            raise _Stop(gate)
        return gate if self.plan.runs("compile") else self.plan.unavailable("compile")

    def _correctness_phase(self, deadline: float) -> GateResult:
        start = time.perf_counter()
        msg = self._expect(self._read(deadline, "correctness", "the correctness trials", start), "correctness", start)
        candidates = self._trial_outputs(msg)
        self.ref_thread.join(timeout=max(0.0, deadline - time.monotonic()))
        checked = skipped = 0
        for cand in candidates:
            ref = self._reference(cand.index)
            outcome = compare_trial(cand, TrialOutputs(cand.index, cand.distribution, ref.dtypes, ref.arrays, ref.trivial), self.tol)
            if outcome == SKIPPED:
                skipped += 1
            elif outcome:
                self.child.send({"kind": "stop"})
                kind = "perturbed-input probe" if cand.distribution == "probe" else None
                text = outcome if kind is None else f"{outcome} (output did not follow an in-place change of the input: replayed or cached result)"
                raise _Stop(correctness_gate(text, time.perf_counter() - start, checked, skipped))
            else:
                checked += 1
        self.extra["skipped_trials"] = skipped
        return correctness_gate(None, time.perf_counter() - start, checked, skipped)

    def _reference(self, index: int) -> TrialOutputs:
        ref = self.references.get(index)
        if ref is None:
            raise InfrastructureError(self.ref_error or "reference worker timed out")
        return ref

    def _trial_outputs(self, msg: Message) -> list[TrialOutputs]:
        outputs, arrays = [], list(msg.arrays)
        try:
            for meta in msg.header["trials"]:
                count = len(meta["outputs"])
                taken, arrays = arrays[:count], arrays[count:]
                distribution = "probe" if meta["kind"] == "perturb" else str(meta["distribution"])
                outputs.append(TrialOutputs(int(meta["index"]), distribution,
                                            tuple(str(o["dtype"]) for o in meta["outputs"]), tuple(taken)))
        except (KeyError, TypeError, ValueError):
            raise _Stop(GateResult("hack", False, "runtime integrity: malformed result frame", 0.0)) from None
        return outputs

    def _latency_phase(self, deadline: float) -> tuple[GateResult, LatencyResult]:
        start = time.perf_counter()
        self.child.send({"kind": "go"})
        msg = self._expect(self._read(deadline, "latency", "timing", start), "latency", start)
        wall = time.perf_counter() - start
        times, problem = validate_times(msg.header, self.settings.latency_rounds, wall)
        if times is None:
            raise _Stop(GateResult("hack", False, f"runtime integrity: {problem}", wall))
        for cand in self._trial_outputs(msg):
            ref = self._reference(cand.index)
            outcome = compare_trial(cand, TrialOutputs(cand.index, cand.distribution, ref.dtypes, ref.arrays, ref.trivial), self.tol)
            if outcome and outcome != SKIPPED:
                raise _Stop(GateResult("hack", False, "runtime integrity: outputs after the timed loop are wrong "
                                       "(call-count drift or replay)", wall, detail=outcome))
        result = summarise(times, self.settings.bootstrap_resamples, self.settings.plausibility_bound)
        return latency_gate(result, time.perf_counter() - start), result
