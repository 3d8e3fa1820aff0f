"""``archsim.gemm`` and ``archsim.sparse`` run both ways on the same input (docs/api.md): the JSON ``archsim gemm``
and ``archsim sparse`` print (full precision; the commands were there first) is the reference, and a refusal is
the command's line, the library naming keywords where the command names flags. Each of these failed before the
functions existed (``archsim`` had no ``gemm`` or ``sparse``)."""

from __future__ import annotations

import warnings

import pytest
from api_parity_helpers import as_printed, cli_error, cli_json
from test_docs import ROOT

import archsim
from archsim import cli
from archsim.errors import InputError

LAYOUT_CFG = "configs/arrays/scalesim_layout_32x32_ws.cfg"
LAYOUT = "docs/examples/gemm_layout.csv"
SPARSE_CFG = "configs/arrays/scalesim_sparsity_128x128_ws.cfg"
PRUNED = "docs/examples/pruned_convs.csv"


def shapes_csv(tmp_path) -> str:
    path = tmp_path / "shapes.csv"
    path.write_text("m,k,n,rows,cols,dataflow\n64,128,96,16,16,os\n100,27,300,32,8,ws\n7,9,5,4,4,is\n",
                    encoding="utf-8")
    return str(path)


GEMM_CASES = {  # name → (flags, keywords)
    "one": (["--m", "64", "--k", "128", "--n", "96", "--array", "16x16", "--dataflow", "os"],
            {"m": 64, "k": 128, "n": 96, "array": "16x16", "dataflow": "os"}),
    "text counts": (["--m", "64", "--k", "128", "--n", "96", "--ofmap-count", "true"],
                    {"m": "64", "k": "128", "n": "96", "ofmap_count": "true"}),
    "cycle": (["--m", "64", "--k", "128", "--n", "96", "--array", "8x8", "--engine", "cycle", "--bandwidth", "2",
               "--sram-kb", "4,4,2", "--min-bandwidth", "--clock-ghz", "0.7"],
              {"m": 64, "k": 128, "n": 96, "array": "8x8", "engine": "cycle", "bandwidth": 2, "sram_kb": "4,4,2",
               "min_bandwidth": True, "clock_ghz": 0.7}),
    "layout": (["--m", "16", "--k", "12", "--n", "10", "--engine", "cycle", "--config", LAYOUT_CFG, "--layout", LAYOUT,
                "--bank-rule", "line"],
               {"m": 16, "k": 12, "n": 10, "engine": "cycle", "config": LAYOUT_CFG, "layout": LAYOUT,
                "bank_rule": "line"}),
}


