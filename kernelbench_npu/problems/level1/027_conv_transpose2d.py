"""Transposed 2-D convolution, 3x3 kernel, stride 2 (upsampling) (EvoKernel bundled problem, level 1)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "convolution"


class Model(nn.Module):
    """Transposed 2-D convolution, 3x3 kernel, stride 2 (upsampling)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=2, padding=1, output_padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 16
in_channels = 64
out_channels = 32
kernel_size = 3
height = 64
width = 64


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
