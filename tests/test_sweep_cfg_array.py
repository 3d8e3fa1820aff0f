"""A sweep spec's ``arrays`` entry may name a SCALE-Sim ``.cfg`` (relative to the spec file), read by the reader
``archsim cost --config`` uses: before, the spec refused it as no ROWSxCOLS shape, so a .cfg array could be
costed by ``cost`` but not swept."""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import pytest

from archsim.array.options import array_from_flags
from archsim.cli import main
from archsim.sweep import load_spec

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "arrays"
SPEC = """[sweep]
name = "cfg_arrays"
networks = ["{network}"]
arrays = [{arrays}]
batches = [{batch}]
processors = [{processors}]
methods = ["layerpipe"]
{extra}
"""


def _spec(folder: Path, arrays: list[str], network: str = "layerpipe_sample", batch: int = 16, extra: str = "",
          processors: str = "1, 2") -> str:
    path = folder / "spec.toml"
    path.write_text(SPEC.format(network=network, arrays=", ".join(f'"{a}"' for a in arrays), batch=batch, extra=extra,
                                processors=processors))
    return str(path)


def _cost_layers(argv: list[str], capsys) -> dict[str, float]:
    """``archsim cost``'s total cycles per layer (the TOTAL row left out)."""
    assert main(["cost", *argv, "--format", "csv"]) == 0
    rows = csv.DictReader(io.StringIO(capsys.readouterr().out))
    return {row["layer"]: float(row["total_cycles"]) for row in rows if row["layer"] != "TOTAL"}


def _sweep_rows(spec: str, out: Path, capsys) -> list[dict[str, str]]:
    assert main(["sweep", spec, "--out", str(out)]) == 0
    capsys.readouterr()
    return list(csv.DictReader(io.StringIO((out / "results.csv").read_text())))


def test_a_spec_naming_a_shipped_cfg_costs_the_array_cost_config_reads(tmp_path, capsys):
    cfg = shutil.copy(CONFIGS / "tpu_like_256x256_ws.cfg", tmp_path / "tpu.cfg")  # beside the spec
    spec = _spec(tmp_path, ["tpu.cfg", "32x32"])
    units = load_spec(spec).units()
    assert [u.array for u in units if u.array_file] == [array_from_flags(config=cfg)]  # every field: cost's array
    rows = _sweep_rows(spec, tmp_path / "out", capsys)
    by_array = {(row["rows"], row.get("array_path") or ""): row for row in rows if row["processors"] == "1"}
    layers = _cost_layers(["layerpipe_sample", "--config", str(cfg), "--batch", "16"], capsys)
    assert len(layers) == 4  # the sample's four conv layers, each costed on the .cfg's 256 × 256 array
    swept = by_array[("256", str(Path(cfg).resolve()))]
    assert float(swept["single_processor_cycles"]) == sum(layers.values())
    assert float(swept["iteration_cycles"]) == sum(layers.values())  # one processor runs every layer
    square = _cost_layers(["layerpipe_sample", "--array", "32x32", "--batch", "16"], capsys)
    assert float(by_array[("32", "")]["single_processor_cycles"]) == sum(square.values()) != sum(layers.values())


@pytest.mark.long  # the cycle engine, three times, and a report: about 6 s
def test_a_cfgs_dataflow_and_memories_reach_the_cycle_engine(tmp_path, capsys):
    """The .cfg's own dataflow where the spec gives no ``dataflows``, and its SRAMs and DRAM bandwidth under
    ``engine = "cycle"`` (a shape keeps the defaults: 64 KiB, 10 words/cycle)."""
    text = (CONFIGS / "scalesim_32x32_ws.cfg").read_text()
    small = (text.replace("IfmapSramSzkB:    64", "IfmapSramSzkB:    2").replace("Bandwidth : 10", "Bandwidth : 2")
             .replace("Dataflow : ws", "Dataflow : os"))
    assert small.count("2\n") >= 2 and "Dataflow : os" in small
    (tmp_path / "small.cfg").write_text(small)
    spec = _spec(tmp_path, ["small.cfg"], network="ffnn8", batch=4, extra='engine = "cycle"', processors="1")
    cfg_rows = _sweep_rows(spec, tmp_path / "out", capsys)
    assert [row["dataflow"] for row in cfg_rows] == ["os"]
    layers = _cost_layers(["ffnn8", "--config", str(tmp_path / "small.cfg"), "--batch", "4", "--engine", "cycle"],
                          capsys)
    assert float(cfg_rows[0]["single_processor_cycles"]) == pytest.approx(sum(layers.values()), rel=1e-12)
    plain = _cost_layers(["ffnn8", "--array", "32x32", "--dataflow", "os", "--batch", "4", "--engine", "cycle"],
                         capsys)
    assert sum(plain.values()) != sum(layers.values())  # the .cfg's memories change the cycles it is swept at
    # the report's per-layer section costs the .cfg's array (as spec.json recorded it) and names it as cost's flag
    from archsim.sweep.report import read_results, spec_record, sweep_array

    first = read_results(tmp_path / "out").iloc[0]
    array, engine, _ = sweep_array(spec_record(tmp_path / "out"), first)
    assert (array, engine) == (array_from_flags(config=tmp_path / "small.cfg"), "cycle")
    assert main(["report", str(tmp_path / "out"), "--out", str(tmp_path / "r.html")]) == 0
    capsys.readouterr()
    command = f"archsim cost ffnn8 --config {(tmp_path / 'small.cfg').resolve()} --dataflow os --batch 4"
    assert command in (tmp_path / "r.html").read_text()


