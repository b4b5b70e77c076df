"""x / mean(|x|) over rows of 65535 (a triton-ascend test task at KernelBench L1/38's sizes: 8 GB of input)."""

import torch
import torch.nn as nn

CATEGORY = "normalization"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x / torch.mean(torch.abs(x), dim=1, keepdim=True)


batch_size = 32768
dim = 65535


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
