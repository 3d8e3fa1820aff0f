"""Hidden (residual and embedding) dropout in Megatron's op list and activation memory, against hand counts.

Llama has none: transformers' ``LlamaDecoderLayer`` adds each sub-layer's output to the residual with no
dropout between (``LlamaMLP`` and ``LlamaAttention`` end at ``down_proj`` / ``o_proj``, and ``LlamaConfig``
has no field for one), and Megatron-LM's ``examples/llama/train_llama3_8b_h100_fp8.sh`` runs
``--hidden-dropout 0.0``. PyTorch launches no dropout kernel at probability 0 (``at::native::dropout``
returns its input), so Megatron's bias-dropout-add is the residual add alone (read x and the residual,
write: 3 units each way, no ½-unit mask), the embedding runs no dropout, and no 1-byte mask is kept —
Korthikanti et al.'s 10 + 24/t bytes per s·b·h (34 with sequence parallelism) lose the two residual masks.
GPT keeps all of it: its lists are checked against the same hand counts, unchanged.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from archsim.errors import InputError
from archsim.training.layer_activations import layer_activation_bytes
from archsim.training.layer_ops import block_work, embedding_work
from archsim.training.memory import stage_memory
from archsim.training.parallel import Parallelism
from archsim.workload.model_files import load_transformer
from archsim.workload.transformer import TransformerConfig

# A tiny Llama: hidden 64, 4 query heads, 2 KV heads, 8 tokens; micro-batch 3 → T = 24 tokens, T·h = 1,536
LLAMA = TransformerConfig("tiny", "llama", layers=2, hidden=64, heads=4, vocab=100, seq=8, ffn=176, kv_heads=2,
                          tied_embeddings=False)
BATCH, X = 3, 24 * 64


def _elements(ops, name: str) -> list[int]:
    return [op.vector_elements for op in ops if op.layer == name]


def test_llama_drops_no_hidden_states_unless_told():
    assert LLAMA.drops_hidden is False
    assert replace(LLAMA, hidden_dropout=0.1).drops_hidden is True
    assert replace(LLAMA, hidden_dropout=0.0).drops_hidden is False
    gpt = TransformerConfig("g", "gpt", 2, 64, 4, 100, 8, 256, 4, positions=8)
    assert (gpt.drops_hidden, replace(gpt, hidden_dropout=0.0).drops_hidden) == (True, False)


@pytest.mark.parametrize("value", [1.0, -0.1, "0.1", True])
def test_a_hidden_dropout_that_is_not_a_probability_is_refused(value):
    with pytest.raises(InputError, match="hidden_dropout"):
        replace(LLAMA, hidden_dropout=value)


@pytest.mark.parametrize("attention", ["standard", "flash"])
def test_the_residual_add_loses_its_mask_by_hand(attention):
    off, on = block_work(LLAMA, BATCH, attention=attention), block_work(replace(LLAMA, hidden_dropout=0.1),
                                                                        BATCH, attention=attention)
    # with dropout: read x, residual, write, ½-unit mask = 3.5 × 1,536 = 5,376 each way; without: 3 × 1,536
    for name in ("residual1", "residual2"):
        assert _elements(on.forward, name) == _elements(on.backward, name) == [5376]
        assert _elements(off.forward, name) == _elements(off.backward, name) == [4608]
    # the same kernels either way (the add still runs): only those two ops' bytes move
    assert [op.layer for op in off.forward] == [op.layer for op in on.forward]
    assert [op for op in off.forward if not op.layer.startswith("residual")] == [
        op for op in on.forward if not op.layer.startswith("residual")]


def test_the_residual_add_on_a_sequence_parallel_rank_by_hand():
    # TP 2 with sequence parallelism: the add sees 24 / 2 = 12 tokens × 64 = 768 elements
    off = block_work(LLAMA, BATCH, 2, True, "standard")
    on = block_work(replace(LLAMA, hidden_dropout=0.1), BATCH, 2, True, "standard")
    assert _elements(off.forward, "residual1") == [3 * 768]
    assert _elements(on.forward, "residual1") == [2688]  # 3.5 × 768


def test_the_embedding_runs_no_dropout_kernel_without_hidden_dropout():
    off, on = embedding_work(LLAMA, BATCH), embedding_work(replace(LLAMA, hidden_dropout=0.1), BATCH)
    assert [op.layer for op in on.forward] == ["embedding", "embedding_dropout"]
    assert _elements(on.forward, "embedding_dropout") == _elements(on.backward, "embedding_dropout") == [3840]
    assert [op.layer for op in off.forward] == ["embedding"] and [op.layer for op in off.backward] == ["embedding"]
    # the lookup and the table's gradient are the same ops either way
    assert off.forward == on.forward[:1] and off.backward == on.backward[1:]


# 24 tokens; each keeps 10 (8 without the masks) bytes per hidden element unsplit (÷ t with sequence
# parallelism), and 2 bytes per element of q (64/t), k and v (32/t each: 2 KV heads of 16), the projection's
# input (64/t) and SwiGLU's three ffn-wide tensors (3 × 176/t): 1,440 bytes at TP 1, 720 at TP 2
@pytest.mark.parametrize(("tp", "sp", "with_masks", "without"), [
    (1, False, 24 * (640 + 1440), 24 * (512 + 1440)),
    (2, False, 24 * (640 + 720), 24 * (512 + 720)),
    (2, True, 24 * (320 + 720), 24 * (256 + 720)),
])
def test_selective_activations_keep_no_residual_masks_by_hand(tp, sp, with_masks, without):
    on = replace(LLAMA, hidden_dropout=0.1)
    assert layer_activation_bytes(on, BATCH, tp, "selective", sp) == with_masks
    assert layer_activation_bytes(LLAMA, BATCH, tp, "selective", sp) == without
    # full recompute keeps the layer's input only: no mask either way
    assert layer_activation_bytes(on, BATCH, tp, "full", sp) == layer_activation_bytes(LLAMA, BATCH, tp, "full", sp)


def test_the_first_stage_keeps_no_embedding_mask_without_hidden_dropout():
    par = Parallelism(1, 2, 1, 9, BATCH, "full")
    first, middle = (stage_memory(LLAMA, par, 2, 3, first=f, last=False).activations for f in (True, False))
    assert first == middle
    on = replace(LLAMA, hidden_dropout=0.1)
    first, middle = (stage_memory(on, par, 2, 3, first=f, last=False).activations for f in (True, False))
    assert first - middle == 3 * X  # 3 micro-batches in flight × a 1-byte mask per hidden element


# the shipped GPT configs (configs/transformers/llama3_405b.toml is a Llama: no dropout, its own test)
SHIPPED = [p for p in sorted((Path(__file__).resolve().parents[1] / "configs" / "transformers").glob("*"))
           if load_transformer(p).family == "gpt"]


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_the_shipped_gpt_models_keep_their_dropouts_by_hand(path):
    c = load_transformer(path, seq=min(512, load_transformer(path).seq))
    assert c.family == "gpt" and c.drops_hidden
    b, tokens, h = 2, 2 * c.seq, c.hidden
    for tp, sp in ((1, False), (2, False), (2, True)):
        work = block_work(c, b, tp, sp, "standard")
        local = tokens * h // (tp if sp else 1)
        for name in ("residual1", "residual2"):  # Megatron's bias-dropout-add: 3.5 units each way
            assert _elements(work.forward, name) == _elements(work.backward, name) == [round(3.5 * local)]
        sbh = c.seq * b * h
        # Korthikanti et al.'s Table 2, selective: s·b·h·(10 + 24/t), or 34·s·b·h/t with sequence parallelism
        expected = 34 * sbh / tp if sp else sbh * (10 + 24 / tp)
        assert layer_activation_bytes(c, b, tp, "selective", sp) == pytest.approx(expected, rel=1e-12)
        # an explicit non-zero probability is the same model as the family's default
        assert block_work(replace(c, hidden_dropout=0.1), b, tp, sp, "standard") == work
    embedding = embedding_work(c, b)
    assert _elements(embedding.forward, "embedding_dropout") == [round(2.5 * tokens * h)]
