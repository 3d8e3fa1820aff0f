"""``--moe-load-imbalance R`` wherever a mixture of experts is trained: ``train``'s flag and ``archsim.train``'s keyword
price alike and the meta states R; a runs file's ``moe_load_imbalance`` column prices each row as ``train`` with the
flag (``--runs`` refuses the flag); a ``--sweep moe_load_imbalance=…`` axis prices each point as ``train``; ``search``
prices every row with it and each row's command reproduces the row; refusals in one line naming the flag, the
keyword or the column."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = str(ROOT / "configs" / "clusters" / "h100_2_servers.toml")
MIXTRAL = str(ROOT / "tests" / "data" / "hf_configs" / "mixtral_8x7b.json")
DENSE = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")
LAYOUT = ["--cluster", CLUSTER, "--seq", "1024", "--dtype", "bf16"]
ONE = [*LAYOUT, "--pp", "4", "--dp", "4", "--ep", "4", "--global-batch", "16"]
SMALL_MOE = {"model_type": "mixtral", "num_hidden_layers": 2, "hidden_size": 256, "num_attention_heads": 4,
             "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1024, "max_position_embeddings": 512,
             "num_local_experts": 8, "num_experts_per_tok": 2}


def _json(capsys, *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def _refused(capsys, *argv: str) -> str:
    code = main(list(argv))
    err = capsys.readouterr().err.strip()
    assert code != 0 and len(err.splitlines()) == 1, err
    return err


def test_the_flag_and_the_keyword_price_alike_and_the_meta_states_r(capsys):
    meta = _json(capsys, "train", MIXTRAL, *ONE, "--moe-load-imbalance", "1.5", "--format", "json")["meta"]
    uniform = _json(capsys, "train", MIXTRAL, *ONE, "--format", "json")["meta"]
    result, _ = archsim.train(MIXTRAL, cluster=CLUSTER, seq=1024, dtype="bf16", pp=4, dp=4, ep=4, global_batch=16,
                              moe_load_imbalance="1.5")  # read as the flag reads it
    assert result.iteration_seconds == meta["iteration_seconds"] > uniform["iteration_seconds"]
    assert result.peak_memory_gib == meta["peak_memory_gib"]
    assert (meta["moe_load_imbalance"], uniform["moe_load_imbalance"]) == (1.5, None)
    # the all-to-alls carry 1.5 × the rows
    assert meta["breakdown_seconds"]["ep_communication"] > uniform["breakdown_seconds"]["ep_communication"]


def test_r_1_prints_the_uniform_figures_and_ep_1_takes_no_imbalance(capsys):
    one = _json(capsys, "train", MIXTRAL, *ONE, "--moe-load-imbalance", "1", "--format", "json")["meta"]
    uniform = _json(capsys, "train", MIXTRAL, *ONE, "--format", "json")["meta"]
    assert {k: v for k, v in one.items() if k != "moe_load_imbalance"} == \
        {k: v for k, v in uniform.items() if k != "moe_load_imbalance"}
    # at EP 1 the one rank takes every row: time, memory (kept rows and the zero-bubble split's) as uniform
    for schedule in ("1f1b", "zb-h1"):
        plain, _ = archsim.train(MIXTRAL, cluster=CLUSTER, seq=1024, dtype="bf16", pp=4, dp=4, global_batch=16,
                                 recompute="selective", schedule=schedule)
        three, _ = archsim.train(MIXTRAL, cluster=CLUSTER, seq=1024, dtype="bf16", pp=4, dp=4, global_batch=16,
                                 recompute="selective", schedule=schedule, moe_load_imbalance=3)
        assert (three.iteration_seconds, three.memory) == (plain.iteration_seconds, plain.memory)


def _runs(tmp_path, *rows: str) -> str:
    path = tmp_path / "runs.csv"
    path.write_text("\n".join(("tp,pp,dp,micro_batch,global_batch,ep,moe_load_imbalance", *rows)) + "\n")
    return str(path)


def test_a_runs_row_prices_as_train_with_the_flag(tmp_path, capsys):
    rows = _json(capsys, "train", MIXTRAL, *LAYOUT, "--runs", _runs(tmp_path, "1,4,4,1,16,4,2", "1,4,4,1,16,4,"),
                 "--format", "json")["rows"]
    trained = [_json(capsys, "train", MIXTRAL, *ONE, *flags, "--format", "json")["meta"]
               for flags in (["--moe-load-imbalance", "2"], [])]
    assert [r["predicted_seconds"] for r in rows] == [m["iteration_seconds"] for m in trained]
    assert [r["peak_memory_gib"] for r in rows] == [m["peak_memory_gib"] for m in trained]
    assert [r["moe_load_imbalance"] for r in rows] == [2.0, None]
    plain = _json(capsys, "train", MIXTRAL, *LAYOUT, "--runs", _runs(tmp_path, "1,4,4,1,16,4,"), "--format", "json")
    assert "moe_load_imbalance" not in plain["rows"][0]  # the column only where a row sets it


@pytest.mark.parametrize("cell,match", [("0.5", "expected a ratio >= 1, got '0.5'"), ("x", "expected a ratio, got 'x'")])
def test_a_bad_cell_is_refused_naming_its_line_and_column(tmp_path, capsys, cell, match):
    err = _refused(capsys, "train", MIXTRAL, *LAYOUT, "--runs", _runs(tmp_path, "1,4,4,1,16,4,", f"1,4,4,1,16,4,{cell}"))
    assert "line 3" in err and "moe_load_imbalance" in err and match in err


def test_runs_refuse_the_flag_and_a_dense_models_column(tmp_path, capsys):
    err = _refused(capsys, "train", MIXTRAL, *LAYOUT, "--runs", _runs(tmp_path, "1,4,4,1,16,4,2"),
                   "--moe-load-imbalance", "2")
    assert "--moe-load-imbalance" in err and "columns" in err
    err = _refused(capsys, "train", DENSE, *LAYOUT, "--runs", _runs(tmp_path, "1,4,4,1,16,1,1.5"))
    assert "line 2" in err and "moe_load_imbalance" in err and "is dense" in err


def test_a_sweep_axis_prices_each_point_as_train(capsys):
    swept = _json(capsys, "train", MIXTRAL, *ONE, "--sweep", "moe_load_imbalance=1,2.5", "--format", "json")["rows"]
    assert [r["moe_load_imbalance"] for r in swept] == [1.0, 2.5]
    for row in swept:
        meta = _json(capsys, "train", MIXTRAL, *ONE, "--moe-load-imbalance", str(row["moe_load_imbalance"]),
                     "--format", "json")["meta"]
        assert (row["iteration_seconds"], row["peak_memory_gib"]) == (meta["iteration_seconds"], meta["peak_memory_gib"])
    assert swept[1]["iteration_seconds"] > swept[0]["iteration_seconds"]
    err = _refused(capsys, "train", MIXTRAL, *ONE, "--sweep", "moe_load_imbalance=1,0.9")
    assert "moe_load_imbalance: expected a ratio >= 1, got '0.9'" in err


def test_search_prices_every_row_with_r_and_each_command_reproduces_it(tmp_path, capsys):
    model = tmp_path / "small_moe.json"
    model.write_text(json.dumps(SMALL_MOE))
    flags = ["--cluster", CLUSTER, "--gpus", "8", "--global-batch", "16", "--seq", "128", "--ep", "1", "8",
             "--max-micro-batch", "2", "--recompute", "none", "--schedule", "1f1b", "--top", "50", "--format", "json"]
    uneven = _json(capsys, "search", str(model), *flags, "--moe-load-imbalance", "2")
    uniform = _json(capsys, "search", str(model), *flags)
    assert uneven["meta"]["moe_load_imbalance"] == 2.0 and "moe_load_imbalance" not in uniform["meta"]
    times = {(r["tp"], r["pp"], r["dp"], r["ep"], r["micro_batch"], r["sequence_parallel"]): r["iteration_seconds"]
             for r in uniform["rows"]}
    for row in uneven["rows"]:
        assert row["command"].endswith("--moe-load-imbalance 2.0" + (" --sequence-parallel" if row["sequence_parallel"]
                                                                      else ""))
        same = times[(row["tp"], row["pp"], row["dp"], row["ep"], row["micro_batch"], row["sequence_parallel"])]
        assert row["iteration_seconds"] == same if row["ep"] == 1 else row["iteration_seconds"] >= same
    row = next(r for r in uneven["rows"] if r["ep"] == 8)
    meta = _json(capsys, *shlex.split(row["command"])[1:], "--format", "json")["meta"]
    assert meta["iteration_seconds"] == pytest.approx(row["iteration_seconds"], rel=1e-12)
    assert meta["peak_memory_gib"] == pytest.approx(row["peak_memory_gib"], rel=1e-12)
    assert meta["moe_load_imbalance"] == 2.0
    api = archsim.search(str(model), cluster=CLUSTER, gpus=8, global_batch=16, seq=128, ep=[1, 8], max_micro_batch=2,
                         recompute="none", schedule="1f1b", top=50, moe_load_imbalance=2).rows
    assert [r["iteration_seconds"] for r in api] == [r["iteration_seconds"] for r in uneven["rows"]]


@pytest.mark.parametrize("value,match", [
    ("0.5", r"argument --moe-load-imbalance: expected a ratio >= 1, got '0\.5'"),
    ("x", r"argument --moe-load-imbalance: expected a ratio, got 'x'"),
    ("nan", r"argument --moe-load-imbalance: expected a finite ratio"),
])
@pytest.mark.parametrize("command", ["train", "search"])
def test_the_flag_refuses_in_one_line(capsys, command, value, match):
    rest = ONE if command == "train" else [*LAYOUT, "--global-batch", "16"]
    assert re.search(match, _refused(capsys, command, MIXTRAL, *rest, "--moe-load-imbalance", value))


@pytest.mark.parametrize("command", ["train", "search"])
def test_a_dense_model_refuses_the_flag(capsys, command):
    rest = ["--dp", "4", "--global-batch", "16"] if command == "train" else ["--global-batch", "16"]
    err = _refused(capsys, command, DENSE, *LAYOUT, *rest, "--moe-load-imbalance", "1.5")
    assert "moe-load-imbalance" in err and "is dense" in err


def test_the_keyword_refuses_as_the_flag():
    with pytest.raises(InputError, match="expected a ratio >= 1, got '0.9'") as caught:
        archsim.train(MIXTRAL, cluster=CLUSTER, seq=1024, ep=4, dp=4, global_batch=16, moe_load_imbalance="0.9")
    assert caught.value.where.field == "moe-load-imbalance"
    with pytest.raises(InputError, match="expected a ratio"):
        archsim.search(MIXTRAL, cluster=CLUSTER, seq=1024, global_batch=16, moe_load_imbalance=True)
