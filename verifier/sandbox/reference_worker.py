"""The reference worker: the task's reference, in a confined process that never sees candidate code.

``python -m verifier.sandbox.reference_worker CHANNEL_FD THREADS``. Boot (trusted start-up, then the
seccomp filter), then RefStart brings the task and the verification's secret seeds:

1. ``get_init_inputs()`` under the init seed (RefInit: the monitor hands these values to the runner,
   which builds ModelNew from the same seed, so parameters agree bit for bit);
2. for every trial of the plan (verifier.sandbox.inputs): the reference outputs, the errors of trivial
   predictors (zeros, the output mean, an input copy) for the scale-aware check, and, for the
   correctness trials, the float64 corrections (verifier.sandbox.fp64_reference) (RefTrial);
3. the task's workload for the roofline (RefWorkload); RefDone.

Then, with the arena the monitor attaches (verifier.sandbox.serve, the runner's own call loop): Draw
writes a trial's inputs, or a timed call's fresh inputs, into the arena at the offset the monitor
names (the monitor copies them into the runner's arena itself), and windows of calls (Stage, Run,
Collect) run the reference on the arena's inputs (the reference side of the paired timing, timed by
the monitor).
A trial's inputs are drawn once: the draw is kept (verifier.sandbox.inputs.TrialInputs) until the monitor
has drawn it into the arena; timed calls' inputs are made from the seed for each Draw.

Stop ends the verification (RefReleased): the worker drops everything of it, unmaps its arena and waits
for the next RefStart: the monitor reuses it for the next verification of the same task
(verifier.monitor.pool), never for another task (a task's module may change torch's global state).

References are computed on the CPU, in the task's dtype and in float64.
"""

from __future__ import annotations

import ctypes
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np

from verifier.gates.elementwise import l2_each
from verifier.sandbox import messages as msg
from verifier.sandbox.arena import Arena
from verifier.sandbox.channel import Channel
from verifier.seeds import derive_seed

CHECKED_IN_FLOAT64 = ("check",)  # trial kinds the float64 check reads (the perturbation probe repeats trial 0)
MAX_IN = 64 << 20
FOREVER = 7 * 24 * 3600.0
HELD_HEAP_MOST = 512 << 20  # freed heap a worker keeps mapped for its task's next verification (verifier.monitor.pool)


def trivial_errors(ref: np.ndarray, inputs: list) -> dict[str, float]:
    if not np.isfinite(ref).all():
        return {}
    mean = float(ref.mean(dtype=np.float64))
    copied = next((np.asarray(x) for x in inputs if hasattr(x, "shape") and tuple(x.shape) == ref.shape), None)
    against = [(None, 0.0), (None, mean)] + ([(copied, 0.0)] if copied is not None else [])
    return dict(zip(("zeros", "mean", "input copy"), l2_each(ref, against)))


