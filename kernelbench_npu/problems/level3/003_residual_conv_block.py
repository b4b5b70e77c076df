"""A ResNet-style basic block: two 3x3 convolutions with batch norm and an identity shortcut (EvoKernel bundled problem, level 3)."""

import torch
import torch.nn as nn

CATEGORY = "network"


def _randomise(norm: nn.BatchNorm2d) -> None:
    with torch.no_grad():
        norm.running_mean.copy_(0.1 * torch.randn(norm.num_features))
        norm.running_var.copy_(0.5 + torch.rand(norm.num_features))
        norm.weight.copy_(1.0 + 0.1 * torch.randn(norm.num_features))
        norm.bias.copy_(0.1 * torch.randn(norm.num_features))


class Model(nn.Module):
    """relu(x + bn(conv(relu(bn(conv(x))))))."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        _randomise(self.bn1)
        _randomise(self.bn2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(x + self.bn2(self.conv2(y)))


batch_size = 16
channels = 64
height = 56
width = 56


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels]