@pytest.mark.parametrize("case", sorted(GEMM_CASES))
def test_gemm_gives_the_commands_json(case, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    flags, keywords = GEMM_CASES[case]
    printed = cli_json(["gemm", *flags], capsys)
    result = archsim.gemm(**keywords)
    assert as_printed(result.to_dict()) == printed
    assert result.table.to_dict(orient="records") == result.to_dict()["rows"] and len(result) == len(printed["rows"])


def test_gemm_shapes_file_gives_the_commands_json(tmp_path, capsys):
    shapes = shapes_csv(tmp_path)
    printed = cli_json(["gemm", "--shapes", shapes, "--clock-ghz", "1"], capsys)
    result = archsim.gemm(shapes=shapes, clock_ghz="1")
    assert as_printed(result.to_dict()) == printed
    assert result["cycles"].tolist() == [row["cycles"] for row in printed["rows"]]
    assert result.meta["clock_ghz"] == 1.0


def test_gemm_one_os_gemm_by_hand():
    """Output stationary: each PE holds one output, so an M×N output on R×C takes ⌈M/R⌉·⌈N/C⌉ folds
    (64×96 on 16×16: 4·6 = 24), and every one of the M·N outputs is written at least once."""
    result = archsim.gemm(m=64, k=128, n=96, array="16x16", dataflow="os")
    assert result["folds"].tolist() == [4 * 6]
    assert result.to_dict()["rows"][0]["ofmap_sram_writes"] >= 64 * 96


REFUSALS = {  # keywords → (the API's line, the flags, the command's line)
    "both": ({"m": 4, "k": 4, "n": 4, "shapes": "x.csv"}, "field 'shapes': give either shapes or m/k/n, not both",
             ["--m", "4", "--k", "4", "--n", "4", "--shapes", "x.csv"],
             "argument --shapes: give either --shapes or --m/--k/--n, not both"),
    "missing": ({"k": 4, "n": 4}, "field 'm': missing m (or give shapes=FILE.csv)", ["--k", "4", "--n", "4"],
                "argument --m: missing --m (or give --shapes FILE.csv)"),
    "min_bandwidth": ({"m": 4, "k": 4, "n": 4, "min_bandwidth": True},
                      "field 'min_bandwidth': min_bandwidth needs engine='cycle'",
                      ["--m", "4", "--k", "4", "--n", "4", "--min-bandwidth"],
                      "argument --min-bandwidth: --min-bandwidth needs --engine cycle"),
    "layout": ({"m": 4, "k": 4, "n": 4, "layout": LAYOUT, "config": LAYOUT_CFG},
               ("field 'layout': layout needs config (its [layout] section) and engine='cycle', without bandwidth or "
                "min_bandwidth (the layout fixes the read bandwidths)"),
               ["--m", "4", "--k", "4", "--n", "4", "--layout", LAYOUT, "--config", LAYOUT_CFG],
               ("argument --layout: --layout needs --config (its [layout] section) and --engine cycle, without "
                "--bandwidth or --min-bandwidth (the layout fixes the read bandwidths)")),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_gemm_refuses_as_the_command_does(case, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    keywords, line, flags, command_line = REFUSALS[case]
    with pytest.raises(InputError) as refused:
        archsim.gemm(**keywords)
    assert str(refused.value) == line
    assert cli_error(["gemm", *flags], capsys) == f"archsim gemm: error: {command_line}"


@pytest.mark.parametrize(("keywords", "field"), [
    ({"m": 0, "k": 4, "n": 4}, "m"), ({"m": 4, "k": 2.5, "n": 4}, "k"), ({"m": 4, "k": 4, "n": 4, "array": 32.5}, "array"),
    ({"m": 4, "k": 4, "n": 4, "dataflow": "xs"}, "dataflow"), ({"m": 4, "k": 4, "n": 4, "engine": "fast"}, "engine"),
    ({"m": 4, "k": 4, "n": 4, "min_bandwidth": "yes"}, "min_bandwidth"),
    ({"m": 4, "k": 4, "n": 4, "clock_ghz": 1e9}, "clock_ghz"), ({"m": 4, "k": 4, "n": 4, "shapes": 3}, "shapes"),
    ({"m": 4, "k": 4, "nn": 4}, "nn"),
])
def test_gemm_refuses_a_value_no_flag_could_give_in_one_line(keywords, field):
    with pytest.raises(InputError) as refused:
        archsim.gemm(**keywords)
    assert refused.value.where.field.replace("-", "_") == field


def test_gemm_warns_what_the_command_says_on_stderr(capsys):
    """--sram-kb without the cycle engine changes no figure: the command warns on stderr, the API a UserWarning."""
    assert cli_json(["gemm", "--m", "4", "--k", "4", "--n", "4", "--sram-kb", "8"], capsys)
    with pytest.warns(UserWarning, match="gemm's analytic cycles and SRAM reads"):
        archsim.gemm(m=4, k=4, n=4, sram_kb=8)


SPARSE_CASES = {  # name → (flags, keywords)
    "table": (["--delta", "dense", "--gradient", "masked", "--batch", "2", "--energy"],
              {"delta": "dense", "gradient": "masked", "batch": "2", "energy": True}),
    "partition": (["--processors", "3", "--method", "gpipe"], {"processors": 3, "method": "gpipe"}),
}


@pytest.mark.parametrize("case", sorted(SPARSE_CASES))
def test_sparse_gives_the_commands_json(case, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    flags, keywords = SPARSE_CASES[case]
    printed = cli_json(["sparse", PRUNED, "--config", SPARSE_CFG, *flags], capsys)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the command said nothing on stderr: neither does the function
        result = archsim.sparse(PRUNED, config=SPARSE_CFG, **keywords)
    assert as_printed(result.to_dict()) == printed
    assert len(result) == len(printed["rows"])


def test_sparse_topology_is_the_networks_older_name(monkeypatch):
    monkeypatch.chdir(ROOT)
    assert archsim.sparse(topology=PRUNED, config=SPARSE_CFG).equals(archsim.sparse(PRUNED, config=SPARSE_CFG))
    with pytest.raises(InputError, match="not both"):
        archsim.sparse(PRUNED, topology=PRUNED, config=SPARSE_CFG)
    with pytest.raises(InputError, match="give network"):
        archsim.sparse(config=SPARSE_CFG)


@pytest.mark.parametrize(("keywords", "flags", "line", "command_line"), [
    ({"method": "gpipe"}, ["--method", "gpipe"],
     "field 'method': method needs processors (without it the layer table is printed)",
     "argument --method: --method needs --processors (without it the layer table is printed)"),
    ({"processors": 2, "energy": True}, ["--processors", "2", "--energy"],
     "field 'energy': energy=True adds columns to the layer table; processors prints the partition instead",
     "argument --energy: --energy adds columns to the layer table; --processors prints the partition instead"),
])
def test_sparse_refuses_as_the_command_does(keywords, flags, line, command_line, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(InputError) as refused:
        archsim.sparse(PRUNED, config=SPARSE_CFG, **keywords)
    assert str(refused.value) == line
    assert cli_error(["sparse", PRUNED, "--config", SPARSE_CFG, *flags], capsys) == f"archsim sparse: error: {command_line}"


@pytest.mark.parametrize(("keywords", "field"), [
    ({"batch": 0}, "batch"), ({"delta": "sparse"}, "delta"), ({"gradient": "none"}, "gradient"),
    ({"energy": "no"}, "energy"), ({"processors": 5000}, "processors"), ({"processors": 2, "method": "best"}, "method"),
    ({"config": 5}, "config"),
])
def test_sparse_refuses_a_value_no_flag_could_give_in_one_line(keywords, field, monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(InputError) as refused:
        archsim.sparse(PRUNED, **{"config": SPARSE_CFG, **keywords})
    assert refused.value.where.field.replace("-", "_") == field


ENERGY_CASES = {  # name → (network, flags, keywords)
    "analytic": ("layerpipe_sample", ["--array", "16x16", "--batch", "8", "--microbatches", "2", "--dtype", "fp16",
                                      "--clock-ghz", "1.2"],
                 {"array": "16x16", "batch": "8", "microbatches": 2, "dtype": "fp16", "clock_ghz": 1.2}),
    "cycle": ("docs/examples/tiny_resnet.csv", ["--engine", "cycle", "--bandwidth", "4", "--sram-kb", "16,16,8",
                                                "--batch", "2", "--mode", "paper", "--only", "conv"],
              {"engine": "cycle", "bandwidth": 4, "sram_kb": "16,16,8", "batch": 2, "mode": "paper", "only": "conv"}),
    "cfg": ("layerpipe_sample", ["--config", "configs/arrays/scalesim_32x32_ws.cfg", "--array", "8x8"],
            {"config": "configs/arrays/scalesim_32x32_ws.cfg", "array": "8x8"}),
    "device toml": ("layerpipe_sample", ["--config", "configs/devices/tpu_v4_like.toml", "--dtype", "bf16",
                                         "--batch", "4"],
                    {"config": "configs/devices/tpu_v4_like.toml", "dtype": "bf16", "batch": 4}),
}


@pytest.mark.parametrize("case", sorted(ENERGY_CASES))
def test_iteration_energy_gives_archsim_energys_json(case, capsys, monkeypatch):
    """``archsim.energy`` is the energy package, so the job is ``archsim.iteration_energy``; its document is the
    command's, key for key, and the parts sum to the TOTAL row's pJ."""
    monkeypatch.chdir(ROOT)
    network, flags, keywords = ENERGY_CASES[case]
    printed = cli_json(["energy", network, *flags], capsys)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a device file's notes: their own test below
        result = archsim.iteration_energy(network, **keywords)
    assert as_printed(result.to_dict()) == printed
    parts = result.table[result.table["op"] != "TOTAL"]
    assert parts["energy_pj"].sum() == pytest.approx(result.to_dict()["rows"][-1]["energy_pj"], rel=1e-12)


def test_iteration_energy_warns_the_device_files_notes(capsys, monkeypatch):
    """A device TOML of 8 arrays: the command's note on stderr, the function's UserWarning; priced at train's fp16
    without dtype, so neither says to add it."""
    monkeypatch.chdir(ROOT)
    capsys.readouterr()
    assert cli.main(["energy", "layerpipe_sample", "--config", "configs/devices/tpu_v4_like.toml"]) == 0
    said_by_command = [line.split(": note: ", 1)[1] for line in capsys.readouterr().err.splitlines() if ": note: " in line]
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        archsim.iteration_energy("layerpipe_sample", config="configs/devices/tpu_v4_like.toml")
    heads = [line[:60] for line in said_by_command]  # the tails name settings as each caller spells them
    assert len(heads) == 1 and heads == [str(w.message)[:60] for w in said if str(w.message)[:60] in heads]
    assert not any("to price what train charges" in str(w.message) for w in said)


@pytest.mark.parametrize(("keywords", "field"), [
    ({"batch": 0}, "batch"), ({"microbatches": "two"}, "microbatches"), ({"engine": "fast"}, "engine"),
    ({"bandwidth": 4}, "bandwidth"), ({"energy_table": 7}, "energy-table"), ({"mode": "fast"}, "mode"),
    ({"clock_ghz": 1e9}, "clock-ghz"), ({"energies": True}, "energies"),
])
def test_iteration_energy_refuses_a_value_no_flag_could_give_in_one_line(keywords, field):
    with pytest.raises(InputError) as refused:
        archsim.iteration_energy("layerpipe_sample", **keywords)
    assert refused.value.where.field == field
