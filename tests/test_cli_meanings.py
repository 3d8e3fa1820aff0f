"""One meaning per flag and nothing taken silently: issue reproducers for --dim, a transformer's
sequence length, and --batch (the mini-batch in every command)."""

from __future__ import annotations

import json

import onnx
from onnx import helper
from onnx_models import model, value, weight
from test_docs import ROOT

from archsim.cli import main

GPT2 = str(ROOT / "configs" / "transformers" / "gpt2.json")
TESTBED = str(ROOT / "configs" / "clusters" / "testbed_v100.toml")


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_dim_naming_no_dimension_is_refused(capsys, tmp_path):
    for network in ("layerpipe_sample", GPT2):
        code, out, err = run(["cost", network, "--dim", "foo=3"], capsys)
        assert code == 2 and out == "" and "foo" in err and len(err.strip().splitlines()) == 1
    path = tmp_path / "attn.onnx"
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")]
    onnx.save(model(nodes, [value("x", ["N", "seq", 32])], [value("y", ["N", "seq", 8])], [weight("w", 32, 8)]), path)
    code, _, err = run(["cost", str(path), "--dim", "seq=16", "--dim", "sequence=16"], capsys)
    assert code == 2 and "--dim 'sequence' names no symbolic dimension" in err
    assert run(["cost", str(path), "--dim", "seq=16"], capsys)[0] == 0


def test_a_transformers_sequence_length_is_printed_and_settable(capsys):
    code, out, err = run(["cost", GPT2, "--format", "json"], capsys)
    assert code == 0 and "sequence length 1024 tokens per sample" in err and "n_positions" in err
    rows = {row["layer"]: row for row in json.loads(out)["rows"]}
    code, out, err = run(["cost", GPT2, "--format", "json", "--dim", "seq=512"], capsys)
    assert code == 0 and "sequence length 512 tokens per sample, from --dim seq" in err
    half = {row["layer"]: row for row in json.loads(out)["rows"]}
    # a linear layer's MACs scale with the tokens: its activations halve with the sequence
    linear = next(name for name, row in rows.items() if row["type"] == "fc")
    assert half[linear]["activation_bytes"] * 2 == rows[linear]["activation_bytes"]


def test_plan_batch_is_the_mini_batch_and_micro_batch_is_its_own_flag(capsys):
    base = ["plan", "layerpipe_sample", "--cluster", TESTBED, "--microbatches", "4", "--format", "json"]
    _, by_micro, _ = run([*base, "--micro-batch", "8"], capsys)
    _, by_mini, _ = run([*base, "--batch", "32"], capsys)  # 32 samples in 4 micro-batches: 8 each
    _, default, _ = run(base, capsys)
    assert json.loads(by_micro) == json.loads(by_mini) != json.loads(default)
    code, _, err = run([*base, "--batch", "30"], capsys)
    assert code == 2 and "does not split" in err
    code, _, err = run([*base, "--batch", "32", "--micro-batch", "8"], capsys)
    assert code == 2 and "not both" in err
