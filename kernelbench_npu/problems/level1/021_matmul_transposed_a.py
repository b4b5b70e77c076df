"""Matrix multiplication with a transposed left operand, C = A^T @ B (EvoKernel bundled problem, level 1)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "matmul"


class Model(nn.Module):
    """Matrix multiplication with a transposed left operand, C = A^T @ B."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a.T, b)


m = 1024
k = 2048
n = 1536


def get_inputs():
    return [torch.randn(k, m), torch.randn(k, n)]


def get_init_inputs():
    return []
