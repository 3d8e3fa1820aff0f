"""A PyTorch class whose ``forward`` has non-tensor defaults, ``nn.TransformerEncoderLayer`` as the class itself
(its ``is_causal=False``): TorchScript's exporter filled the defaults in as traced inputs, and the export failed
with "scaled_dot_product_attention(): argument 'is_causal' must be bool, not Tensor" (these tests fail on the
code before :func:`archsim.workload.torch_import.given_inputs_only`).

References: the layers' shapes by hand for d_model 32, 2 heads (16 wide), feed-forward 64, 8 tokens.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch import nn

from archsim.cli import main
from archsim.workload import from_torch


class EncoderLayer(nn.TransformerEncoderLayer):
    def __init__(self):
        super().__init__(d_model=32, nhead=2, dim_feedforward=64, batch_first=True)


MODULE = """from torch import nn


class EncoderLayer(nn.TransformerEncoderLayer):
    def __init__(self):
        super().__init__(d_model=32, nhead=2, dim_feedforward=64, batch_first=True)
"""


def test_an_encoder_layer_as_the_class_exports_with_its_shapes():
    module = EncoderLayer()
    net = from_torch(module, torch.zeros(1, 8, 32))
    fc = {layer.name: (layer.ifmap_h, layer.channels, layer.filters) for layer in net.layers if layer.kind == "fc"}
    # in_proj 32 → 3·32, out_proj 32 → 32, the feed-forward 32 → 64 → 32, each over 8 tokens
    assert sorted(fc.values()) == sorted([(8, 32, 96), (8, 32, 32), (8, 32, 64), (8, 64, 32)])
    heads = [layer for layer in net.layers if layer.kind == "matmul"]
    # QKᵀ: 2 heads of (8 × 16)·(16 × 8); A·V: 2 heads of (8 × 8)·(8 × 16)
    assert [(h.repeat, h.ifmap_h, h.ifmap_w, h.filters) for h in heads] == [(2, 8, 16, 8), (2, 8, 8, 16)]
    assert "forward" not in vars(module)  # the export leaves the module as it was
    assert module(torch.zeros(1, 8, 32), is_causal=False).shape == (1, 8, 32)


def test_the_cli_costs_it(tmp_path, capsys):
    path = tmp_path / "enc.py"
    path.write_text(MODULE)
    assert main(["cost", f"{path}:EncoderLayer", "--input-shape", "1,8,32", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert "linear1" in out and "is_causal" not in err
