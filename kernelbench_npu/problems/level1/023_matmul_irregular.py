"""Matrix multiplication with sizes that are not multiples of 8 (EvoKernel bundled problem, level 1)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "matmul"


class Model(nn.Module):
    """Matrix multiplication with sizes that are not multiples of 8."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


m = 1031
k = 2047
n = 1277


def get_inputs():
    return [torch.randn(m, k), torch.randn(k, n)]


def get_init_inputs():
    return []
