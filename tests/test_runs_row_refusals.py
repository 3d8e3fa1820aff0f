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
