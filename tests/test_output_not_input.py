"""An output flag never replaces a file the same run reads: ``import m.onnx -o m.onnx`` used to write
the topology CSV over the ONNX model, ``--gantt net.csv`` an HTML page over the network, ``--out
my.cfg`` a table over the array config, ``sweep spec.toml --report spec.toml`` the report over the
spec, and ``report DIR --out DIR/results.csv`` over the results it draws. Each is refused in one line
naming the flag and the input, before any work, and the input keeps its bytes (docs/cli.md)."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from onnx_models import mixed_cnn
from output_commands import SWEEP_SPEC
from test_robustness import clean_error

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
NETWORK = (ROOT / "docs" / "examples" / "tiny_resnet.csv").read_text(encoding="utf-8")
CONFIG = (ROOT / "configs" / "arrays" / "scalesim_32x32_ws.cfg").read_text(encoding="utf-8")


def _refused_and_kept(capsys, path: Path, flag: str, source: str, *argv) -> None:
    before = path.read_bytes()
    line = clean_error(capsys, *argv)
    assert f"{flag} names this run's input ({source})" in line and str(path) in line, line
    assert path.read_bytes() == before


def test_import_does_not_write_its_csv_over_the_onnx_model(tmp_path, capsys):
    model = tmp_path / "m.onnx"
    onnx.save(mixed_cnn(), str(model))
    _refused_and_kept(capsys, model, "--out", "MODEL", "import", model, "-o", model)


def test_a_network_csv_is_not_replaced_by_a_table_or_a_gantt(tmp_path, capsys):
    network = tmp_path / "net.csv"
    network.write_text(NETWORK, encoding="utf-8")
    _refused_and_kept(capsys, network, "--out", "NETWORK", "cost", network, "--batch", "2", "--out", network)
    _refused_and_kept(capsys, network, "--gantt", "NETWORK", "pipeline", network, "--processors", "2",
                      "--microbatches", "2", "--gantt", network)


def test_an_input_named_by_an_option_is_kept(tmp_path, capsys):
    config = tmp_path / "my.cfg"
    config.write_text(CONFIG, encoding="utf-8")
    _refused_and_kept(capsys, config, "--out", "--config", "cost", "layerpipe_sample", "--config", config,
                      "--out", config)


def test_a_symlink_to_the_input_is_the_input(tmp_path, capsys):
    network = tmp_path / "net.csv"
    network.write_text(NETWORK, encoding="utf-8")
    (tmp_path / "alias.html").symlink_to(network)
    before = network.read_bytes()
    line = clean_error(capsys, "cost", network, "--batch", "2", "--out", tmp_path / "alias.html")
    assert "--out names this run's input (NETWORK)" in line
    assert network.read_bytes() == before


def test_a_pytorch_models_file_is_an_input(tmp_path, capsys):
    """``FILE.py:ClassName``: refused before the file is imported (nothing of it runs)."""
    source = tmp_path / "model.py"
    source.write_text("raise SystemExit('imported')\n", encoding="utf-8")
    _refused_and_kept(capsys, source, "--out", "MODEL", "import", f"{source}:Net", "--input-shape", "1,3,8,8",
                      "-o", source)


def test_the_sweep_spec_is_not_replaced_by_its_report(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text(SWEEP_SPEC, encoding="utf-8")
    _refused_and_kept(capsys, spec, "--report", "SPEC", "sweep", spec, "--out", tmp_path / "r", "--quiet",
                      "--report", spec)
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("name", ["results.csv", "summary.csv", "spec.json"])
def test_a_report_never_replaces_the_results_it_draws(tmp_path, capsys, name):
    spec, results = tmp_path / "s.toml", tmp_path / "r"
    spec.write_text(SWEEP_SPEC, encoding="utf-8")
    line = clean_error(capsys, "sweep", spec, "--out", results, "--quiet", "--report", results / name)
    assert f"--report names the results folder's {name}" in line
    assert not results.exists()  # refused before the sweep ran
    assert main(["sweep", str(spec), "--out", str(results), "--quiet"]) == 0
    capsys.readouterr()
    before = (results / name).read_bytes()
    line = clean_error(capsys, "report", results, "--out", results / name)
    assert f"--out names the results folder's {name}" in line
    assert (results / name).read_bytes() == before


def test_other_names_and_devices_are_still_written(tmp_path, capsys):
    """The check refuses only the inputs: a new name beside them and /dev/null are written."""
    network = tmp_path / "net.csv"
    network.write_text(NETWORK, encoding="utf-8")
    assert main(["cost", str(network), "--batch", "2", "--out", str(tmp_path / "table.txt")]) == 0
    assert main(["cost", str(network), "--batch", "2", "--out", "/dev/null"]) == 0
    assert "conv_a" in (tmp_path / "table.txt").read_text(encoding="utf-8")
    assert network.read_text(encoding="utf-8") == NETWORK


DEVICE = (ROOT / "configs" / "devices" / "scalesim_32x32_device.cfg").read_text(encoding="utf-8")
GPT2 = ROOT / "configs" / "transformers" / "gpt2.json"


def _chip_and_cluster(tmp_path: Path) -> tuple[Path, Path]:
    """A device file and a cluster file beside it that names it (the documented own-chip layout)."""
    chip = tmp_path / "mychip.cfg"
    chip.write_text(DEVICE, encoding="utf-8")
    cluster = tmp_path / "c.toml"
    cluster.write_text('[cluster]\nname = "c"\n\n[[servers]]\ngpus = 2\nintra_server_gbps = 1600\n'
                       'device = "mychip.cfg"\n', encoding="utf-8")
    return chip, cluster


@pytest.mark.parametrize("command", ["train", "search"])
def test_the_device_file_a_cluster_names_is_an_input(tmp_path, capsys, command):
    """``train --cluster c.toml --out mychip.cfg`` used to write the table over the device file the
    cluster names (the run had read it, so it finished and said ``wrote mychip.cfg``)."""
    chip, cluster = _chip_and_cluster(tmp_path)
    _refused_and_kept(capsys, chip, "--out", "a device file --cluster names", command, GPT2, "--cluster",
                      cluster, "--global-batch", "2", "--seq", "128", "--out", chip)


def test_the_device_file_a_device_sweep_names_is_kept_from_its_report(tmp_path, capsys):
    chip, _ = _chip_and_cluster(tmp_path)
    spec = tmp_path / "s.toml"
    spec.write_text('[sweep]\nmodel = "gpt2"\ndevice = "mychip.cfg"\nchips = [1]\nglobal_batch = 1\n',
                    encoding="utf-8")
    _refused_and_kept(capsys, chip, "--report", "the device file SPEC names", "sweep", spec, "--out",
                      tmp_path / "r", "--quiet", "--report", chip)
    assert not (tmp_path / "r").exists()


def test_a_cluster_naming_a_missing_device_still_gets_its_own_error(tmp_path, capsys):
    """Only files that exist are inputs: a cluster whose device file is missing reaches train's error."""
    _, cluster = _chip_and_cluster(tmp_path)
    (tmp_path / "mychip.cfg").unlink()
    line = clean_error(capsys, "train", GPT2, "--cluster", cluster, "--global-batch", "2",
                       "--out", tmp_path / "t.txt")
    assert "mychip.cfg not found" in line, line
    assert not (tmp_path / "t.txt").exists()


