"""The interface every backend implements (cpu, cuda, triton, ascendc, triton-ascend).

Monitor side (trusted, never imports candidate code): availability, scaffold, seed items, precheck,
the build jobs of recorded loader calls and their checks. Runner side (inside the candidate's
confined process): loaders, load, device, synchronize. The gates are backend-agnostic and call these;
``probe_peaks`` runs in a subprocess of its own (verifier.machine_peaks).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from kernelbench_npu.spec import TaskSpec
from verifier.roofline import MachinePeaks


@dataclass(frozen=True)
class GateCapability:
    """What one gate can do on this machine, e.g. ("latency", False, "no GPU")."""

    gate: str
    available: bool
    note: str


@dataclass(frozen=True)
class Availability:
    backend: str
    available: bool  # can this backend pass a candidate here (every gate runs for real)?
    reason: str  # why not, when unavailable; a short description of the toolchain otherwise
    gates: tuple[GateCapability, ...] = ()

    def line(self) -> str:
        head = f"{self.backend}: available" if self.available else f"{self.backend}: unavailable: {self.reason}"
        caps = ", ".join(f"{c.gate} {'yes' if c.available else 'no'}" + (f" ({c.note})" if c.note else "")
                         for c in self.gates)
        return f"{head}; {caps}" if caps else head


@dataclass(frozen=True)
class SeedItem:
    """Backend knowledge loaded into a new memory lake as api_template items."""

    title: str
    body: str
    code: str = ""
    category: str = "general"


@dataclass(frozen=True)
class BuiltUnit:
    """One unit the compile gate built, as the build-policy checks see it (verifier.gates.hack_build):
    the candidate's own lines after preprocessing, the files the preprocessor read, the objects."""

    label: str  # names the source for the LLM, e.g. "load_c source (line 12)"
    preprocessed: str = ""  # user-context lines of the candidate after preprocessing
    includes: tuple[str, ...] = ()
    binaries: tuple[str, ...] = ()  # built objects (.so / .o) whose undefined symbols are checked
    line_offset: int = 0  # preprocessed line - line_offset = line in the candidate's source string
    strict_symbols: bool = True  # False: refuse only known-dangerous symbols (vendor runtimes not listed)
    loader: str = ""  # "load_c" | "extension" | "vendor": which symbols the object may reference
    language: str = ""  # "c++" | "cuda"


@dataclass(frozen=True)
class BuildJob:
    """One build the monitor runs in the confined builder: a loader call the runner recorded (its
    actual sources and flags, validated), or a compile the backend asks for itself. The monitor writes
    ``files`` into a fresh build directory, runs ``argv`` there (a ``python -m`` module of this project
    when ``python``), caches ``artifact`` and ``records`` under ``key`` (the hash of everything the build
    reads), checks them (verifier.gates.hack_build) and, for a loader call, places ``artifact`` where
    the runner can load it and nothing else can write."""

    key: str
    label: str  # names the source for the LLM, e.g. "load_c source"
    files: tuple[tuple[str, str], ...]  # (relative path, text)
    argv: tuple[str, ...]
    artifact: str = ""  # relative path of what the runner loads ("": nothing)
    records: tuple[str, ...] = ()  # relative paths kept with it (preprocessed text for the policy checks)
    note: str = ""  # one line for the compile gate (e.g. flags dropped)
    toolchains: tuple[str, ...] = ()  # directories the builder may read and execute besides the system's
    python: bool = False
    sources: tuple[tuple[str, str], ...] = ()  # (the candidate's native text, "c++" | "cuda"): checked before the build
    env: tuple[tuple[str, str], ...] = ()  # environment variables the build needs beyond the sandbox's own