@pytest.mark.parametrize("arrays, cfg_text, expected", [
    (["absent.cfg"], None, "field 'arrays': array file 'absent.cfg' not found in the spec's folder"),
    (["../tpu.cfg"], None, "field 'arrays': array file name must stay inside specs/: '../tpu.cfg'"),
    (["bad.cfg"], (CONFIGS / "tpu_like_256x256_ws.cfg").read_text().replace("ArrayHeight:    256", "ArrayHeight: 0"),
     "bad.cfg, line 5, field 'ArrayHeight': expected a positive integer"),
    (["bad.cfg"], "ArrayHeight 32\n", "bad.cfg, line 1: a key before any [section] header"),
])
def test_a_missing_or_malformed_cfg_is_one_error_line_and_nothing_written(tmp_path, capsys, arrays, cfg_text,
                                                                          expected):
    folder = tmp_path / "specs"
    folder.mkdir()
    shutil.copy(CONFIGS / "tpu_like_256x256_ws.cfg", tmp_path / "tpu.cfg")  # outside the spec's folder
    if cfg_text is not None:
        (folder / "bad.cfg").write_text(cfg_text)
    spec = _spec(folder, arrays)
    out = tmp_path / "out"
    assert main(["sweep", spec, "--out", str(out)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert captured.out == "" and len(lines) == 1 and lines[0].startswith("archsim sweep: error: ")
    assert expected in lines[0]
    assert not out.exists()
    assert sorted(p.name for p in folder.iterdir()) == sorted(["spec.toml"] + (["bad.cfg"] if cfg_text else []))


def test_an_output_flag_naming_the_specs_cfg_is_refused_and_the_cfg_kept(tmp_path, capsys):
    cfg = shutil.copy(CONFIGS / "scalesim_32x32_ws.cfg", tmp_path / "a.cfg")
    before = Path(cfg).read_bytes()
    spec = _spec(tmp_path, ["a.cfg"])
    assert main(["sweep", spec, "--out", str(tmp_path / "out"), "--report", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "names this run's input (an array file SPEC names)" in err
    assert Path(cfg).read_bytes() == before and not (tmp_path / "out").exists()


@pytest.mark.long  # a report: about 3 s
def test_the_report_of_a_cfg_sweep_names_cost_config_and_needs_no_spec_record_for_analytic_cycles(tmp_path, capsys):
    """Analytic cycles depend on the array's shape and dataflow alone, so a results folder without its spec.json
    (someone else's) still gets the per-layer section; its command names the .cfg as ``cost --config``."""
    cfg = shutil.copy(CONFIGS / "tpu_like_256x256_ws.cfg", tmp_path / "tpu.cfg")
    _sweep_rows(_spec(tmp_path, ["tpu.cfg"]), tmp_path / "out", capsys)
    (tmp_path / "out" / "spec.json").unlink()
    assert main(["report", str(tmp_path / "out"), "--out", str(tmp_path / "r.html")]) == 0
    capsys.readouterr()
    command = f"archsim cost layerpipe_sample --config {Path(cfg).resolve()} --dataflow ws --batch 16 --mode exact"
    assert command in (tmp_path / "r.html").read_text()


def test_a_cfg_device_of_several_arrays_is_noted_once_as_cost_config_notes_it(tmp_path, capsys, chip_cfg,
                                                                             monkeypatch):
    """A spec naming a ``.cfg`` device of 4 arrays swept it as one array and said nothing, where
    ``archsim cost --config`` on the same file says so: the sweep prints cost's note once on stderr, and
    ``archsim.run_sweep`` warns it once (not once per point); a plain SCALE-Sim file is one array, of which
    nothing is said. (The file named twice is refused: tests/test_user_trial38.py.) The file is named as the spec
    names it, ``chip.cfg``, as cost names it as typed."""
    import warnings

    import archsim

    (tmp_path / "chip.cfg").write_text(chip_cfg(arrays=4, hbm_gbps=400, run_name="mychip", device_name="mychip_cfg"))
    shutil.copy(CONFIGS / "scalesim_32x32_ws.cfg", tmp_path / "plain.cfg")
    spec = _spec(tmp_path, ["chip.cfg", "plain.cfg"], processors="1")
    monkeypatch.chdir(tmp_path)  # cost given the file as the spec names it
    assert main(["cost", "layerpipe_sample", "--config", "chip.cfg"]) == 0
    (cost_note,) = [line for line in capsys.readouterr().err.splitlines() if "device of" in line]
    note = cost_note.removeprefix("archsim cost: note: ")
    assert "device of 4 arrays" in note
    assert main(["sweep", spec, "--out", str(tmp_path / "out"), "--quiet"]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "device of" in line]
    assert lines == [f"archsim sweep: note: {note}"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        archsim.run_sweep(spec, out=tmp_path / "api")
    assert [str(w.message) for w in caught if "device of" in str(w.message)] == [note]


def test_a_cfg_arrays_notes_name_it_as_the_spec_does(tmp_path, capsys, unread_key_chip, monkeypatch):
    """Defect: ``archsim sweep`` and ``archsim.run_sweep`` named a spec's ``.cfg`` array by its absolute path in
    their notes (``/tmp/.../specs/cfgs/chip.cfg is a device of 16 arrays``) where the spec says ``cfgs/chip.cfg``
    and ``archsim cost --config`` names the file as typed. Now every note names it as the spec's entry does."""
    import warnings

    import archsim

    (tmp_path / "specs" / "cfgs").mkdir(parents=True)
    unread_key_chip.rename(tmp_path / "specs" / "cfgs" / "chip.cfg")
    # batch 1: the cycle engine steps every cycle (10 s for both runs at 16); the notes are what is checked
    _spec(tmp_path / "specs", ["cfgs/chip.cfg"], batch=1, processors="1", extra='engine = "cycle"')
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "specs/spec.toml", "--out", "out", "--quiet"]) == 0
    notes = [line.removeprefix("archsim sweep: note: ") for line in capsys.readouterr().err.splitlines()
             if line.startswith("archsim sweep: note: ")]
    said = [line for line in notes if "chip.cfg" in line]
    # the device of 16 arrays, its unread board_watts, and the DRAM rate its hbm_gbps set for the cycle engine
    assert len(said) == 3 and all(line.startswith(("cfgs/chip.cfg ", "cfgs/chip.cfg:")) for line in said), notes
    assert not any(str(tmp_path) in line for line in notes), notes
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        archsim.run_sweep("specs/spec.toml", out="api")
    assert [str(w.message) for w in caught if "chip.cfg" in str(w.message)] == said


@pytest.mark.parametrize(("arrays", "watts", "stated"), [
    (4, 20, "arrays = 4 and static_watts = 20 W: the array sweep uses neither"),
    (1, 20, "static_watts = 20 W: the array sweep uses it"),  # one array: its static power alone is unused
    (4, None, "arrays = 4: the array sweep uses it"),
])
def test_a_cfg_devices_arrays_and_static_watts_are_said_unused_by_the_array_sweep(tmp_path, capsys, chip_cfg,
                                                                                  arrays, watts, stated):
    """Defect: an array sweep of a ``.cfg`` device of 4 arrays stating ``static_watts = 20`` priced each processor as
    one array (leakage: the processors × one array's, area the processors' arrays) and read neither figure, without a
    word. The numbers stay (each row the plain SCALE-Sim file's of the same array, the rule one array a processor);
    one note, on stderr and as a UserWarning, says the file's array count and static power are unused and why."""
    import warnings

    import archsim

    text = chip_cfg(arrays=arrays, hbm_gbps=400, run_name="mychip", device_name="mychip_cfg", static_watts=watts)
    (tmp_path / "chip.cfg").write_text(text)
    (tmp_path / "plain.cfg").write_text(text[:text.index("[device]")])  # SCALE-Sim's sections alone: one array
    spec = _spec(tmp_path, ["chip.cfg", "plain.cfg"], processors="1, 2", extra="element_bytes = [1]")  # a design sweep
    assert main(["sweep", spec, "--out", str(tmp_path / "out"), "--quiet"]) == 0
    (line,) = [line for line in capsys.readouterr().err.splitlines() if "the array sweep uses" in line]
    assert line.startswith(f"archsim sweep: note: chip.cfg states [device] {stated}: each of its processors is one "
                           "array of the file's"), line
    rows = list(csv.DictReader(io.StringIO((tmp_path / "out" / "results.csv").read_text())))
    priced = ("iteration_cycles", "energy_pj", "leakage_pj", "area_mm2")
    by_file = {(Path(row["array_path"]).name, row["processors"]): {name: row[name] for name in priced}
               for row in rows}
    for processors in ("1", "2"):
        assert by_file[("chip.cfg", processors)] == by_file[("plain.cfg", processors)]
    assert float(by_file[("chip.cfg", "2")]["area_mm2"]) == pytest.approx(2 * float(by_file[("chip.cfg", "1")]["area_mm2"]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        archsim.run_sweep(spec, out=tmp_path / "api")
    assert [str(w.message) for w in caught if "the array sweep uses" in str(w.message)] == [
        line.removeprefix("archsim sweep: note: ")]
    _spec(tmp_path, ["chip.cfg"], processors="1")  # a plain sweep prices no energy or area: nothing to say of them
    assert main(["sweep", spec, "--out", str(tmp_path / "plain"), "--quiet"]) == 0
    assert "the array sweep uses" not in capsys.readouterr().err
