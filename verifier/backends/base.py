"""The interface every backend implements (cpu, cuda, triton, ascendc).

Parent side (trusted, never imports candidate code): ``availability``, ``scaffold``,
``seed_items``, ``static_policy``; ``probe_peaks`` runs in its own subprocess (verifier.machine_peaks). Child side (inside the sandbox): ``compile``, ``load``,
``device``, ``synchronize``, ``timer``. The gates are backend-agnostic and call these.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar

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
    name: ClassVar[str]
    fence_language: ClassVar[str] = "python"  # code-fence language the LLM must answer with
    static_imports: ClassVar[frozenset[str]] = frozenset()  # kernel-language modules the hack gate allows

    @abstractmethod
    def availability(self) -> Availability:
        """Whether this backend can run here, with the reason and per-gate capabilities."""

    @abstractmethod
    def scaffold(self, task: TaskSpec | None = None) -> str:
        """Prompt scaffold: candidate format, the contract, API notes and a complete worked example."""

    def availability_for(self, candidate_source: str, availability: Availability) -> Availability:
        """Parent side, after the static checks: the machine's availability narrowed for this candidate
        (e.g. a language feature the local interpreter cannot run). Default: unchanged."""
        return availability

    def compile_context(self, task: TaskSpec) -> dict[str, str]:
        """Parent side: what the child-side methods need beyond the candidate, resolved where the
        user's environment is visible (the sandbox child runs with a private HOME and a clean
        environment), e.g. the task as built or a toolchain directory. JSON strings. Default: {}."""
        return {}

    def configure(self, context: dict[str, str]) -> None:
        """Child side, before anything else: receives :meth:`compile_context`'s dict."""

    def seed_items(self) -> tuple[SeedItem, ...]:
        """api_template items for a new lake (default: the scaffold as one item)."""
        return (SeedItem(title=f"{self.name} backend scaffold", body=self.scaffold(None)),)

    @abstractmethod
    def compile(self, candidate_source: str, build_dir: Path, timeout_s: float) -> CompileOutcome:
        """Build the candidate's native code in build_dir (runs inside the sandbox)."""

    @abstractmethod
    def load(self, candidate_source: str, build_dir: Path) -> type:
        """Import the candidate in a fresh namespace and return its ModelNew class (sandbox side)."""

    def precheck(self, candidate_source: str) -> str:
        """Parent-side compile checks that need no toolchain (e.g. syntax); a non-empty string is the
        compile gate's failure reason and saves starting the sandbox. Default: none."""
        return ""

    def correctness_task_source(self, task_source: str) -> str:
        """The task source the correctness trials (reference and candidate alike) run on here.
        Default: the task as built; the triton backend shrinks it for its interpreter."""
        return task_source

    def before_sandbox(self) -> None:
        """Child side, after compile and before the seccomp filter and the integrity snapshot:
        process setup that load needs (environment flags), so it is not seen as the candidate's."""

    def runtime_note(self) -> str:
        """Child side, after the correctness trials: what stood in for hardware-only machinery while
        they ran (triton's interpreter: which ``@triton.autotune`` configs ran, not benchmarked), for the
        correctness gate's feedback. Default ""."""
        return ""

    def exec_after_load(self) -> str:
        """Sandbox policy: non-empty (the reason) when this backend must start processes after the
        candidate is loaded, so the child skips the no-exec seccomp filter and the verdict says so.
        Default "" (filter on); only triton on a GPU (JIT compiles at first launch) overrides it."""
        return ""

    def cache_entries(self, candidate_source: str) -> tuple[Any, ...]:
        """Parent side: the compile-cache entries (verifier.sandbox.compile_cache.CacheEntry) this
        candidate's build produces, keyed by the content hash of the build's inputs. The parent copies
        the cached ones into the private build directory before the sandbox starts and caches the
        new ones after it. Default: none (every verification builds from scratch)."""
        return ()

    def sandbox_paths(self) -> tuple[str, ...]:
        """Toolchain directories the sandbox child may read and execute (its compilers, headers and
        runtime libraries outside /usr and the Python environment). Everything else outside the
        child's own directory stays hidden from it (verifier.sandbox.isolation). Default: none."""
        return ()

    def device(self) -> str:
        """The torch device the child places inputs and models on and expects outputs on."""
        return "cpu"

    def synchronize(self) -> None:
        """Wait for all queued device work (no-op on CPU). The child calls it once before the
        integrity snapshot (so device-context setup is not the candidate's), after every guarded
        call before reading outputs, and (through the default timer) around every timed call."""

    def probe_peaks(self, threads: int) -> MachinePeaks | None:
        """This machine's memory bandwidth and compute peak for the roofline (verifier.roofline),
        measured in a subprocess of its own once per machine. Default: a torch triad and matmul on
        ``device()`` (verifier.backends.device_probe); None where there is no device to measure."""
        if self.device() == "cpu":
            return None
        from verifier.backends import device_probe

        return device_probe.probe(self.name, self.device(), self.synchronize, threads)

    def timer(self) -> Callable[[Callable[[], Any]], float]:
        """Return a function that runs fn once and returns its duration in milliseconds."""
        import time

        clock = time.perf_counter_ns

        def time_once(fn: Callable[[], Any]) -> float:
            self.synchronize()
            start = clock()
            fn()
            self.synchronize()
            return (clock() - start) / 1e6

        return time_once
