"""Elementwise sum of two vectors (a triton-ascend test task; 1M elements, 4 MB per input)."""

import torch
import torch.nn as nn

CATEGORY = "elementwise"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a + b


n = 1048576


def get_inputs():
    return [torch.randn(n), torch.randn(n)]


def get_init_inputs():
    return []
