"""An accelerator architect's own chip (4 cores × 2 arrays of 128 × 128, output-stationary, 1.2 GHz,
64 MiB of SRAM, 96 GiB of HBM at 2.4 TB/s, six 100 GB/s links) through train, search and the device
sweep: what they found read silently or broke, each pinned here (docs/training.md, "Accelerators")."""

from pathlib import Path

import pytest

from archsim.cli import main
from archsim.commands.common import note_unread_cluster_keys
from archsim.training.cluster import load_gpu_cluster

ROOT = Path(__file__).resolve().parents[1]
GPT2 = str(ROOT / "configs" / "transformers" / "gpt2.json")

CHIP = """[device]
name = "MyChip"
gemm = "arrays"

[compute]
arrays = 8
arrays_per_core = 2
rows = 128
cols = 128
dataflow = "os"
clock_mhz = 1200

[memory]
sram_kib_per_array = 8192
hbm_gib = 96
hbm_gbps = 2400

[links]
intra_gbps = 600
links = 6
"""


def _cluster(tmp_path: Path, extra: str = "", device: str = CHIP) -> str:
    """A one-server cluster of 16 of ``device`` (``intra_server_gbps``: the chip's 600 GB/s per
    direction, both directions in Gbit/s), ``extra`` appended to its [[servers]] table."""
    (tmp_path / "chip.toml").write_text(device)
    path = tmp_path / "cluster.toml"
    path.write_text('[cluster]\nname = "mychip16"\n\n[[servers]]\ncount = 1\ngpus = 16\n'
                    f'intra_server_gbps = 9600\ndevice = "chip.toml"\n{extra}')
    return str(path)


def _run(capsys, *argv: str) -> tuple[str, str]:
    assert main(list(argv)) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


def _energy(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("# energy_j:"))


def test_gpu_watts_on_an_array_device_is_noted_as_unread(tmp_path, capsys):
    """On an array device ``energy_j`` is the energy model's (train and search alike), so a server's
    ``gpu_watts`` changes nothing: it was read by neither and said so nowhere. Now each says so on
    stderr, once; the figure is the same with or without the key."""
    argv = ("train", GPT2, "--dp", "16", "--global-batch", "64", "--dtype", "bf16", "--cluster")
    plain_out, plain_err = _run(capsys, *argv, _cluster(tmp_path))
    watts_out, watts_err = _run(capsys, *argv, _cluster(tmp_path, "gpu_watts = 5000\n"))
    assert _energy(plain_out) == _energy(watts_out)  # what the note says: the key changes nothing
    assert "gpu_watts" not in plain_err
    note = "note: gpu_watts is not read by train on an array device"
    assert watts_err.count(note) == 1
    # search prices energy by the same function (iteration_energy) and notes by the same one as train
    note_unread_cluster_keys(load_gpu_cluster(_cluster(tmp_path, "gpu_watts = 5000\n")), "search")
    assert capsys.readouterr().err.count("note: gpu_watts is not read by search on an array device") == 1


def test_gpu_watts_on_a_tile_timed_device_is_read(tmp_path, capsys):
    """A ``gemm = "tiles"`` device is priced at board power × time: there ``gpu_watts`` is the figure,
    no note, and the energy follows it."""
    tiles = CHIP.replace('gemm = "arrays"', 'gemm = "tiles"') + "\n[compute.peak_tflops]\nbf16 = 314.6\n"
    argv = ("train", GPT2, "--dp", "16", "--global-batch", "64", "--dtype", "bf16", "--cluster")
    low_out, low_err = _run(capsys, *argv, _cluster(tmp_path, "gpu_watts = 100\n", tiles))
    high_out, _ = _run(capsys, *argv, _cluster(tmp_path, "gpu_watts = 200\n", tiles))
    assert "gpu_watts" not in low_err
    low = float(_energy(low_out).split(":")[1])
    high = float(_energy(high_out).split(":")[1])
    assert high == pytest.approx(2 * low, rel=1e-3)


SPEC = """[sweep]
name = "mychip"
model = "gpt2"
device = "chip.toml"
array_sides = [64, 128]
hbm_gbps = [1200, 2400]
chips = [2, 4]
global_batch = 16
dtype = "bf16"
"""


def test_an_interrupted_sweep_says_so_in_one_line_and_resumes(tmp_path, capsys, monkeypatch):
    """Ctrl-C in a device sweep printed a 30-line traceback and nothing about the points already
    cached. Now: one line naming what is cached and that the same command resumes, exit 130 (the
    shell's code for SIGINT); the re-run computes only the missing points and gives the rows an
    uninterrupted run gives."""
    from archsim.sweep import runner

    (tmp_path / "chip.toml").write_text(CHIP)
    spec = tmp_path / "mychip.toml"
    spec.write_text(SPEC)
    calls = []
    real = runner.compute_unit

    def stopped_at_third(unit):
        calls.append(unit)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(unit)

    monkeypatch.setattr(runner, "compute_unit", stopped_at_third)
    out = tmp_path / "results"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"archsim: interrupted: 2 of 8 points are cached in {out}; the same command resumes from them"]
    assert len(list((out / "cache").glob("*.json"))) == 2 and not (out / "results.csv").exists()

    calls.clear()
    monkeypatch.setattr(runner, "compute_unit", lambda unit: calls.append(unit) or real(unit))
    _run(capsys, "sweep", str(spec), "--out", str(out), "--quiet")
    assert len(calls) == 6  # the two cached points are not computed again
    _run(capsys, "sweep", str(spec), "--out", str(tmp_path / "fresh"), "--quiet")
    assert (out / "results.csv").read_text() == (tmp_path / "fresh" / "results.csv").read_text()
