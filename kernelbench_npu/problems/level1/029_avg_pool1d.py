"""1-D average pooling, window 4, stride 2 (EvoKernel bundled problem, level 1)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "pooling"


class Model(nn.Module):
    """1-D average pooling, window 4, stride 2."""

    def __init__(self):
        super().__init__()
        self.pool = nn.AvgPool1d(kernel_size=4, stride=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 64
channels = 128
length = 8191


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return []
