"""The embedding's and the LM head's TP collectives and token counts, with and without sequence parallelism,
as Megatron-LM runs them (Megatron-Core 0.20.0, commit d98e8a6), against counts taken from the model's shapes.

Per micro-batch of T = s·b tokens, hidden h, TP t; every activation collective moves the full buffer of
T·h fp16 elements (2 bytes each), the cross-entropy's three all-reduces T fp32 values (4 bytes each).

* ``VocabParallelEmbedding.forward`` (``megatron/core/tensor_parallel/layers.py``): without sequence
  parallelism ``reduce_from_tensor_model_parallel_region`` — an all-reduce forward, nothing backward.
  With it, ``LanguageModelEmbedding`` (``models/common/embeddings/language_model_embedding.py``) sets
  ``reduce_scatter_embeddings`` only when there are no learned positions and no token types: then
  ``reduce_scatter_to_sequence_parallel_region`` (reduce-scatter forward, all-gather backward). With
  learned positions the all-reduce stays, the positions are added, and
  ``scatter_to_sequence_parallel_region`` splits the sum (no collective forward, an all-gather backward).
  Either way the sequence-parallel output is cloned (``clone_scatter_output_in_embedding``, on by
  default: read and write T/t·h, forward only) and dropped out on T/t tokens.
* ``GPTModel``'s output layer is a ``ColumnParallelLinear``: without sequence parallelism its input is
  all-reduced in the backward (``allreduce_dgrad``); with it, all-gathered forward, all-gathered again
  backward for the weight gradient (the forward saves only the rank's T/t tokens) and its gradient
  reduce-scattered backward (``LinearWithGradAccumulationAndAsyncCommunication``). The final norm before it
  runs on the rank's T/t tokens under sequence parallelism.
"""

from __future__ import annotations

import pytest

from archsim.training.iteration import piece_works
from archsim.training.layer_ops import block_work
from archsim.workload.transformer import TransformerConfig

TP, BATCH = 4, 2
# a small GPT with learned positions (GPT-2/GPT-3's embedding) and a small Llama (rotary: no position table)
GPT = TransformerConfig("gpt-s", "gpt", layers=2, hidden=64, heads=4, vocab=1000, seq=32, ffn=256, kv_heads=4,
                        tied_embeddings=True, positions=32)
LLAMA = TransformerConfig("llama-s", "llama", layers=2, hidden=64, heads=4, vocab=1000, seq=32, ffn=176, kv_heads=2,
                          tied_embeddings=False, hidden_dropout=0.1)


def _pieces(c: TransformerConfig, sp: bool):
    (layer, embedding, head), _ = piece_works(c, BATCH, TP, sp, "standard", "megatron", "fp16")
    return layer, embedding, head


def _kinds_bytes(collectives) -> list[tuple[str, float]]:
    return [(c.kind, c.bytes) for c in collectives]


def _elements(ops, name: str) -> list[int]:
    return [op.vector_elements for op in ops if op.layer == name]


@pytest.mark.parametrize("c", [GPT, LLAMA], ids=["learned", "rotary"])
def test_without_sequence_parallelism_the_embedding_and_head_all_reduce(c):
    activation = c.seq * BATCH * c.hidden * 2  # s·b·h fp16
    _, embedding, head = _pieces(c, False)
    assert _kinds_bytes(embedding.forward_collectives) == [("all-reduce", activation)]
    assert _kinds_bytes(embedding.backward_collectives) == []
    assert _kinds_bytes(head.forward_collectives) == [("all-reduce", c.seq * BATCH * 4)] * 3
    assert _kinds_bytes(head.backward_collectives) == [("all-reduce", activation)]


def test_sequence_parallel_embedding_with_learned_positions_all_reduces_then_scatters():
    activation = GPT.seq * BATCH * GPT.hidden * 2
    _, embedding, _ = _pieces(GPT, True)
    assert _kinds_bytes(embedding.forward_collectives) == [("all-reduce", activation)]
    assert _kinds_bytes(embedding.backward_collectives) == [("all-gather", activation)]


def test_sequence_parallel_embedding_without_a_position_table_reduce_scatters():
    activation = LLAMA.seq * BATCH * LLAMA.hidden * 2
    _, embedding, _ = _pieces(LLAMA, True)
    assert _kinds_bytes(embedding.forward_collectives) == [("reduce-scatter", activation)]
    assert _kinds_bytes(embedding.backward_collectives) == [("all-gather", activation)]


@pytest.mark.parametrize("c", [GPT, LLAMA], ids=["learned", "rotary"])
def test_sequence_parallel_head_gathers_forward_and_reduce_scatters_backward(c):
    activation = c.seq * BATCH * c.hidden * 2
    _, _, head = _pieces(c, True)
    assert _kinds_bytes(head.forward_collectives) == [("all-gather", activation)] + [("all-reduce", c.seq * BATCH * 4)] * 3
    assert _kinds_bytes(head.backward_collectives) == [("all-gather", activation), ("reduce-scatter", activation)]


@pytest.mark.parametrize("c", [GPT, LLAMA], ids=["learned", "rotary"])
def test_sequence_parallel_embedding_and_head_work_on_the_ranks_tokens(c):
    tokens, h = c.seq * BATCH, c.hidden
    local = tokens // TP  # 16 of 64 tokens
    _, embedding, head = _pieces(c, True)
    assert _elements(head.forward, "final_norm") == [2 * local * h]  # read x, write y
    assert _elements(head.backward, "final_norm") == [3 * local * h]  # read dy, x, write dx
    assert _elements(embedding.forward, "embedding_clone") == [2 * local * h]  # read, write; no backward kernel
    assert _elements(embedding.backward, "embedding_clone") == []
    assert _elements(embedding.forward, "embedding_dropout") == [round(2.5 * local * h)]
    assert _elements(embedding.backward, "embedding_dropout") == [round(2.5 * local * h)]
    # the lookup itself is over every token: each rank gathers the rows of its vocabulary slice for all T
    _, whole, whole_head = _pieces(c, False)
    assert _elements(embedding.forward, "embedding") == _elements(whole.forward, "embedding")
    assert _elements(whole_head.forward, "final_norm") == [2 * tokens * h]
    assert _elements(whole.forward, "embedding_clone") == []


def test_sequence_parallelism_leaves_the_layer_and_the_head_gemm_alone():
    """The layer's own list and the LM head's GEMM over all T tokens are the same either way."""
    layer, _, head = _pieces(GPT, True)
    assert layer == block_work(GPT, BATCH, TP, True, "standard")
    _, _, plain = _pieces(GPT, False)
    gemms = [op for op in head.forward + head.backward if op.layer == "lm_head"]
    assert gemms == [op for op in plain.forward + plain.backward if op.layer == "lm_head"]
    assert gemms[0].gemms[0].m == GPT.seq * BATCH
