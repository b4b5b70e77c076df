"""The build's dry recording (toolchain side): the task's reference ``Model`` with one probe launch
per tensor input, recorded on the task's shape-only inputs like any candidate.

It exercises the compile gate's whole path for one task without a candidate: specs -> meta
stand-ins -> ``Model(*get_init_inputs())`` on meta -> a real ``@triton.jit`` launch bound on every
input (signature, alignment specialisation, grid) -> Triton's front end -> bishengir-compile ->
the reference forward on meta. Imported only inside the recording fork (triton-ascend's ``triton``).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def probe_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.store(x_ptr + offs, x, mask=offs < n)


def dry_model(model_cls: type) -> type:
    """``model_cls`` whose forward first launches :func:`probe_kernel` on each tensor input."""

    class DryModel(model_cls):
        def forward(self, *inputs):
            for x in inputs:
                if isinstance(x, torch.Tensor) and x.numel() and (x.is_floating_point() or x.dtype == torch.int32):
                    probe_kernel[(1,)](x, x.numel(), BLOCK=16)
            return super().forward(*inputs)

    return DryModel
