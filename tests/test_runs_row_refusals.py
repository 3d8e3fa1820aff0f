"""Every per-row refusal of ``archsim train MODEL --runs RUNS.csv`` names the runs file, the row's line and the
column to change, spelt as the file's header spells it, never a flag the file has no place for.

Failed before the fix: a row whose capacity factor pads an expert past 2^53 rows was refused naming
``--moe-expert-capacity-factor`` and no column; a row whose PP does not split the layers was told to give
``stage_layers=…`` (no runs file column); a row over ``--max-ops`` was refused without its line."""

from __future__ import annotations

import json

import pytest
from test_robustness import clean_error, write

# a two-layer mixture of 8 experts, 2 per token; 4 heads, 2 key/value heads, FFN 512
MOE = {"model_type": "mixtral", "num_hidden_layers": 2, "hidden_size": 256, "num_attention_heads": 4,
       "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1024, "max_position_embeddings": 512,
       "num_local_experts": 8, "num_experts_per_tok": 2}
CLUSTER = '[cluster]\n[[servers]]\ngpus = 8\ngpu = "h100-80gb-sxm"\n'
GOOD = "1,1,1,1,8"  # TP, PP, DP, micro-batch, global batch: the first row of every file, which runs


@pytest.mark.parametrize(("columns", "row", "column"), [
    # 128 tokens × 2 / 8 experts × 1e20 = 3.2e21 rows per expert, padded: past 2^53
    ("moe_expert_capacity_factor,moe_pad_expert_input_to_capacity", "1,1,1,1,8,1e20,true", "moe_expert_capacity_factor"),
    ("moe_expert_capacity_factor,moe_pad_expert_input_to_capacity", "1,1,1,1,8,,true",
     "moe_pad_expert_input_to_capacity"),
    ("", "1,3,1,1,8", "pp"),  # 2 layers into 3 stages
    ("interleave", "1,2,1,1,8,2", "interleave"),  # 2 layers into 2 stages × 2 chunks
    ("", "3,1,1,1,8", "tp"),  # 3 does not divide 4 heads
    ("ep", "1,1,1,1,8,3", "ep"),  # EP 3 on one GPU
    ("cp", "1,1,1,1,8,3", "cp"),  # 128 tokens into 6 chunks
    ("", "1,1,1,3,8", "global_batch"),  # 8 is no multiple of 3
    ("", "1,1,16,1,16", "gpus"),  # 16 GPUs on 8
])
def test_a_rows_refusal_names_its_line_and_column(tmp_path, capsys, columns, row, column):
    header = "tp,pp,dp,micro_batch,global_batch" + (f",{columns}" if columns else "")
    good = GOOD + "," * len(columns.split(",")) if columns else GOOD
    runs = write(tmp_path / "runs.csv", f"{header}\n{good}\n{row}\n")
    model = write(tmp_path / "moe.json", json.dumps(MOE))
    line = clean_error(capsys, "train", model, "--cluster", write(tmp_path / "c.toml", CLUSTER), "--seq", "128",
                       "--runs", runs)
    assert f"{runs}, line 3, field '{column}': " in line, line
    assert " --" not in line and "stage_layers" not in line, line  # no flag, no column the file cannot have


def test_a_row_over_the_op_limit_is_named_with_its_line(tmp_path, capsys):
    """The limit is the command's flag, ``--max-ops``, which lets the row run: the field stays the flag's."""
    runs = write(tmp_path / "runs.csv", f"tp,pp,dp,micro_batch,global_batch\n{GOOD}\n1,1,1,1,100000000\n")
    model = write(tmp_path / "moe.json", json.dumps(MOE))
    line = clean_error(capsys, "train", model, "--cluster", write(tmp_path / "c.toml", CLUSTER), "--seq", "128",
                       "--runs", runs)
    assert f"{runs}, line 3, field 'max-ops': " in line and "give --max-ops " in line, line


def test_a_measured_time_out_of_range_is_refused_at_its_line(tmp_path, capsys):
    """Failed before: ``measured_seconds`` 1e308 ran, its error -1.0 (prediction ÷ 1e308 − 1) and the note on
    milliseconds saying "(the least inf×)" (1e308 ÷ a prediction under 1 s overflows). Now a time above 10¹⁵ s
    (archsim's largest file figure, MAX_FIGURE) is refused at its line and column, in either layout; 10¹⁵ itself
    still runs, its note's ratio a finite figure."""
    import math
    import re

    from archsim.errors import InputError
    from archsim.training.measured import COLUMNS as VTRAIN
    from archsim.training.runs import read_runs

    model = write(tmp_path / "moe.json", json.dumps(MOE))
    cluster = write(tmp_path / "c.toml", CLUSTER)
    runs = write(tmp_path / "runs.csv", f"tp,pp,dp,micro_batch,global_batch,measured_seconds\n{GOOD},1\n{GOOD},1e308\n")
    line = clean_error(capsys, "train", model, "--cluster", cluster, "--seq", "128", "--runs", runs)
    assert f"{runs}, line 3, field 'measured_seconds': a measured time out of range" in line, line
    edge = write(tmp_path / "edge.csv", f"tp,pp,dp,micro_batch,global_batch,measured_seconds\n{GOOD},1e15\n")
    assert read_runs(edge)[0].measured_seconds == 1e15
    from archsim.cli import main

    assert main([str(a) for a in ("train", model, "--cluster", cluster, "--seq", "128", "--runs", edge, "--format",
                                  "json")]) == 0
    out, err = capsys.readouterr()
    ratio = re.search(r"\(the least ([^×]+)×\)", err)
    assert ratio is not None and math.isfinite(float(ratio[1])), err  # above 100×: the note is said
    assert -1 < json.loads(out)["rows"][0]["error"] < 0  # prediction ÷ 1e15 − 1: above -1, not rounded to it
    vtrain = write(tmp_path / "vtrain.csv", ",".join(VTRAIN) + "\n8,8,1,256,4,2,128,1,8,1,1e308\n")
    with pytest.raises(InputError, match=r"line 2, field 'iteration time \(ms\)'.*<= 1e\+15"):
        read_runs(vtrain)
