"""The models of tests/data/onnx/*.onnx (user trial 29; mha.onnx followups 28; cross_attention.onnx and
memory_attention.onnx followups 30), exported as archsim.workload.from_torch exports: training mode, opset 17; the
CNN without constant folding (in eval mode it would fold the batch norms into the convs), the encoder and the
self-attention with it (it drops only the shape arithmetic, a third of the file), the two cross-attentions without
it, as from_torch exports (``archsim import FILE.py:ClassName``): their weights' slice bounds are shape arithmetic
on the weights themselves. Regenerate with ``python tests/data/onnx/user_models.py [NAME ...]`` (all five without
a NAME; needs torch and onnx; the weights are seeded but archsim reads only shapes; the nodes' doc strings, the
exporter's Python stack traces, are dropped to keep the files small). mha.onnx and the cross-attentions: torch
2.13."""

import sys
from pathlib import Path

import onnx
import torch
from torch import nn


class SmallCNN(nn.Module):
    """conv/bn/relu, a residual add, a max pool and a flattening linear classifier (16 × 16 × 3 input)."""

    def __init__(self):
        super().__init__()
        self.stem, self.bn = nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.BatchNorm2d(8)
        self.c1, self.bn1 = nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1)
        self.pool, self.fc = nn.MaxPool2d(2), nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        y = torch.relu(self.bn(self.stem(x)))
        y = torch.relu(self.c2(torch.relu(self.bn1(self.c1(y)))) + y)
        return self.fc(torch.flatten(self.pool(y), 1))


class SelfAttention(nn.Module):
    """One nn.MultiheadAttention as self-attention: d_model 8, 2 heads, batch first (6 × 8 input); its fused
    q/k/v projection is cut in three by a Gather (followups 28)."""

    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x, need_weights=False)[0]


class CrossAttention(nn.Module):
    """One nn.MultiheadAttention reading three different tensors: 6 queries, 5 keys and 5 values of d_model 8,
    2 heads, batch first; PyTorch slices its in-projection weight and bias in three, one per input (followups 30)."""

    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, q, k, v):
        return self.attn(q, k, v, need_weights=False)[0]


class MemoryAttention(CrossAttention):
    """A decoder's cross-attention: 6 queries on a memory of 5 tokens, the memory both keys and values (d_model 8,
    2 heads); PyTorch projects the memory once into k and v together and cuts them apart with a Gather."""

    def forward(self, x, memory):
        return self.attn(x, memory, memory, need_weights=False)[0]


class Encoder(nn.Module):
    """Two post-norm encoder layers: d_model 8, 2 heads, feed-forward 16, GELU, no dropout (6 × 8 input)."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu", batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, x):
        return self.enc(x)


if __name__ == "__main__":
    torch.manual_seed(0)
    here = Path(__file__).parent
    for module, shapes, name in ((SmallCNN(), [(1, 3, 16, 16)], "small_cnn"), (Encoder(), [(1, 6, 8)], "encoder2"),
                                 (SelfAttention(), [(1, 6, 8)], "mha"),
                                 (CrossAttention(), [(1, 6, 8), (1, 5, 8), (1, 5, 8)], "cross_attention"),
                                 (MemoryAttention(), [(1, 6, 8), (1, 5, 8)], "memory_attention")):
        if sys.argv[1:] and name not in sys.argv[1:]:
            continue
        torch.onnx.export(module, tuple(torch.zeros(shape) for shape in shapes), str(here / f"{name}.onnx"),
                          dynamo=False, opset_version=17, training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=name in ("encoder2", "mha"))
        model = onnx.load(here / f"{name}.onnx")
        for node in model.graph.node:
            node.doc_string = ""
        onnx.save(model, here / f"{name}.onnx")
