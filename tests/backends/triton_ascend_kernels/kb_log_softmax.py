import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 4096  # one 16 KB fp32 tile per step: loads are double-buffered, exp adds a temporary
PROGRAMS = 48  # about one program per AI vector core; each loops over its rows


@triton.jit
def log_softmax_kernel(x_ptr, y_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        base = row * n_cols.to(tl.int64)  # 64-bit offsets: rows x cols nears 2^31
        m = float("-inf")  # pass 1: online max and sum of exp(x - max)
        s = 0.0
        for start in range(0, n_cols, BLOCK):
            mask = start + offs < n_cols
            x = tl.load(x_ptr + base + start + offs, mask=mask, other=float("-inf"))
            m_new = tl.maximum(m, tl.max(x, axis=0))
            s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
            m = m_new
        lse = m + tl.log(s)
        for start in range(0, n_cols, BLOCK):  # pass 2: x - logsumexp
            mask = start + offs < n_cols
            x = tl.load(x_ptr + base + start + offs, mask=mask, other=0.0)
            tl.store(y_ptr + base + start + offs, x - lse, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n_rows, n_cols = x.shape
        log_softmax_kernel[(min(n_rows, PROGRAMS),)](x, y, n_rows, n_cols, BLOCK=BLOCK)
        return y
