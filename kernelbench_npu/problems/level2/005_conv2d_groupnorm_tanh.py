"""Conv2d, GroupNorm, tanh (EvoKernel bundled problem, level 2)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "fusion-convolution"


class Model(nn.Module):
    """Conv2d, GroupNorm, tanh."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, groups: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.norm = nn.GroupNorm(groups, out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.norm(self.conv(x)))


batch_size = 16
in_channels = 16
out_channels = 64
kernel_size = 3
num_groups = 8
height = 128
width = 128


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, num_groups]
