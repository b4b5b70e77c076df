"""Elementwise sigmoid (a triton-ascend test task at KernelBench L1/21's sizes: 6 GB of input)."""

import torch
import torch.nn as nn

CATEGORY = "activation"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sigmoid(x)


batch_size = 4096
dim = 393216


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
