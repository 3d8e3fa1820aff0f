"""An accelerator designer's first session (trial 53): their own chip as a device file, trained, searched and
swept. Each test is a defect that session found, pinned: it failed before its fix."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from device_files import device_toml
from test_robustness import clean_error, write

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
LLAMA3_8B = ROOT / "tests" / "data" / "hf_configs" / "llama3_8b.json"  # max_position_embeddings 8192
# the designer's chip: 4 × 256² weight-stationary arrays at 940 MHz, 32 MiB SRAM per array, 96 GiB of HBM at
# 2.4 TB/s, six 100 GB/s links
CHIP = device_toml(name="mychip", arrays=4, rows=256, cols=256, clock_mhz=940, sram_kib=32768, hbm_gib=96,
                   hbm_gbps=2400, intra_gbps=600, links=6)


def device_spec(tmp_path: Path, model: str, extra: str = "") -> Path:
    write(tmp_path / "mychip.toml", CHIP)
    return write(tmp_path / "s.toml", f'[sweep]\nmodel = "{model}"\ndevice = "mychip.toml"\nchips = [4]\n'
                                      f'global_batch = 8\ndtype = "bf16"\n{extra}')


def results(out: Path) -> list[dict[str, str]]:
    with (out / "results.csv").open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.long
def test_a_device_sweep_of_a_rotary_config_says_its_length_and_takes_seq(tmp_path, capsys):
    """A device sweep of a Llama config.json trained at its max_position_embeddings (8,192 here; Llama-3.1's
    131,072) with no note, and no key could set the length: train's note and its --seq, as the spec's seq."""
    shutil.copy(LLAMA3_8B, tmp_path / "llama.json")
    assert main(["sweep", str(device_spec(tmp_path, "llama.json")), "--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert "sequence length 8192 tokens per sample, from max_position_embeddings" in err, err
    assert "the spec's seq = N sets it" in err, err
    assert main(["sweep", str(device_spec(tmp_path, "llama.json", "seq = 1024\n")), "--out", str(tmp_path / "b")]) == 0
    assert "max_position_embeddings" not in capsys.readouterr().err  # a length given: nothing to say
    long, short = results(tmp_path / "a")[0], results(tmp_path / "b")[0]
    # 8× the tokens per sample: 8× the GEMM work and more for attention's square, beside an optimizer step and a
    # gradient all-reduce the length leaves alone (a length ignored would give one time for both)
    assert float(long["iteration_seconds"]) > 4 * float(short["iteration_seconds"])


@pytest.mark.long
def test_a_device_sweep_point_at_seq_is_train_at_that_seq(tmp_path, capsys):
    """The spec's seq is train's --seq: the point's row is what `archsim train --seq 512` prints on the chip."""
    assert main(["sweep", str(device_spec(tmp_path, "gpt2", "seq = 512\n")), "--out", str(tmp_path / "out"),
                 "--quiet"]) == 0
    row = results(tmp_path / "out")[0]
    cluster = write(tmp_path / "c.toml", '[cluster]\nname = "c"\n[[servers]]\ngpus = 4\ndevice = "mychip.toml"\n')
    capsys.readouterr()
    assert main(["train", "gpt2", "--cluster", str(cluster), "--dp", "4", "--global-batch", "8", "--dtype", "bf16",
                 "--seq", "512", "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert meta["seq"] == 512
    assert float(row["iteration_seconds"]) == pytest.approx(meta["iteration_seconds"], rel=1e-12)
    assert float(row["energy_j"]) == pytest.approx(meta["energy_j"], rel=1e-12)
    assert float(row["peak_memory_gib"]) == pytest.approx(meta["peak_memory_gib"], rel=1e-12)


@pytest.mark.parametrize("extra, words", [
    ("seq = 4096\n", "gpt2 learns 1024 position embeddings, so it cannot run a sequence of 4096: give seq = N"),
    ("seq = 0\n", "integers in 1…"),
])
def test_a_device_sweep_refuses_a_seq_the_model_cannot_take(tmp_path, capsys, extra, words):
    line = clean_error(capsys, "sweep", device_spec(tmp_path, "gpt2", extra), "--out", tmp_path / "out")
    assert "field 'seq'" in line and words in line, line
    assert not (tmp_path / "out").exists()


ARRAY_SPEC = '[sweep]\nnetworks = [{network}]\narrays = [{array}]\nbatches = [4]\nprocessors = [2]\nmethods = ["gpipe"]\n'
DEVICE_SPEC = '[sweep]\nmodel = {model}\ndevice = {device}\nchips = [4]\nglobal_batch = 8\n'


@pytest.mark.parametrize("kind", ["folder", "fifo"])
@pytest.mark.parametrize("spec, name, field, what", [
    (DEVICE_SPEC.format(model='"gpt2"', device='"chip.toml"'), "chip.toml", "device", "device file"),
    (DEVICE_SPEC.format(model='"model.json"', device='"tpu_v4_like"'), "model.json", "model", "model file"),
    (ARRAY_SPEC.format(network='"vgg16"', array='"chip.cfg"'), "chip.cfg", "arrays", "array file"),
    (ARRAY_SPEC.format(network='"net.csv"', array='"16x16"'), "net.csv", "networks", "network file"),
])
def test_a_spec_entry_naming_a_folder_or_fifo_says_so_not_not_found(tmp_path, capsys, kind, spec, name, field, what):
    """A sweep spec's file entry that names a folder (or a FIFO) beside the spec was told "not found in the spec's
    folder", though it is there; `train --cluster`'s device path and `energy --config` said "is not a regular file
    (a folder)". Now the spec says that too, and a name that is missing is still "not found"."""
    import os

    path = tmp_path / name
    if kind == "folder":
        path.mkdir()
    else:
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs on this system")
        os.mkfifo(path)
    line = clean_error(capsys, "sweep", write(tmp_path / "s.toml", spec), "--out", tmp_path / "out")
    shown = "a folder" if kind == "folder" else "a FIFO"
    assert f"field '{field}'" in line and f"{what} '{name}' is not a regular file ({shown})" in line, line
    assert not (tmp_path / "out").exists()
    (path.rmdir if kind == "folder" else path.unlink)()
    line = clean_error(capsys, "sweep", tmp_path / "s.toml", "--out", tmp_path / "out")
    assert f"{what} '{name}' not found in the spec's folder" in line, line


@pytest.mark.parametrize("spec, typo, meant", [
    (DEVICE_SPEC.format(model='"gpt2"', device='"tpu_v4_like"').replace("chips", "chip"), "chip", "chips"),
    (DEVICE_SPEC.format(model='"gpt2"', device='"tpu_v4_like"') + "hbm_gbs = [600]\n", "hbm_gbs", "hbm_gbps"),
    (ARRAY_SPEC.format(network='"vgg16"', array='"16x16"').replace("batches", "batchs"), "batchs", "batches"),
])
def test_a_misspelt_sweep_key_is_told_the_key_it_resembles(tmp_path, capsys, spec, typo, meant):
    """A device file's or cluster file's misspelt key is told the nearest valid one (`hbm_gbs`: did you mean
    'hbm_gbps'?); a sweep spec's only listed every key. `archsim.validate.did_you_mean` is the one hint."""
    line = clean_error(capsys, "sweep", write(tmp_path / "s.toml", spec), "--out", tmp_path / "out")
    assert f"field '{typo}'" in line and f"(did you mean '{meant}'?)" in line, line
