"""The Python API takes what the CLI takes (docs/api.md): every option of ``archsim cost``, ``train`` and
``search`` is a keyword of ``archsim.cost``, ``archsim.train`` and ``archsim.search`` of the same name, or
is listed below as the command's alone, with the reason. The parser is read afresh, so a flag added
without its keyword fails here. Each keyword the API gained is then run both ways on the same input:
the CLI's printed numbers (``--format csv`` / ``json``, full precision) are the reference.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import io
import json
import math

import onnx
import pandas as pd
import pytest
from test_docs import ROOT

import archsim
from archsim import cli
from archsim.errors import InputError
from tests.onnx_models import with_unknown_op
from tests.test_energy import ws_gemm_by_hand

API = {"cost": archsim.cost, "train": archsim.train, "search": archsim.search}

# Options that change what the command prints or writes, never a number the function returns: the
# function hands back the object itself (a DataFrame, a TrainResult with its .timeline, a SearchResult).
CLI_ONLY = {
    "format": "the printed form (table, csv, json); the function returns the object",
    "precision": "digits of the printed table",
    "out": "the file the printed text goes to",
    "gantt": "a Gantt page of the timeline: TrainResult.timeline is returned (archsim.report.gantt writes it)",
    "chrome_trace": "a Chrome trace of the timeline (archsim.report.export writes it from TrainResult.timeline)",
    "trace": "--chrome-trace's older, hidden name",
    "schedule_csv": "the timeline's per-rank actions as CSV (archsim.report.export, from TrainResult.timeline)",
    "pareto_html": "a page of the Pareto front: SearchResult.pareto is returned (archsim.report.search_front)",
}
# Options of ``archsim train`` that run another job than one iteration, each its own library function.
OTHER_JOBS = {
    "runs": "every row of a runs file, one row each: archsim.train_runs",
    "sweep": "a grid of iterations, one row per point: archsim.training.sweep.sweep",
}
EXCLUDED = {"cost": CLI_ONLY, "train": {**CLI_ONLY, **OTHER_JOBS}, "search": CLI_ONLY}


def parser_of(command: str) -> argparse.ArgumentParser:
    """The command's own parser, built as ``archsim COMMAND`` builds it."""
    target = next(target for name, target, _ in cli.REGISTRY if name == command)
    module, _, attribute = target.partition(":")
    parser = argparse.ArgumentParser(prog=f"archsim {command}")
    getattr(importlib.import_module(module), attribute).add_arguments(parser)
    return parser


def keyword(action: argparse.Action) -> str:
    """The keyword an option maps to: its ``dest``, which argparse derives from the flag; where a command
    renames the dest (``--bandwidth``'s ``dram_bandwidth``, apart from ``schedule``'s own ``--bandwidth``),
    the flag's name, dashes as underscores."""
    named = [flag[2:].replace("-", "_") for flag in action.option_strings if flag.startswith("--")]
    return action.dest if not named or action.dest in named else named[0]


def keywords(command: str) -> list[str]:
    return [keyword(a) for a in parser_of(command)._actions if not isinstance(a, argparse._HelpAction)]


@pytest.mark.parametrize("command", sorted(API))
def test_every_option_is_a_keyword_of_the_same_name_or_listed(command):
    accepted = set(inspect.signature(API[command]).parameters)
    missing = [name for name in keywords(command) if name not in accepted and name not in EXCLUDED[command]]
    assert not missing, f"archsim.{command} lacks {missing}"


def test_a_renamed_dest_is_checked_under_the_flags_name():
    assert "bandwidth" in keywords("cost") and "dram_bandwidth" not in keywords("cost")


def test_the_exclusions_are_options_the_api_does_not_take():
    """A listed option no command has any more would hide nothing; one the API takes needs no listing."""
    options = {command: set(keywords(command)) for command in API}
    assert set(CLI_ONLY) <= set().union(*options.values())
    assert set(OTHER_JOBS) <= options["train"]
    for command, function in API.items():
        assert not set(EXCLUDED[command]) & set(inspect.signature(function).parameters)


