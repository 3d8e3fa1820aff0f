"""An accelerator designer's trial: their own chip as a device TOML and a SCALE-Sim .cfg, named in cluster files,
trained, searched and swept. Each test is a defect the trial found, and failed before its fix."""

from __future__ import annotations

import json
import math

import pytest
from device_files import device_toml

import archsim
from archsim.cli import main
from archsim.devices.device_file import load_device
from archsim.errors import InputError


# 4 arrays of 64 × 64 at 1 GHz, 32 MiB of SRAM, 16 GiB of HBM at 1 TB/s, a 100 GB/s link
def chip_toml(hbm_gbps: object = 1000) -> str:
    """The chip as a device TOML, its HBM at ``hbm_gbps`` GB/s (as written: a test may pass the text)."""
    return device_toml(name="designer_chip", arrays=4, rows=64, cols=64, clock_mhz=1000, sram_kib=8192,
                       hbm_gib=16, hbm_gbps=hbm_gbps, intra_gbps=100)


CHIP_CFG = """[architecture_presets]
ArrayHeight: 64
ArrayWidth: 64
IfmapSramSzkB: 2731
FilterSramSzkB: 2731
OfmapSramSzkB: 2730
Dataflow: ws

[archsim]
ClockGHz = 1.0

[device]
name = designer_cfg
arrays = 4

[memory]
hbm_gib = {hbm_gib}
hbm_gbps = 1000

[links]
intra_gbps = 100
"""


def _cluster(tmp_path, server: str) -> str:
    path = tmp_path / "cluster.toml"
    path.write_text(f'[cluster]\nname = "mine"\n\n[[servers]]\ngpus = 8\n{server}\n')
    return str(path)


def _error_line(capsys, *argv: str) -> str:
    capsys.readouterr()
    assert main(list(argv)) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("command", ["train", "search", "plan"])
def test_a_server_naming_both_a_gpu_and_a_device_file_is_told_so(tmp_path, capsys, command) -> None:
    """``gpu = "a100"`` beside ``device = "chip.toml"`` was refused as if the table named neither ("needs gpu = … or
    device = … (one of the two) for archsim train"), by plan and search too. The line now says both were given."""
    (tmp_path / "chip.toml").write_text(chip_toml(hbm_gbps=1000))
    cluster = _cluster(tmp_path, 'gpu = "a100"\ndevice = "chip.toml"')
    args = {"train": ["train", "gpt2", "--cluster", cluster, "--global-batch", "8"],
            "search": ["search", "gpt2", "--cluster", cluster, "--global-batch", "8"],
            "plan": ["plan", "layerpipe_sample", "--cluster", cluster, "--microbatches", "2"]}[command]
    err = _error_line(capsys, *args)
    assert err.startswith(f"archsim {command}: error: {cluster}, line 7, field 'servers[1].device': ")
    assert "names both gpu = 'a100' and device = 'chip.toml'" in err
    assert "archsim train" not in err.split(": error: ", 1)[1]


def test_a_server_naming_neither_names_no_other_command(tmp_path, capsys) -> None:
    """search's refusal of a server without its chip said "… for archsim train"."""
    cluster = _cluster(tmp_path, "intra_server_gbps = 1600")
    err = _error_line(capsys, "search", "gpt2", "--cluster", cluster, "--global-batch", "8")
    assert err.startswith("archsim search: error: ") and "field 'servers[1].gpu'" in err
    assert "archsim train" not in err


@pytest.mark.parametrize(("call", "keyword"), [
    (lambda: archsim.train("gpt-2", cluster="unused.toml", global_batch=8), "model"),
    (lambda: archsim.search("no_such_model", cluster="unused.toml", global_batch=8), "model"),
    (lambda: archsim.cost("no_such_net", array="8x8"), "network"),
    (lambda: archsim.iteration_energy("no_such_net", array="8x8"), "network"),
])
def test_the_library_names_a_bad_model_or_network_by_its_keyword(call, keyword) -> None:
    """From Python a setting is named as typed (docs/api.md): ``archsim.train("gpt-2", …)`` said ``field 'MODEL'``,
    the command's positional, where the keyword is ``model``."""
    with pytest.raises(InputError) as refused:
        call()
    said = str(refused.value)
    assert said.startswith(f"field '{keyword}': ") and keyword.upper() not in said, said


def test_the_command_still_names_its_positional(capsys) -> None:
    err = _error_line(capsys, "cost", "no_such_net")
    assert err.startswith("archsim cost: error: argument NETWORK: ")


@pytest.mark.parametrize(("key", "text"), [("hbm_gbps", "1e300"), ("hbm_gib", "1e300")])
def test_a_figure_that_overflows_in_base_units_is_refused(tmp_path, capsys, key, text) -> None:
    """``hbm_gbps = 1e300`` is finite, but × 10⁹ bytes/s it is inf: the chip trained with free memory traffic and
    the warning advised ``write hbm_gbps = inf``; ``hbm_gib = 1e300`` gave inf GiB, so every model fit. Refused in one
    line naming the key, from the TOML and the .cfg alike."""
    toml = tmp_path / "chip.toml"
    toml.write_text(chip_toml(hbm_gbps=text if key == "hbm_gbps" else 1000).replace(
        "hbm_gib = 16", f"hbm_gib = {text}" if key == "hbm_gib" else "hbm_gib = 16"))
    with pytest.raises(InputError) as refused:
        load_device(toml)
    assert refused.value.where.field == f"memory.{key}" and "1e+15" in refused.value.message
    cfg = tmp_path / "chip.cfg"
    cfg.write_text(CHIP_CFG.format(hbm_gib=16).replace("hbm_gbps = 1000", f"{key} = {text}")
                   if key == "hbm_gbps" else CHIP_CFG.format(hbm_gib=text))
    err = _error_line(capsys, "train", "gpt2", "--cluster", _cluster(tmp_path, 'device = "chip.cfg"'),
                      "--global-batch", "8")
    line = 18 if key == "hbm_gbps" else 17
    assert f"chip.cfg, line {line}, field 'memory.{key}': expected a positive number <= 1e+15" in err


