"""Linear layer, GELU, then multiplication by a constant (EvoKernel bundled problem, level 2)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "fusion-matmul"


class Model(nn.Module):
    """Linear layer, GELU, then multiplication by a constant."""

    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.linear(x)) * self.scale


batch_size = 512
in_features = 1024
out_features = 2047
scale = 1.5


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale]
