"""The monitor's side of the reference worker (verifier.sandbox.reference_worker).

While the candidate builds and imports, a reader thread collects what the worker computes from the
secret seeds: the init values (the runner needs them to construct ModelNew), the reference outputs of
every trial of the plan, the workload. After RefDone the monitor uses the same channel itself, for
the inputs of each call (Draw) and the reference's own timed calls (verifier.monitor.peers.call).

Anything the worker fails at is the machine's outcome, never the candidate's: building the task's
inputs or its model (host memory, a crash) ends the verification as an infrastructure error.
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import replace

from verifier.gates.trial_data import Fp64Reference, ReferenceOutputs
from verifier.monitor.peers import PeerFailure, receive
from verifier.roofline import Workload
from verifier.sandbox import messages as msg
from verifier.sandbox.arena import Arena
from verifier.sandbox.spawn import Sandboxed
from verifier.sandbox.values import layouts_in

MAX_TRIAL = 1 << 31
RELEASE_S = 10.0  # the worker's answer to Stop (it drops the verification's tensors and unmaps its arena)
READER_STOP_S = 5.0  # the reader's last read after its worker was killed (it sees the end of the channel)


class ReferenceFailed(RuntimeError):
    """The reference worker failed (the machine's outcome: retryable, never the candidate's fault)."""


# The workload of each task this process verified, by its problem source and dtype: counted once (a run of
# the reference under a dispatch mode, in the worker). The count follows the shapes, which the source and
# dtype fix.
_WORKLOADS: dict[str, Workload] = {}


def task_key(task_source: str, dtype: str) -> str:
    """What a reference worker's state after a verification depends on: the task (its module ran) and dtype."""
    return hashlib.sha256(f"{dtype}\0{task_source}".encode()).hexdigest()


def _workload_key(start: msg.RefStart) -> str:
    return task_key(start.task_source, start.dtype)