def test_a_large_but_finite_figure_still_loads_as_stated(tmp_path) -> None:
    """The bound refuses only what overflows: 10¹⁴ GB/s (a what-if of unlimited bandwidth) is read as written,
    10¹⁴ × 10⁹ bytes/s."""
    toml = tmp_path / "chip.toml"
    toml.write_text(chip_toml(hbm_gbps="1e14"))
    device = load_device(toml)
    assert device.hbm_bytes_per_s == 1e23 and math.isfinite(device.hbm_bytes_per_s)


def _mixed_cluster(tmp_path, board_watts: float) -> str:
    (tmp_path / "chip.toml").write_text(chip_toml(hbm_gbps=1000).replace(
        'name = "designer_chip"', f'name = "designer_chip"\nboard_watts = {board_watts:g}'))
    path = tmp_path / "mixed.toml"
    path.write_text('[cluster]\nname = "mixed"\ninter_server_gbps = 200\n\n[[servers]]\ngpus = 8\ndevice = "chip.toml"\n\n'
                    '[[servers]]\ngpus = 8\ngpu = "a100-80gb"\n')
    return str(path)


def test_board_watts_of_the_chip_beside_gpus_is_noted_unread(tmp_path, capsys) -> None:
    """Beside catalog A100s an iteration over the chip and the GPUs was priced at board power × time, the chip's
    ``board_watts`` included (until 2026-12-03); now each device is priced by its own source, the chip by the energy
    model (tests/test_mixed_cluster_energy.py), so its ``board_watts`` prices nothing: a 100 W and a 200 W chip give
    the same joules, and train notes the key unread."""
    joules = []
    for watts in (100, 200):
        cluster = _mixed_cluster(tmp_path, watts)
        capsys.readouterr()
        assert main(["train", "gpt2", "--cluster", cluster, "--pp", "2", "--dp", "8", "--global-batch", "32",
                     "--micro-batch", "4", "--format", "json"]) == 0
        out, err = capsys.readouterr()
        meta = json.loads(out)["meta"]
        assert meta["energy_source"] == ("designer_chip: energy model on the ops' accesses (archsim.energy, default "
                                         "table); NVIDIA A100 SXM4 80GB: board power × iteration time")
        assert "this key is not read: [device] board_watts" in err, err
        joules.append(meta["energy_j"])
    assert joules[0] == joules[1]


def test_board_watts_of_a_cluster_of_the_chip_alone_is_still_noted(tmp_path, capsys) -> None:
    (tmp_path / "chip.toml").write_text(chip_toml(hbm_gbps=1000).replace(
        'name = "designer_chip"', 'name = "designer_chip"\nboard_watts = 100'))
    capsys.readouterr()
    assert main(["train", "gpt2", "--cluster", _cluster(tmp_path, 'device = "chip.toml"'), "--dp", "8",
                 "--global-batch", "32", "--micro-batch", "4"]) == 0
    err = capsys.readouterr().err
    assert "this key is not read: [device] board_watts" in err, err


@pytest.mark.long  # a search of a few seconds
def test_search_says_when_its_energy_is_found_two_ways(tmp_path, capsys) -> None:
    """On the chip beside A100s, ``search --objective energy --gpus 8,16`` ranked 8-chip rows (the energy model's
    joules) against 16-GPU rows (then board power × time) in one list and one Pareto front, without a word. The rows'
    bases checked by hand: a 16-GPU row is its A100s' 3,200 W × its seconds plus its chips' energy model joules (more
    than the 3,200 W alone; not the chips at their 100 W board power), an 8-GPU row is not 800 W × its seconds."""
    cluster = _mixed_cluster(tmp_path, 100)
    capsys.readouterr()
    assert main(["search", "gpt2", "--cluster", cluster, "--global-batch", "32", "--gpus", "8,16", "--objective",
                 "energy", "--recompute", "none", "--schedule", "1f1b", "--sequence-parallel", "off",
                 "--max-micro-batch", "2", "--top", "1000", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    rows = json.loads(out)["rows"]
    wide = [r for r in rows if r["gpus"] == 16]
    chip = [r for r in rows if r["gpus"] == 8]
    assert wide and chip
    assert all(r["energy_j"] > 3200 * r["iteration_seconds"] for r in wide)
    assert all(r["energy_j"] != pytest.approx(4000 * r["iteration_seconds"], rel=1e-3) for r in wide)
    assert all(r["energy_j"] != pytest.approx(800 * r["iteration_seconds"], rel=1e-3) for r in chip)
    assert ("archsim search: note: energy_j is found two ways here (8 GPUs: the energy model's; 16 GPUs: the energy "
            "model's on the array devices plus board power × time on the others)") in err, err
    capsys.readouterr()
    assert main(["search", "gpt2", "--cluster", cluster, "--global-batch", "32", "--gpus", "16", "--objective",
                 "energy", "--top", "1"]) == 0
    assert "two ways" not in capsys.readouterr().err
