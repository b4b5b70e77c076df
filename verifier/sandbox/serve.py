"""The call loop of a compute peer (the runner and the reference worker alike): the monitor sends a
command, the peer runs the model on the arena's inputs and answers. The same code on both sides, so
the monitor's clock sees the same protocol cost on each.

Every call, checked or timed, goes through one window of three commands:

- Stage (untimed): the window's input sets made ready. On the CPU they stay where the monitor writes
  them (tensors viewing the arena: building those views is not the kernel's work), and the views serve
  every later window on the same layout, the monitor writing new inputs into the arena each time (while
  this process is stopped); on a device they are copied to it and its cache is flushed, for one window;
  everything synchronized.
- Run (the only command the monitor's clock brackets): forward on every staged set, back to back as a
  user's loop calls it, synchronized at the end. The outputs are kept as forward returned them:
  nothing is copied and nothing is checked inside the window.
- Collect (untimed): each output checked to be a fresh tensor (not an input's or an earlier output's
  storage) and copied into the arena, call after call, for the monitor to compare. In the latency phase's
  rounds on the CPU (``describe``) nothing is copied: the peer says where each output lies in its memory and
  keeps them alive until the next Collect; the monitor stops it and copies them out itself
  (verifier.monitor.remote_outputs), so no code of the peer runs on them after the clock.

A window's outputs stay alive until Collect, so each of its calls allocates its outputs afresh, as a
user's loop that keeps its results does; the allocator's settings (verifier.sandbox.spawn) keep freed
memory mapped, so a later window reuses it instead of faulting fresh pages in. A heap reaches that steady
state after a few windows of a layout (a window's outputs, the window before's, and what reuse leaves
over); the timing plays untimed rounds until no window faults pages in (verifier.monitor.timing). So that
those are few, a peer staging a window of more calls than any before grows its heap first, on both sides
alike (:meth:`CallServer.grow_heap`: blocks of its outputs' sizes for :data:`HEAP_WINDOWS` windows, each page
touched, then freed): a ReLU loop of 42 outputs of 1.5 MiB a window, keeping the window before, faulted
15,415, 15,384, 0 and 1,465 pages in its first four windows, and 20, 0, 0, 0 after the heap was grown.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from verifier.sandbox import messages as msg
from verifier.sandbox.arena import Arena
from verifier.sandbox.channel import Channel
from verifier.sandbox.torch_values import arena_values, write_outputs

FOREVER = 7 * 24 * 3600.0
MAX_COMMAND = 16 << 20
MAX_SETS = 4096  # input sets one window may stage
KEEP = msg.KEPT_OUTPUTS  # earlier outputs a new output must not reuse the storage of (besides the window's own)
HEAP_WINDOWS = 3  # windows of outputs a heap is grown for (a window's, the one before's, the allocator's leftovers)
HEAP_MOST = 1 << 30  # bytes a heap is grown by at most
HEAP_BLOCK_MOST = 32 << 20  # the sandbox's mmap threshold (verifier.sandbox.spawn.ALLOCATOR): larger blocks are
# mapped afresh on every allocation, whatever the heap holds
PAGE = 4096


def _error(exc: BaseException) -> str:
    from verifier.sandbox.candidate_runner import candidate_error

    return candidate_error(exc)


class CallServer:
    def __init__(self, channel: Channel, model: Callable, device: str, synchronize: Callable[[], None],
                 arena: Arena | None = None, calls: Callable[[], int] = lambda: 0, note: Callable[[], str] = lambda: "",
                 flush: Callable[[], None] | None = None) -> None:
        self.channel, self.model, self.device, self.synchronize = channel, model, device, synchronize
        self.arena, self.calls, self.note, self.flush = arena, calls, note, flush
        self.draw_arena: Arena | None = None
        self.staged: list[list] = []
        self.outputs: list[list] = []  # per call of the last Run, its outputs
        self.inputs_run: list[list] = []  # the inputs of those calls (outputs must not alias them)
        self.window_calls = 0  # native calls made during the last Run
        self.call_ends: list[int] = []  # the clock after each call of the last Run (and before the first)
        self.kept: list = []  # earlier windows' last outputs, kept alive so no fresh output lands on them
        self.described: list = []  # the last window's outputs, described: alive until the next Collect
        self.output_bytes: list[int] = []  # the storage bytes of each output of the last call collected
        self.grown_for = 1  # calls a window of which the heap was grown for (one-call windows: never)

    def serve(self, other: Callable[[Any, list[int]], None] | None = None) -> None:
        """Answer commands until Stop; ``other`` handles the caller's own kinds (the reference's Draw)."""
        while True:
            request, fds = msg.receive(self.channel, time.monotonic() + FOREVER, MAX_COMMAND, keep_fds=True)
            if isinstance(request, msg.Stop):
                return
            if isinstance(request, msg.Attach) and request.draws:
                self.draw_arena = Arena.attach(fds[0])  # a reference worker's: where Draw puts timed sets
            elif isinstance(request, msg.Attach):
                self.arena = Arena.attach(fds[0])
            elif isinstance(request, (msg.Stage, msg.Run, msg.Collect)):
                msg.send(self.channel, self.answer(request))
            elif other is not None:
                other(request, fds)
            else:
                raise ValueError(f"unexpected {request.KIND} command")

    def answer(self, request) -> Any:
        try:
            if isinstance(request, msg.Stage):
                return self.stage(request.sets)
            if isinstance(request, msg.Run):
                return self.run(request.count)
            return self.collect(request.out_start, request.describe)
        except BaseException as exc:  # the model raised: its frames go to the monitor as data
            self.staged, self.outputs, self.inputs_run = [], [], []
            return msg.CallFailed(_error(exc))

    def stage(self, sets: list) -> msg.Staged:
        import torch

        if not isinstance(sets, list) or not 1 <= len(sets) <= MAX_SETS:
            raise ValueError(f"a window stages 1 to {MAX_SETS} input sets")
        staged = [arena_values(spec, self.arena) for spec in sets]
        if self.device != "cpu":
            staged = [[x.to(self.device) if isinstance(x, torch.Tensor) else x for x in one] for one in staged]
        if self.flush is not None:
            self.flush()
        self.synchronize()
        self.staged, self.outputs, self.inputs_run = staged, [], []
        if self.device == "cpu":
            self.grow_heap(len(staged))
        return msg.Staged()

    def grow_heap(self, calls: int) -> None:
        """Before the first window of ``calls`` calls (more than any before; never a one-call window, as the
        correctness phase's), the heap grown by :data:`HEAP_WINDOWS` windows of outputs of the sizes the last
        call returned: blocks allocated as torch allocates its outputs, each page faulted in (:func:`_fault_in`; no
        parallel region), and all freed, so the windows' outputs reuse faulted pages from the first."""
        import torch

        sizes = [size for size in self.output_bytes if 0 < size < HEAP_BLOCK_MOST]
        if calls <= self.grown_for or not sizes:
            return
        self.grown_for = calls
        count = min(HEAP_WINDOWS * calls, HEAP_MOST // sum(sizes))
        blocks = []
        try:
            for _ in range(count):
                for size in sizes:
                    blocks.append(torch.empty(size, dtype=torch.uint8))
                    _fault_in(blocks[-1].numpy())
        except (RuntimeError, MemoryError):  # the process's memory limit: the warm-up rounds settle the rest
            pass
        del blocks

    def run(self, count: int) -> msg.Ran:
        """The timed part: nothing but the model's calls (and one synchronize), the clock read after each
        (every side's loop alike; Collect, untimed, says what the first call took beyond the others:
        :func:`first_call_excess`, the reference worker's figure alone is read).
        ``count`` 0: an empty window, the same path without a call (the monitor times it to learn the
        protocol's fixed cost; the window before it stays collectable)."""
        import torch

        staged, model = self.staged, self.model
        if count == 0:
            self.synchronize()
            return msg.Ran()
        if count != len(staged):
            raise ValueError(f"run {count} calls on {len(staged)} staged input sets")
        if self.device != "cpu" or self.flush is not None:
            self.staged = []  # a device's copies (and a flushed cache) serve one window
        before = self.calls()
        clock, results = time.perf_counter_ns, []
        ends = [clock()]
        with torch.no_grad():
            for inputs in staged:
                results.append(model(*inputs))
                ends.append(clock())
        self.synchronize()
        self.window_calls = self.calls() - before
        self.outputs = [list(r) if isinstance(r, (tuple, list)) else [r] for r in results]
        self.inputs_run = staged
        self.call_ends = ends if self.device == "cpu" else []
        return msg.Ran()

    def collect(self, out_start: int, describe: bool = False) -> Any:
        import torch

        outputs, inputs = self.outputs, self.inputs_run
        self.outputs, self.inputs_run = [], []
        if not outputs:
            raise ValueError("collect before a run")
        problem = self.reuse(outputs, inputs)
        if problem:
            return msg.CallFailed(problem, integrity=True)
        self.output_bytes = [o.untyped_storage().nbytes() for o in outputs[-1] if isinstance(o, torch.Tensor)]
        if describe:  # the window before's outputs are freed here, on every side alike (never in a timed Run); this
            # window's stay alive until the next Collect, so none of the next window's lands on them (the monitor
            # checks: verifier.monitor.remote_outputs)
            previous, self.described, self.kept = self.described, outputs, []
            del previous
            return msg.Described([[_where(i, out) for i, out in enumerate(outs)] for outs in outputs],
                                 self.window_calls, self.note(), first_call_excess(self.call_ends))
        specs, offset = [], out_start
        for call_outputs in outputs:
            spec = write_outputs(call_outputs, self.arena, offset)
            specs.append(spec)
            offset = _end(spec, offset)
        return msg.Collected(specs, self.window_calls, self.note(), first_call_excess(self.call_ends))

    def reuse(self, outputs: list[list], inputs: list[list]) -> str:
        """Outputs must be fresh tensors: not an input's storage, not another output's of this window,
        not an earlier window's (a static output buffer skips the allocation and first touch the
        reference pays on every call)."""
        import torch

        tensors = [[o for o in outs if isinstance(o, torch.Tensor)] for outs in outputs]
        if not any(any(isinstance(x, torch.Tensor) and _overlap(out, x) for out in outs for x in ins)
                   for outs, ins in zip(tensors, inputs)) and _disjoint([self.kept, *tensors]):
            self.kept = [*self.kept, *(o for outs in tensors for o in outs)][-KEEP:]
            return ""
        seen = list(self.kept)  # a problem: found again call by call, to name the first one as it happened
        for call, (outs, ins) in enumerate(zip(outputs, inputs)):
            fresh = [o for o in outs if isinstance(o, torch.Tensor)]
            for i, out in enumerate(fresh):
                if any(isinstance(x, torch.Tensor) and _overlap(out, x) for x in ins):
                    return f"output {i} aliases an input (outputs must be fresh tensors)"
                if any(_overlap(out, old) for old in seen):
                    return (f"output {i} reuses the storage of an earlier output (outputs must be fresh tensors on "
                            "every call)")
            seen += fresh
        self.kept = seen[-KEEP:]
        return ""


def _fault_in(block) -> None:
    """Every page of ``block`` (a uint8 numpy array) faulted in as writing a byte of each would: the kernel
    does it for the whole pages at once (``MADV_POPULATE_WRITE``, Linux 5.14: 384 MB in blocks of 1.5 MiB in
    156-240 ms against 210-330 ms a byte a page, here), the pages at its ends by writing; a byte a page where
    the call is refused."""
    global _madvise
    if _madvise is None:
        _madvise = _libc_madvise()
    start = block.ctypes.data
    first, end = -(-start // PAGE) * PAGE, (start + block.size) // PAGE * PAGE
    if not (_madvise and end > first and _madvise(first, end - first, MADV_POPULATE_WRITE) == 0):
        block[::PAGE] = 0
    block[:1] = 0
    block[-1:] = 0


MADV_POPULATE_WRITE = 23
_madvise = None  # libc's madvise once looked up; False where it cannot be called


def _libc_madvise():
    import ctypes

    try:
        call = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return False
    call.argtypes, call.restype = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int], ctypes.c_int
    return call


def first_call_excess(ends: list[int]) -> int:
    """How much longer a window's first call took than its median call (ns, at least 0), from the clock
    readings before the first call and after each; 0 for fewer than three calls. A window starts with
    the side's threads asleep (verifier.monitor.freeze.settle) on cores that may have gone idle, so its
    first call pays for waking them, which a user's loop of back-to-back calls pays once: 0.2-0.3 ms a
    window on this machine, 2-3% of a 10 ms window."""
    took = [b - a for a, b in zip(ends, ends[1:])]
    if len(took) < 3:
        return 0
    rest = sorted(took[1:])
    return max(0, took[0] - rest[len(rest) // 2])


def _where(i: int, out) -> dict:
    """Where output ``i`` lies in this process: its address, shape, element strides and dtype."""
    import torch

    from verifier.sandbox.torch_values import dtype_name

    if type(out) is not torch.Tensor:
        raise TypeError(f"output {i} is a {type(out).__name__}, not a plain torch.Tensor")
    if out.device.type != "cpu":
        raise TypeError(f"output {i} is on {out.device}, not on the CPU")
    return {"t": "tensor", "offset": out.data_ptr(), "shape": list(out.shape), "stride": list(out.stride()),
            "dtype": dtype_name(out.dtype)}


def _disjoint(groups: list[list]) -> bool:
    """Whether no tensor's storage overlaps a tensor's of another group (one sort, not every pair: a window of
    256 calls would compare 33,000 pairs). Any overlap at all, even within one group, answers False, and
    the caller looks again pair by pair."""
    spans = sorted((s.data_ptr(), s.data_ptr() + s.nbytes()) for group in groups for s in
                   (t.untyped_storage() for t in group) if s.nbytes() > 0)
    return all(end <= start for (_, end), (start, _) in zip(spans, spans[1:]))  # an overlap shows between neighbours


def _end(spec: list, start: int) -> int:
    from verifier.sandbox.arena import TensorLayout, align

    end = align(start)
    for item in spec:
        layout = TensorLayout.from_json(item)
        end = max(end, align(layout.offset + max(layout.span(), 1)))
    return end


def _overlap(a, b) -> bool:
    sa, sb = a.untyped_storage(), b.untyped_storage()
    a0, b0 = sa.data_ptr(), sb.data_ptr()
    a1, b1 = a0 + sa.nbytes(), b0 + sb.nbytes()
    return a1 > a0 and b1 > b0 and a0 < b1 and b0 < a1
