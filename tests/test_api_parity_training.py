"""Each keyword ``archsim.train`` and ``archsim.search`` gained run both ways on the same input (docs/api.md):
the command's JSON (full precision) is the reference, and a refusal is the command's line."""

from __future__ import annotations

import pytest
from api_parity_helpers import MODEL, NODE, as_flag, cli_error, cli_json
from test_docs import ROOT

import archsim
from archsim.errors import InputError

MIXED = "configs/clusters/mixed_counts_h100_a100.toml"


@pytest.mark.parametrize(("flags", "options"), [
    (["--balance", "planned"], {"balance": "planned"}),
    (["--stage-layers", "10,14"], {"stage_layers": "10,14"}),
])
def test_train_split_keywords_give_the_flags_numbers(flags, options, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    argv = ["train", MODEL, "--cluster", NODE, "--tp", "2", "--pp", "2", "--dp", "2", "--global-batch", "16",
            "--micro-batch", "2", *flags]
    result, rates = archsim.train(MODEL, cluster=NODE, tp=2, pp=2, dp=2, global_batch=16, micro_batch=2, **options)
    meta = cli_json(argv, capsys)["meta"]
    assert result.iteration_seconds == meta["iteration_seconds"]
    assert rates.mfu == meta["mfu"]


def test_train_planned_balance_splits_as_the_flag_does(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    argv = ["train", MODEL, "--cluster", NODE, "--pp", "4", "--global-batch", "16", "--balance", "planned"]
    meta = cli_json(argv, capsys)["meta"]
    split = tuple(int(n) for n in meta["stage_layers"].split(","))
    assert sum(split) == 24 and split != (6, 6, 6, 6)  # the embedding and head make the even split uneven
    planned, _ = archsim.train(MODEL, cluster=NODE, pp=4, global_batch=16, balance="planned")
    given, _ = archsim.train(MODEL, cluster=NODE, pp=4, global_batch=16, stage_layers=split)
    assert planned.iteration_seconds == given.iteration_seconds == meta["iteration_seconds"]


def test_train_placement_gives_the_flags_numbers(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    base = ["train", MODEL, "--cluster", MIXED, "--tp", "4", "--pp", "2", "--dp", "2", "--global-batch", "16"]
    times = {}
    for placement in ("file", "planned", "1,2,0"):
        result, _ = archsim.train(MODEL, cluster=MIXED, tp=4, pp=2, dp=2, global_batch=16, placement=placement)
        assert result.iteration_seconds == cli_json([*base, "--placement", placement], capsys)["meta"][
            "iteration_seconds"]
        times[placement] = result.iteration_seconds
    assert times["planned"] <= min(times["file"], times["1,2,0"])  # the best of every order, these two included


def test_train_max_ops_is_refused_with_the_flags_message(capsys, monkeypatch):
    """The command's line, the limit spelt as each caller spells it (``max_ops=384`` from Python, ``--max-ops 384``
    from the command: PP 2 × 64 micro-batches × F, I, W)."""
    monkeypatch.chdir(ROOT)
    with pytest.raises(InputError) as refused:
        archsim.train(MODEL, cluster=NODE, pp=2, global_batch=64, max_ops=10)
    assert "give max_ops=384 to run it anyway" in str(refused.value)
    argv = ["train", MODEL, "--cluster", NODE, "--pp", "2", "--global-batch", "64", "--max-ops", "10"]
    flagged = as_flag(refused.value).replace("max_ops=384", "--max-ops 384")
    assert cli_error(argv, capsys) == f"archsim train: error: {flagged}"
    enough, _ = archsim.train(MODEL, cluster=NODE, pp=2, global_batch=64, max_ops=10**6)
    assert enough.iteration_seconds == archsim.train(MODEL, cluster=NODE, pp=2, global_batch=64)[0].iteration_seconds


SEARCH = ["--global-batch", "16", "--top", "4", "--schedule", "1f1b", "--max-micro-batch", "2", "--refine", "0"]
SEARCH_KW = {"global_batch": 16, "top": 4, "schedule": "1f1b", "max_micro_batch": 2, "refine": 0}


def test_search_dtype_gives_the_flags_rows(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    found = archsim.search(MODEL, cluster=NODE, dtype="fp32", attention="standard", **SEARCH_KW)
    printed = cli_json(["search", MODEL, "--cluster", NODE, *SEARCH, "--dtype", "fp32", "--attention", "standard"],
                       capsys)
    assert printed["meta"]["dtype"] == "fp32"
    assert len(found.rows) == len(printed["rows"]) > 0
    for ours, theirs in zip(found.rows, printed["rows"]):
        assert {k: ours[k] for k in ("tp", "pp", "dp", "micro_batch", "recompute", "iteration_seconds",
                                     "peak_memory_gib")} == \
            {k: theirs[k] for k in ("tp", "pp", "dp", "micro_batch", "recompute", "iteration_seconds",
                                    "peak_memory_gib")}
    half = archsim.search(MODEL, cluster=NODE, attention="standard", **SEARCH_KW)
    assert found.rows[0]["iteration_seconds"] > half.rows[0]["iteration_seconds"]  # fp32 lanes: 16× fewer FLOP/s


def test_search_fp32_rows_are_what_train_gives_in_fp32(capsys, monkeypatch):
    """A row's printed ``archsim train`` line carries --dtype fp32 and reproduces the row's time."""
    monkeypatch.chdir(ROOT)
    printed = cli_json(["search", MODEL, "--cluster", NODE, *SEARCH, "--dtype", "fp32", "--attention", "standard"],
                       capsys)
    best = printed["rows"][0]
    assert best["timing"] == "closed-form" and best["pp"] == 1  # one stage: 1F1B's closed form is exact
    assert "--dtype fp32" in best["command"]
    meta = cli_json(best["command"].split()[1:], capsys)["meta"]
    assert meta["dtype"] == "fp32"
    assert meta["iteration_seconds"] == pytest.approx(best["iteration_seconds"], rel=1e-12)


def test_a_search_rows_train_line_keeps_its_sequence_length(capsys, monkeypatch):
    """``search --seq 512``'s printed ``archsim train`` line runs at 512 tokens, not the config's 1024."""
    monkeypatch.chdir(ROOT)
    best = cli_json(["search", MODEL, "--cluster", NODE, *SEARCH, "--seq", "512"], capsys)["rows"][0]
    assert "--seq 512" in best["command"] and best["pp"] == 1
    meta = cli_json(best["command"].split()[1:], capsys)["meta"]
    assert meta["iteration_seconds"] == pytest.approx(best["iteration_seconds"], rel=1e-12)
    found = archsim.search(MODEL, cluster=NODE, seq=512, **SEARCH_KW)
    assert found.rows[0]["iteration_seconds"] == best["iteration_seconds"]


V100_NODE = """[cluster]
name = "v100_node"

[[servers]]
count = 1
gpus = 8
intra_server_gbps = 2400
gpu = "v100-32gb"
"""

REFUSALS = {  # what train refuses in a dtype: (dtype, cluster, search flags, train flags)
    "flash-in-fp32": ("fp32", NODE, [], []),  # FlashAttention has no fp32 kernel
    "planned-in-fp32": ("fp32", NODE, ["--attention", "standard", "--balance", "planned"],
                        ["--attention", "standard", "--balance", "planned", "--pp", "2"]),
    "bf16-on-v100": ("bf16", "V100", [], []),  # the V100 has no bf16 peak (its datasheet lists fp16, fp32, fp64)
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_search_refuses_a_dtype_where_train_does(case, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    dtype, cluster, flags, train_flags = REFUSALS[case]
    if cluster == "V100":
        cluster = str(tmp_path / "v100.toml")
        (tmp_path / "v100.toml").write_text(V100_NODE, encoding="utf-8")
    options = {flag[2:]: value for flag, value in zip(flags[::2], flags[1::2])}
    with pytest.raises(InputError) as refused:
        archsim.search(MODEL, cluster=cluster, dtype=dtype, **SEARCH_KW, **options)
    said = cli_error(["search", MODEL, "--cluster", cluster, *SEARCH, "--dtype", dtype, *flags], capsys)
    if "--" in said:  # the same refusal, the library naming its keywords where the command names flags
        assert said.startswith(f"archsim search: error: argument --{refused.value.where.field}: ")
        assert "--" not in str(refused.value)
    else:
        assert said == f"archsim search: error: {refused.value}"
    trained = cli_error(["train", MODEL, "--cluster", cluster, "--global-batch", "16", "--dtype", dtype, *train_flags],
                        capsys)
    assert trained == said.replace("archsim search:", "archsim train:", 1)  # the same refusal, each its own
