"""A design sweep over a SCALE-Sim ``.cfg`` array: before, any design axis beside a ``.cfg`` refused the spec, so a
designer with a ``.cfg`` chip could not sweep even the axes the file leaves unset (element size, micro-batches, a
bandwidth or clock it does not write). Now those run, each point costing what ``archsim cost --config`` (and
``archsim energy --config``) gives for it, and only an axis that would override what the file states is refused,
naming the axis, its spec key and the file."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from archsim.cli import main

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "arrays"
TINY = """Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, Padding, Type, Inputs, Bias, Repeat,
fc1, 1, 1, 1, 1, 256, 256, 1, 0, fc, input, 1, 1,
fc2, 1, 1, 1, 1, 256, 256, 1, 0, fc, fc1, 1, 1,
"""  # two 64 KiB weight matrices: more than a 2 KiB SRAM holds, so DRAM bandwidth stalls the cycle engine
SPEC = """[sweep]
name = "cfg_design"
networks = ["{network}"]
arrays = [{arrays}]
batches = [4]
processors = [1, 2]
methods = ["layerpipe"]
{extra}
"""


def _cfg(folder: Path, *, sram: int = 64, bandwidth: bool = True, clock: str | None = None,
         name: str = "chip.cfg") -> Path:
    """SCALE-Sim's 32 × 32 example with ifmap and filter SRAMs of ``sram`` KiB (the ofmap's 64), without its
    ``Bandwidth`` key unless ``bandwidth``, and with an ``[archsim] ClockGHz`` where ``clock`` is given."""
    text = (CONFIGS / "scalesim_32x32_ws.cfg").read_text()
    assert "IfmapSramSzkB:    64\n" in text and "FilterSramSzkB:   64\n" in text and "Bandwidth : 10\n" in text
    text = text.replace("IfmapSramSzkB:    64\n", f"IfmapSramSzkB:    {sram}\n")
    text = text.replace("FilterSramSzkB:   64\n", f"FilterSramSzkB:   {sram}\n")
    if not bandwidth:
        text = text.replace("Bandwidth : 10\n", "")
    if clock is not None:
        text += f"\n[archsim]\nClockGHz: {clock}\n"
    path = folder / name
    path.write_text(text)
    return path


def _spec(folder: Path, arrays: list[str], extra: str, network: str = "ffnn8") -> str:
    path = folder / "spec.toml"
    path.write_text(SPEC.format(network=network, arrays=", ".join(f'"{a}"' for a in arrays), extra=extra))
    return str(path)


def _csv(argv: list[str], capsys) -> list[dict[str, str]]:
    assert main([*argv, "--format", "csv"]) == 0
    return list(csv.DictReader(io.StringIO(capsys.readouterr().out)))


def _cost_layers(argv: list[str], capsys) -> list[dict[str, str]]:
    """``archsim cost``'s per-layer rows (its TOTAL row left out: the sums are taken here)."""
    return [row for row in _csv(["cost", *argv], capsys) if row["layer"] != "TOTAL"]


