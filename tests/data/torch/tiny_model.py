"""A tiny PyTorch model for ``archsim import tests/data/torch/tiny_model.py:TinyNet --input-shape 1,3,16,16``.

Hand counts (per sample): conv 3→8, 3×3, padding 1 on 16×16 → 16·16·8·3·3·3 = 55,296 MACs;
ReLU; 2×2 max pool → 8×8×8; linear 512 → 10 → 5,120 MACs.
"""

import torch
from torch import nn


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(torch.relu(self.conv(x))), 1))


class NeedsArguments(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return self.fc(x)
