"""from_torch: torch.nn modules defined here (random weights, no torchvision) → ONNX → layers.

References: the shipped ``vgg16.csv``/``resnet50.csv`` (built from the published architectures),
the published MACs at 224² (VGG16 15.5 G, ResNet-50 4.1 G) and torch's own parameter counts.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch import nn

from archsim.array.config import ArrayConfig
from archsim.array.costing import cost_network
from archsim.lowering import lower_network
from archsim.workload import from_torch, load_network


def vgg16() -> nn.Module:
    layers, c = [], 3
    for width, convs in ((64, 2), (128, 2), (256, 3), (512, 3), (512, 3)):
        for _ in range(convs):
            layers += [nn.Conv2d(c, width, 3, padding=1), nn.ReLU()]
            c = width
        layers.append(nn.MaxPool2d(2, 2))
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(512 * 7 * 7, 4096), nn.ReLU(), nn.Dropout(),
                         nn.Linear(4096, 4096), nn.ReLU(), nn.Dropout(), nn.Linear(4096, 1000))


class Bottleneck(nn.Module):
    def __init__(self, cin: int, width: int, stride: int):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2, self.bn2 = nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, 4 * width, 1, bias=False), nn.BatchNorm2d(4 * width)
        self.relu = nn.ReLU()
        self.down = None
        if stride != 1 or cin != 4 * width:
            self.down = nn.Sequential(nn.Conv2d(cin, 4 * width, 1, stride, bias=False), nn.BatchNorm2d(4 * width))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + (x if self.down is None else self.down(x)))


class ResNet50(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], 64
        for width, count, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for i in range(count):
                blocks.append(Bottleneck(cin, width, stride if i == 0 else 1))
                cin = 4 * width
        self.blocks = nn.Sequential(*blocks)
        self.pool, self.fc = nn.AdaptiveAvgPool2d(1), nn.Linear(2048, 1000)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.blocks(self.stem(x))), 1))


def _ops(network, mode):
    return [[(op.kind, op.gemms, op.vector_elements) for op in item.ops] for item in lower_network(network, 32, mode)]


@pytest.mark.long
@pytest.mark.parametrize("build, shipped, published_macs", [(vgg16, "vgg16", 15.5e9), (ResNet50, "resnet50", 4.1e9)])
def test_exported_cnn_equals_the_shipped_network(build, shipped, published_macs):
    torch.manual_seed(0)
    module = build()
    network = from_torch(module, torch.randn(1, 3, 224, 224))
    reference = load_network(shipped)
    assert [layer.kind for layer in network.layers] == [layer.kind for layer in reference.layers]
    for mode in ("paper", "exact"):
        assert _ops(network, mode) == _ops(reference, mode)  # every F/G/D GEMM and vector op
    array = ArrayConfig(32, 32, "ws")
    cycles = cost_network(network, array, 32, "exact")
    expected = cost_network(reference, array, 32, "exact")
    for kind in ("F", "G", "D"):
        assert cycles[f"{kind}_cycles"].tolist() == expected[f"{kind}_cycles"].tolist()
    assert network.parameter_count == sum(p.numel() for p in module.parameters())
    macs = sum(layer.macs for layer in network.layers)
    assert abs(macs - published_macs) / published_macs < 0.01


class SmallNet(nn.Module):
    """Depthwise-separable convs, a dilated conv, a grouped conv, LayerNorm'd attention over the map."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 32, 3, 2, 1)
        self.dw = nn.Conv2d(32, 32, 3, 1, 2, dilation=2, groups=32, bias=False)
        self.bn = nn.BatchNorm2d(32)
        self.pw = nn.Conv2d(32, 64, 1)
        self.grouped = nn.Conv2d(64, 64, 3, 2, 1, groups=4)
        self.norm = nn.LayerNorm(64)
        self.qkv = nn.Linear(64, 192)
        self.proj = nn.Linear(64, 64)
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        x = self.grouped(torch.relu(self.pw(torch.relu(self.bn(self.dw(self.stem(x)))))))  # N×64×8×8
        t = self.norm(x.flatten(2).transpose(1, 2))  # N×64 tokens×64
        q, k, v = self.qkv(t).chunk(3, dim=-1)
        a = torch.softmax(q @ k.transpose(1, 2) / 8.0, dim=-1) @ v
        return self.head((t + self.proj(a)).mean(dim=1))


def test_small_model_counts_match_torch():
    torch.manual_seed(0)
    module = SmallNet()
    network = from_torch(module, torch.randn(2, 3, 32, 32))
    assert network.parameter_count == sum(p.numel() for p in module.parameters())
    by = {layer.kind: [] for layer in network.layers}
    for layer in network.layers:
        by[layer.kind].append(layer)
    convs = {(layer.groups, layer.dilation): layer for layer in by["conv"]}
    assert convs[(32, 2)].macs == 16 * 16 * 9 * 32  # depthwise, dilated: 16×16 outputs, 9 taps each
    assert convs[(4, 1)].macs == 8 * 8 * 9 * 16 * 64  # 4 groups of 16 inputs
    scores = [layer for layer in by["matmul"]]
    assert [layer.macs for layer in scores] == [64 * 64 * 64, 64 * 64 * 64]
    assert sum(layer.macs for layer in by["fc"]) == 64 * 64 * 192 + 64 * 64 * 64 + 64 * 10


def test_transposed_convolution_from_torch():
    torch.manual_seed(0)
    module = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU(), nn.ConvTranspose2d(16, 8, 4, stride=2, padding=1),
                           nn.ReLU(), nn.ConvTranspose2d(8, 8, 3, stride=1, padding=1, groups=4))
    network = from_torch(module, torch.randn(1, 3, 16, 16))
    assert network.parameter_count == sum(p.numel() for p in module.parameters())
    deconvs = [layer for layer in network.layers if layer.kind == "deconv"]
    assert [(d.ofmap_h, d.filters, d.groups) for d in deconvs] == [(16, 8, 1), (16, 8, 4)]
    assert module(torch.randn(1, 3, 16, 16)).shape == (1, 8, 16, 16)


class FoldedRows(nn.Module):
    """Linear layers on a (batch·seq) × features view: the batch is folded into the rows."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x.reshape(-1, 16)))).reshape(x.shape[0], 8, 8)


def test_rows_holding_the_batch_are_divided_by_it():
    torch.manual_seed(0)
    network = from_torch(FoldedRows(), torch.randn(4, 8, 16))  # 32 rows = 4 samples × 8 tokens
    assert [(layer.kind, layer.ifmap_h, layer.macs) for layer in network.layers] == [
        ("fc", 8, 8 * 16 * 32), ("elementwise", 8, 0), ("fc", 8, 8 * 32 * 8)]
