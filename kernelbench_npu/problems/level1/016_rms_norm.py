"""RMSNorm over the last dimension (EvoKernel bundled problem, level 1)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "normalization"


class Model(nn.Module):
    """RMSNorm over the last dimension."""

    def __init__(self, features: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * rms * self.weight


batch_size = 64
seq_len = 512
features = 1000


def get_inputs():
    return [torch.randn(batch_size, seq_len, features)]


def get_init_inputs():
    return [features]