def _report_refused_and_kept(capsys, results: Path, path: Path, named: str) -> None:
    before = path.read_bytes()
    line = clean_error(capsys, "report", results, "--out", path)
    assert f"--out names {named} these results come from" in line and str(path) in line, line
    assert path.read_bytes() == before


def test_a_report_never_replaces_the_files_its_device_sweep_read(tmp_path, capsys):
    """``report DIR --out mychip.cfg`` used to write the HTML over the device file the sweep read (and over
    its model and spec), though ``sweep --report`` refuses all three and the report's own "Reproduce" line
    reruns that spec."""
    chip, _ = _chip_and_cluster(tmp_path)
    model = tmp_path / "gpt2.json"
    model.write_bytes(GPT2.read_bytes())
    spec, results = tmp_path / "s.toml", tmp_path / "r"
    spec.write_text('[sweep]\nmodel = "gpt2.json"\ndevice = "mychip.cfg"\nchips = [1]\nglobal_batch = 1\n',
                    encoding="utf-8")
    assert main(["sweep", str(spec), "--out", str(results), "--quiet"]) == 0
    capsys.readouterr()
    _report_refused_and_kept(capsys, results, chip, "the device file of the sweep spec")
    _report_refused_and_kept(capsys, results, model, "the model file of the sweep spec")
    _report_refused_and_kept(capsys, results, spec, "the sweep spec")
    assert main(["report", str(results), "--out", str(tmp_path / "page.html")]) == 0  # a new name is written


