"""One verification after the static checks, as the monitor runs it: compile, correctness, latency.

The monitor takes a booted runner and a booted reference worker (verifier.monitor.pool), hands the
reference worker the task and the secret seeds, and the runner the candidate's source; it serves the
runner's build requests, has ModelNew constructed, then drives every call itself (verifier.monitor.
correctness_phase, verifier.monitor.timing). A gate the plan cannot run here becomes "<gate>
unavailable here: ...". The first real failure stops the loop.

What ends a verification, and whose it is:
- a failed build, a raising import, constructor or forward, a runner that dies or hangs: the gate of
  that phase (the candidate's);
- a runner that answers out of protocol, or a runtime integrity problem: the hack gate (the candidate's);
- the reference worker failing, a sandbox process that cannot be started: :class:`InfrastructureError`
  (the machine's: retryable, never a reward).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from dataclasses import dataclass, replace

from kernelbench_npu.spec import TaskSpec
from verifier.backends.base import Backend
from verifier.gate_plan import UNAVAILABLE_HERE, GatePlan, is_unavailable
from verifier.gates.correctness import Tolerance
from verifier.monitor import compile_phase, timing
from verifier.monitor.builds import BuildLimits, BuildService
from verifier.monitor.correctness_phase import IntegrityProblem, Peers, correctness
from verifier.monitor.peers import PeerFailure
from verifier.monitor.pool import POOL, PRIMED_BYTES
from verifier.monitor.reaper import REAPER
from verifier.monitor.reference import Reference, ReferenceFailed, task_key
from verifier.monitor.sites import RunnerSite, RunnerSpec
from verifier.monitor.cpu_sampler import PERIOD_NS, SPARSE_PERIOD_NS, CpuSampler
from verifier.monitor.outside import OutsideWatch
from verifier.monitor.perf_events import PerfUnavailable
from verifier.monitor.watch import Watch, os_threads
from verifier.result import GateResult, LatencyResult, SessionFacts
from verifier.roofline import MachinePeaks
from verifier.sandbox import fast_fill
from verifier.sandbox import messages as msg
from verifier.sandbox.arena import Arena, align
from verifier.sandbox.channel import ChannelError
from verifier.sandbox.inputs_plan import plan as trial_plan
from verifier.seeds import derive_seed, new_master_seed
from verifier.settings import VerifySettings

STARTUP_S = 120.0  # a runner's or reference worker's own start-up on a loaded 2-core machine


class InfrastructureError(RuntimeError):
    """The verifier itself failed (retryable); never the candidate's fault."""


@dataclass(frozen=True)
class SessionResult:
    gates: tuple[GateResult, ...]
    latency: LatencyResult | None
    facts: SessionFacts
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Candidate:
    task: TaskSpec
    source: str
    backend: Backend
    context: dict[str, str]
    task_source: str  # the task as the correctness trials run it here (Backend.correctness_task_source)
    backend_name: str = ""  # as verify() was asked (a registry key, or "package.module:Class")


