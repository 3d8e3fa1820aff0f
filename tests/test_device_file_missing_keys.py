"""A device file that leaves out a required key or section is told what to write and in which unit, in one line.

The units are docs/formats.md's "Device files" table (GiB, GB/s, MHz, GB/s per direction), written here by hand:
before, a TOML without ``hbm_gbps`` was told ``missing key in [memory]`` and one without ``[links]``
``missing section [links]``, leaving the user to find the unit and the keys in the docs."""

from __future__ import annotations

import re

import pytest

from archsim.cli import main
from archsim.devices.device_file import load_device
from archsim.errors import InputError

# a made-up chip: 4 arrays of 256 × 256 at 1.2 GHz, 16 MiB of SRAM each, 64 GiB of HBM at 1.6 TB/s, 4 × 100 GB/s links
CHIP = {"device": {"name": '"chip"'},
        "compute": {"arrays": "4", "rows": "256", "cols": "256", "clock_mhz": "1200"},
        "memory": {"sram_kib_per_array": "16384", "hbm_gib": "64", "hbm_gbps": "1600"},
        "links": {"intra_gbps": "400", "links": "4"}}
UNITS = {("device", "name"): "chip's name", ("compute", "arrays"): "matrix units", ("compute", "rows"): "one array",
         ("compute", "cols"): "one array", ("compute", "clock_mhz"): "MHz", ("memory", "hbm_gib"): "GiB",
         ("memory", "hbm_gbps"): "GB/s", ("links", "intra_gbps"): "GB/s per direction"}


def _write(tmp_path, chip: dict):
    path = tmp_path / "chip.toml"
    path.write_text("".join(f"[{section}]\n" + "".join(f"{k} = {v}\n" for k, v in keys.items())
                            for section, keys in chip.items()))
    return path


def test_the_whole_chip_loads(tmp_path):
    device = load_device(_write(tmp_path, CHIP))
    assert device.name == "chip"


@pytest.mark.parametrize(("section", "key"), list(UNITS))
def test_a_missing_key_is_named_with_what_to_write_and_its_unit(tmp_path, capsys, section, key):
    chip = {s: {k: v for k, v in keys.items() if (s, k) != (section, key)} for s, keys in CHIP.items()}
    path = _write(tmp_path, chip)
    with pytest.raises(InputError) as refused:
        load_device(path)
    assert refused.value.where.field == f"{section}.{key}"
    message = str(refused.value)
    assert re.search(rf"missing key in \[{section}\] \({key} = [^)]*{re.escape(UNITS[section, key])}", message), message
    assert main(["cost", "ffnn8", "--config", str(path), "--dtype", "fp16"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{key} = " in err, err


@pytest.mark.parametrize("section", ["compute", "memory", "links"])
def test_a_missing_section_names_its_required_keys_and_units(tmp_path, section):
    with pytest.raises(InputError) as refused:
        load_device(_write(tmp_path, {s: keys for s, keys in CHIP.items() if s != section}))
    message = str(refused.value)
    assert f"missing section [{section}] (" in message, message
    for (s, key), unit in UNITS.items():
        if s == section:
            assert f"{key} = " in message and unit in message, message