def cli_csv(argv: list[str], capsys) -> pd.DataFrame:
    """The command's per-layer rows (its TOTAL row dropped) as the CSV it prints."""
    capsys.readouterr()
    assert cli.main([*argv, "--format", "csv"]) == 0
    frame = pd.read_csv(io.StringIO(capsys.readouterr().out), comment="#")
    return frame[frame.layer != "TOTAL"].reset_index(drop=True)


def same_numbers(api: pd.DataFrame, printed: pd.DataFrame) -> None:
    """Every column the function returns, cell for cell, in the command's output."""
    assert list(api.columns) == list(printed.columns[: len(api.columns)])
    for column in api.columns:
        assert api[column].tolist() == printed[column].tolist(), column


TOPOLOGY = "layerpipe_sample"
SMALL = "docs/examples/tiny_resnet.csv"  # for the cycle engine, which steps every cycle of every GEMM


def energy_table_copy(tmp_path) -> str:
    """horowitz45 with DRAM at twice its pJ per bit (an energy table of the user's, as configs/energy says)."""
    text = (ROOT / "configs" / "energy" / "horowitz45.toml").read_text(encoding="utf-8")
    lines = text.splitlines()
    section = lines.index("[dram]")
    row = next(i for i in range(section, len(lines)) if lines[i].startswith("pj_per_bit"))
    figure = float(lines[row].split("=")[1].split("#")[0])
    lines[row] = f"pj_per_bit = {2 * figure!r}"
    path = tmp_path / "doubled_dram.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


COST_CASES = {  # keyword → (network, flags, keywords), at batch 8
    "clock_ghz": (TOPOLOGY, ["--clock-ghz", "1.5"], {"clock_ghz": 1.5}),
    "bandwidth": (SMALL, ["--engine", "cycle", "--bandwidth", "4"], {"engine": "cycle", "bandwidth": 4}),
    "sram_kb": (SMALL, ["--engine", "cycle", "--sram-kb", "16,32,8"], {"engine": "cycle", "sram_kb": "16,32,8"}),
    "energy": (TOPOLOGY, ["--energy"], {"energy": True}),
    "config": (TOPOLOGY, ["--config", "configs/arrays/scalesim_32x32_ws.cfg", "--array", "16x8"],
               {"config": "configs/arrays/scalesim_32x32_ws.cfg", "array": "16x8"}),
    "only": ("vgg16", ["--only", "fc"], {"only": "fc"}),
    "shapes": ("docs/examples/tiny_resnet.csv", ["--shapes", "off"], {"shapes": "off"}),
    "dim": ("configs/transformers/gpt2.json", ["--dim", "seq=64", "--only", "fc"], {"dim": {"seq": 64}, "only": "fc"}),
}


@pytest.mark.parametrize("name", sorted(COST_CASES))
def test_cost_keywords_give_the_flags_numbers(name, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    network, flags, options = COST_CASES[name]
    api = archsim.cost(network, batch=8, **options)
    assert len(api) > 0
    same_numbers(api, cli_csv(["cost", network, *flags, "--batch", "8"], capsys))


def test_cost_geometry_gives_the_flags_numbers(tmp_path, capsys):
    """A raw SCALE-Sim topology (no padding): 10×10 input, 3×3 filter, stride 2."""
    path = tmp_path / "raw.csv"
    path.write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
                    "Strides,\nc1, 10, 10, 3, 3, 8, 16, 2,\n", encoding="utf-8")
    ours = archsim.cost(str(path), batch=8, geometry="scalesim")
    same_numbers(ours, cli_csv(["cost", str(path), "--batch", "8", "--geometry", "scalesim"], capsys))
    assert not ours.equals(archsim.cost(str(path), batch=8))  # ceil((10 - 3) / 2) + 1 = 5 rows, not 4


def test_cost_clock_gives_seconds_as_cycles_over_the_clock(capsys):
    table = archsim.cost(TOPOLOGY, batch=8, clock_ghz=1.5)
    for kind in ("F", "G", "D", "total"):  # hand rule: seconds = cycles / (1.5 × 10⁹ Hz)
        assert table[f"{kind}_seconds"].tolist() == [c / 1.5e9 for c in table[f"{kind}_cycles"]]
    assert "F_seconds" not in archsim.cost(TOPOLOGY, batch=8).columns


