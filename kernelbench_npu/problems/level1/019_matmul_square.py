"""Square matrix multiplication C = A @ B (EvoKernel bundled problem, level 1)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "matmul"


class Model(nn.Module):
    """Square matrix multiplication C = A @ B."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


size = 2048


def get_inputs():
    return [torch.randn(size, size), torch.randn(size, size)]


def get_init_inputs():
    return []
