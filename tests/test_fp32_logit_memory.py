"""The LM head's logits in fp32 Megatron (issue #37): 4 bytes a logit, not fp16's 6 doubled.

Counted from Megatron-LM's ``megatron/core/tensor_parallel/cross_entropy.py``: the loss runs on
``output.float()`` (``vocab_parallel_cross_entropy``), and ``VocabParallelCrossEntropy.calculate_logits_max``
calls ``vocab_parallel_logits.float()`` again. In an fp16 model that makes an fp32 copy (4 bytes a logit) beside
the fp16 logits (2): Megatron's 6. In an fp32 model ``Tensor.float()`` returns the tensor itself, and the
forward then works in place on it — ``vocab_parallel_logits -= logits_max`` (subtraction in place),
``torch.exp(vocab_parallel_logits, out=exp_logits)`` with ``exp_logits = vocab_parallel_logits``, and
``exp_logits.div_(sum_exp_logits)`` — so the softmax that ``ctx.save_for_backward(exp_logits, target_mask,
masked_target_1d)`` keeps is the logits' own storage: one fp32 tensor, 4 bytes a logit (the bool target mask
and the int64 targets are per token, not per logit, and left out as the fp16 count leaves them out).

The fp32 tests failed on the old code (12 bytes a logit); the fp16 one passes on both: that figure must not move.
"""

from __future__ import annotations

import pytest

import archsim
from archsim.training.parallel import Parallelism
from archsim.training.search_space import rank_memories
from archsim.workload.transformer import TransformerConfig

# A tiny GPT, 4 layers, s = 16, b = 2, h = 64, a = 4, vocabulary 100 (Megatron pads it to 128·t = 256 at TP 2,
# 128 a rank), dropout on; PP 2, TP 2, 1F1B with 4 micro-batches: the last rank holds 1 in flight of 2 layers.
TINY = TransformerConfig("tiny", "gpt", 4, 64, 4, 100, 16, 256, 4, True, 16)
S, B, H, A, T = 16, 2, 64, 4, 2
VOCAB_PER_RANK = 256 // T


def _last_rank_layers() -> float:
    """Two layers, one micro-batch in flight, no recompute, fp32: 42·s·b·h + 9·a·s²·b/t each (Korthikanti et
    al.'s 10 + 24/t = 22 of s·b·h, of which the two residual masks' 2 stay 1 byte: 2·20 + 2; of the 5 per score the
    mask's 1 stays: 2·4 + 1)."""
    return 2 * (42 * S * B * H + 9 * A * S * S * B / T)


def test_fp32_search_counts_four_bytes_a_logit():
    par = Parallelism(T, 2, 1, 8, B, "none")
    last = rank_memories(TINY, par, ranks=[1], dtype="fp32")[0]
    assert last.activations == pytest.approx(_last_rank_layers() + 4 * S * B * VOCAB_PER_RANK)


def test_fp16_search_keeps_six_bytes_a_logit():
    """fp16: the fp16 logits and their fp32 copy, 6 bytes a logit, and 22·s·b·h + 5·a·s²·b/t a layer."""
    par = Parallelism(T, 2, 1, 8, B, "none")
    last = rank_memories(TINY, par, ranks=[1], dtype="fp16")[0]
    layers = 2 * (22 * S * B * H + 5 * A * S * S * B / T)
    assert last.activations == pytest.approx(layers + 6 * S * B * VOCAB_PER_RANK)


def test_fp32_train_counts_four_bytes_a_logit():
    """``archsim train``'s count on an A100 node (schedule simulated: the same in-flight counts)."""
    cluster = "configs/clusters/a100_node.toml"
    result, _ = archsim.train(TINY, cluster=cluster, global_batch=16, micro_batch=B, tp=T, pp=2, dp=2, dtype="fp32",
                              recompute="none", attention="standard")
    assert result.memory[1].activations == pytest.approx(_last_rank_layers() + 4 * S * B * VOCAB_PER_RANK)
