import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 4096
PROGRAMS = 48


@triton.jit
def l1_norm_kernel(x_ptr, y_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        base = row * n_cols.to(tl.int64)  # 64-bit offsets: rows x cols nears 2^31
        acc = tl.zeros([BLOCK], dtype=tl.float32)  # pass 1: sum of |x| over the row
        for start in range(0, n_cols, BLOCK):
            mask = start + offs < n_cols
            acc += tl.abs(tl.load(x_ptr + base + start + offs, mask=mask, other=0.0))
        mean = tl.sum(acc, axis=0) / n_cols
        for start in range(0, n_cols, BLOCK):  # pass 2: x / mean(|x|)
            mask = start + offs < n_cols
            x = tl.load(x_ptr + base + start + offs, mask=mask, other=0.0)
            tl.store(y_ptr + base + start + offs, x / mean, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n_rows, n_cols = x.shape
        l1_norm_kernel[(min(n_rows, PROGRAMS),)](x, y, n_rows, n_cols, BLOCK=BLOCK)
        return y
