"""Sequence parallelism's second all-gather: each column-parallel GEMM re-gathers its input in the backward.

Megatron-LM (Megatron-Core 0.20.0, commit d98e8a6), ``megatron/core/tensor_parallel/layers.py``,
``LinearWithGradAccumulationAndAsyncCommunication``: with sequence parallelism the forward all-gathers the
rank's T/t tokens of the input into a shared buffer and saves only the local input (``save_for_backward(input,
weight)``); the backward all-gathers it again (async, under the δ GEMM) to compute the weight gradient, then
reduce-scatters the input gradient. A GPT layer has two column-parallel linears (QKV and the MLP's first;
a gated MLP's gate and up are one ``linear_fc1`` of twice the width, so still one input), the model one more
(the LM head: tests/test_embedding_head_collectives.py). Every gathered buffer is T·h fp16 elements, T = s·b tokens per micro-batch.

Expected per layer and micro-batch, with sequence parallelism (Korthikanti et al. 2022 §4.2.2 for the
conjugate pairs): forward 2 all-gathers (g before each column-parallel GEMM) and 2 reduce-scatters (ḡ after
each row-parallel one); backward 2 all-gathers (ḡ's conjugate, the row-parallel output gradients), 2 more
(the column-parallel inputs again) and 2 reduce-scatters (g's conjugate). Without it: only all-reduces.
"""

from __future__ import annotations

import pytest

from archsim.training.layer_ops import block_work
from archsim.workload.transformer import TransformerConfig

TP, BATCH = 4, 2
GPT = TransformerConfig("gpt-s", "gpt", layers=2, hidden=64, heads=4, vocab=1000, seq=32, ffn=256, kv_heads=4,
                        tied_embeddings=True, positions=32)
LLAMA = TransformerConfig("llama-s", "llama", layers=2, hidden=64, heads=4, vocab=1000, seq=32, ffn=176, kv_heads=2,
                          tied_embeddings=False)
COLUMN_PARALLEL_INPUTS = 2  # QKV, the MLP's first linear


def _of(collectives, kind: str) -> list[float]:
    return [c.bytes for c in collectives if c.kind == kind]


@pytest.mark.parametrize("c", [GPT, LLAMA], ids=["gpt", "gated"])
def test_sequence_parallel_backward_gathers_each_column_parallel_input_again(c):
    activation = c.seq * BATCH * c.hidden * 2  # s·b·h fp16 elements
    work = block_work(c, BATCH, TP, sequence_parallel=True)
    assert _of(work.forward_collectives, "all-gather") == [activation] * COLUMN_PARALLEL_INPUTS
    # the row-parallel outputs' gradients (2), then each column-parallel input again for its weight gradient (2)
    assert _of(work.backward_collectives, "all-gather") == [activation] * (2 + COLUMN_PARALLEL_INPUTS)
    assert _of(work.backward_collectives, "reduce-scatter") == [activation] * COLUMN_PARALLEL_INPUTS


@pytest.mark.parametrize("c", [GPT, LLAMA], ids=["gpt", "gated"])
def test_without_sequence_parallelism_nothing_is_gathered(c):
    activation = c.seq * BATCH * c.hidden * 2
    work = block_work(c, BATCH, TP, sequence_parallel=False)
    assert _of(work.backward_collectives, "all-gather") == []
    assert _of(work.backward_collectives, "all-reduce") == [activation] * COLUMN_PARALLEL_INPUTS
    assert block_work(c, BATCH, 1, sequence_parallel=True).backward_collectives == ()  # one rank: no group

