"""A network as the other commands load it (a shipped name, a layers CSV, an ONNX file) as BPPSA's chain of
operators (§2.1, Eq. 1), with seeded random weights: what ``archsim bppsa network`` scans.

An archsim layer row states a geometry, not an operator's values or its nonlinearity, so the rows are read as
the operators :mod:`archsim.bppsa.jacobians` has Jacobians for: ``conv`` (groups 1, dilation 1) → Conv2d;
``fc`` → Linear (a 1×1 or whole-input filter; a 1×1 over a map of several positions is the same 1×1 Conv2d);
``pool`` → MaxPool2d (a row does not say max or average: max is the kind BPPSA's Jacobians cover); an
``elementwise`` row with one input → its operator (``Layer.operator``, the ONNX importer's or a CSV's
``Operator``): ``relu`` → ReLU, ``sigmoid`` → Sigmoid, ``tanh`` → Tanh, any other refused naming it; a row that
states none (a CSV without the column, a shipped network) → ReLU, as before operators were read. Any other kind, a join (several inputs) or a layer that does not read
the previous layer's output whole is refused in one line naming the layer. A conv row whose input is the previous
output plus a zero border (SCALE-Sim's topologies fold padding into the IFMAP size) reads it as its padding
(:func:`folded_border`); the first row's input is taken as declared, border and all.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from archsim.bppsa.layers import Conv2d, Layer, Linear, MaxPool2d, ReLU, Sigmoid, Tanh, output_shape
from archsim.errors import InputError

if TYPE_CHECKING:
    from archsim.workload.layer import Layer as NetworkLayer
    from archsim.workload.layer import Network

SUPPORTED = ("conv, fc, pool (as max pooling) and one-input elementwise (relu, sigmoid, tanh; one that names no "
             "operator as ReLU)")
ELEMENTWISE: dict[str | None, type[ReLU | Sigmoid | Tanh]] = {None: ReLU, "relu": ReLU, "sigmoid": Sigmoid,
                                                              "tanh": Tanh}
"""An elementwise row's operator (``Layer.operator``) → the operator class whose Jacobian the chain builds; None,
a row that does not say, is read as ReLU (as every elementwise row was before rows stated an operator)."""


def _refused(row: NetworkLayer, why: str) -> InputError:
    return InputError(f"layer {row.name!r} ({row.kind}) {why}; BPPSA's Jacobians cover {SUPPORTED} in a chain")


def _weight(shape: tuple[int, ...], fan_in: int, rng: np.random.Generator | None) -> np.ndarray:
    """He-initialized weights from ``rng``; without one a zero view of the shape, no memory (a check of the chain)."""
    if rng is None:
        return np.broadcast_to(np.float64(0.0), shape)
    return rng.standard_normal(shape) * np.sqrt(2 / fan_in)


def _operator(row: NetworkLayer, rng: np.random.Generator | None) -> Layer:
    """One row's operator; conv and fc weights He-initialized from ``rng`` (no bias: it adds no Jacobian term)."""
    if row.repeat != 1:
        raise _refused(row, f"repeats {row.repeat} instances per sample")
    if row.kind == "conv":
        if row.groups != 1 or row.dilation != 1:
            raise _refused(row, "is grouped or dilated")
        weight = _weight((row.filters, row.channels, row.filter_h, row.filter_w),
                         row.channels * row.filter_h * row.filter_w, rng)
        return Conv2d(weight, (row.stride, row.stride), (row.padding, row.padding))
    if row.kind == "fc":
        one_by_one = (row.filter_h, row.filter_w) == (1, 1)
        inputs = row.channels if one_by_one else row.channels * row.ifmap_h * row.ifmap_w
        if one_by_one and (row.ifmap_h, row.ifmap_w) != (1, 1):  # position-wise: the same 1×1 at every position
            return Conv2d(_weight((row.filters, row.channels, 1, 1), inputs, rng))
        weight = _weight((row.filters, inputs), inputs, rng)
        return Linear(weight)
    if row.kind == "pool":
        if row.filters != row.channels:
            raise _refused(row, "reduces the channels to one")
        return MaxPool2d((row.filter_h, row.filter_w), (row.stride, row.stride), (row.padding, row.padding))
    if row.kind == "elementwise":
        if len(row.inputs) != 1:
            raise _refused(row, f"joins {len(row.inputs)} inputs ({', '.join(row.inputs)})")
        if row.operator not in ELEMENTWISE:
            raise _refused(row, f"is {row.operator}, which has no BPPSA Jacobian here")
        return ELEMENTWISE[row.operator]()
    raise _refused(row, "has no BPPSA Jacobian")