def test_cost_memory_keywords_change_the_cycle_engine_as_the_flags_do(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    base = archsim.cost(SMALL, batch=8, engine="cycle")
    narrow = archsim.cost(SMALL, batch=8, engine="cycle", bandwidth=1)
    assert narrow.stall_cycles.sum() > base.stall_cycles.sum()  # one word a cycle stalls more than ten
    listed = archsim.cost(SMALL, batch=8, engine="cycle", sram_kb=[16, 32, 8])
    assert listed.equals(archsim.cost(SMALL, batch=8, engine="cycle", sram_kb="16,32,8"))
    assert archsim.cost(SMALL, batch=8, engine="cycle", sram_kb=16).equals(
        archsim.cost(SMALL, batch=8, engine="cycle", sram_kb="16,16,16"))


def test_cost_energy_table_gives_the_flags_numbers(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    table = energy_table_copy(tmp_path)
    api = archsim.cost(TOPOLOGY, batch=8, energy=True, energy_table=table)
    same_numbers(api, cli_csv(["cost", TOPOLOGY, "--batch", "8", "--energy", "--energy-table", table], capsys))
    default = archsim.cost(TOPOLOGY, batch=8, energy=True)
    assert (api.energy_pj > default.energy_pj).all()  # DRAM at twice the energy: every layer costs more
    # by hand (tests/test_energy.py's ws rule) on the default 32 × 32 ws int8 array with 64 KiB SRAMs, DRAM at
    # 1300 / 64 × 8 pJ a byte, twice that here: conv1 (224², 5 × 5, stride 2, pad 2 → 112², 3 → 32; the input's
    # layer has no δ) F (8·112², 75, 32), G (75, 8·112², 32); conv4 (28², 3 × 3, stride 1, 128 → 128) F, G and δ
    # = (8·28², 1152, 128), (1152, 8·28², 128), (8·28², 1152, 128)
    sram_64k = 20.0 * (64 / 32) ** (math.log(5) / math.log(32)) / 8
    gemms = {"conv1": [(100352, 75, 32), (75, 100352, 32)],
             "conv4": [(6272, 1152, 128), (1152, 6272, 128), (6272, 1152, 128)]}
    for dram, table_used in ((1300 / 64 * 8, default), (2 * 1300 / 64 * 8, api)):
        energy = table_used.set_index("layer").energy_pj
        for layer, shapes in gemms.items():
            hand = sum(ws_gemm_by_hand(m, k, n, 32, 32, sram_64k, dram) for m, k, n in shapes)
            assert energy[layer] == pytest.approx(hand, rel=1e-12), (layer, dram)
    assert api.energy_pj.tolist() == pytest.approx((api.F_energy_pj + api.G_energy_pj + api.D_energy_pj).tolist())


def test_cost_unsupported_gives_the_flags_numbers_and_refusal(tmp_path, capsys):
    path = str(tmp_path / "nms.onnx")
    onnx.save(with_unknown_op(), path)
    same_numbers(archsim.cost(path, batch=8, unsupported="skip"),
                 cli_csv(["cost", path, "--batch", "8", "--unsupported", "skip"], capsys))
    with pytest.raises(InputError, match="NonMaxSuppression"):
        archsim.cost(path, batch=8)


def test_cost_input_shape_gives_the_flags_numbers(capsys):
    pytest.importorskip("torch")
    tiny = f"{ROOT / 'tests' / 'data' / 'torch' / 'tiny_model.py'}:TinyNet"
    same_numbers(archsim.cost(tiny, batch=8, input_shape="1,3,16,16"),
                 cli_csv(["cost", tiny, "--batch", "8", "--input-shape", "1,3,16,16"], capsys))


def as_flag(refused: InputError) -> str:
    """The API's line with its field label spelled as the command spells it (``sram_kb`` → ``sram-kb``)."""
    field = refused.where.field or ""
    return str(refused).replace(f"field '{field.replace('-', '_')}'", f"field '{field}'", 1)


def cli_error(argv: list[str], capsys) -> str:
    capsys.readouterr()
    assert cli.main(argv) == 2
    return capsys.readouterr().err.strip()


@pytest.mark.parametrize(("flags", "options"), [
    (["--sram-kb", "1,2"], {"sram_kb": "1,2"}),
    (["--sram-kb", "0"], {"sram_kb": 0}),
    (["--input-shape", "1,3,8,8"], {"input_shape": "1,3,8,8"}),
    (["--dim", "seq=4", "--dim", "seq=8"], {"dim": [("seq", 4), ("seq", 8)]}),
])
def test_cost_keywords_are_refused_with_the_flags_message(flags, options, capsys):
    """The same refusal, the library naming its keywords (``input_shape``, ``dim``) where the command names flags."""
    with pytest.raises(InputError) as refused:
        archsim.cost(TOPOLOGY, **options)
    said = cli_error(["cost", TOPOLOGY, *flags], capsys)
    assert said.replace("--input-shape", "input_shape").replace("--dim", "dim") == \
        f"archsim cost: error: {as_flag(refused.value)}"


@pytest.mark.parametrize(("flag", "text", "options"), [
    ("--clock-ghz", "0", {"clock_ghz": 0}), ("--clock-ghz", "inf", {"clock_ghz": float("inf")}),
    ("--bandwidth", "0", {"bandwidth": 0}), ("--batch", "0", {"batch": 0}), ("--batch", "2147483648", {"batch": 2**31}),
])
def test_cost_numbers_out_of_range_are_refused_as_the_flag_refuses_them(flag, text, options, capsys):
    """argparse words its refusal ("argument --clock-ghz: …"); the reason after it is the keyword's."""
    with pytest.raises(InputError) as refused:
        archsim.cost(TOPOLOGY, **options)
    assert refused.value.where.field == flag[2:]
    assert cli_error(["cost", TOPOLOGY, flag, text], capsys).endswith(f"argument {flag}: {refused.value.message}")


MODEL = "configs/transformers/gpt_1024h_24l.json"
NODE = "configs/clusters/a100_node.toml"
MIXED = "configs/clusters/mixed_counts_h100_a100.toml"


def cli_json(argv: list[str], capsys) -> dict:
    capsys.readouterr()
    assert cli.main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


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
        assert said.startswith(f"archsim search: error: field '{refused.value.where.field}': ")
        assert "--" not in str(refused.value)
    else:
        assert said == f"archsim search: error: {refused.value}"
    trained = cli_error(["train", MODEL, "--cluster", cluster, "--global-batch", "16", "--dtype", dtype, *train_flags],
                        capsys)
    assert trained == said.replace("archsim search:", "archsim train:", 1)  # the same refusal, each its own


def test_api_examples_show_the_new_keywords():
    """docs/api.md runs (tests/test_docs.py runs every python block) an example of each job with a keyword
    this parity added."""
    page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    blocks = page.split("```python")[1:]
    assert any("archsim.cost(" in b and "clock_ghz=" in b and "sram_kb=" in b for b in blocks)
    assert any("archsim.train(" in b and "balance=" in b for b in blocks)
    assert any("archsim.search(" in b and "dtype=" in b for b in blocks)


def test_cost_bandwidth_without_the_cycle_engine_is_refused_as_the_cli_refuses_it(capsys):
    """The analytic engine has no memory stalls: a DRAM bandwidth given to it would be dropped, so both refuse it."""
    with pytest.raises(InputError, match="bandwidth is the cycle engine's DRAM words/cycle: add engine='cycle'") \
            as refused:
        archsim.cost(TOPOLOGY, bandwidth=4)  # the keywords a library user typed; the command its flags
    assert cli_error(["cost", TOPOLOGY, "--bandwidth", "4"], capsys) == \
        f"archsim cost: error: {refused.value}".replace("bandwidth is", "--bandwidth is").replace(
            "engine='cycle'", "--engine cycle")
