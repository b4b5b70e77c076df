"""Matrix product, scaling, then softmax over the last dimension (EvoKernel bundled problem, level 2)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "fusion-matmul"


class Model(nn.Module):
    """Matrix product, scaling, then softmax over the last dimension."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.softmax(torch.matmul(a, b) * self.scale, dim=-1)


m = 1024
k = 128
n = 1024
scale = 0.125


def get_inputs():
    return [torch.randn(m, k), torch.randn(k, n)]


def get_init_inputs():
    return [scale]