class Worker:
    def __init__(self, channel: Channel, fill=None) -> None:
        self.channel = channel
        self.fill = fill  # verifier.sandbox.fast_fill.Fill for the timed sets and the trials, or None (torch's generator)
        self.arena: Arena | None = None
        self._drawers = None  # the drawing threads (verifier.sandbox.drawing), started by the first Draw
        self._finisher: ThreadPoolExecutor | None = None  # finishes and sends the trials (started by the first)

    def receive(self, *expect: type):
        return msg.receive(self.channel, time.monotonic() + FOREVER, MAX_IN, expect, keep_fds=True)

    def send(self, message) -> None:
        msg.send(self.channel, message)

    def start(self) -> None:
        cfg, _ = self.receive(msg.RefStart)
        from verifier.sandbox import inputs as inp
        from verifier.sandbox.fp64_reference import Fp64Model
        from verifier.sandbox.torch_values import encode_torch

        self.cfg, self.inp = cfg, inp
        self.problem = inp.load_problem(cfg.task_source, cfg.dtype)
        init = inp.init_values(self.problem, cfg.init_seed)
        arrays: list = []
        self.send(msg.RefInit(encode_torch(init, arrays), tuple(arrays)))
        (self.model,) = inp.build_models(self.problem, [self.problem.Model], cfg.init_seed)
        self.plan = inp.plan(cfg.correctness_trials)
        self.trial_inputs = inp.TrialInputs(self.problem, cfg.input_seed, self.plan, fill=self.fill)
        wide = Fp64Model(self.model)
        if self._finisher is None:
            self._finisher = ThreadPoolExecutor(1, thread_name_prefix="finish", initializer=_one_thread)
        finishing = None
        for trial in self.plan:  # trial k is finished and sent while trial k + 1 is drawn and run
            inputs, outputs = self.forward(trial, wide)
            if finishing is not None:
                finishing.result()
            finishing = self._finisher.submit(lambda t=trial, i=inputs, o=outputs: self.send(self.finish(t, i, o, wide)))
        if finishing is not None:
            finishing.result()
        workload = self.workload() if cfg.count_workload else None
        if workload is not None:
            self.send(workload)
        self.send(msg.RefDone())

    def forward(self, trial, wide) -> tuple[list, list]:
        """Trial ``trial``'s inputs (drawn from the global generator, in plan order) and the reference's
        outputs; a reference that draws random numbers in forward switches the float64 check off."""
        import torch

        inputs = self.trial_inputs.get(trial)
        rng_before = torch.random.get_rng_state()
        with torch.no_grad():
            result = self.model(*inputs)
        if not torch.equal(rng_before, torch.random.get_rng_state()):
            wide.disable("the reference draws random numbers in forward")
        return inputs, list(result) if isinstance(result, (tuple, list)) else [result]

    def finish(self, trial, inputs: list, outputs: list, wide) -> msg.RefTrial:
        """A trial's message (on the finishing thread, torch on one thread of its own and any random
        number the float64 copy draws from a generator of its own: the next trial's draw from the global
        generator goes on meanwhile, unchanged)."""
        import torch

        from verifier.sandbox import values as wire
        from verifier.sandbox.drawing import OwnGenerator

        arrays = [self.inp.to_numpy(o) for o in outputs]
        numpy_inputs = [self.inp.to_numpy(x) if isinstance(x, torch.Tensor) else x for x in inputs]
        with OwnGenerator(torch.Generator().manual_seed(0)):
            fp64 = wide.reference(inputs, outputs) if trial.kind in CHECKED_IN_FLOAT64 else msg_fp64_empty()
        return msg.RefTrial(trial.index, trial.kind, trial.distribution, wire.storage_bytes(_shaped(inputs)),
                            tuple(str(o.dtype).removeprefix("torch.") for o in outputs),
                            tuple(trivial_errors(a, numpy_inputs) for a in arrays), fp64.work, fp64.note,
                            len(fp64.corrections), tuple(arrays) + tuple(fp64.corrections))

    def workload(self) -> msg.RefWorkload | None:
        """The task's workload; None when counting fails (the verdict then has no roofline position)."""
        from verifier.sandbox.workload import count_workload

        try:
            work = count_workload(self.model, self.trial_inputs.get(self.plan[0]))
        except Exception as exc:  # an op the dispatch counters cannot follow
            print(f"workload not counted: {type(exc).__name__}: {exc}", file=sys.stderr)
            return None
        return msg.RefWorkload(work.bytes_moved, work.flops, work.fresh_bytes)

    # ---- the timing service ------------------------------------------------------------------------
    def serve(self) -> bool:
        """The timing service, until Stop; whether the worker can serve another verification."""
        from verifier.sandbox.serve import CallServer

        device = self.cfg.device
        model, sync, flush = self.model, (lambda: None), None
        if device != "cpu":  # the paired timing runs on the candidate's device; the trials stayed on the CPU
            import copy

            from verifier.backends.device_sync import flusher, synchronizer

            model, sync, flush = copy.deepcopy(self.model).to(device), synchronizer(device), flusher(device)
        self.server = CallServer(self.channel, model, device, sync, flush=flush)
        self.server.serve(self.handle)
        reusable = self.forget()
        self.send(msg.RefReleased(reusable))
        return reusable

    def forget(self) -> bool:
        """After Stop: every reference to the verification dropped, its arena unmapped, the freed heap
        returned; False when a view of the arena outlived it (the worker then ends: a mapping it kept would
        hold the arena's memory)."""
        import gc

        server, self.server = self.server, None
        arenas = (server.arena, server.draw_arena)
        server.arena = server.draw_arena = None
        server.staged, server.outputs, server.inputs_run, server.kept = [], [], [], []
        self.model = self.problem = self.plan = self.trial_inputs = None
        del server
        gc.collect()
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_initialized():  # a device's timed calls: its cached blocks too
            torch.cuda.empty_cache()
        for arena in arenas:
            if arena is not None and arena.map is not None:
                try:
                    arena.map.close()
                except BufferError:
                    return False
                arena.close()
        _trim_heap()
        return True

    def handle(self, request, _fds: list[int]) -> None:
        """Draw: input sets (a trial's, or a timed call's fresh ones), made from the seed, written into the
        arena where the monitor asked (the calls' arena, or the draw arena: ``draws``; verifier.sandbox.drawing:
        on both CPUs)."""
        import torch

        from verifier.sandbox import values as wire
        from verifier.sandbox.drawing import ArenaSlots, Drawers, place
        from verifier.sandbox.torch_values import _view as view

        if not isinstance(request, msg.Draw) or not isinstance(request.items, list) or len(request.items) > 4096:
            raise ValueError(f"unexpected {request.KIND} command")
        into = self.server.draw_arena if request.draws else self.server.arena
        if into is None:
            raise ValueError("draw into an arena never attached")
        base = torch.frombuffer(into.map, dtype=torch.uint8)

        def job(index: int, timing: bool, start: int, end: int) -> Callable[[], list]:
            def drawn() -> list:
                slots = ArenaSlots(base, start, end) if timing and self.fill is not None else None
                spec, placed, _ = wire.layout_spec(_shaped(self.draw(index, timing, slots)), start)
                place(base, placed, view)
                return spec
            return drawn

        starts = sorted(int(start) for _, _, start in request.items) + [len(into.map)]
        ends = {start: after for start, after in zip(starts, starts[1:])}
        jobs = [(bool(timing), job(int(index), bool(timing), int(start), ends[int(start)]))
                for index, timing, start in request.items]
        if self._drawers is None:
            self._drawers = Drawers()
        trials, timed = self._drawers.draw([j for t, j in jobs if not t], [j for t, j in jobs if t])
        trials, timed = iter(trials), iter(timed)
        self.send(msg.Drawn([next(timed) if t else next(trials) for t, _ in jobs]))

    def draw(self, index: int, timing: bool, slots=None) -> list:
        if not timing:
            return self.trial_inputs.take(self.plan[index])
        return self.inp.timed_inputs(self.problem, derive_seed(self.cfg.input_seed, "timing"), index, self.fill, slots)


