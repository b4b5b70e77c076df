"""LayerNorm over the last three dimensions, every size constant <= 256 but 256 MB of input
(a triton-ascend test task at KernelBench L1/40's sizes; N is written as an expression)."""

import torch
import torch.nn as nn

CATEGORY = "normalization"


class Model(nn.Module):
    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape)

    def forward(self, x):
        return self.ln(x)


batch_size = 8 * 2
features = 64
dim1 = 256
dim2 = 256


def get_inputs():
    return [torch.rand(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [(features, dim1, dim2)]