class Reference:
    def __init__(self, process: Sandboxed, start: msg.RefStart, deadline: float) -> None:
        self.process = process
        self.init: msg.RefInit | None = None
        self.trials: dict[int, tuple[msg.RefTrial, ReferenceOutputs]] = {}
        self._key = _workload_key(start)
        self.workload: Workload | None = _WORKLOADS.get(self._key)
        start = replace(start, count_workload=self.workload is None)
        self.error = ""
        self.arena: Arena | None = None
        self.draws: Arena | None = None  # the draw arena (attach_draws), for the timed rounds' input sets
        self._init_ready, self._done = threading.Event(), threading.Event()
        self.process.send(start)
        self._thread = threading.Thread(target=self._collect, args=(deadline,), daemon=True)
        self._thread.start()

    def _collect(self, deadline: float) -> None:
        try:
            self.init = receive(self.process, deadline, (msg.RefInit,), "building the task's model", MAX_TRIAL)
            self._init_ready.set()
            while True:
                message = receive(self.process, deadline, (msg.RefTrial, msg.RefWorkload, msg.RefDone),
                                  "computing the reference outputs", MAX_TRIAL)
                if isinstance(message, msg.RefDone):
                    return
                if isinstance(message, msg.RefWorkload):
                    self.workload = _WORKLOADS[self._key] = Workload(message.bytes_moved, message.flops, message.fresh_bytes)
                    continue
                self.trials[message.index] = (message, _outputs(message))
        except (PeerFailure, ValueError) as exc:
            text = exc.reason if isinstance(exc, PeerFailure) else str(exc)
            self.error = f"reference worker failed: {text}\n{self.process.log_tail()}".strip()
        except OSError:  # closed under it: the verification is over
            self.error = "reference worker closed"
        finally:
            self._init_ready.set()
            self._done.set()

    def wait_init(self, deadline: float) -> msg.RefInit:
        self._init_ready.wait(max(0.0, deadline - time.monotonic()))
        if self.init is None:
            raise ReferenceFailed(self.error or "the reference worker did not build the task in time")
        return self.init

    def detach(self) -> None:
        """Before the worker's channel is closed: the worker killed and this reader ended (it reads the end
        of the channel). A reader still blocked on a descriptor closed under it can wake up reading what
        the next verification in this process gets under the same number (garbage frames, lost
        reference outputs, when a campaign verifies back to back)."""
        self.process.kill()
        self._thread.join(timeout=READER_STOP_S)

    def done(self) -> bool:
        """Whether the worker sent every trial (or failed)."""
        return self._done.is_set()

    def held_bytes(self) -> int:
        """The bytes of the reference outputs (and float64 corrections) this monitor holds."""
        return sum(a.nbytes for _, r in self.trials.values() for a in (*r.arrays, *r.fp64.corrections))

    def wait_done(self, deadline: float) -> None:
        self._done.wait(max(0.0, deadline - time.monotonic()))
        self._thread.join(timeout=1.0)
        if self.error or self._thread.is_alive():
            raise ReferenceFailed(self.error or "the reference worker did not finish in time")

    def release(self, wait_s: float = RELEASE_S) -> bool:
        """End the worker's part in this verification (Stop); True when it finished every step cleanly and
        answered that it dropped the verification, so it can serve another one of the same task."""
        if not self._done.is_set() or self.error or self.init is None or not self.process.alive():
            return False
        if not self.process.send(msg.Stop()):
            return False
        try:
            answer = receive(self.process, time.monotonic() + wait_s, (msg.RefReleased,), "releasing the worker")
        except PeerFailure:
            return False
        return answer.reusable is True

    def outputs(self, index: int) -> ReferenceOutputs:
        found = self.trials.get(index)
        if found is None:
            raise ReferenceFailed(self.error or f"no reference outputs for trial {index}")
        return found[1]

    def input_bytes(self) -> int:
        return max((t.input_bytes for t, _ in self.trials.values()), default=0)

    def output_bytes(self) -> int:
        return max((sum(a.nbytes + 64 for a in r.arrays) for _, r in self.trials.values()), default=0)

    # ---- after RefDone: driven by the monitor's thread ------------------------------------------------
    def attach(self, arena: Arena) -> None:
        self.arena = arena
        if not self.process.send(msg.Attach(arena.size), fds=(arena.fd,)):
            raise ReferenceFailed(f"reference worker: {self.process.exit_reason()}")

    def attach_draws(self, arena: Arena) -> None:
        """Hand the worker its draw arena: where Draw ``draws=True`` puts the timed rounds' input sets, which
        the monitor reads in place (verifier.monitor.rounds)."""
        self.draws = arena
        if not self.process.send(msg.Attach(arena.size, draws=True), fds=(arena.fd,)):
            raise ReferenceFailed(f"reference worker: {self.process.exit_reason()}")

    def draw(self, items: list[tuple[int, bool, int]], deadline: float, draws: bool = False) -> list[list]:
        """Put input sets into the worker's arena (``draws``: its draw arena), each ``(index, timing, start)``
        (a trial of the plan, or timed call ``index``'s fresh inputs, from byte ``start``); their specs."""
        into = self.draws if draws else self.arena
        if not self.process.send(msg.Draw([list(item) for item in items], draws)):
            raise ReferenceFailed(f"reference worker: {self.process.exit_reason()}")
        try:
            drawn = receive(self.process, deadline, (msg.Drawn,), "drawing inputs")
            if not isinstance(drawn.sets, list) or len(drawn.sets) != len(items):
                raise ValueError("one spec per drawn set")
            for spec in drawn.sets:
                layouts_in(spec, into.size)
        except (PeerFailure, ValueError) as exc:
            raise ReferenceFailed(f"reference worker failed drawing inputs: {exc}") from None
        return drawn.sets


def _outputs(trial: msg.RefTrial) -> ReferenceOutputs:
    count = len(trial.output_dtypes)
    if len(trial.arrays) != count + trial.fp64_count or trial.fp64_count not in (0, count):
        raise ValueError("reference trial: array count")
    if len(trial.trivial) != count or not all(isinstance(t, dict) for t in trial.trivial):
        raise ValueError("reference trial: trivial errors")
    arrays = tuple(trial.arrays[:count])
    fp64 = Fp64Reference(tuple(trial.arrays[count:]), float(trial.fp64_work), str(trial.fp64_note))
    trivial = tuple({str(k): float(v) for k, v in t.items()} for t in trial.trivial)
    return ReferenceOutputs(trial.index, tuple(str(d) for d in trial.output_dtypes), arrays, trivial, fp64)
