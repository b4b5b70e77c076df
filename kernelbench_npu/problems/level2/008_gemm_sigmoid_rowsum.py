"""Linear layer, sigmoid, sum over features (EvoKernel bundled problem, level 2)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "fusion-matmul"


class Model(nn.Module):
    """Linear layer, sigmoid, sum over features."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.linear(x)).sum(dim=1, keepdim=True)


batch_size = 1024
in_features = 1024
out_features = 2048


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
