"""Attention core: batched Q K^T, scaling, softmax, times V (EvoKernel bundled problem, level 2)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "fusion-matmul"


class Model(nn.Module):
    """Attention core: batched Q K^T, scaling, softmax, times V."""

    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        scores = torch.bmm(q, k.transpose(1, 2)) / q.shape[-1] ** 0.5
        return torch.bmm(torch.softmax(scores, dim=-1), v)


batch_size = 32
seq_len = 512
head_dim = 64


def get_inputs():
    return [torch.randn(batch_size, seq_len, head_dim), torch.randn(batch_size, seq_len, head_dim), torch.randn(batch_size, seq_len, head_dim)]


def get_init_inputs():
    return []