def test_a_report_never_replaces_the_network_file_its_sweep_read(tmp_path, capsys):
    network = tmp_path / "net.csv"
    network.write_text(NETWORK, encoding="utf-8")
    spec, results = tmp_path / "s.toml", tmp_path / "r"
    spec.write_text(SWEEP_SPEC.replace('["layerpipe_sample"]', '["net.csv"]'), encoding="utf-8")
    assert main(["sweep", str(spec), "--out", str(results), "--quiet"]) == 0
    capsys.readouterr()
    _report_refused_and_kept(capsys, results, network, "a network file of the sweep spec")


TABLE = (ROOT / "configs" / "energy" / "horowitz45.toml").read_bytes()


def _chip_naming_a_table(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(energy table, .cfg device naming it in ``[energy] table``, cluster naming that device), side by side."""
    table = tmp_path / "mine.toml"
    table.write_bytes(TABLE)
    chip, cluster = _chip_and_cluster(tmp_path)
    chip.write_text(DEVICE + "\n[energy]\ntable = mine.toml\n", encoding="utf-8")
    return table, chip, cluster


@pytest.mark.parametrize("command", [["cost", "layerpipe_sample", "--energy"], ["energy", "layerpipe_sample"]])
def test_the_energy_table_a_config_names_is_an_input(tmp_path, capsys, command):
    """``cost --config mychip.cfg --energy --out mine.toml`` used to write the table over the energy table the
    .cfg's ``[energy] table`` names, which the run had priced with (``wrote mine.toml``, exit 0)."""
    table, chip, _ = _chip_naming_a_table(tmp_path)
    _refused_and_kept(capsys, table, "--out", "the energy table --config names", *command, "--config", chip,
                      "--out", table)


def test_the_energy_table_a_device_toml_names_is_an_input(tmp_path, capsys):
    table = tmp_path / "mine.toml"
    table.write_bytes(TABLE)
    chip = tmp_path / "chip.toml"
    chip.write_text((ROOT / "configs" / "devices" / "tpu_v4_like.toml").read_text(encoding="utf-8")
                    + '\n[energy]\ntable = "mine.toml"\n', encoding="utf-8")
    _refused_and_kept(capsys, table, "--out", "the energy table --config names", "energy", "layerpipe_sample",
                      "--batch", "1", "--config", chip, "--out", table)


def test_the_energy_table_of_a_clusters_device_is_an_input(tmp_path, capsys):
    table, _, cluster = _chip_naming_a_table(tmp_path)
    _refused_and_kept(capsys, table, "--out", "an energy table --cluster names", "train", GPT2, "--cluster",
                      cluster, "--global-batch", "2", "--seq", "128", "--out", table)


@pytest.mark.parametrize("where", ["energy_tables", "array"])
def test_a_sweep_specs_energy_table_is_kept_from_its_report(tmp_path, capsys, where):
    """``sweep spec.toml --report mine.toml`` wrote the report over the spec's ``energy_tables`` entry, or over the
    table its ``.cfg`` array names."""
    table, chip, _ = _chip_naming_a_table(tmp_path)
    spec = tmp_path / "s.toml"
    arrays, tables = ('["32x32"]', 'energy_tables = ["mine.toml"]\n') if where == "energy_tables" else \
        (f'["{chip.name}"]', "")
    spec.write_text(f'[sweep]\nname = "s"\nnetworks = ["layerpipe_sample"]\narrays = {arrays}\nbatches = [4]\n'
                    f'processors = [2]\nmethods = ["layerpipe"]\n{tables}', encoding="utf-8")
    _refused_and_kept(capsys, table, "--report", "an energy table SPEC names", "sweep", spec, "--out",
                      tmp_path / "r", "--quiet", "--report", table)
    assert not (tmp_path / "r").exists()


def test_a_shipped_table_named_by_a_config_leaves_other_outputs_alone(tmp_path, capsys):
    # [energy] table = horowitz45 is a shipped name: no file beside the .cfg is its input, so a new name is written
    chip, _ = _chip_and_cluster(tmp_path)
    chip.write_text(DEVICE + "\n[energy]\ntable = horowitz45\n", encoding="utf-8")
    assert main(["cost", "layerpipe_sample", "--energy", "--config", str(chip), "--format", "csv",
                 "--out", str(tmp_path / "horowitz45.toml")]) == 0
    assert (tmp_path / "horowitz45.toml").is_file()
