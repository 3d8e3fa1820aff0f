"""A performance engineer's trial of import, gemm, sparse and validate-gpu on their own models and
kernel measurements: each test is a defect found by running the commands as the docs describe them,
and each failed on the code before its fix.

References: the measured CSV rows read with the csv module (tests/data/neusight_kernels/, a sample of
NeuSight's files) and the documented meaning of each output column.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from archsim.cli import main
from tests.neusight_sample import KERNELS, csv_records, json_output

ROOT = Path(__file__).resolve().parents[1]


def test_no_relative_error_against_another_gpus_time(capsys):
    """``--gpu "NVIDIA L4"`` on a file without L4 rows predicts every row as an L4 beside the row's own
    GPU's time. The MAPE of that is refused as meaningless, yet every row printed a ``relative_error``
    of the L4's prediction against a V100's or T4's measurement (−0.84 on a T4 sgemm an H100 runs
    faster): the same meaningless figure, row by row. A row measured on another GPU has none (null)."""
    path = str(KERNELS / "bmm.csv")
    rows = json_output(capsys, ["validate-gpu", "--csv", path, "--gpu", "NVIDIA L4", "--format", "json"])["rows"]
    assert len(rows) == len(csv_records("bmm")) and all(r["measured_device"] != "NVIDIA L4" for r in rows)
    assert all(r["relative_error"] is None for r in rows)
    assert all(r["predicted_seconds"] > 0 for r in rows)  # the predictions themselves are still given
    # on the GPU's own rows the error is still predicted / measured − 1
    t4 = json_output(capsys, ["validate-gpu", "--csv", path, "--gpu", "Tesla T4", "--format", "json"])["rows"]
    assert t4 and all(math.isclose(r["relative_error"], r["predicted_seconds"] / r["measured_seconds"] - 1)
                      for r in t4)


def test_rows_of_several_files_name_their_file(capsys):
    """``validate-gpu --csv softmax.csv ln.csv --format json`` (the docs' two-file example) gave each row
    its ``line`` but not its file: line 2 of softmax.csv and line 2 of ln.csv were two rows of the same
    ``line``, so a row could not be joined back to its measurement. Each row now names its file."""
    paths = [str(KERNELS / "softmax.csv"), str(KERNELS / "ln.csv")]
    rows = json_output(capsys, ["validate-gpu", "--csv", *paths, "--format", "json"])["rows"]
    expected = [(path, line) for path, name in zip(paths, ("softmax", "ln"), strict=True)
                for line, _ in enumerate(csv_records(name), start=2)]
    assert [(r["file"], r["line"]) for r in rows] == expected
    assert len(set(expected)) == len(rows)  # the pair is a key: every measured row once


def _import_error(capsys, tmp_path, config: dict) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    out = tmp_path / "model.csv"
    assert main(["import", str(path), "-o", str(out)]) == 2
    assert not out.exists()
    return capsys.readouterr().err


def test_a_hugging_face_configs_error_names_its_own_key(capsys, tmp_path):
    """A GPT-2 ``config.json`` with ``n_head`` 5 at ``n_embd`` 64 was refused as ``field 'heads'``, and a
    Llama one whose ``num_key_value_heads`` (3) does not divide its 4 heads as ``field 'kv_heads'``: names of
    archsim's ``[transformer]`` TOML that the user's file does not have. The error names the file's key."""
    gpt2 = {"model_type": "gpt2", "n_embd": 64, "n_head": 5, "n_layer": 2, "n_positions": 128, "vocab_size": 1000}
    err = _import_error(capsys, tmp_path, gpt2)
    assert "field 'n_head'" in err and "(5)" in err, err
    llama = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 172, "num_attention_heads": 4,
             "num_key_value_heads": 3, "num_hidden_layers": 1, "max_position_embeddings": 256, "vocab_size": 100}
    err = _import_error(capsys, tmp_path, llama)
    assert "field 'num_key_value_heads'" in err and "(3)" in err, err
    bert = {"model_type": "bert", "hidden_size": 64, "intermediate_size": 256, "num_attention_heads": 6,
            "num_hidden_layers": 1, "max_position_embeddings": 128, "vocab_size": 100}
    err = _import_error(capsys, tmp_path, bert)
    assert "field 'num_attention_heads'" in err and "(6)" in err, err