class Session:
    def __init__(self, candidate: Candidate, settings: VerifySettings, plan: GatePlan, seed: int,
                 peaks: MachinePeaks | None, observer: str) -> None:
        self.c, self.settings, self.plan, self.seed, self.peaks = candidate, settings, plan, seed, peaks
        self.observer = observer
        self.facts = SessionFacts(seed=seed)
        self.latency: LatencyResult | None = None
        self.runner: RunnerSite | None = None
        self.reference: Reference | None = None
        self._sites: list = []
        self._reference_site = None
        self._held_as: tuple = ()  # the pool's key for the reference worker (Pool.keep)
        self._arenas: list[Arena] = []
        self.warnings: tuple[str, ...] = ()
        self.threads_before = 0  # the runner's OS threads before the candidate's code (the thread budget's base)
        self.own_namespaces: tuple[str, ...] = ()  # custom operator namespaces the candidate's builds define
        self.outside: OutsideWatch | None = None
        self._imported = False  # the runner imported the candidate and built ModelNew (the compile phase)

    # ---- the gate loop -----------------------------------------------------------------------------
    def run(self, hack: GateResult, through: str = "latency") -> SessionResult:
        """The gates after the static one, in order, up to ``through``; a session run through an earlier
        gate keeps its processes for the caller (verifier.compare times several together), who closes it."""
        gates, ended = [hack], False
        phases = (("compile", self._compile), ("correctness", self._correctness), ("latency", self._latency))
        try:
            self._start()
            for name, phase in phases[:[n for n, _ in phases].index(through) + 1]:
                if name != "compile" and not self.plan.runs(name):
                    gates.append(self.plan.unavailable(name))
                    continue
                gate = phase()
                if gate.name == "hack":
                    gates[0] = gate
                    break
                gates.append(gate)
                if not gate.passed and not is_unavailable(gate):
                    break
            ended = True
        except ReferenceFailed as exc:
            raise InfrastructureError(str(exc)) from None
        finally:
            if through == "latency":
                self.close(reuse=ended)
        last = gates[-1]
        return SessionResult(tuple(gates), self.latency if last.name == "latency" and last.passed else None,
                             self.facts, self.warnings)

    def _start(self) -> None:
        s, size = self.settings, self.settings.pool_size
        deadline = time.monotonic() + STARTUP_S
        device = self.c.backend.device()
        if self.plan.runs("correctness"):
            self._held_as = reference_key(self.c, s)
            start = reference_start(self.c, s, self.seed)
            primed = POOL.take_primed(self._held_as, start)
            site = primed.site if primed is not None else POOL.reference(*self._held_as[:3], size, self._held_as[3])
            self._sites.append(site)
            self._reference_site = site
            if primed is not None:
                self.reference = primed.reference
                self.facts = replace(self.facts, reference_primed=True)
            else:
                try:
                    site.wait_ready(deadline)
                except ChannelError as exc:
                    raise InfrastructureError(f"the reference worker did not start: {exc}; "
                                              f"{site.process.log_tail()}") from None
                self.reference = Reference(site.process, start, deadline + s.timeout_s + s.compile_timeout_s)
            if site.ready is not None:
                drawn = fast_fill.drawn_with(site.ready.draw, site.fill_why)
                self.facts = replace(self.facts, timed_inputs_drawn=drawn)
        backend = self.c.backend
        spec = RunnerSpec(self.c.backend_name or backend.name, s.threads, s.memory_limit_mb, s.file_size_limit_mb, backend.runner_python(),
                          self.observer, tuple(backend.sandbox_paths()), backend.device() != "cpu", backend.device())
        self.runner = POOL.runner(spec, size)
        self._sites.append(self.runner)
        try:
            ready = self.runner.wait_ready(deadline)
        except ChannelError as exc:  # a runner that cannot boot is the machine's problem: no candidate code ran
            raise InfrastructureError(f"the runner did not start: {exc}; {self.runner.process.log_tail()}") from None
        POOL.replenish(spec, s.threads, s.memory_limit_mb, device != "cpu", size)
        isolation = self.runner.process.isolation()
        self.facts = replace(self.facts, seccomp=ready.seccomp, seccomp_off_reason=ready.seccomp_off,
                             isolation=isolation.mechanism)
        self.warnings = isolation.warnings + (() if self.observer else (
            "runtime observation in Python only: the native ATen observer could not be built",))

    # ---- phases --------------------------------------------------------------------------------------
    def _compile(self) -> GateResult:
        """The compile phase's gate. A build this machine cannot do (its toolchain is missing, or went
        missing since the verification began) is "compile unavailable here", the machine's outcome; when
        it left nothing imported, the later gates cannot run either."""
        self._imported = False
        gate = self._build_and_import()
        if gate.name == "compile" and not gate.passed and not self.plan.runs("compile"):
            gate = replace(self.plan.unavailable("compile"), seconds=gate.seconds, detail=gate.detail)
        if gate.name == "compile" and is_unavailable(gate) and not self._imported:
            self.plan = self.plan.without("compile", _note(gate))
        return gate

    def _build_and_import(self) -> GateResult:
        start, s = time.perf_counter(), self.settings
        limits = BuildLimits(s.threads, s.memory_limit_mb, s.file_size_limit_mb, self.c.task.dtype, s.disabled_checks)
        state = compile_phase.CompileState(BuildService(self.c.backend, self.c.context, s.cache_dir, self.runner.libs,
                                                        limits))
        runner, construct = self.runner.process, self.plan.runs("correctness")
        try:  # the backend's own compile needs its toolchain: not run where the plan says it is missing
            built = compile_phase.run_own_jobs(state, self.c.backend, self.c.source, self.c.context,
                                               s.compile_timeout_s) if self.plan.runs("compile") else {}
            failed = state.gate_or_none(time.perf_counter() - start)
            if failed is not None:
                return failed
            why = self.c.backend.unavailable_past_import(self.c.source)
            if why:  # the monitor's own finding on the source: the runner is not asked (nor believed)
                self.plan = self.plan.without("correctness", why)
                gate = GateResult("compile", True, "compiled; the candidate cannot run past its import here",
                                  time.perf_counter() - start)
                return gate if self.plan.runs("compile") else self.plan.unavailable("compile")
            context = {**self.c.context, "builds": json.dumps(built)}
            self.threads_before = os_threads(runner.pid())
            runner.send(msg.Start(self.c.source, self.c.task.dtype, derive_seed(self.seed, "init"), construct,
                                  construct, context))
            imported = compile_phase.import_candidate(runner, state, start, s.compile_timeout_s, s.timeout_s)
            if isinstance(imported, GateResult):
                return imported
            own = len(state.outcomes)  # builds so far (own jobs, the import's); construct may add more
            if not construct:
                runner.send(msg.Stop())
            failed = compile_phase.construct(runner, self.reference, state, start, s.compile_timeout_s, s.timeout_s) \
                if construct else None
            self._record_builds(state)
            if failed is None and self.c.backend.requires_native and imported.builds == 0 \
                    and (not construct or len(state.outcomes) == own):  # built at import, or in ModelNew()
                reason = getattr(self.c.backend, "no_native", compile_phase.NO_NATIVE)
                return GateResult("compile", False, reason, time.perf_counter() - start)
        except PeerFailure as failure:
            return compile_phase.peer_failure_gate("compile", failure, time.perf_counter() - start)
        if failed is not None:
            return failed
        self._imported = True
        gate = state.passed(time.perf_counter() - start)
        return gate if self.plan.runs("compile") else self.plan.unavailable("compile")

    def _record_builds(self, state: compile_phase.CompileState) -> None:
        built = [o for o in state.outcomes if o.ok]
        self.facts = replace(self.facts, compile_cached=bool(built) and all(o.cached for o in built),
                             compile_s=sum(o.seconds for o in built))
        self.own_namespaces = tuple(dict.fromkeys(ns for o in built for ns in o.namespaces))

    def _peers(self) -> Peers:
        s = self.settings
        self.reference.wait_done(time.monotonic() + max(STARTUP_S, 4 * s.timeout_s))
        out_start = align(self.reference.input_bytes())
        size = out_start + align(self.reference.output_bytes() * 2 + 4096)
        runner_arena, reference_arena = Arena.create(size), Arena.create(size)
        self._arenas += [runner_arena, reference_arena]
        self.reference.attach(reference_arena)
        self.runner.process.send(msg.Attach(size), fds=(runner_arena.fd,))
        pid = self.runner.process.pid()
        self.runner.page.allow_namespaces(self.own_namespaces)  # before the first call: other namespaces are torch's
        watch = Watch(self.runner.page, pid, s.threads, self.c.backend.must_launch, self.threads_before)
        self.outside = self._outside(pid)
        return Peers(self.runner.process, runner_arena, self.reference, reference_arena, out_start, watch,
                     self.c.backend.staged_calls(), call_s=s.timeout_s, budget_s=s.timeout_s,
                     machine_s=max(STARTUP_S, 4 * s.timeout_s), arenas=self._arenas, outside=self.outside)

    def _outside(self, pid: int) -> OutsideWatch | None:
        """The runner's CPU sampler (verifier.monitor.outside), opened once ModelNew is constructed; None,
        with a warning, where the kernel will not open it."""
        try:
            observer = (str(Path(self.observer).resolve()),) if self.observer else ()
            judge = self.c.backend.cpu_kernels  # elsewhere the samples judge threads and sampling, sparsely
            sampler = CpuSampler(pid, str(self.runner.libs), PERIOD_NS if judge else SPARSE_PERIOD_NS, observer)
            return OutsideWatch(sampler, self.threads_before, self.settings.threads, judge)
        except PerfUnavailable as exc:
            self.warnings += (f"outside observation unavailable ({exc.strerror or exc}): whether forward computes "
                              "with torch rests on the in-process observer alone",)
            return None

    def _correctness(self) -> GateResult:
        start, s = time.perf_counter(), self.settings
        tol = Tolerance(self.c.task.atol, self.c.task.rtol, s.trivial_margin)
        try:
            self.peers = self._peers()
            gate, skipped = correctness(self.peers, trial_plan(s.correctness_trials), tol, start)
        except PeerFailure as failure:
            return compile_phase.peer_failure_gate("correctness", failure, time.perf_counter() - start)
        except IntegrityProblem as problem:
            return _integrity(str(problem), start)
        self.facts = replace(self.facts, skipped_trials=skipped)
        return gate

    def _latency(self) -> GateResult:
        start, s = time.perf_counter(), self.settings
        tol = Tolerance(self.c.task.atol, self.c.task.rtol, s.trivial_margin)
        with POOL.paused():  # no spare's start-up shares the cores with a timed call
            try:
                gate, self.latency = timing.latency(self.peers, trial_plan(s.correctness_trials), timing.plan_of(s),
                                                    tol, self.seed, self.reference.workload, self.peaks,
                                                    time.perf_counter() - start)
            except PeerFailure as failure:
                return compile_phase.peer_failure_gate("latency", failure, time.perf_counter() - start)
            except IntegrityProblem as problem:
                return _integrity(str(problem), start)
        return gate

    # ---- the end -------------------------------------------------------------------------------------
    def close(self, reuse: bool = False) -> None:
        """Every process and arena of the verification closed; ``reuse``: the verification ran to its end,
        so its reference worker, if it released cleanly, is held for the next one of the same task."""
        if self.outside is not None:
            self.outside.close()
            self.outside = None
        for site in self._sites:
            if reuse and site is self._reference_site and self.reference is not None and self.reference.release():
                POOL.keep(site, self._held_as, self._next if self.reference.held_bytes() <= PRIMED_BYTES else None)
                continue
            if site is self._reference_site and self.reference is not None:
                self.reference.detach()
            site.close()
        REAPER.later([arena.close for arena in self._arenas])  # freeing their pages is no part of the verdict
        self._sites, self._arenas = [], []


    def _next(self) -> tuple[int, bool, msg.RefStart]:
        """The master seed of this task's next verification as prepare() will choose it (the settings'
        fixed seed, else a fresh secret one: then True), and its RefStart (verifier.monitor.pool: priming)."""
        fixed = self.settings.seed
        seed = fixed if fixed is not None else new_master_seed()
        return seed, fixed is None, reference_start(self.c, self.settings, seed)


def reference_key(c: Candidate, s: VerifySettings) -> tuple[int, int, bool, str]:
    """Which held reference worker can serve ``c``'s verification (verifier.monitor.pool)."""
    return s.threads, s.memory_limit_mb, c.backend.device() != "cpu", task_key(c.task_source, c.task.dtype)


def reference_start(c: Candidate, s: VerifySettings, seed: int) -> msg.RefStart:
    """What the reference worker is handed for ``c``'s verification under master seed ``seed``."""
    return msg.RefStart(c.task_source, c.task.dtype, derive_seed(seed, "init"), derive_seed(seed, "inputs"),
                        s.correctness_trials, s.threads, c.backend.device())


def _note(gate: GateResult) -> str:
    """What follows "<gate> unavailable here: " in an unavailable gate's reason."""
    return gate.reason.split(f"{UNAVAILABLE_HERE}: ", 1)[-1]


def _integrity(reason: str, start: float) -> GateResult:
    return GateResult("hack", False, f"runtime integrity: {reason}"[:300], time.perf_counter() - start, detail=reason)