def folded_border(row: NetworkLayer, shape: tuple[int, int, int]) -> tuple[int, int] | None:
    """The (rows, columns) of zeros a conv ``row`` folds into its declared input around the previous output of CHW
    ``shape``, as SCALE-Sim topologies state padding (``conv2, 34, 34, 3, 3, …`` after a 32×32 output: 1 each
    side), or None where the row does not read ``shape`` so. Read only where unambiguous: the same channels, no
    Padding stated beside it, an even excess on each axis (a symmetric border) and a border narrower than the
    filter (a wider one would put a whole window on zeros). Rows and columns are elements per side."""
    excess = (row.ifmap_h - shape[1], row.ifmap_w - shape[2])
    if row.channels != shape[0] or row.padding or excess == (0, 0) or min(excess) < 0 or any(e % 2 for e in excess):
        return None
    border = (excess[0] // 2, excess[1] // 2)
    return border if border[0] < row.filter_h and border[1] < row.filter_w else None


def _border_note(row: NetworkLayer, shape: tuple[int, int, int]) -> str:
    """Why a larger conv input is not read as a folded zero border, where that is what it looks like."""
    excess = (row.ifmap_h - shape[1], row.ifmap_w - shape[2])
    if row.kind != "conv" or row.channels != shape[0] or min(excess) < 0 or excess == (0, 0):
        return ""
    if row.padding:
        return f" (a border folded into the input beside Padding {row.padding}: give one or the other)"
    if any(e % 2 for e in excess):
        return " (an odd border: padding on one side only is not read from a folded input)"
    return " (a folded border as wide as the filter would put a whole window on zeros)"


def _declared_input(row: NetworkLayer) -> tuple[int, int, int]:
    """The CHW input a row declares: (channels, ifmap rows, ifmap columns)."""
    return row.channels, row.ifmap_h, row.ifmap_w


def network_chain(network: Network, seed: int | None) -> tuple[tuple[Layer, ...], tuple[int, int, int]]:
    """``network``'s operators in order and the CHW shape of one input sample; weights seeded by ``seed`` (None:
    zero views that take no memory, to check the chain before its size).
    Refuses (one line, naming the layer) a kind without a Jacobian, a join, and a layer whose input is not the
    previous layer's output (another producer, or another shape: a conv's folded zero border is read as its
    padding, :func:`folded_border`)."""
    rows = network.layers
    if not rows:
        raise InputError("the network has no layers")
    rng = None if seed is None else np.random.default_rng(seed)
    sample = shape = _declared_input(rows[0])  # the first row's input taken as declared, border and all
    operators: list[Layer] = []
    for k, row in enumerate(rows):
        operator = _operator(row, rng)
        if k and row.inputs != (rows[k - 1].name,):
            raise _refused(row, f"reads {', '.join(row.inputs)}, not the previous layer {rows[k - 1].name!r}")
        given = _declared_input(row)
        whole = isinstance(operator, Linear) and int(np.prod(given)) == int(np.prod(shape))
        border = folded_border(row, shape) if k and isinstance(operator, Conv2d) else None
        if border is not None and isinstance(operator, Conv2d):  # the folded zero border: the conv's own padding
            operator = replace(operator, padding=border)
        elif k and given != shape and not whole:
            raise _refused(row, f"reads a {given[1]}x{given[2]}x{given[0]} input, but {rows[k - 1].name!r} gives "
                                f"{shape[1]}x{shape[2]}x{shape[0]}{_border_note(row, shape)}")
        try:
            shape = output_shape(operator, shape)
        except InputError as exc:
            raise _refused(row, exc.message) from None
        operators.append(operator)
    return tuple(operators), sample


def jacobian_entries(network: Network) -> int:
    """An upper bound on the stored entries of the chain's transposed Jacobians per sample, from the rows' geometry
    alone (no weight drawn, no Jacobian built): conv out·c_i·h_f·w_f, fc in·out, pooling out·window, an
    elementwise operator (a diagonal) its size
    (a kind without a Jacobian counts 0: :func:`network_chain` refuses it). BP's FLOPs are about twice this."""
    total = 0
    for row in network.layers:
        out = row.ofmap_h * row.ofmap_w * row.filters
        if row.kind == "conv":
            total += out * row.channels * row.filter_h * row.filter_w
        elif row.kind == "fc":
            total += out * row.channels * row.filter_h * row.filter_w  # 1×1 per position, or the whole input
        elif row.kind == "pool":
            total += out * row.filter_h * row.filter_w
        elif row.kind == "elementwise":
            total += row.input_elements
    return total
