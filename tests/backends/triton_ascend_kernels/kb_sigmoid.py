import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 8192
PROGRAMS = 48


@triton.jit
def sigmoid_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    step = tl.num_programs(0) * BLOCK
    for start in range(tl.program_id(0).to(tl.int64) * BLOCK, n, step):
        mask = start + offs < n
        x = tl.load(x_ptr + start + offs, mask=mask, other=0.0)
        tl.store(y_ptr + start + offs, 1.0 / (1.0 + tl.exp(-x)), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        sigmoid_kernel[(PROGRAMS,)](x, y, x.numel(), BLOCK=BLOCK)
        return y
