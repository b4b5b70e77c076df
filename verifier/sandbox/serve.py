"""The call loop of a compute peer (the runner and the reference worker alike): the monitor sends a
command, the peer runs the model on the arena's inputs and answers. The same code on both sides, so
the monitor's clock sees the same protocol cost on each.

On the CPU a call is one command: Call -> forward -> outputs copied into the arena -> Done. On a
device three: Prime (untimed: inputs to the device, the device's cache flushed, synchronized) ->
Primed; Call (timed: forward, synchronize) -> Ran; Collect (outputs back into the arena) -> Done.
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


def _error(exc: BaseException) -> str:
    from verifier.sandbox.candidate_runner import candidate_error

    return candidate_error(exc)


class CallServer:
    def __init__(self, channel: Channel, model: Callable, device: str, synchronize: Callable[[], None],
                 arena: Arena | None = None, calls: Callable[[], int] = lambda: 0, note: Callable[[], str] = lambda: "",
                 flush: Callable[[], None] | None = None) -> None:
        self.channel, self.model, self.device, self.synchronize = channel, model, device, synchronize
        self.arena, self.calls, self.note, self.flush = arena, calls, note, flush
        self.staged: list | None = None
        self.outputs: list | None = None
        self.pending_calls = 0  # native calls of a staged call, reported with its outputs
        self.kept: list = []  # the last outputs, kept alive so that no fresh output can land on their storage

    def serve(self, other: Callable[[Any, list[int]], None] | None = None) -> None:
        """Answer commands until Stop; ``other`` handles the caller's own kinds (the reference's Draw)."""
        while True:
            request, fds = msg.receive(self.channel, time.monotonic() + FOREVER, MAX_COMMAND, keep_fds=True)
            if isinstance(request, msg.Stop):
                return
            if isinstance(request, msg.Attach):
                self.arena = Arena.attach(fds[0])
            elif isinstance(request, (msg.Prime, msg.Call, msg.Collect)):
                msg.send(self.channel, self.answer(request))
            elif other is not None:
                other(request, fds)
            else:
                raise ValueError(f"unexpected {request.KIND} command")

    def answer(self, request) -> Any:
        import torch

        before = self.calls()
        try:
            if isinstance(request, msg.Prime):
                self.staged = [x.to(self.device) if isinstance(x, torch.Tensor) else x
                               for x in arena_values(request.inputs, self.arena)]
                if self.flush is not None:
                    self.flush()
                self.synchronize()
                return msg.Primed()
            if isinstance(request, msg.Collect):
                spec, self.outputs = write_outputs(self.outputs or [], self.arena, request.out_start), None
                return msg.Done(spec, self.pending_calls, self.note())
            inputs = self.staged if request.staged else arena_values(request.inputs, self.arena)
            with torch.no_grad():
                result = self.model(*inputs)
            self.synchronize()
            outputs = list(result) if isinstance(result, (tuple, list)) else [result]
            reused = self.reuse(outputs, inputs)
            if reused:
                return msg.CallFailed(reused, integrity=True)
            if request.staged:
                self.outputs, self.pending_calls = outputs, self.calls() - before
                return msg.Ran()
            return msg.Done(write_outputs(outputs, self.arena, request.out_start), self.calls() - before, self.note())
        except BaseException as exc:  # the model raised: its frames go to the monitor as data
            return msg.CallFailed(_error(exc))

    def reuse(self, outputs: list, inputs: list) -> str:
        """Outputs must be fresh tensors: not an input's storage, not an earlier output's (a static output
        buffer skips the allocation and first touch the reference pays on every call)."""
        import torch

        fresh = [o for o in outputs if isinstance(o, torch.Tensor)]
        for i, out in enumerate(fresh):
            if any(isinstance(x, torch.Tensor) and _overlap(out, x) for x in inputs):
                return f"output {i} aliases an input (outputs must be fresh tensors)"
            if any(_overlap(out, old) for old in self.kept):
                return f"output {i} reuses the storage of an earlier output (outputs must be fresh tensors on every call)"
        self.kept = (self.kept + fresh)[-KEEP:]
        return ""


KEEP = 8


def _overlap(a, b) -> bool:
    sa, sb = a.untyped_storage(), b.untyped_storage()
    a0, b0 = sa.data_ptr(), sb.data_ptr()
    a1, b1 = a0 + sa.nbytes(), b0 + sb.nbytes()
    return a1 > a0 and b1 > b0 and a0 < b1 and b0 < a1
