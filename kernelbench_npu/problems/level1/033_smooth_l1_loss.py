"""Per-element smooth L1 (Huber) loss, no reduction (EvoKernel bundled problem, level 1)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "loss"


class Model(nn.Module):
    """Per-element smooth L1 (Huber) loss, no reduction."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.smooth_l1_loss(predictions, targets, reduction="none", beta=0.5)


batch_size = 128
dim = 32767


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
