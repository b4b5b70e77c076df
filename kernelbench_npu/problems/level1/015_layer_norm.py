"""LayerNorm over the last dimension with a learned affine transform (EvoKernel bundled problem, level 1)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "normalization"


class Model(nn.Module):
    """LayerNorm over the last dimension with a learned affine transform."""

    def __init__(self, features: int):
        super().__init__()
        self.norm = nn.LayerNorm(features)
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.1 * torch.randn(features))
            self.norm.bias.copy_(0.1 * torch.randn(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


batch_size = 64
seq_len = 512
features = 1024


def get_inputs():
    return [torch.randn(batch_size, seq_len, features) * 2.0 + 0.5]


def get_init_inputs():
    return [features]
