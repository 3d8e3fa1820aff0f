"""An accelerator designer's own SCALE-Sim ``.cfg`` device file through the array commands, plan and search's page: what a
wrong input says (one line, located as the file's SCALE-Sim keys are), and what the docs say plan takes.
Each test failed on the code before its fix (say so where it was added)."""

import json
import re
from pathlib import Path

import pytest
from device_files import scalesim_chip_cfg

from archsim.cli import main
from archsim.devices.device_file import load_device
from archsim.errors import InputError

ROOT = Path(__file__).resolve().parents[1]

# A designer's chip: 32 arrays of 64 × 64 at 0.8 GHz, Bandwidth × 2 B × 0.8 GHz = 640 GB/s = hbm_gbps.
CHIP = scalesim_chip_cfg(32, 0.8, 640, "mychip", "mychip", sram_kb=(256, 256, 128), bandwidth=400, hbm_gib=32,
                         intra_gbps=200, static_watts=20)


def _line(text: str, start: str) -> int:
    """The 1-based number of the line of ``text`` that starts with ``start`` (counted by hand in the file)."""
    return next(n for n, line in enumerate(text.splitlines(), start=1) if line.startswith(start))


@pytest.mark.parametrize(("old", "new", "field"), [
    ("hbm_gbps = 640", "hbm_gbs = 640", "memory.hbm_gbs"),       # a typo'd key
    ("hbm_gbps = 640", "hbm_gbps = -640", "memory.hbm_gbps"),    # a negative bandwidth
    ("intra_gbps = 200", "intra_gbps = 0", "links.intra_gbps"),  # a zero link
    ("arrays = 32", "arrays = 0", "device.arrays"),              # a chip of no arrays
    ("static_watts = 20", "static_watts = -20", "device.static_watts"),
])
def test_a_cfg_device_keys_error_names_its_line(tmp_path, capsys, old, new, field):
    """A .cfg's SCALE-Sim keys are refused with their line (``bad.cfg, line 13, field 'Bandwith'``); its device
    sections' keys were refused without one (``bad.cfg, field 'memory.hbm_gbs'``), so in a long file the user
    had to search for the key. Now both name the line, counted here by hand. Failed before the fix."""
    text = CHIP.replace(old, new)
    path = tmp_path / "bad.cfg"
    path.write_text(text)
    line = _line(text, new.split(" ")[0] + " ")
    with pytest.raises(InputError) as caught:
        load_device(path)
    assert caught.value.where.line == line and caught.value.where.field == field
    assert main(["cost", "ffnn8", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [err.strip()]  # one line
    assert f"bad.cfg, line {line}, field '{field}'" in err


def test_a_key_named_in_two_sections_is_located_in_its_own(tmp_path):
    """The line found is the one in the section the field names, not a same-named key earlier in the file."""
    text = CHIP.replace("[memory]\n", "[memory]\nlinks = 2\n")  # 'links' is a [links] key, unknown in [memory]
    text = text.replace("intra_gbps = 200", "intra_gbps = 200\nlinks = -1")
    path = tmp_path / "two.cfg"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        load_device(path)
    assert caught.value.where.field == "memory.links"
    assert caught.value.where.line == text.splitlines().index("links = 2") + 1


def test_an_array_commands_error_is_its_one_line(tmp_path, capsys):
    """An array command given a device file of several arrays said two notes (it costs one array; it prices
    int8) and then its error, three lines where the error was the one that mattered; train, search and plan
    say their notes after the run, never before an error line. Now the notes follow a run that succeeds and a
    refused one prints its error alone. Failed before the fix."""
    path = tmp_path / "mychip.cfg"
    path.write_text(CHIP)
    for argv in (["energy", "ffnn8", "--config", str(path), "--energy-table", "nope"],
                 ["cost", "ffnn8", "--config", str(path), "--bandwidth", "10"],
                 ["pipeline", "ffnn8", "--config", str(path), "--processors", "4000", "--method", "pipedream"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and err.startswith(f"archsim {argv[0]}: error: "), err
    assert main(["cost", "ffnn8", "--config", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "TOTAL" in out
    assert re.search(r"note: .*mychip\.cfg is a device of 32 arrays", err)
    assert "add --dtype fp16" in err


def test_plan_on_a_device_cluster_takes_trains_dtypes_as_the_cli_page_says(tmp_path, capsys):
    """docs/cli.md said plan on a cluster whose servers name a device refuses --dtype and --element-bytes; it
    takes train's --dtype names (fp16, the default, bf16, fp32: docs/papers/spp.md runs --dtype fp32 on GPU
    clusters) and refuses int8 and --element-bytes. The page now says what plan does. Failed before the fix."""
    (tmp_path / "mychip.cfg").write_text(CHIP)
    cluster = tmp_path / "c.toml"
    cluster.write_text('[cluster]\nname = "c"\n[[servers]]\ncount = 1\ngpus = 4\ndevice = "mychip.cfg"\n')
    base = ["plan", "ffnn8", "--cluster", str(cluster), "--microbatches", "2", "--format", "json"]
    assert main([*base, "--dtype", "fp32"]) == 0
    assert ", fp32" in capsys.readouterr().out
    assert main([*base, "--dtype", "int8"]) == 2
    assert main([*base, "--element-bytes", "4"]) == 2
    capsys.readouterr()
    text = " ".join((ROOT / "docs" / "cli.md").read_text().split())
    assert "refuses both flags" not in text
    assert re.search(r"`plan` on a cluster whose servers name a device takes `train`'s `--dtype`", text)


def _row(tp: int, pp: int, dp: int, seconds: float, memory: float) -> dict:
    """A search row with the keys the Pareto page reads; GPUs = tp × pp × dp."""
    return {"tp": tp, "pp": pp, "dp": dp, "micro_batch": 1, "recompute": "none", "schedule": "1f1b",
            "interleave": 1, "sequence_parallel": False, "stage_layers": "", "iteration_seconds": seconds,
            "peak_memory_gib": memory, "gpus": tp * pp * dp, "tflops_per_gpu": 1.0,
            "hardware_tflops_per_gpu": 1.0, "tokens_per_second": 1.0}


def test_the_search_pages_colour_is_one_gpu_scale_in_whole_gpus():
    """``search --pareto-html`` colours points by GPUs, with one colour bar (the front's). Each trace scaled its
    colours over its own GPU counts, so where the front held 8 and 16 GPUs and the ranked rows 4, 8 and 16, an
    8-GPU row took the middle colour and an 8-GPU front point the bottom one: the bar mislabelled the rows. And
    the bar's ticks were fractional GPUs (15.6, 15.8, 16.2 … where every row ran 16). Now both traces share one
    range, all the counts shown, and the bar's ticks are the whole counts the rows run. Failed before the fix."""
    from archsim.report.search_front import front_figure

    front = [_row(1, 1, 8, 1.0, 30.0), _row(2, 1, 8, 1.2, 20.0)]
    rows = [*front, _row(1, 1, 4, 2.0, 25.0)]
    fig = front_figure(front, rows, "time")
    markers = [trace.marker for trace in fig.data]
    assert [(m.cmin, m.cmax) for m in markers] == [(4, 16), (4, 16)]
    bar = next(m.colorbar for m in markers if m.showscale)
    assert list(bar.tickvals) == [4, 8, 16]
    single = front_figure(front[:1], front[:1], "time")
    assert [list(m.colorbar.tickvals) for m in (t.marker for t in single.data) if m.showscale] == [[8]]


# CHIP's lines (tests/device_files.py's .cfg layout), counted by hand: [memory] is line 24, hbm_gib 25,
# [links] 28, intra_gbps 29.
@pytest.mark.parametrize(("edit", "line", "says"), [
    (lambda t: t.replace("hbm_gib = 32\n", "hbm_gib = 32\nhbm_gib = 16\n"), 26, "hbm_gib is given twice in [memory]"),
    (lambda t: t.replace("[links]\n", "[links]\n[links]\n"), 29, "section [links] is given twice"),
    (lambda t: "hbm_gib = 32\n" + t, 1, "a key before any [section] header"),
    (lambda t: t.replace("[links]\n", "[links]\nintra_gbps 200\n"), 29, "neither a [section] header nor a key"),
])
def test_a_cfg_syntax_error_says_what_and_where(tmp_path, capsys, edit, line, says):
    """A .cfg configparser cannot read was refused as ``not a readable .cfg file (DuplicateOptionError)``:
    a Python class name, no line, no key, so a designer with a key written twice had to guess which. Now the
    line and what is wrong, from cost --config and train alike. Failed before the fix."""
    assert CHIP.splitlines()[24 - 1] == "[memory]" and CHIP.splitlines()[28 - 1] == "[links]"
    (tmp_path / "mychip.cfg").write_text(edit(CHIP))
    cluster = tmp_path / "c.toml"
    cluster.write_text('[cluster]\nname = "c"\n[[servers]]\ncount = 1\ngpus = 4\ndevice = "mychip.cfg"\n')
    for argv in (["cost", "ffnn8", "--config", str(tmp_path / "mychip.cfg")],
                 ["train", "gpt3_1.3b", "--cluster", str(cluster), "--global-batch", "8"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1, err
        assert f"mychip.cfg, line {line}" in err and says in err and "Error" not in err, err


def test_energy_prices_the_chips_static_watts_or_says_it_does_not_read_them(tmp_path, capsys):
    """``archsim energy --config mychip.cfg`` on a chip stating ``[device] static_watts = 20`` printed
    ``leakage_pj`` 0 and an average power with no word that the file's static power went unread (train and
    search add it: 20 W × chips × seconds); a note then named it. Since 2026-12-05 a chip of several arrays (32
    here) is priced with it over the chip's seconds, as train prices it, and a chip of one array too, over that
    array's cycles at 0.8 GHz (until 2026-12-05 priced as one array, the figure named as unread): no note. Only a
    ``.cfg`` train refuses (here: without ``[memory]``) still leaves it unread, the note saying train's reason; a
    chip without it gets no such note."""
    path = tmp_path / "mychip.cfg"
    path.write_text(CHIP)
    assert main(["energy", "ffnn8", "--config", str(path), "--dtype", "fp16", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    document = json.loads(out)
    seconds = document["meta"]["iteration_seconds"]
    assert document["rows"][-1]["leakage_pj"] == pytest.approx(20 * seconds * 1e12, rel=1e-12)
    assert "static_watts" not in err
    path.write_text(CHIP.replace("arrays = 32\n", "arrays = 1\n"))
    assert main(["energy", "ffnn8", "--config", str(path), "--dtype", "fp16", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    total = json.loads(out)["rows"][-1]
    assert total["leakage_pj"] == pytest.approx(20 * total["cycles"] / 0.8e9 * 1e12, rel=1e-12)  # no table leakage
    assert "static_watts" not in err
    memory = "[memory]\nhbm_gib = 32\nhbm_gbps = 640\n"
    assert memory in CHIP
    path.write_text(CHIP.replace("arrays = 32\n", "arrays = 1\n").replace(memory, ""))
    assert main(["energy", "ffnn8", "--config", str(path), "--dtype", "fp16", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert '"leakage_pj": 0' in out.replace(".0,", ",")  # the energy table's leakage: none
    (line,) = [text for text in err.splitlines() if "static_watts" in text]
    assert line.startswith(f"archsim energy: note: {path} states [device] static_watts = 20 W per chip, unread: "
                           "train refuses the file (a .cfg device file needs [memory]"), line
    path.write_text(CHIP.replace("static_watts = 20\n", "").replace("arrays = 32\n", "arrays = 1\n"))
    assert main(["energy", "ffnn8", "--config", str(path), "--dtype", "fp16"]) == 0
    assert "static_watts" not in capsys.readouterr().err


def test_a_device_sweeps_axis_given_as_one_number_names_the_list_it_takes(tmp_path, capsys):
    """``chips = 8`` in a device sweep spec (one chip count, the natural first try) was refused as ``expected a
    non-empty list``, which a lone 8 is not said to break: now the line shows the list to write. An empty list
    keeps its own wording, saying what the list takes (chip counts 1…16,384, MAX_CHIPS). Failed before the fix."""
    (tmp_path / "mychip.cfg").write_text(CHIP)
    spec = tmp_path / "spec.toml"
    base = '[sweep]\nmodel = "gpt3_1.3b"\ndevice = "mychip.cfg"\nglobal_batch = 64\n'
    spec.write_text(base + "chips = 8\n")
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out")]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.endswith("field 'chips': expected a list, chips = [8], got '8'"), line
    spec.write_text(base + "chips = []\n")
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip().endswith("field 'chips': expected a non-empty list of integers in 1…16384, got []")
    assert not (tmp_path / "out").exists()


def test_a_device_sweep_report_whose_points_all_miss_memory_keeps_its_legend():
    """A device sweep whose every point needs more memory than the chip has (a 24 GiB chip, GPT-3 1.3B at
    25.4 GiB) drew its points hollow with no legend: Plotly shows one only for two or more traces with data,
    so nothing on the plot said what a hollow circle meant (seen in headless Chromium). The legend is now
    always on. Failed before the fix."""
    import pandas as pd

    from archsim.report.pareto import device_pareto_figure

    results = pd.DataFrame({"model": ["gpt3_1.3b"] * 2, "gpu": ["mychip"] * 2, "arrays": ["32x64x64"] * 2,
                            "hbm_gbps": [320.0, 640.0], "gpus": [8, 8], "iteration_seconds": [2.25, 1.58],
                            "energy_j": [3483.0, 3375.0], "peak_memory_gib": [25.4, 25.4],
                            "fits_memory": [False, False], "pareto_optimal": [False, False]})
    fig = device_pareto_figure(results)
    drawn = [trace.name for trace in fig.data if len(trace.x)]
    assert drawn == ["does not fit memory"]
    assert fig.layout.showlegend is True


def test_a_design_sweeps_area_colour_is_one_scale_over_front_and_dominated():
    """The design sweep's Pareto plot colours points by area with one bar (the front's), but each trace scaled
    its colours over its own areas: with front designs of 1 and 2 mm² and a dominated one of 4 mm² beside a
    1 mm² one, the 4 mm² point took the front's 2 mm² colour. Both traces now share the whole range. Hand-made
    rows: the 16 × 16 designs (1 mm²) trade time for energy; the 32 × 32 one of 4 mm² is beaten in all three
    by the 2 mm² one. Failed before the fix."""
    import pandas as pd

    from archsim.report.pareto import pareto_figure

    base = {"network": "n", "batch": 1, "rows": 16, "cols": 16, "dataflow": "ws", "sram_kb": 8,
            "bandwidth_words_per_cycle": 10, "element_bytes": 2, "microbatches": 1, "processors": 1,
            "method": "pipedream", "energy_table": "horowitz45", "clock_ghz": 1.0}
    designs = [(100.0, 5.0, 1.0), (50.0, 8.0, 2.0), (60.0, 9.0, 4.0), (120.0, 6.0, 1.0)]  # cycles, pJ, mm²
    rows = pd.DataFrame([{**base, "iteration_cycles": c, "iteration_seconds": c * 1e-9, "energy_pj": e,
                          "area_mm2": a} for c, e, a in designs])
    fig = pareto_figure(rows, "n")
    assert sorted(len(trace.x) for trace in fig.data) == [2, 2]  # two on the front, two dominated
    assert [(trace.marker.cmin, trace.marker.cmax) for trace in fig.data] == [(1.0, 4.0), (1.0, 4.0)]


def test_the_cycle_engine_on_a_calc_cfg_says_it_stalls_where_scalesim_would_not(tmp_path, capsys):
    """A .cfg in CALC bandwidth mode: SCALE-Sim never stalls the array (``tests/test_scalesim_exact.py``: stall
    cycles 0), but ``--engine cycle`` simulates the DRAM at ``Bandwidth`` words/cycle whatever the mode (it is
    SCALE-Sim's USER mode), so a 64 × 64 conv whose SCALE-Sim CALC run takes 17,531 cycles with no stall took
    137,230 here with no word, and docs/scalesim.md said CALC gives stall-free cycles. Now one note says so and
    the page says what each engine does with each mode. Failed before the fix."""
    cfg = (ROOT / "configs" / "arrays" / "tpu_like_256x256_ws.cfg")
    assert "InterfaceBandwidth: CALC" in cfg.read_text()
    assert main(["cost", "ffnn8", "--config", str(cfg), "--engine", "cycle", "--batch", "1"]) == 0
    (line,) = [text for text in capsys.readouterr().err.splitlines() if "CALC" in text]
    assert line.startswith("archsim cost: note: ") and "InterfaceBandwidth: USER" in line
    assert main(["cost", "ffnn8", "--config", str(cfg), "--batch", "1"]) == 0  # analytic: CALC's own cycles
    assert "CALC" not in capsys.readouterr().err
    page = " ".join((ROOT / "docs" / "scalesim.md").read_text().split())
    assert "used: `CALC` → stall-free cycles; `USER`" not in page
    assert "`--engine cycle` simulates the DRAM at `Bandwidth` whichever mode" in page
