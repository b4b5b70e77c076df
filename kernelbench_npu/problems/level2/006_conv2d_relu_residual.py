"""Conv2d (same padding), ReLU, residual add of the input (EvoKernel bundled problem, level 2)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "fusion-convolution"


class Model(nn.Module):
    """Conv2d (same padding), ReLU, residual add of the input."""

    def __init__(self, channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.relu(self.conv(x))


batch_size = 16
channels = 64
kernel_size = 3
height = 96
width = 96


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, kernel_size]
