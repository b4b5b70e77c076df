"""What the monitor concludes from the runner's CPU samples (verifier.monitor.cpu_sampler): the decisions
that rest on what the OS saw, not on anything in the runner's address space.

- **torch computed**: a share of forward's CPU samples in torch's compute (its libraries outside their
  glue: verifier.monitor.torch_glue) or in code no build of the candidate produced (another numerical
  library, anonymous memory) beyond :data:`COMPUTE_SHARE`, with at least :data:`MIN_COMPUTE_SAMPLES` of
  them, fails the hack gate, naming the object, its share and the functions. Checked per call, over
  every observed call of the verification (a kernel that hands torch part of the work on every call),
  and over the observed windows of the timing alone (a kernel honest in the correctness phase's calls
  and not in the latency phase's, whose honest calls would otherwise dilute the share).
- **threads during a call**: the most threads alive at once during a call (the kernel's records of
  thread creation and exit: a nested parallel region that exists only inside forward counts) beyond the
  threads the runner had before the candidate's code ran plus the thread budget.
- **sampling switched off**: far fewer samples than the runner's CPU time during the call implies
  (``/proc/<pid>/task/*/schedstat``): something disabled the events from inside.

The thresholds come from the honest corpus and the known-good solutions (README, "Observation from
outside"): an honest forward spends at most a few percent of its samples in torch (allocation, the
dispatcher, copies and the runner's own copy of the outputs are glue, not compute).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from verifier.monitor.cpu_sampler import CallSamples, CpuSampler
from verifier.monitor.torch_glue import short_name

COMPUTE_SHARE = 0.25  # torch's compute and foreign code against the candidate's own code: torch computed
MIN_COMPUTE_SAMPLES = 20  # fewer compute samples than this decide nothing (2 ms of CPU at 100 us)
MIN_CALL_SAMPLES = 50  # one call is judged alone from this many compute samples (every call so far judges the rest)
SAMPLING_FLOOR = 0.1  # samples below this share of what the CPU time implies: sampling was switched off (an honest
# call on a loaded 2-core machine saw 25%: 168 of 665; switched off from inside, 0-1%)
MIN_EXPECTED = 50  # samples the CPU time must imply before the floor is judged (5 ms of CPU at 100 us)


@dataclass
class Totals:
    samples: int = 0
    compute: int = 0
    own: int = 0
    objects: Counter = field(default_factory=Counter)
    functions: Counter = field(default_factory=Counter)
    calls: int = 0
    cost_ns: int = 0

    def add(self, s: CallSamples) -> None:
        self.samples += s.samples
        self.compute += s.torch_compute + s.foreign
        self.own += s.own
        self.objects.update(dict(s.by_object))
        self.functions.update(dict(s.compute_functions))
        self.calls += 1
        self.cost_ns += s.cost_ns


class OutsideWatch:
    """The runner's sampler and the decisions on what it saw, for one verification."""

    def __init__(self, sampler: CpuSampler, threads_before: int, thread_budget: int, judge_compute: bool = True) -> None:
        """``judge_compute``: the backend's kernels run natively on this CPU (Backend.cpu_kernels); elsewhere
        only the threads and the sampling itself are judged."""
        self.sampler, self.judge_compute = sampler, judge_compute
        self.allowed_threads = threads_before + thread_budget
        self.totals = Totals()
        self.timed = Totals()  # the latency phase's observed windows (verifier.monitor.timing)

    def watching(self):
        return self.sampler.watching()

    def after_call(self, samples: CallSamples, during: str, timed: bool = False) -> str:
        """"" or the one-line problem of one observed call (``timed``: a window of the timing's calls)."""
        self.totals.add(samples)
        if timed:
            self.timed.add(samples)
        compute, problem = samples.torch_compute + samples.foreign, ""
        if self.judge_compute and compute >= MIN_CALL_SAMPLES:
            problem = compute_problem(compute, samples.own, samples.samples, samples.compute_functions, f"one call ({during})")
        return (problem or self.overall_problem() or (self.overall_problem(self.timed, "timed windows") if timed else "")
                or self.thread_problem(samples) or sampling_problem(samples))

    def overall_problem(self, totals: Totals | None = None, what: str = "calls") -> str:
        """"" or the problem over every observed call so far (or over ``totals``)."""
        t = totals or self.totals
        if not self.judge_compute:
            return ""
        return compute_problem(t.compute, t.own, t.samples, tuple(t.functions.most_common(8)), f"{t.calls} {what}")

    def recording(self):
        return self.sampler.recording()

    def work_ns(self, block) -> int:
        """The CPU time the runner's threads spent anywhere but in an OpenMP runtime during a :meth:`recording`
        block (the settle before a timed window, when no call is in flight), from its samples (one per
        ``period_ns`` of a thread's CPU time). An OpenMP team stopped while it spun after a window spins on in
        libgomp when continued, and that is waiting (CallSamples.waiting: libgomp's own pages, unmodified);
        everything else is counted, the kernel's and the runtime's code included (a helper thread can have
        the kernel copy the inputs through a pipe, or libc sort them): a thread going back to sleep takes
        microseconds of it (honest kernels: about one sample a settle in the kernel, libc or the interpreter,
        against 40-60 in libgomp)."""
        s = self.sampler.attribute(block)
        return max(0, s.samples - s.waiting) * s.period_ns

    def thread_problem(self, samples: CallSamples) -> str:
        if samples.threads > self.allowed_threads:
            return (f"{samples.threads} OS threads existed at once during a call, at most {self.allowed_threads} "
                    f"allowed (the runner's threads before the candidate's code plus the thread budget)")
        return ""

    def close(self) -> None:
        self.sampler.close()


def compute_problem(compute: int, own: int, samples: int, functions: tuple, what: str) -> str:
    """Torch computed when its compute (and foreign code) holds at least COMPUTE_SHARE of the compute samples,
    the candidate's own code the rest; the reason names the object, the share and the functions."""
    if compute < MIN_COMPUTE_SAMPLES or compute < COMPUTE_SHARE * (compute + own):
        return ""
    counts = Counter()
    for label, n in functions:
        counts[label.split(":", 1)[0]] += n
    top = counts.most_common(1)[0][0] if counts else "?"
    detail = ", ".join(list(dict.fromkeys(short_name(label.split(":", 1)[1]) for label, _ in functions
                                          if label.startswith(f"{top}:")))[:3])
    return (f"torch computed in forward, observed from outside: {100 * compute / (compute + own):.0f}% of the compute "
            f"samples over {what} ({compute} of {compute + own}; {samples} in all) were in torch's compute or in code "
            f"no build produced, most in {top}" + (f" ({detail})" if detail else "")
            + (f"; the candidate's own code: {own}" if own else "; none in the candidate's own code"))


def sampling_problem(samples: CallSamples) -> str:
    expected = samples.cpu_ns // max(1, samples.period_ns)
    seen = samples.samples + samples.lost
    if expected >= MIN_EXPECTED and seen < SAMPLING_FLOOR * expected:
        return (f"the CPU sampler saw {seen} samples where the runner's {samples.cpu_ns / 1e6:.1f} ms of CPU time "
                f"imply about {expected}: its sampling was switched off from inside")
    return ""
