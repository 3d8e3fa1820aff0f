"""A ``.cfg`` device whose one ``SramSzkB`` is written in bytes: train's warning names that key and its KiB, as
``archsim cost --config`` does on the same file, not a sum of the three (a ``.cfg`` has no key that takes one).

The first test failed before the change: train warned "… if it is in bytes, write 1024.12 KiB" (1,048,576 bytes
+ 64 KiB + 64 KiB summed). The reference is by hand: 1,048,576 bytes / 1024 = 1024 KiB for IfmapSramSzkB alone.
"""

from __future__ import annotations

from pathlib import Path

from archsim.cli import main
from archsim.devices.device_file import implausible_figures, load_device
from archsim.sweep.device_points import with_fields

ROOT = Path(__file__).resolve().parents[1]
DEVICE = ROOT / "configs" / "devices" / "scalesim_32x32_device.cfg"
GPT = ROOT / "configs" / "transformers" / "gpt_1024h_24l.json"
HINT = "if it is in bytes, write IfmapSramSzkB: 1024"  # 1,048,576 bytes / 1024, the one key that slipped


def _chip(tmp_path: Path) -> Path:
    """The shipped .cfg device with its IfmapSramSzkB (64 KiB) replaced by 1 MiB written in bytes."""
    text = DEVICE.read_text()
    assert text.count("IfmapSramSzkB:    64\n") == 1
    cfg = tmp_path / "chip.cfg"
    cfg.write_text(text.replace("IfmapSramSzkB:    64\n", "IfmapSramSzkB:    1048576\n"))
    return cfg


def _warnings(capsys, argv: list[str]) -> list[str]:
    assert main(argv) == 0
    return [line for line in capsys.readouterr().err.splitlines() if ": warning: " in line]


def test_train_names_the_cfg_key_in_bytes_as_cost_does(tmp_path, capsys):
    cfg = _chip(tmp_path)
    cluster = tmp_path / "cluster.toml"
    cluster.write_text('[cluster]\nname = "x"\n\n[[servers]]\ngpus = 8\nintra_server_gbps = 1600\n'
                       'device = "chip.cfg"\n')
    (trained,) = _warnings(capsys, ["train", str(GPT), "--cluster", str(cluster), "--tp", "8", "--global-batch",
                                    "16", "--format", "json"])
    (costed,) = _warnings(capsys, ["cost", "layerpipe_sample", "--config", str(cfg), "--batch", "1",
                                   "--format", "csv"])
    assert trained.endswith(HINT), trained
    assert costed.endswith(HINT), costed
    # the same line but for its subject: the command, and the device's name where cost names the file
    assert trained.split("scalesim_32x32_x16: ", 1)[1] == costed.split(f"{cfg}: ", 1)[1]


def test_a_toml_devices_sram_keeps_its_one_key_and_a_swept_sram_its_figure(tmp_path):
    """Guards: a TOML's one sram_kib_per_array takes the sum (its hint stays KiB), and a device sweep's SRAM, which
    replaces the .cfg's three keys with one figure, is judged as that figure, not as the file's keys."""
    device = with_fields(load_device(_chip(tmp_path)), None, None, sram_kib_per_array=2**20)
    (line,) = implausible_figures(device)
    assert "SramSzkB 1048576" not in line and line.endswith("if it is in bytes, write 1024 KiB"), line
    toml = (ROOT / "configs" / "devices" / "tpu_v4_like.toml").read_text()
    assert toml.count("sram_kib_per_array = 4096") == 1
    (tmp_path / "chip.toml").write_text(toml.replace("sram_kib_per_array = 4096", "sram_kib_per_array = 1048576"))
    (line,) = implausible_figures(load_device(tmp_path / "chip.toml"))
    assert line.endswith("if it is in bytes, write 1024 KiB"), line
