"""Reference-worker side of the float64 check (verifier.gates.fp64_check): a float64 copy of the
task's model run on float64 copies of each trial's inputs.

The copy is made once from the task-dtype model already built with the verification's init seed
(``copy.deepcopy`` then ``.to(torch.float64)``: parameters and floating buffers upcast exactly),
so both models hold the same values. Per trial it returns the corrections ``r64 - r`` as float32
and the work per output element; a model that cannot run in float64 (an op without float64
support, a tensor attribute the upcast does not reach, random numbers drawn in forward) gives no
corrections and says why once.
Imports torch: only the reference worker uses it, never the parent.
"""

from __future__ import annotations

import copy

import numpy as np
import torch

from verifier.gates.elementwise import CHUNK
from verifier.gates.trial_data import Fp64Reference

_EMPTY = np.zeros(0, dtype=np.float32)


def _floats(values) -> list[torch.Tensor]:
    return [v for v in values if isinstance(v, torch.Tensor) and v.is_floating_point()]


MAX_COPY_BYTES = 2 << 30  # the float64 copy of the parameters; larger models skip the check


class Fp64Model:
    def __init__(self, model: torch.nn.Module) -> None:
        self.note = ""
        self._wide_inputs: dict[tuple, torch.Tensor] = {}  # float64 input buffers, reused trial after trial
        self.params = sum(t.numel() for t in _floats(list(model.parameters()) + list(model.buffers())))
        if self.params * 8 > MAX_COPY_BYTES:
            self.model, self.note = None, f"the float64 copy of the parameters would take {self.params * 8 / 2**30:.1f} GiB"
            return
        try:
            self.model: torch.nn.Module | None = copy.deepcopy(model).to(torch.float64)
        except Exception as exc:  # noqa: BLE001 - any failure only switches the check off
            self.model, self.note = None, f"no float64 copy of the model: {type(exc).__name__}: {exc}"[:300]

    def _upcast(self, inputs: list) -> list:
        """Float64 copies of the floating inputs. A contiguous one is copied into a float64 buffer kept for
        its place in the list and its shape: a task's check trials have inputs of the same shapes, and a
        fresh float64 copy of an 8M-element input faulted 64 MiB of new pages in on every one of them (the
        sandbox's allocator maps each block of 32 MiB or more afresh). Any other input (strided, float64
        already, needing grad) is converted as ``Tensor.to`` converts it, its layout kept."""
        upcast = []
        for i, x in enumerate(inputs):
            if not isinstance(x, torch.Tensor) or not x.is_floating_point():
                upcast.append(x)
            elif x.dtype == torch.float64 or x.requires_grad or not x.is_contiguous():
                upcast.append(x.to(torch.float64))
            else:
                key = (i, tuple(x.shape), x.device)
                if key not in self._wide_inputs:
                    self._wide_inputs[key] = torch.empty(x.shape, dtype=torch.float64, device=x.device)
                upcast.append(self._wide_inputs[key].copy_(x))
        return upcast

    def disable(self, why: str) -> None:
        """No float64 run from now on (e.g. a reference whose forward draws random numbers: its
        float64 copy would draw different ones)."""
        if self.model is not None:
            self.model, self.note = None, why

    def reference(self, inputs: list, outputs: list[torch.Tensor]) -> Fp64Reference:
        """Corrections for the task-dtype ``outputs`` of ``inputs`` (or a note saying why none)."""
        if self.model is None:
            return Fp64Reference(note=self.note)
        upcast = self._upcast(inputs)
        try:
            with torch.no_grad():
                result = self.model(*upcast)
        except Exception as exc:  # noqa: BLE001
            self.model, self.note = None, f"the float64 model raised {type(exc).__name__}: {exc}"[:300]
            return Fp64Reference(note=self.note)
        wide = list(result) if isinstance(result, (tuple, list)) else [result]
        if len(wide) != len(outputs) or any(not isinstance(w, torch.Tensor) or w.shape != o.shape
                                            for w, o in zip(wide, outputs)):
            self.model, self.note = None, "the float64 model's outputs differ in number or shape"
            return Fp64Reference(note=self.note)
        corrections = tuple(_correction(o, w) for o, w in zip(outputs, wide))
        work = (sum(x.numel() for x in _floats(inputs)) + self.params) / max(1, sum(o.numel() for o in outputs))
        return Fp64Reference(corrections, float(work))


def _correction(out: torch.Tensor, wide: torch.Tensor) -> np.ndarray:
    """``r64 - r`` rounded to float32, a chunk at a time (87 ms for 8M elements as whole-tensor float64
    copies, 20 ms in chunks)."""
    if not out.is_floating_point() or out.dtype == torch.float64 or not wide.is_floating_point():
        return _EMPTY
    narrow = out.detach()
    if narrow.dtype == torch.bfloat16:  # exactly as float32: numpy has no bfloat16
        narrow = narrow.float()
    r = narrow.contiguous().numpy().reshape(-1)
    r64 = wide.detach().double().contiguous().numpy().reshape(-1)
    result, chunk = np.empty(r.size, np.float32), np.empty(min(CHUNK, r.size))
    for start in range(0, r.size, CHUNK):
        n = min(CHUNK, r.size - start)
        np.subtract(r64[start:start + n], r[start:start + n], out=chunk[:n])
        result[start:start + n] = chunk[:n]
    return result.reshape(tuple(out.shape))
