"""A pre-norm transformer encoder block: multi-head self-attention and an MLP (EvoKernel bundled problem, level 3)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"


class Model(nn.Module):
    """x + Attention(LN(x)), then + MLP(LN(.)); attention written out with explicit heads."""

    def __init__(self, features: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(features)
        self.qkv = nn.Linear(features, 3 * features)
        self.proj = nn.Linear(features, features)
        self.norm2 = nn.LayerNorm(features)
        self.up = nn.Linear(features, 4 * features)
        self.down = nn.Linear(4 * features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(c, dim=-1)
        q, k, v = (z.reshape(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        weights = torch.softmax(q @ k.transpose(-2, -1) / (c // self.heads) ** 0.5, dim=-1)
        x = x + self.proj((weights @ v).transpose(1, 2).reshape(b, t, c))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


batch_size = 8
seq_len = 256
features = 512
num_heads = 8


def get_inputs():
    return [torch.randn(batch_size, seq_len, features)]


def get_init_inputs():
    return [features, num_heads]
