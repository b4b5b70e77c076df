"""Conv2d, BatchNorm2d (eval, non-trivial statistics), ReLU (EvoKernel bundled problem, level 2)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "fusion-convolution"


class Model(nn.Module):
    """Conv2d, BatchNorm2d (eval, non-trivial statistics), ReLU."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)
        self.norm = nn.BatchNorm2d(out_channels)
        with torch.no_grad():
            self.norm.running_mean.copy_(0.1 * torch.randn(out_channels))
            self.norm.running_var.copy_(0.5 + torch.rand(out_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.norm(self.conv(x)))


batch_size = 16
in_channels = 32
out_channels = 64
kernel_size = 3
height = 96
width = 96


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
