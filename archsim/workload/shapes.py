"""Shape checks between a layer and the layers it reads (per sample, element counts and maps).

Rules, for a consumer reading producers P₁…Pₙ (the network input is not checked: its shape is
whatever the first layers declare):

* conv and pool read a feature map: one spatial producer (conv, pool, batchnorm, layernorm, elementwise)
  must give exactly the consumer's H×W×C; several are concatenated along channels — each gives
  H×W and their channels add up to C. In SCALE-Sim geometry the declared input includes the
  padding, so it may exceed the producer's H×W. A conv or pool may also declare rows (columns) beyond
  the producer's when the padding is asymmetric (ONNX ``pads = [0, 0, 1, 1]``): the part one
  symmetric Padding cannot state is folded into the input, so the extra rows plus twice Padding
  stay within the filter's span less one — padding a whole window would read no input at all.
  Other producers (fc, matmul) must give H·W·C elements.
* fc, batchnorm and layernorm read a tensor of H·W·C elements (a flattening fc reads a whole map): the
  producers' elements add up to it.
* elementwise: every producer gives the consumer's element count, or a divisor of it
  (broadcast, e.g. a per-channel scale).
* matmul: operands are parts of their producers' outputs (Q and K of one QKV projection), so
  each producer must give at least one operand's elements (M·K or K·N per instance).

A producer the consumer reads one part of (:class:`~archsim.workload.layer.PartRead`, ``qkv#1/3``) gives
that part: its output with the channels divided by the part count.

A mismatch is an :class:`InputError` naming both layers and both shapes.
"""

from __future__ import annotations

from archsim.errors import InputError
from archsim.workload.layer import NETWORK_INPUT, Layer, Network

_SPATIAL = ("conv", "pool", "batchnorm", "layernorm", "elementwise", "deconv")


def output_shape(layer: Layer) -> tuple[int, int, int]:
    """(H, W, C) of a layer's output per sample; a matmul's is M × N × instances."""
    if layer.kind == "matmul":
        return layer.ifmap_h, layer.filters, layer.repeat
    return layer.ofmap_h, layer.ofmap_w, layer.filters


def input_shape(layer: Layer) -> tuple[int, int, int]:
    return layer.ifmap_h, layer.ifmap_w, layer.channels


def _fmt(shape: tuple[int, int, int]) -> str:
    return f"{shape[0]}×{shape[1]}×{shape[2]} ({shape[0] * shape[1] * shape[2]:,} elements)"


def part_shape(shape: tuple[int, int, int], count: int) -> tuple[int, int, int] | None:
    """One of ``count`` equal parts of an output of ``shape`` (H, W, C), cut along its channels; None when
    ``count`` does not divide C."""
    h, w, c = shape
    return (h, w, c // count) if c % count == 0 else None


def shape_problem(layer: Layer, producers: list[Layer], parts: dict[str, int] | None = None) -> str | None:
    """Why ``layer`` cannot read ``producers`` (see module docstring), or None when it can; ``parts``: the
    producers it reads one part of, each with its part count (:meth:`Network.parts_of`)."""
    if not producers:
        return None
    want = input_shape(layer)
    need = want[0] * want[1] * want[2]  # ``repeat`` multiplies matmul instances only (lowering)
    parts = parts or {}
    shapes = []
    for p in producers:
        whole = output_shape(p)
        part = part_shape(whole, parts[p.name]) if p.name in parts else whole
        if part is None:
            return f"{p.name!r} gives {_fmt(whole)}, whose {whole[2]:,} channels do not cut into {parts[p.name]} parts"
        shapes.append(part)
    sizes = [h * w * c for h, w, c in shapes]
    given = "; ".join(f"{p.name!r} gives {_fmt(s)}" if p.name not in parts else
                      f"one of {parts[p.name]} parts of {p.name!r} gives {_fmt(s)}" for p, s in zip(producers, shapes))
    expect = f"{layer.name!r} ({layer.kind}) expects {_fmt(want)}"
    if layer.kind in ("conv", "pool", "deconv") and all(p.kind in _SPATIAL for p in producers):
        folded = layer.geometry == "scalesim"  # SCALE-Sim folds padding into the declared input
        if any(s[:2] != want[:2] and not (folded and s[0] <= want[0] and s[1] <= want[1])
               and not _folded_pads(layer, s) for s in shapes) or sum(s[2] for s in shapes) != want[2]:
            return f"{given}, but {expect}"
        return None
    if layer.kind == "elementwise":
        if any(need % size for size in sizes):
            return f"{given}, but {expect}"
        return None
    if layer.kind == "matmul":
        smallest = min(layer.ifmap_h * layer.ifmap_w, layer.ifmap_w * layer.filters) * layer.repeat
        if any(size < smallest for size in sizes):
            return f"{given}, but {expect} per operand at least {smallest:,} elements"
        return None
    if sum(sizes) != need:
        return f"{given}, but {expect}"
    return None


def _folded_pads(layer: Layer, given: tuple[int, int, int]) -> bool:
    """Does ``layer`` (conv or pool) declare ``given``'s map plus asymmetric padding folded into its input?"""
    if layer.kind not in ("conv", "pool"):
        return False
    extra = (layer.ifmap_h - given[0], layer.ifmap_w - given[1])
    return all(0 <= e and e + 2 * layer.padding < span for e, span in zip(extra, (layer.span_h, layer.span_w)))


def check_shapes(network: Network, lines: dict[str, int] | None = None) -> None:
    """Raise :class:`InputError` at the first layer whose producers' shapes do not fit it."""
    by_name = {layer.name: layer for layer in network.layers}
    for layer in network.layers:
        producers = [by_name[name] for name in layer.inputs if name != NETWORK_INPUT]
        problem = shape_problem(layer, producers, network.parts_of(layer.name))
        if problem:
            raise InputError(f"shape mismatch: {problem}", file=network.source,
                             line=(lines or {}).get(layer.name), field="Inputs")
