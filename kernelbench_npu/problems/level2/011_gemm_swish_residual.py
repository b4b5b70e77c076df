"""Linear layer (square), Swish, residual add (EvoKernel bundled problem, level 2)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "fusion-matmul"


class Model(nn.Module):
    """Linear layer (square), Swish, residual add."""

    def __init__(self, features: int):
        super().__init__()
        self.linear = nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        return x + y * torch.sigmoid(y)


batch_size = 1024
features = 1536


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]