class BuildRejected(Exception):
    """The monitor will not build this loader call; ``gate`` is "compile" (a format error the LLM can
    fix), "hack" (a source the static policy refuses) or "machine" (:class:`ToolchainMissing`);
    ``machine``: the monitor found that this machine cannot build it (e.g. headers it lacks), with a
    reason the monitor composed: either way the compile gate is "compile unavailable here: <reason>"."""

    def __init__(self, reason: str, gate: str = "compile", machine: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.gate, self.machine = reason, gate, machine


class ToolchainMissing(BuildRejected):
    """The build needs a toolchain this machine lacks (or lost since the verification began): never
    the candidate's fault. The compile gate becomes "compile unavailable here: <reason>", so the
    outcome is the machine's (evokernel.agent.attribution). ``reason`` names the toolchain and the
    command that installs it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, gate="machine")


@dataclass(frozen=True)
class CompileOutcome:
    ok: bool
    diagnostics: str  # trimmed compiler output: what the LLM sees on failure
    seconds: float
    cached: bool = False
    artifacts: tuple[str, ...] = ()  # built files or directories inside the build dir (cache entries)
    units: tuple[BuiltUnit, ...] = ()  # what the build-policy checks read (empty: none apply)
    note: str = ""  # one line: the passing compile gate's reason (e.g. the level a compile reached)


class Backend(ABC):
    """Monitor side (trusted, never imports candidate code): availability, scaffold, seed items,
    precheck, build jobs and their checks. Runner side (the candidate's confined process, see
    verifier.sandbox.candidate_runner): configure, before_sandbox, install_loaders, load, device,
    synchronize. Timing and every judgement belong to the monitor, never to a backend."""

    name: ClassVar[str]
    fence_language: ClassVar[str] = "python"  # code-fence language the LLM must answer with
    static_imports: ClassVar[frozenset[str]] = frozenset()  # kernel-language modules the hack gate allows
    requires_native: ClassVar[bool] = False  # a candidate must build native code (cpu: "no native code")
    must_launch: ClassVar[bool] = True  # every forward must call its native code or launch a kernel
    # the kernel runs as native code on this CPU, so where forward's CPU time went decides whether torch computed
    # (verifier.monitor.outside); False where an interpreter runs it here (its numpy is the kernel's work) or a
    # device does (the CPU sees only launches)
    cpu_kernels: ClassVar[bool] = False

    @abstractmethod
    def availability(self) -> Availability:
        """Whether this backend can run here, with the reason and per-gate capabilities."""

    @abstractmethod
    def scaffold(self, task: TaskSpec | None = None) -> str:
        """Prompt scaffold: candidate format, the contract, API notes and a complete worked example."""

    def toolchain_problem(self) -> str:
        """Why this machine lacks the toolchain this backend's compile gate needs ("" when it has it):
        one line naming the toolchain and the command that installs it. Default: the note of the
        compile gate's capability when :meth:`availability` says it cannot run here."""
        found = next((g for g in self.availability().gates if g.gate == "compile"), None)
        return found.note if found is not None and not found.available else ""

    def availability_for(self, candidate_source: str, availability: Availability) -> Availability:
        """Monitor side, after the static checks: the machine's availability narrowed for this candidate
        (e.g. a language feature the local interpreter cannot run). Default: unchanged."""
        return availability

    def unavailable_past_import(self, candidate_source: str) -> str:
        """Monitor side, from the candidate's source alone: why this machine cannot run the candidate past its
        import ("" when it can; e.g. triton-ascend's Ascend-only language under the interpreter). The compile
        gate then ends with the builds the backend asks for itself, and correctness is unavailable here with
        this reason: composed by the monitor, never read from what the runner said."""
        return ""

    def compile_context(self, task: TaskSpec) -> dict[str, str]:
        """Monitor side: what the runner-side methods and the build jobs need beyond the candidate,
        resolved where the user's environment is visible (sandbox processes run with a private HOME and
        a clean environment), e.g. the task as built or a toolchain directory. JSON strings. Default: {}."""
        return {}

    def configure(self, context: dict[str, str]) -> None:
        """Runner side, before anything else: receives :meth:`compile_context`'s dict."""

    def seed_items(self) -> tuple[SeedItem, ...]:
        """api_template items for a new lake (default: the scaffold as one item)."""
        return (SeedItem(title=f"{self.name} backend scaffold", body=self.scaffold(None)),)

    def precheck(self, candidate_source: str) -> str:
        """Monitor-side compile checks that need no toolchain (syntax); a non-empty string is the
        compile gate's failure reason and saves starting a process. Default: Python syntax."""
        try:
            compile(candidate_source, "candidate.py", "exec")
        except SyntaxError as exc:
            return f"SyntaxError: line {exc.lineno}: {exc.msg}"
        except ValueError as exc:  # NUL bytes, lone surrogates
            return f"the candidate is not valid Python source: {exc}"
        return ""

    # ---- builds (monitor side) -------------------------------------------------------------------
    def build_job(self, loader: str, args: dict, context: dict[str, str]) -> BuildJob:
        """The build for one loader call the runner recorded (its actual arguments, as data): validate
        them (:class:`BuildRejected` with the reason), keep only allowed flags, key it. Default: this
        backend has no native loader."""
        raise BuildRejected(f"{loader}: this backend builds no native code through a loader")

    def compile_jobs(self, candidate_source: str, context: dict[str, str]) -> tuple[BuildJob, ...]:
        """Builds the monitor starts itself for this candidate (not triggered by a loader call), e.g.
        triton's ahead-of-time compile. Default: none."""
        return ()

    def built_units(self, job: BuildJob, records: dict[str, bytes], library: Path | None) -> tuple[BuiltUnit, ...]:
        """What the build-policy checks read of a finished build (preprocessed text, includes, the
        object whose symbols are checked). Default: none."""
        return ()

    def judge_build(self, job: BuildJob, code: int, output: str, records: dict[str, bytes],
                    context: dict[str, str]) -> tuple[bool, str]:
        """(passed, text) of a finished build (``context``: the one its job was made with): the note of a
        passing one, the compile gate's feedback for a failing one. Default: the exit status decides (:meth:`build_success`, :meth:`build_failure`)."""
        return (True, self.build_success(job, output)) if code == 0 else (False, self.build_failure(job, output))

    def build_failure(self, job: BuildJob, output: str) -> str:
        """The compile gate's feedback for a failed build (trimmed compiler output)."""
        from verifier.backends.toolrun import trim_diagnostics

        return trim_diagnostics(output)

    def build_success(self, job: BuildJob, output: str) -> str:
        """A passing build's one-line note (e.g. registers per kernel). Default: none."""
        return ""

    def correctness_task_source(self, task_source: str) -> str:
        """The task source the correctness trials (reference and candidate alike) run on here.
        Default: the task as built; the triton backends shrink it for the interpreter."""
        return task_source

    def sandbox_paths(self) -> tuple[str, ...]:
        """Toolchain directories the builder and the runner may read and execute (compilers, headers,
        runtime libraries outside /usr and the Python environment). Default: none."""
        return ()

    def runner_python(self) -> str:
        """The interpreter the runner uses (a toolchain's own environment where the backend's compiler
        clashes with the main one). Default: this one."""
        import sys

        return sys.executable

    # ---- runner side -----------------------------------------------------------------------------
    def before_sandbox(self) -> None:
        """Runner side, after configure and before the seccomp filter: process setup that the
        candidate's import needs (environment flags, interpreter mode)."""

    def exec_after_load(self) -> str:
        """Non-empty (the reason) when this backend must start processes after the candidate is loaded,
        so the runner skips the no-exec seccomp filter and the verdict says so. Default "" (filter on);
        only triton on a GPU (JIT compiles at first launch) overrides it."""
        return ""

    def install_loaders(self, client: Any) -> None:
        """Runner side, before the candidate is imported: route the backend's native loaders through
        ``client`` (verifier.sandbox.loaders.BuildClient). Default: none."""

    @abstractmethod
    def load(self, candidate_source: str, workdir: str) -> type:
        """Import the candidate in a fresh namespace and return its ModelNew class (runner side)."""

    def runtime_note(self) -> str:
        """Runner side: what stood in for hardware-only machinery (triton's interpreter: which
        ``@triton.autotune`` configs ran). Default ""."""
        return ""

    def device(self) -> str:
        """The torch device the runner places inputs and models on and expects outputs on."""
        return "cpu"

    def staged_calls(self) -> bool:
        """Every timed window holds one call, the device's cache flushed before it in the untimed Stage
        (verifier.sandbox.serve): on a device. On the CPU a window holds many calls."""
        return self.device() != "cpu"

    def synchronize(self) -> None:
        """Wait for all queued device work (no-op on CPU); the runner calls it after every forward."""

    def probe_peaks(self, threads: int) -> MachinePeaks | None:
        """This machine's memory bandwidth and compute peak for the roofline (verifier.roofline),
        measured in a subprocess of its own once per machine. Default: a torch triad and matmul on
        ``device()`` (verifier.backends.device_probe); None where there is no device to measure."""
        if self.device() == "cpu":
            return None
        from verifier.backends import device_probe

        return device_probe.probe(self.name, self.device(), self.synchronize, threads)
