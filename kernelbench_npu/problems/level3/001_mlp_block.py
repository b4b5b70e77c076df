"""A pre-norm MLP block with a residual connection (EvoKernel bundled problem, level 3)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"


class Model(nn.Module):
    """LayerNorm, Linear (expand x4), GELU, Linear (project back), residual add."""

    def __init__(self, features: int, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(features)
        self.up = nn.Linear(features, hidden)
        self.down = nn.Linear(hidden, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(F.gelu(self.up(self.norm(x))))


batch_size = 16
seq_len = 256
features = 512
hidden = features * 4


def get_inputs():
    return [torch.randn(batch_size, seq_len, features)]


def get_init_inputs():
    return [features, hidden]