def _sweep(spec: str, out: Path, capsys) -> list[dict[str, str]]:
    assert main(["sweep", spec, "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    return list(csv.DictReader(io.StringIO((out / "results.csv").read_text())))


def test_an_axis_the_cfg_leaves_unset_runs_at_what_cost_and_energy_config_give(tmp_path, capsys):
    """element_bytes is no .cfg key (``cost --config`` takes it as ``--element-bytes``): each width's row is the
    file's array at that width: cycles and seconds (at the file's own clock) as ``cost --config``, energy and
    area (of the file's 16 KiB ifmap and filter SRAMs) as ``energy --config``."""
    cfg = _cfg(tmp_path, sram=16, clock="0.5")
    rows = _sweep(_spec(tmp_path, ["chip.cfg"], "element_bytes = [1, 2]"), tmp_path / "out", capsys)
    assert len(rows) == 4 and {row["array_path"] for row in rows} == {str(cfg.resolve())}
    energies = []
    for width in (1, 2):
        (row,) = [r for r in rows if r["processors"] == "1" and r["element_bytes"] == str(width)]
        flags = ["ffnn8", "--config", str(cfg), "--batch", "4", "--element-bytes", str(width)]
        layers = _cost_layers(flags, capsys)
        cycles = sum(float(layer["total_cycles"]) for layer in layers)
        assert float(row["single_processor_cycles"]) == float(row["iteration_cycles"]) == cycles
        assert float(row["clock_ghz"]) == 0.5  # the file's [archsim] ClockGHz, no clocks_ghz axis
        assert float(row["iteration_seconds"]) == pytest.approx(sum(float(x["total_seconds"]) for x in layers),
                                                                rel=1e-9)
        (total,) = [r for r in _csv(["energy", *flags], capsys) if r["op"] == "TOTAL"]
        assert float(total["cycles"]) == cycles
        assert float(row["energy_pj"]) == pytest.approx(float(total["energy_pj"]), rel=1e-12)
        assert float(row["area_mm2"]) == pytest.approx(float(total["area_mm2"]), rel=1e-12)
        assert row["sram_kb"] == ""  # 16, 16, 64 KiB: no one size
        assert row["bandwidth_words_per_cycle"] == ""  # the analytic engine reads none (before: the unused 10)
        energies.append(float(row["energy_pj"]))
    assert energies[0] != energies[1]  # the width reached the energy model
    (default,) = [r for r in _csv(["energy", "ffnn8", "--array", "32x32", "--batch", "4"], capsys)
                  if r["op"] == "TOTAL"]
    assert float(default["energy_pj"]) != pytest.approx(energies[0], rel=1e-6)  # the file's SRAM, not 64 KiB


@pytest.mark.long  # the cycle engine, five times: about 1 s
def test_a_bandwidth_and_clock_the_cfg_does_not_write_are_swept_as_cost_config_flags_set_them(tmp_path, capsys):
    """A .cfg without ``Bandwidth`` states no DRAM bandwidth (the reader's default 10, which ``--bandwidth``
    sets), and one without ``ClockGHz`` no clock: the bandwidths and clocks_ghz axes run over its SRAMs."""
    cfg = _cfg(tmp_path, sram=2, bandwidth=False)
    network = tmp_path / "tiny.csv"
    network.write_text(TINY)
    spec = _spec(tmp_path, ["chip.cfg"], 'engine = "cycle"\nbandwidths = [2, 10]\nclocks_ghz = [1.0]', "tiny.csv")
    rows = [r for r in _sweep(spec, tmp_path / "out", capsys) if r["processors"] == "1"]
    cycles = {}
    for bandwidth in (2, 10):
        (row,) = [r for r in rows if r["bandwidth_words_per_cycle"] == str(bandwidth)]
        layers = _cost_layers([str(network), "--config", str(cfg), "--batch", "4", "--engine", "cycle", "--bandwidth",
                       str(bandwidth)], capsys)
        cycles[bandwidth] = sum(float(layer["total_cycles"]) for layer in layers)
        assert float(row["single_processor_cycles"]) == pytest.approx(cycles[bandwidth], rel=1e-12)
        assert float(row["iteration_seconds"]) == pytest.approx(cycles[bandwidth] / 1e9, rel=1e-12)
    assert cycles[2] > cycles[10]  # the axis reached the cycle engine's stalls
    plain = _cost_layers([str(network), "--array", "32x32", "--batch", "4", "--engine", "cycle", "--bandwidth", "2"],
                 capsys)
    assert sum(float(layer["total_cycles"]) for layer in plain) != cycles[2]  # the file's 2 KiB SRAM, kept
    # the report's per-layer section costs a row on cost's array for --config FILE --bandwidth B
    from archsim.array.options import array_from_options
    from archsim.sweep.report import read_results, spec_record, sweep_array

    results = read_results(tmp_path / "out")
    for bandwidth, given in ((2, 2), (10, None)):  # 10: the file's own (the reader's default), no flag
        first = results[results["bandwidth_words_per_cycle"] == bandwidth].iloc[0]
        array, engine, flags = sweep_array(spec_record(tmp_path / "out"), first)
        assert (array, engine) == (array_from_options(config=cfg, bandwidth=given), "cycle")
        assert flags == " --engine cycle" + (f" --bandwidth {given}" if given else "")


@pytest.mark.parametrize("cfg_options, extra, axis, what, cfg_keys, line", [  # line: SPEC's, element_bytes at 8
    ({}, "sram_kb = [8, 64]", "sram_kb", "SRAM size", "IfmapSramSzkB, FilterSramSzkB and OfmapSramSzkB", 9),
    ({}, 'engine = "cycle"\nbandwidths = [4]', "bandwidths", "DRAM bandwidth", "Bandwidth", 10),
    ({"clock": "0.7"}, "clocks_ghz = [1.0]", "clocks_ghz", "clock", "[archsim] ClockGHz", 9),
])
def test_an_axis_overriding_what_the_cfg_states_is_one_line_naming_axis_key_and_file(tmp_path, capsys, cfg_options,
                                                                                     extra, axis, what, cfg_keys, line):
    _cfg(tmp_path, **cfg_options)
    spec = _spec(tmp_path, ["32x32", "chip.cfg"], f"element_bytes = [1, 2]\n{extra}")  # the .cfg beside a shape
    out = tmp_path / "out"
    assert main(["sweep", spec, "--out", str(out)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert captured.out == "" and len(lines) == 1
    assert lines[0] == (f"archsim sweep: error: {spec}, line {line}, field '{axis}': the {what} axis ({axis}) would override {cfg_keys} "
                        f"of the .cfg array 'chip.cfg': a design sweep keeps a .cfg's own values; sweep {axis} on a "
                        f"ROWSxCOLS array, or name one .cfg per {what}")
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["chip.cfg", "spec.toml"]


def test_an_output_flag_may_not_replace_a_design_sweeps_cfg(tmp_path, capsys):
    cfg = _cfg(tmp_path)
    before = cfg.read_bytes()
    spec = _spec(tmp_path, ["chip.cfg"], "microbatches = [1, 2]")
    assert main(["sweep", spec, "--out", str(tmp_path / "out"), "--report", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "names this run's input (an array file SPEC names)" in err and err.count("\n") == 1
    assert cfg.read_bytes() == before and not (tmp_path / "out").exists()
    rows = _sweep(spec, tmp_path / "out", capsys)  # the same spec without the flag runs
    assert sorted({r["microbatches"] for r in rows}) == ["1", "2"] and cfg.read_bytes() == before
