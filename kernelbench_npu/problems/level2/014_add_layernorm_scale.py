"""Residual add of two tensors, LayerNorm, per-feature scaling (EvoKernel bundled problem, level 2)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "fusion-normalization"


class Model(nn.Module):
    """Residual add of two tensors, LayerNorm, per-feature scaling."""

    def __init__(self, features: int):
        super().__init__()
        self.norm = nn.LayerNorm(features)
        self.gain = nn.Parameter(1.0 + 0.5 * torch.randn(features))

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.norm(x + residual) * self.gain


batch_size = 32
seq_len = 512
features = 768


def get_inputs():
    return [torch.randn(batch_size, seq_len, features), torch.randn(batch_size, seq_len, features)]


def get_init_inputs():
    return [features]
