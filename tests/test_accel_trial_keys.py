"""An accelerator designer's device files (a chip of 4 cores × 2 arrays of 128 × 128): each slip is named in one
line as written. Failed before: a misspelt ``[device] arrays`` in a ``.cfg`` beside ``arrays_per_core`` was told "2
arrays per core do not divide 1 arrays" (the count it left at its default), never named; ``[archsim] ClockMHz`` was
named ``clockmhz``, with no hint."""

import pytest
from device_files import device_error, device_toml, scalesim_chip_cfg, write_file

CFG = scalesim_chip_cfg(8, 1.0, 1600, "myacc", "MyAcc", size=128, sram_kb=(5461, 5461, 5462), hbm_gib=24,
                        intra_gbps=400, links=4, arrays_per_core=2)


def test_a_misspelt_arrays_beside_arrays_per_core_is_named_as_the_typo(tmp_path):
    message = str(device_error(write_file(tmp_path, "chip.cfg", CFG.replace("arrays = 8", "array = 8", 1))))
    assert "'device.array'" in message and "did you mean 'arrays'?" in message, message
    assert "do not divide" not in message and "\n" not in message, message


def test_arrays_per_core_that_do_not_divide_are_still_refused(tmp_path):
    """The check the fix moved after the keys' own: 3 per core beside 8 arrays (8 mod 3 = 2), named at its key."""
    message = str(device_error(write_file(tmp_path, "chip.cfg", CFG.replace("arrays_per_core = 2", "arrays_per_core = 3"))))
    assert "'device.arrays_per_core'" in message and "3 arrays per core do not divide 8 arrays" in message, message


@pytest.mark.parametrize(("written", "value", "fix"), [
    ("ClockMHz", "1050", "write ClockGHz = 1.05"),   # 1050 MHz = 1.05 GHz, in the clocks archsim takes
    ("ClockMHz", "1", "ClockGHz takes GHz"),         # 1 MHz = 0.001 GHz: below 10 MHz, no figure offered
    ("clock_ghz", "1.0", "expected ClockGHz"),
])
def test_an_unknown_archsim_key_is_named_as_written_with_the_key_meant(tmp_path, written, value, fix):
    path = write_file(tmp_path, "chip.cfg", CFG.replace("ClockGHz = 1.0", f"{written} = {value}"))
    message = str(device_error(path))
    assert f"field '{written}'" in message and "(did you mean 'ClockGHz'?)" in message, message
    assert message.endswith(fix) and "\n" not in message, message
    if written == "ClockMHz" and value == "1":
        assert "write" not in message, message


TOML = device_toml(name="MyAcc", arrays=8, arrays_per_core=2, rows=128, cols=128, clock_mhz=1000, sram_kib=16384,
                   hbm_gib=24, hbm_gbps=1600, intra_gbps=400, links=4)


@pytest.mark.parametrize(("old", "new", "meant"), [
    ("rows = 128", "ArrayHeight = 128", "a device TOML states it as [compute] rows"),
    ("cols = 128", "arraywidth = 128", "a device TOML states it as [compute] cols"),   # any case, as a .cfg's
    ("clock_mhz = 1000", "ClockGHz = 1.0", "[compute] clock_mhz, in MHz (GHz × 1000)"),
    ("sram_kib_per_array = 16384", "IfmapSramSzkB = 5461", "[memory] sram_kib_per_array, KiB beside each array"),
    ("hbm_gbps = 1600", "Bandwidth = 800", "[memory] hbm_gbps, GB/s (SCALE-Sim's Bandwidth is words per cycle)"),
    ("[device]", "ArrayHeight = 128\n[device]", "a device TOML states it as [compute] rows"),  # above the first header
])
def test_a_scalesim_key_in_a_device_toml_is_told_the_tomls_key(tmp_path, old, new, meant):
    """A designer writing a .cfg's array into a TOML: the refusal names the TOML's key and its unit (failed before:
    ArrayHeight got no hint at all; ClockGHz was pointed at clock_mhz with no word of the unit)."""
    written = new.split(" = ")[0]
    message = str(device_error(write_file(tmp_path, "chip.toml", TOML.replace(old, new, 1))))
    assert f"{written} is a SCALE-Sim .cfg key" in message and meant in message and "\n" not in message, message
