import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 8192
PROGRAMS = 48  # about one program per vector core; each walks its share of the tiles


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    for tile in range(tl.program_id(0), tl.cdiv(n, BLOCK), tl.num_programs(0)):
        idx = tile * BLOCK + offs
        mask = idx < n
        a = tl.load(a_ptr + idx, mask=mask, other=0.0)
        b = tl.load(b_ptr + idx, mask=mask, other=0.0)
        tl.store(out_ptr + idx, a + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(a)
        n = a.numel()
        add_kernel[(min(PROGRAMS, triton.cdiv(n, BLOCK)),)](a, b, out, n, BLOCK=BLOCK)
        return out
