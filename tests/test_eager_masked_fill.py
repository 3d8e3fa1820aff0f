"""Out-of-place ``masked_fill`` as PyTorch dispatches it, against the bytes archsim's plain-PyTorch op list
charges it (:func:`archsim.training.eager_ops.eager_block_work`).

The reference is PyTorch itself: its profiler on the CPU records the ATen calls ``masked_fill`` makes, which are
the device-independent composite (``clone`` then an in-place ``masked_fill_``) that the CUDA runs of
``benchmarks/gpu_train_measure.py`` execute too — there as a device-to-device copy and the fill kernel.
"""

from __future__ import annotations

import pytest

from archsim.training.eager_ops import eager_block_work
from archsim.workload.transformer import TransformerConfig

torch = pytest.importorskip("torch")

C = TransformerConfig("t", "gpt", 2, 64, 4, 1000, 32, 256, 4, True, 32)  # s 32, h 64, a 4


def aten_children(events, parent: str) -> list[str]:
    """The ATen calls made directly by each ``parent`` call, in order, over every such call."""
    return [e.name for e in events if e.cpu_parent is not None and e.cpu_parent.name == parent]


def test_masked_fill_is_a_clone_and_an_in_place_fill_both_ways():
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    scores = torch.randn(2 * C.heads, C.seq, C.seq, requires_grad=True)
    mask = torch.ones(C.seq, C.seq, dtype=torch.bool).triu(1)  # gpt_model.py's causal mask, broadcast
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        scores.masked_fill(mask, -10000.0).sum().backward()
    events = list(prof.events())
    calls = [e for e in events if e.name == "aten::masked_fill"]
    assert len(calls) == 2  # the forward's, and the backward's grad.masked_fill(mask, 0)
    moved = [n for n in aten_children(events, "aten::masked_fill") if n in ("aten::clone", "aten::masked_fill_")]
    assert moved == ["aten::clone", "aten::masked_fill_"] * 2
    assert aten_children(events, "aten::clone").count("aten::copy_") == 2


def test_eager_list_charges_the_clone_and_the_fill():
    """Each way: the clone reads and writes the s²-sized scores, the in-place fill reads and writes them again."""
    b = 2
    scores = C.seq * C.seq * b * C.heads
    work = eager_block_work(C, b)
    for ops in (work.forward, work.backward):
        (fill,) = [op for op in ops if op.layer == "mask_fill"]
        assert fill.vector_elements == 4 * scores
