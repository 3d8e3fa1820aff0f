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


@pytest.mark.long  # exports through torch: over a second
def test_input_shape_without_the_batch_says_the_first_number_is_the_batch(tmp_path, capsys):
    """Defect: ``archsim cost model.py:CNN --input-shape 3,8,8`` (NCHW with the batch left out, which a
    Conv2d accepts unbatched) was refused with 'does not lead with the batch (3) … import the model at batch 1
    (export it so, or leave its batch dimension symbolic: no --dim for it)': advice for an ONNX file, not for
    the option the user gave. Failed before the fix: the line did not name --input-shape. Now it says the
    shape's first number is the batch, and from Python names input_shape and batch, not the CLI's flags."""
    pytest.importorskip("torch")
    model = tmp_path / "model.py"
    model.write_text("import torch.nn as nn\n\n\nclass CNN(nn.Module):\n    def __init__(self):\n"
                     "        super().__init__()\n        self.conv = nn.Conv2d(3, 4, 3, padding=1)\n\n"
                     "    def forward(self, x):\n        return self.conv(x)\n")
    assert main(["cost", f"{model}:CNN", "--input-shape", "3,8,8", "--array", "4x4"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("archsim cost: error: ") and "\n" not in err, err
    assert "does not lead with the batch (3)" in err and "--input-shape" in err and "--batch" in err, err
    with pytest.raises(InputError) as raised:
        archsim.cost(f"{model}:CNN", input_shape="3,8,8", array="4x4")
    assert "input_shape" in str(raised.value) and "--" not in str(raised.value), raised.value


def test_one_layer_on_four_processors_is_refused_in_the_singular(tmp_path, capsys):
    """Defect: a one-layer model on 4 processors was refused with 'this network has 1 layer groups (antichain
    states), so at most 1 processors' (``pipeline --method pipedream``) and 'has 1 layers, so at most 1
    processors' (``schedule --policy 1f1b``): the count read as a typo. Failed before the fix: the plurals.
    Hand count: one conv row is one layer, one antichain state, so one processor at most."""
    csv = tmp_path / "one.csv"
    csv.write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
                   "Strides, Padding, Type, Inputs,\nconv1, 8, 8, 3, 3, 3, 4, 1, 1, conv, input,\n")
    for command, said in ((["pipeline", str(csv), "--method", "pipedream"],
                           "has 1 layer group (antichain state), so at most 1 processor, got 4"),
                          (["schedule", str(csv), "--policy", "1f1b", "--microbatches", "2"],
                           "has 1 layer, so at most 1 processor, got 4")):
        assert main([*command, "--processors", "4"]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and said in err, err


@pytest.mark.parametrize(("mark", "said"), [(";", "';'"), ("\t", "tabs")])
def test_a_layer_file_saved_with_semicolons_or_tabs_says_so(tmp_path, capsys, mark, said):
    """Defect: the hand-written layer file saved by a spreadsheet in a locale whose CSV uses ``;`` (or as
    "Text", tab-separated) was refused with 'header has 1 columns; the first 8 must be Layer name, …', naming
    columns the header does have. Failed before the fix: no word on the separator. Now the same line a job
    trace gets (``archsim cluster``): the header is one column that seems separated by ';' (or tabs)."""
    csv = tmp_path / "cnn.csv"
    csv.write_text(mark.join(["Layer name", "IFMAP Height", "IFMAP Width", "Filter Height", "Filter Width",
                              "Channels", "Num Filter", "Strides", "Padding", "Type", "Inputs"]) + "\n"
                   + mark.join(["conv1", "8", "8", "3", "3", "3", "4", "1", "1", "conv", "input"]) + "\n")
    assert main(["cost", str(csv), "--array", "4x4"]) == 2
    assert capsys.readouterr().err == (f"archsim cost: error: {csv}, line 1: the header is one column that seems "
                                       f"separated by {said}; archsim reads comma-separated files\n")


def test_an_onnx_input_of_zero_size_is_named(tmp_path, capsys):
    """Defect: an ONNX file whose input has a 0 in a fixed dimension (x [1, 4, 0, 8], an export at a bad size)
    was refused with "field 'ifmap_h': node 'r0' (op Relu): must be a positive integer, got 0": a field name of
    archsim's internals, not of the file. Failed before the fix: 'ifmap_h' was the field and neither the input
    nor its axis was named. Now one line naming graph input 'x' and dimension 2, as the batch's 0 is named."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r0")], "zero",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 0, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 0, 8])])
    path = tmp_path / "zero.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    assert main(["cost", str(path), "--array", "4x4"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "ifmap_h" not in err, err
    assert "graph input 'x' fixes dimension 2 at 0" in err, err