def _one_thread() -> None:
    """A helper thread's torch runs on that thread only: a parallel region started from it would give the
    process a second OpenMP team (verifier.sandbox.drawing says what that costs)."""
    import torch

    torch.set_num_threads(1)


def _trim_heap() -> None:
    """Hand the freed heap back to the system (the sandbox's allocator keeps it: a high trim threshold) when
    it holds more than :data:`HELD_HEAP_MOST`, so that a held worker does not sit on a large task's memory.
    Up to that it stays mapped: the worker is reused only for its task's next verification, whose latency
    phase grows the heap to the same windows of outputs again (verifier.sandbox.serve.CallServer.grow_heap),
    then on pages already faulted in (about 1 ms a MB each time otherwise)."""
    try:
        libc = ctypes.CDLL(None)
        free = _free_heap_bytes(libc)
        if free is not None and free <= HELD_HEAP_MOST:
            return
        libc.malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                     "fsmblks", "uordblks", "fordblks", "keepcost")]


def _free_heap_bytes(libc) -> int | None:
    """The bytes free in the allocator's arenas (glibc's ``mallinfo2().fordblks``); None where it has none."""
    try:
        mallinfo2 = libc.mallinfo2
    except AttributeError:  # glibc before 2.33, or another libc
        return None
    mallinfo2.restype = _MallInfo2
    return int(mallinfo2().fordblks)


def msg_fp64_empty():
    from verifier.sandbox.fp64_reference import Fp64Reference

    return Fp64Reference()


def _shaped(values: list) -> list:
    """Tensors as the arena's planner sees them (nested lists and tuples of tensors are passed as is)."""
    import torch

    from verifier.sandbox.torch_values import dtype_name
    from verifier.sandbox.values import Shaped

    return [Shaped(tuple(x.shape), dtype_name(x.dtype), x) if isinstance(x, torch.Tensor) else x for x in values]


def main(argv: list[str]) -> int:
    import torch

    torch.set_num_threads(int(argv[2]))
    torch.set_num_interop_threads(1)
    from verifier.sandbox import fast_fill, fp64_reference, inputs, seccomp, torch_values, values, workload  # noqa: F401

    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.getcwd())
    fill = fast_fill.load(argv[3]) if len(argv) > 3 else None  # before the filter: loading maps a library
    if len(argv) > 4 and argv[4] == "devices":
        # the device's context before the filter, as the runner does: a driver's start makes calls it refuses
        from verifier.backends.device_sync import start_device

        start_device()
    on = seccomp.install(seccomp.RUNNER)
    worker = Worker(Channel.from_fd(int(argv[1])), fill)
    worker.send(msg.Ready(on, "" if on else "no seccomp filter on this platform", len(os.listdir("/proc/self/task")),
                          "none", fast_fill.NATIVE_FILL if fill is not None else fast_fill.TORCH_GENERATOR))
    while True:  # one verification after another while the monitor reuses the worker for the same task
        worker.start()
        if not worker.serve():
            return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
