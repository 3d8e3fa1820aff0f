"""An ML engineer's trial of their own model: a tiny CNN as an ONNX file and as a hand-written layer file.

Each test names the defect it covers and failed on the code before its fix (the docstring says how).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.errors import InputError


def _cnn(tmp_path: Path, batch: int | str) -> str:
    """x [batch, 3, 8, 8] → Conv 3×3, 4 filters, pad 1 → Relu: the CNN an ONNX export with a dynamic batch
    (``dynamic_axes={'x': {0: 'N'}}``) writes."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.zeros((4, 3, 3, 3), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv1"),
         helper.make_node("Relu", ["c"], ["y"], name="relu")],
        "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 4, 8, 8])], [weight])
    path = tmp_path / f"cnn_{batch}.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return str(path)


def test_dim_on_the_batch_is_refused_not_silently_dropped(tmp_path, capsys):
    """Defect: ``archsim cost cnn.onnx --dim N=4`` (N the export's dynamic batch) ran and printed the costs of
    ``--batch``'s default, 4 samples asked for and silently not costed, the same table as without ``--dim``;
    ``import --dim N=4`` wrote the per-sample CSV without a word. Failed before the fix: exit 0. Now one line
    naming --dim N and --batch, exit 2, nothing written; the API names dim['N'] and batch=N."""
    path = _cnn(tmp_path, "N")
    for command in (["cost", path, "--array", "4x4"], ["import", path, "-o", str(tmp_path / "out.csv")]):
        assert main([*command, "--dim", "N=4"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"archsim {command[0]}: error: ") and "\n" not in err, err
        assert "--dim N fixes the batch" in err and "--batch N" in err, err
    assert not (tmp_path / "out.csv").exists()
    with pytest.raises(InputError, match=r"dim\['N'\] fixes the batch.*batch=N"):
        archsim.cost(path, array="4x4", dim={"N": 4})


def test_dynamic_and_fixed_batch_exports_cost_as_the_hand_count(tmp_path, capsys):
    """What matched: the export at a symbolic batch, at batch 1 and the hand-written layer file give the same
    rows, and the rows are the hand count. At --batch 2 on a 4×4 ws array (docs/scalesim.md:
    ⌈K/R⌉·⌈N/C⌉·(2R + C + M − 2) − 1):

    * conv1 F: M = 2 · 8 · 8 = 128 output pixels, K = 3·3·3 = 27, N = 4 filters:
      ⌈27/4⌉·⌈4/4⌉·(8 + 4 + 128 − 2) − 1 = 7 · 138 − 1 = 965 cycles; MACs 8·8·3·3·3·4 = 6,912 per sample.
    * conv1 G (dW = Xᵀ·dY): M = 27, K = 128, N = 4: 32 · (8 + 4 + 27 − 2) − 1 = 1,183; no δ (first layer, exact).
    * relu F and δ: 2 · 4 · 8 · 8 = 512 elements over 4 columns = 128 cycles each.
    """
    csv = tmp_path / "cnn.csv"
    csv.write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
                   "Strides, Padding, Type, Inputs,\nconv1, 8, 8, 3, 3, 3, 4, 1, 1, conv, input,\n"
                   "relu, 8, 8, 1, 1, 4, 4, 1, 0, elementwise, conv1,\n")
    for source in (_cnn(tmp_path, "N"), _cnn(tmp_path, 1), str(csv)):
        table = archsim.cost(source, array="4x4", batch=2, mode="exact").table
        rows = table[["F_cycles", "G_cycles", "D_cycles"]].to_numpy().tolist()
        assert rows[:2] == [[965, 1183, 0], [128, 0, 128]], (source, rows)
