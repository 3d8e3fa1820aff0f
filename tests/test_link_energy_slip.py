"""A [links] pj_per_bit far above any link's is warned, naming the figure in the unit it was likely meant in
(docs/formats.md, "[links] pj_per_bit"); a real link's figure is not."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from archsim.devices.device_file import implausible_figures, load_device

DEVICE = Path(__file__).resolve().parents[1] / "configs" / "devices" / "tpu_v4_like.toml"


@pytest.mark.parametrize("pj", [0.0, 0.54, 1.3, 100.0])
def test_a_real_links_figure_is_not_warned(pj) -> None:
    device = replace(load_device(DEVICE), link_pj_per_bit=pj)
    assert not [line for line in implausible_figures(device) if "pj_per_bit" in line]


def test_a_slipped_unit_is_warned_with_both_readings() -> None:
    """1.3 nJ per 64-bit word written as 1300 pJ/bit: 1300 / 1000 = 1.3 (fJ) and 1300 / 64 = 20.3125 (per word)."""
    device = replace(load_device(DEVICE), link_pj_per_bit=1300.0)
    lines = [line for line in implausible_figures(device) if "pj_per_bit" in line]
    assert len(lines) == 1
    assert "pj_per_bit = 1300 pJ per bit" in lines[0] and "write pj_per_bit = 1.3;" in lines[0]
    assert lines[0].endswith("20.3125")


def test_train_says_it_once_on_stderr(tmp_path, capsys) -> None:
    from archsim.cli import main

    (tmp_path / "chip.toml").write_text(DEVICE.read_text().replace("[links]\n", "[links]\npj_per_bit = 540\n", 1))
    (tmp_path / "cluster.toml").write_text('[cluster]\nname = "c"\n\n[[servers]]\ncount = 1\ngpus = 2\n'
                                           'intra_server_gbps = 600\ndevice = "chip.toml"\n')
    assert main(["train", "configs/transformers/gpt2.json", "--cluster", str(tmp_path / "cluster.toml"),
                 "--tp", "2", "--pp", "1", "--dp", "1", "--global-batch", "2"]) in (0, None)
    err = capsys.readouterr().err
    assert err.count("pj_per_bit = 540 pJ per bit") == 1 and "write pj_per_bit = 0.54" in err


@pytest.mark.parametrize(("pj", "watts", "tail"), [
    (0.0, 0.0, "default table)"),
    (1.3, 0.0, "default table) + link bytes × 8 × pj_per_bit"),
    (1.3, 50.0, "default table) + static_watts × chips × iteration time + link bytes × 8 × pj_per_bit"),
])
def test_energy_source_names_every_part_the_breakdown_adds(pj, watts, tail) -> None:
    """docs/formats.md, energy_source: the links part is named where the file prices links (until 2026-12-05 not)."""
    from archsim.training.energy_sources import device_source

    device = replace(load_device(DEVICE), link_pj_per_bit=pj, static_watts=watts)
    assert device_source(device).endswith(tail)
