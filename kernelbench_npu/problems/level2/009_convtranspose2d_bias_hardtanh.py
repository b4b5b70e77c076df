"""Transposed Conv2d (stride 2), bias add, HardTanh (EvoKernel bundled problem, level 2)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "fusion-convolution"


class Model(nn.Module):
    """Transposed Conv2d (stride 2), bias add, HardTanh."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=2, padding=1, output_padding=1)
        self.bias = nn.Parameter(0.1 * torch.randn(out_channels, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.hardtanh(self.conv(x) + self.bias, min_val=-1.0, max_val=1.0)


batch_size = 16
in_channels = 32
out_channels = 32
kernel_size = 4
height = 64
width = 64


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
