"""Log-softmax over the feature dimension (EvoKernel bundled problem, level 1)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "softmax"


class Model(nn.Module):
    """Log-softmax over the feature dimension."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(x, dim=-1)


batch_size = 64
dim = 30011


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
