"""L2 normalisation of each row (EvoKernel bundled problem, level 1)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "normalization"


class Model(nn.Module):
    """L2 normalisation of each row."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / torch.linalg.vector_norm(x, ord=2, dim=1, keepdim=True).clamp_min(1e-12)


batch_size = 256
dim = 16384


def get_inputs():
    return [torch.randn(batch_size, dim) + 0.3]


def get_init_inputs():
    return []
