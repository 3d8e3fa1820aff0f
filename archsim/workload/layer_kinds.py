"""Which kind each layer of a model is: the one list a model's layers are counted, timed and held by.

Megatron-Core builds each layer from its index (``--moe-layer-freq``, a 0/1 list or a 1-in-N rule:
``megatron/core/models/gpt/gpt_layer_specs.py`` ``get_gpt_decoder_layer_specs`` gives each layer the dense or the
MoE spec by it; Megatron-LM commit d98e8a6), so a mixture of experts may hold dense layers:
DeepSeek-V2/V3's first ``first_k_dense_replace`` layers are a dense SwiGLU MLP of ``intermediate_size``
(Megatron's ``--moe-layer-freq ([0]*3+[1]*58)`` for V3). :attr:`TransformerConfig.dense_layers` lists them.

Each kind is a :class:`~archsim.workload.transformer.TransformerConfig` of its own (the dense kind: the model's
with its experts taken away, :func:`dense_config`), so every per-layer figure — op lists, parameters, activations —
is the one a uniform model's layer has, read on the kind's config; a stage sums its own layers' kinds
(:func:`stage_kinds`; Megatron splits layers over stages by count, whatever their kinds). A model whose layers are
one kind has the one kind :data:`LAYER`, its own config: its figures are the uniform model's, to the bit.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from archsim.workload.transformer import TransformerConfig

LAYER = "layer"  # the model's own layer (a mixture's MoE layer)
DENSE = "dense_layer"  # a mixture's dense layer


@lru_cache(maxsize=256)
def dense_config(c: TransformerConfig) -> TransformerConfig:
    """``c``'s dense layer: its attention, a SwiGLU MLP of ``ffn`` width, no experts (nor their settings)."""
    return replace(c, experts=0, experts_per_token=0, expert_ffn=0, shared_expert_ffn=0, dense_layers=(),
                   shared_expert_gate=True, router_score="softmax", routed_scaling_factor=1.0,
                   moe_expert_capacity_factor=None, moe_pad_expert_input_to_capacity=False, moe_load_imbalance=None,
                   overlap_moe_expert_parallel_comm=False, moe_shared_expert_overlap=False)


def kind_configs(c: TransformerConfig) -> dict[str, TransformerConfig]:
    """Each kind's name → the config its layers are built from: :data:`LAYER` (``c``) and, with dense layers,
    :data:`DENSE`."""
    return {LAYER: c, DENSE: dense_config(c)} if c.dense_layers else {LAYER: c}


def layer_kinds(c: TransformerConfig) -> tuple[str, ...]:
    """Each layer's kind, in order."""
    dense = set(c.dense_layers)
    return tuple(DENSE if i in dense else LAYER for i in range(c.layers))


def stage_kinds(c: TransformerConfig, counts: Sequence[int]) -> tuple[tuple[tuple[str, int], ...], ...]:
    """Per (virtual) stage, holding ``counts[j]`` consecutive layers (stage j after stage j − 1, Megatron's order of
    virtual stages): (kind, layers of it) for every kind of the model, in :func:`kind_configs`' order (a count may be
    0). One kind: ((LAYER, counts[j]),)."""
    if not c.dense_layers:
        return tuple(((LAYER, n),) for n in counts)
    kinds, out, start = layer_kinds(c), [], 0
    for n in counts:
        mine = kinds[start:start + n]
        out.append(tuple((kind, mine.count(kind)) for kind in kind_configs(c)))
        start += n
    return tuple(out)


def part_counts(c: TransformerConfig, counts: Sequence[int], stages: Sequence[int]) -> list[int]:
    """The layers of each part of virtual ``stages`` (stage j holding ``counts[j]``): a part is a stage's layers of
    one kind, the kinds in :func:`kind_configs`' order — one part a stage (its count) for a model of one kind."""
    if not c.dense_layers:
        return [counts[j] for j in stages]
    kinds = stage_kinds(c, counts)
    return [n for j in stages for _, n in kinds[j]]


def held_kinds(c: TransformerConfig, counts: Sequence[int], owners: Sequence[int],
               ranks: Collection[int] | None = None) -> tuple[int, ...]:
    """The layers of each kind (:func:`kind_configs`' order) that ``ranks`` hold (None: every rank), virtual stage j
    holding ``counts[j]`` layers on rank ``owners[j]``: the one sum a rank's per-kind figures (energy, expert
    parameters) read."""
    mine = [kinds for kinds, rank in zip(stage_kinds(c, counts), owners, strict=True) if ranks is None or rank in ranks]
    return tuple(sum(kinds[k][1] for kinds in mine) for k in range(len(kind_configs(c))))


def kind_counts(c: TransformerConfig) -> tuple[tuple[TransformerConfig, int], ...]:
    """The model's layers by kind: (the kind's config, its layers)."""
    return tuple((kind_configs(c)[kind], n) for kind, n in stage_kinds(c, (c.layers,))[0])


__all__ = ["DENSE", "LAYER", "dense_config", "held_kinds", "kind_configs", "kind_counts", "layer_kinds", "part_counts", "stage_kinds"]
