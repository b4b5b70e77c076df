"""Softmax over the feature dimension (EvoKernel bundled problem, level 1)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "softmax"


class Model(nn.Module):
    """Softmax over the feature dimension."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


batch_size = 64
dim = 32768


def get_inputs():
    return [torch.randn(batch_size, dim) * 4.0]


def get_init_inputs():
    return []
