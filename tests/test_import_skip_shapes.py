"""``archsim import --unsupported skip`` over a node that changes its tensor's shape (TopK keeps 8 of 32
columns) writes a CSV whose ``Inputs`` say the next conv reads the conv before: the CSV reader's shape
check then refuses the file import just wrote. The import now says so on stderr, with the way to read
it (``--shapes off``); a model whose skipped node keeps the shape gets no such note."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx_models import with_unknown_op

from archsim.cli import main


def _topk_between_convs() -> onnx.ModelProto:
    def weight(name, *shape):
        return numpy_helper.from_array(np.zeros(shape, np.float32), name)

    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("TopK", ["c1", "k"], ["t", "i"], axis=3, name="topk"),
             helper.make_node("Conv", ["t", "w2"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], name="conv2")]
    inits = [weight("w1", 16, 3, 3, 3), weight("w2", 8, 16, 3, 3), numpy_helper.from_array(np.array([8], np.int64), "k")]
    graph = helper.make_graph(nodes, "topk", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 32, 8])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_a_skipped_shape_changing_node_is_named_with_the_way_to_read_the_csv(tmp_path, capsys):
    model, csv = tmp_path / "m.onnx", tmp_path / "m.csv"
    onnx.save(_topk_between_convs(), str(model))
    assert main(["import", str(model), "--unsupported", "skip", "-o", str(csv)]) == 0
    err = capsys.readouterr().err
    assert "skipped ONNX node 'topk'" in err
    assert "'conv1' gives 32×32×16" in err and "expects 32×8×16" in err and "read the CSV with --shapes off" in err
    assert main(["cost", str(csv), "--batch", "2"]) == 2  # what the note warns of
    capsys.readouterr()
    assert main(["cost", str(csv), "--batch", "2", "--shapes", "off"]) == 0  # and the way it gives
    assert "conv2" in capsys.readouterr().out


def test_no_note_where_the_csv_reads_back(tmp_path, capsys):
    model, csv = tmp_path / "m.onnx", tmp_path / "m.csv"
    onnx.save(with_unknown_op(), str(model))
    assert main(["import", str(model), "--unsupported", "skip", "-o", str(csv)]) == 0
    err = capsys.readouterr().err
    assert "skipped ONNX node 'nms'" in err and "--shapes off" not in err
    assert main(["cost", str(csv), "--batch", "2"]) == 0
