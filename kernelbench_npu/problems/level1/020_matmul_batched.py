"""Batched matrix multiplication (EvoKernel bundled problem, level 1)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "matmul"


class Model(nn.Module):
    """Batched matrix multiplication."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.bmm(a, b)


batch_size = 64
m = 256
k = 512
n = 384


def get_inputs():
    return [torch.randn(batch_size, m, k), torch.randn(batch_size, k, n)]


def get_init_inputs():
    return []
