"""Constant folding of an ONNX graph's shape arithmetic, so shape inference reaches every tensor.

Exporters compute reshape targets and slice bounds at run time (``Shape`` → ``Gather`` →
``Div`` → ``Slice``); ONNX's shape inference propagates values through a few of those ops only.
Once every graph input's dimensions are fixed, such subgraphs are constants: each node whose inputs
are all known (small initializers, ``Constant``, ``Shape``/``Size`` of an inferred tensor or of an
initializer: PyTorch's ``nn.MultiheadAttention`` slices its in-projection by its weight's shape) is
evaluated with ONNX's reference evaluator and replaced by an initializer. Outputs larger than
:data:`MAX_FOLDED` elements are left alone (those are weights, not shapes).
"""

from __future__ import annotations

from math import prod

import numpy as np

MAX_FOLDED = 4096
_GROWING = frozenset({"ConstantOfShape", "Range", "Expand", "Tile", "Resize", "Pad", "Upsample", "EyeLike"})
_RANDOM = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
                     "Bernoulli", "Dropout"})


def fold_constants(onnx, model, shapes: dict[str, tuple[int, ...]]) -> bool:
    """Fold ``model``'s static nodes in place (see module docstring); True when any node was folded."""
    from onnx import numpy_helper
    from onnx.reference import ReferenceEvaluator

    graph = model.graph
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 17)
    values = {t.name: numpy_helper.to_array(t) for t in graph.initializer if prod(t.dims) <= MAX_FOLDED}
    known = {**{t.name: tuple(t.dims) for t in graph.initializer}, **shapes}  # shape inference lists no initializer
    kept, folded = [], []
    for node in graph.node:
        outputs = _evaluate(node, values, known, opset, ReferenceEvaluator)
        if outputs is None:
            kept.append(node)
            continue
        for name, array in zip(node.output, outputs):
            values[name] = array
            folded.append(numpy_helper.from_array(np.asarray(array), name))
    if not folded:
        return False
    del graph.node[:]
    graph.node.extend(kept)
    graph.initializer.extend(folded)
    made = {tensor.name for tensor in folded}  # their value_info, inferred before their values were known (a
    # weight's slice of symbolic dims), would override the initializers' own shapes in the next inference
    stale = [value for value in graph.value_info if value.name not in made]
    del graph.value_info[:]
    graph.value_info.extend(stale)
    return True


def _evaluate(node, values, shapes, opset, evaluator):
    if node.domain not in ("", "ai.onnx") or node.op_type in _RANDOM:
        return None
    if any(a.type in (5, 10) for a in node.attribute):  # GRAPH / GRAPHS attributes: control flow
        return None
    if node.op_type in ("Shape", "Size"):
        shape = shapes.get(node.input[0])
        if shape is None:
            return None
        if node.op_type == "Size":
            return [np.array(prod(shape), dtype=np.int64)]
        attrs = {a.name: a.i for a in node.attribute}
        start, end = attrs.get("start", 0), attrs.get("end", len(shape))
        return [np.array(shape[start:end] if "end" in attrs else shape[start:], dtype=np.int64)]
    if not all(name == "" or name in values for name in node.input):
        return None
    if node.op_type in _GROWING:
        known = [shapes.get(out) for out in node.output]
        if any(shape is None or prod(shape) > MAX_FOLDED for shape in known):
            return None
    try:
        feeds = {name: values[name] for name in node.input if name}
        outputs = evaluator(node, opsets={"": opset}).run(None, feeds)
    except Exception:  # the reference evaluator cannot run it: leave the node to shape inference
        return None
    if any(np.asarray(out).size > MAX_FOLDED for out in outputs):
        return None
    return outputs
