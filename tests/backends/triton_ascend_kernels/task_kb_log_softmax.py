"""LogSoftmax over rows of 393216 (a triton-ascend test task at KernelBench L1/24's sizes: 6 GB of input)."""

import torch
import torch.nn as nn

CATEGORY = "softmax"


class Model(nn.Module):
    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.log_softmax(x, dim=self.dim)


batch_size = 4096
dim = 393216


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