def test_an_empty_onnx_file_is_called_empty(capsys, tmp_path):
    """A zero-byte ``model.onnx`` (an export that died before writing) was refused as ``the ONNX graph has no
    inputs``, as if it were a model with an empty graph; protobuf decodes no bytes as an empty message. It
    is now named for what it is, as a truncated file is (``not an ONNX model``)."""
    path = tmp_path / "model.onnx"
    path.write_bytes(b"")
    out = tmp_path / "model.csv"
    assert main(["import", str(path), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "empty" in err and "not an ONNX model" in err, err
    assert not out.exists()


def test_gemm_cost_refuses_a_fractional_dimension():
    """``archsim.gemm_cost(5.5, 7, 3, 4, 4, "ws")`` (docs/own-model.md's API for ``archsim gemm``) costed a
    GEMM of 5 rows, 29 cycles, where ``archsim gemm --m 5.5`` is refused: the cast to int64 dropped the
    fraction silently. NaN cast to int64 became a huge negative "got" value. Both are refused, naming the
    argument; whole floats (5.0, what a pandas column holds) still cost as the integer does (hand count:
    ⌈7/4⌉·⌈3/4⌉·(2·4 + 4 + 5 − 2) − 1 = 29 cycles)."""
    import numpy as np
    import pytest

    import archsim
    from archsim.errors import InputError

    with pytest.raises(InputError, match="whole number") as caught:
        archsim.gemm_cost(5.5, 7, 3, 4, 4, "ws")
    assert caught.value.where.field == "m"
    with pytest.raises(InputError, match="whole number") as caught:
        archsim.gemm_cost(5, np.array([7.0, np.nan]), 3, 4, 4, "ws")
    assert caught.value.where.field == "k"
    assert int(archsim.gemm_cost(5.0, 7, 3, 4, 4, "ws").cycles) == 29


def _rescaled(tmp_path, name: str, factor: float) -> str:
    """``name``'s NeuSight rows with every Latency multiplied by ``factor`` (a unit slip), as a new CSV."""
    records = csv_records(name)
    path = tmp_path / f"{name}_rescaled.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(records[0]))
        writer.writeheader()
        for record in records:
            writer.writerow({**record, "Latency": repr(float(record["Latency"]) * factor)})
    return str(path)


def test_latency_in_seconds_or_microseconds_is_noted(capsys, tmp_path):
    """NeuSight's ``Latency`` is milliseconds. A performance engineer's own CSV written in seconds
    (``time.perf_counter`` deltas) or microseconds was compared as it stood, with no word: MAPE 99.9%, or
    around 100,000%, and nothing saying why. Every row 1000× off in one direction is a unit, not the model
    (its rows are within tens of percent): one note on stderr says so, and the numbers stay as given."""
    for factor, unit in ((1e-3, "seconds"), (1e3, "microseconds")):
        path = _rescaled(tmp_path, "softmax", factor)
        assert main(["validate-gpu", "--csv", path]) == 0
        out, err = capsys.readouterr()
        assert len(err.splitlines()) == 1 and "note:" in err and unit in err and "milliseconds" in err, err
        assert "mape" in out
    assert main(["validate-gpu", "--csv", str(KERNELS / "softmax.csv")]) == 0  # as measured: no note
    assert capsys.readouterr().err == ""


def test_a_row_longer_than_the_header_is_refused(capsys, tmp_path):
    """A row with more cells than the header (``softmax,0.5,Tesla T4,32768,1600,9,9`` under
    ``OPName,Latency,Device,B,H``: a column left out of the header, or a kernel name with an unquoted comma,
    which shifts every cell after it) was read by position and its extra cells dropped without a word. It is
    refused, naming the line; empty trailing cells (a row ending in a comma) still read."""
    path = tmp_path / "kernels.csv"
    path.write_text("OPName,Latency,Device,B,H\nsoftmax,0.5,Tesla T4,32768,1600,\nsoftmax,0.5,Tesla T4,32768,1600,9,9\n")
    assert main(["validate-gpu", "--csv", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and "line 3" in err and "7 cells" in err, err
    path.write_text("OPName,Latency,Device,B,H\nsoftmax,0.5,Tesla T4,32768,1600,\n")
    assert main(["validate-gpu", "--csv", str(path)]) == 0
    capsys.readouterr()


def test_cuda_names_of_other_gpus_are_not_matched_to_a_catalog_gpu(capsys):
    """``--gpu`` takes a CUDA device string and matches it to a catalog GPU by pattern. Four other GPUs
    matched one they are not, and were timed as it with no word: "AMD Instinct MI250X" (CDNA2, 2021) as the
    Radeon Instinct MI25 (Vega, 2017); "NVIDIA GH200 480GB" (Grace Hopper: an H100-class GPU on 96 GB of
    HBM3) as the H200; "NVIDIA H200 NVL" (the 600 W PCIe card) as the 700 W H200 SXM, where "NVIDIA H100 NVL"
    is refused; "Tesla P100-PCIE-12GB" (549 GB/s: three HBM2 stacks) as the 16 GB card's 732 GB/s. Each is
    refused as an unknown GPU; the catalog's own GPUs still match."""
    from archsim.devices.gpu_lookup import find_gpu

    for other in ("AMD Instinct MI250X", "NVIDIA GH200 480GB", "NVIDIA H200 NVL", "Tesla P100-PCIE-12GB"):
        assert find_gpu(other) is None, other
        path = str(KERNELS / "softmax.csv")
        assert main(["validate-gpu", "--csv", path, "--gpu", other, "--show", "kernels"]) == 2
        assert "unknown GPU" in capsys.readouterr().err
    assert [find_gpu(name) for name in ("Radeon Instinct MI25", "NVIDIA H200", "Tesla P100-PCIE-16GB",
                                        "NVIDIA H100 80GB HBM3")] == ["mi25", "h200", "p100-pcie", "h100-sxm"]


def test_import_of_one_layer_says_one_layer(capsys, tmp_path):
    """``archsim import`` of a one-node ONNX model said ``wrote m.csv (1 layers, 256 parameters)``."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16])],
                              [numpy_helper.from_array(np.zeros((16, 16), dtype=np.float32), "w")])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    assert main(["import", str(path), "-o", str(tmp_path / "m.csv")]) == 0
    err = capsys.readouterr().err
    assert "(1 layer, 256 parameters)" in err, err  # 16 × 16 weights, no bias


def test_a_gpu_name_with_underscores_matches_as_with_spaces(capsys):
    """NeuSight's folders and file names write a GPU's CUDA name with underscores (``Tesla_T4``), and a
    cluster's ``gpu`` takes that spelling (docs/training.md). ``validate-gpu --gpu`` took it for
    ``Tesla_V100-PCIE-32GB`` but refused ``Tesla_T4``, ``Tesla_P4`` and ``NVIDIA_L4`` as unknown GPUs: their
    patterns need a word boundary, which ``_`` is not. Every name of the five GPUs reads alike either way."""
    from archsim.devices.gpu_lookup import find_gpu

    devices = sorted({r["Device"] for r in csv_records("softmax")}) + ["NVIDIA L4", "NVIDIA H100 80GB HBM3"]
    assert len(devices) == 7
    for name in devices:
        assert find_gpu(name) is not None and find_gpu(name.replace(" ", "_")) == find_gpu(name), name
    t4 = [r for r in csv_records("softmax") if r["Device"] == "Tesla T4"]
    rows = json_output(capsys, ["validate-gpu", "--csv", str(KERNELS / "softmax.csv"), "--gpu", "Tesla_T4",
                          "--format", "json"])["rows"]
    assert [r["line"] for r in rows] == [i + 2 for i, r in enumerate(csv_records("softmax")) if r["Device"] == "Tesla T4"]
    assert len(rows) == len(t4) and {r["gpu"] for r in rows} == {"t4-16gb"}


def test_a_pytorch_language_model_takes_token_ids(capsys, tmp_path):
    """``archsim import lm.py:TinyLM --input-shape 1,8`` exported the class on float zeros, which an
    ``nn.Embedding`` refuses (torch: 'indices' must be Long or Int), so no PyTorch model that starts from
    token ids — every language model — could be imported or costed as FILE.py:ClassName. An input's
    shape may now end in ``:int64`` (token ids, zeros); the Linear after the lookup is its one GEMM row
    (8 tokens × 16 → 4: 64 weights and 4 biases; the lookup's table is no row, as for a transformer config)."""
    model = tmp_path / "lm.py"
    model.write_text("import torch.nn as nn\n\n\nclass TinyLM(nn.Module):\n    def __init__(self):\n"
                     "        super().__init__()\n        self.embed = nn.Embedding(100, 16)\n"
                     "        self.head = nn.Linear(16, 4)\n\n    def forward(self, ids):\n"
                     "        return self.head(self.embed(ids))\n")
    out = tmp_path / "lm.csv"
    assert main(["import", f"{model}:TinyLM", "--input-shape", "1,8:int64", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "(1 layer, 68 parameters)" in err, err
    rows = [[cell.strip() for cell in row] for row in csv.reader(out.read_text().splitlines())]
    assert rows[1][1:11] == ["8", "1", "1", "1", "16", "4", "1", "0", "fc", "input"]
    assert main(["import", f"{model}:TinyLM", "--input-shape", "1,8:int8", "-o", str(out)]) == 2
    assert "int64" in capsys.readouterr().err


def test_sparse_states_no_block_size_it_did_not_read(capsys, tmp_path):
    """With ``OptimizedMapping : false`` SCALE-Sim reads no ``BlockSize`` (docs/scalesim.md), and neither does
    archsim: each layer's N:M is its block. ``archsim sparse``'s meta still said ``block_size: 4`` (a default no
    file states) beside a ``.cfg`` whose ``BlockSize`` is 8. It is null there; with row-wise mapping on it is the
    file's B."""
    shipped = (ROOT / "configs" / "arrays" / "scalesim_sparsity_128x128_ws.cfg").read_text()
    assert "BlockSize : 8" in shipped and "OptimizedMapping : true" in shipped
    layerwise = tmp_path / "layerwise.cfg"
    layerwise.write_text(shipped.replace("OptimizedMapping : true", "OptimizedMapping : false"))
    topology = str(ROOT / "docs" / "examples" / "pruned_convs.csv")
    meta = json_output(capsys, ["sparse", topology, "--config", str(layerwise), "--format", "json"])["meta"]
    assert meta["optimized_mapping"] is False and meta["block_size"] is None
    rowwise = ROOT / "configs" / "arrays" / "scalesim_sparsity_128x128_ws.cfg"
    meta = json_output(capsys, ["sparse", topology, "--config", str(rowwise), "--format", "json"])["meta"]
    assert meta["optimized_mapping"] is True and meta["block_size"] == 8


def test_a_gemm_with_transa_is_named_for_it(capsys, tmp_path):
    """An ONNX ``Gemm`` with ``transA=1`` (x of shape [K, M], read transposed) is refused, but by the wrong
    rule: ``tensor 'y' of shape [4, 8] does not lead with the batch (16) … import the model at batch 1``,
    advice that cannot help, since the first dimension is the reduction, not a batch. The importer's own
    refusal of ``transA=1`` was never reached; it now is, naming the node and the attribute."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    node = helper.make_node("Gemm", ["x", "w"], ["y"], transA=1, name="g")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
                              [numpy_helper.from_array(np.zeros((16, 8), dtype=np.float32), "w")])
    path = tmp_path / "gemm.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    assert main(["import", str(path), "-o", str(tmp_path / "gemm.csv")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "transA=1" in err and "node 'g'" in err and "batch 1" not in err, err
