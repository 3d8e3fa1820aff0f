"""A layer's types (its ``kind``): the kinds a topology row names, the sets of them each rule tests, and the spellings the loaders
read (``linear`` → ``fc``, ``LayerNormalization`` → ``layernorm``)."""

from __future__ import annotations

from typing import Literal, get_args

from archsim.errors import InputError

LayerKind = Literal["conv", "fc", "matmul", "pool", "elementwise", "batchnorm", "layernorm", "deconv"]
LAYER_KINDS: tuple[LayerKind, ...] = get_args(LayerKind)
NORM_KINDS: tuple[LayerKind, ...] = ("batchnorm", "layernorm")
"""The normalisations: a batch norm (ONNX BatchNormalization, Instance-, GroupNormalization) and a layer norm
(LayerNormalization, a transformer's LayerNorm or RMSNorm over its features). One cost rule serves both (γ and β
per normalised channel, the same vector-unit passes); the kind keeps the two apart in what is printed."""
# The kind sets a layer's kind is tested against, each written once, here:
GEMM_KINDS: frozenset[LayerKind] = frozenset({"conv", "fc", "matmul", "deconv"})  # on the array (Layer.is_gemm)
FILTER_KINDS: frozenset[LayerKind] = frozenset({"conv", "fc", "deconv"})  # a filter of weights (matmul: activations)
CONV_FC_KINDS: frozenset[LayerKind] = frozenset({"conv", "fc"})  # a filter slid forward (SCALE-Sim's sparse, GPU)
CONV_KINDS: frozenset[LayerKind] = frozenset({"conv", "deconv"})  # the convolutions: groups and dilation apply

_KIND_ALIASES: dict[str, LayerKind] = {
    "linear": "fc", "fullyconnected": "fc", "gemm": "matmul", "bn": "batchnorm", "batchnormalization": "batchnorm",
    "ln": "layernorm", "layernormalization": "layernorm", "add": "elementwise", "relu": "elementwise",
    "maxpool": "pool", "avgpool": "pool", "convtranspose": "deconv", "transposedconv": "deconv",
    "convtranspose2d": "deconv"}
_SPELLINGS: dict[str, LayerKind] = {kind: kind for kind in LAYER_KINDS} | _KIND_ALIASES
KIND_SPELLINGS: frozenset[str] = frozenset(_SPELLINGS)
"""Every layer-type spelling the loaders accept, normalised as :func:`canonical_kind` normalises."""


def spelled_kind(text: str) -> LayerKind | None:
    """The layer kind ``text`` spells (as :func:`canonical_kind`), None where it spells none."""
    return _SPELLINGS.get(text.strip().lower().replace("_", "").replace("-", ""))


def canonical_kind(text: str) -> LayerKind:
    """Normalise a layer-type spelling (``linear`` → ``fc``, ``add`` → ``elementwise`` …)."""
    kind = spelled_kind(text)
    if kind is None:
        raise InputError(f"unknown layer type {text!r}; choose one of {', '.join(LAYER_KINDS)}",
                         field="Type")
    return kind
