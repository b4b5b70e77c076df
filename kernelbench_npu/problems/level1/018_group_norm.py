"""GroupNorm with 8 groups (EvoKernel bundled problem, level 1)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "normalization"


class Model(nn.Module):
    """GroupNorm with 8 groups."""

    def __init__(self, channels: int, groups: int):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


batch_size = 32
channels = 64
num_groups = 8
height = 96
width = 96


def get_inputs():
    return [torch.randn(batch_size, channels, height, width) * 3.0 + 1.0]


def get_init_inputs():
    return [channels, num_groups]
