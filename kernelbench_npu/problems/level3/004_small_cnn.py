"""A small image classifier: two conv/pool stages and two linear layers (EvoKernel bundled problem, level 3)."""

import torch
import torch.nn as nn

CATEGORY = "network"


class Model(nn.Module):
    """conv-relu-pool, conv-relu-pool, flatten, linear-relu, linear -> class logits."""

    def __init__(self, in_channels: int, image_size: int, num_classes: int):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(64 * (image_size // 4) ** 2, 256), nn.ReLU(), nn.Linear(256, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


batch_size = 64
in_channels = 3
image_size = 64
num_classes = 100


def get_inputs():
    return [torch.randn(batch_size, in_channels, image_size, image_size)]


def get_init_inputs():
    return [in_channels, image_size, num_classes]
