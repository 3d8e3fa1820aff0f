"""A near miss of another section's key in a device file (``[compute] sram_kib`` meaning ``[memory]
sram_kib_per_array``) is told the key meant and its section, one line, as a key written exactly in the wrong section
is told its section. Failed before: such a key got the section's own key list alone, no hint (difflib looked in its
own section only, where nothing is near)."""

import pytest
from device_files import device_error, device_toml, scalesim_chip_cfg, write_file

TOML = device_toml(name="MyChip", gemm="arrays", arrays=4, rows=64, cols=64, clock_mhz=1000, sram_kib=8192, hbm_gib=16,
                   hbm_gbps=400, intra_gbps=200, links=4)
CFG = scalesim_chip_cfg(4, 1.0, 400, "mychip", "MyChip", intra_gbps=200, links=4)


@pytest.mark.parametrize(("name", "text", "old", "new", "meant", "home"), [
    ("chip.toml", TOML, "clock_mhz = 1000", "clock_mhz = 1000\nsram_kib = 64",
     "(did you mean 'sram_kib_per_array'?)", "; sram_kib_per_array is a [memory] key"),
    ("chip.toml", TOML, 'gemm = "arrays"', 'gemm = "arrays"\narray = 4',
     "(did you mean 'arrays'?)", "; arrays is a [compute] key"),
    # nearer another section's hbm_gbps than its own host_gbps: the nearest of every section's keys
    ("chip.toml", TOML, "links = 4", "links = 4\nhbm_gbs = 400",
     "(did you mean 'hbm_gbps'?)", "; hbm_gbps is a [memory] key"),
    ("chip.cfg", CFG, "hbm_gib = 16", "hbm_gib = 16\nintra_gbp = 200",
     "(did you mean 'intra_gbps'?)", "; intra_gbps is a [links] key"),
    ("chip.cfg", CFG, "arrays = 4", "arrays = 4\nrow = 64",
     "(did you mean 'rows'?)", "; a .cfg states rows as [architecture_presets] ArrayHeight"),
    ("chip.toml", TOML, "[device]", "sram_kib = 64\n[device]",
     "; did you mean 'sram_kib_per_array'?", " sram_kib_per_array is a [memory] key"),
])
def test_a_near_miss_in_the_wrong_section_names_the_key_and_its_section(tmp_path, name, text, old, new, meant, home):
    message = str(device_error(write_file(tmp_path, name, text.replace(old, new, 1))))
    assert meant in message and message.endswith(home) and "\n" not in message, message


def test_a_key_near_none_still_gets_no_hint(tmp_path):
    """``bogus`` is near no section's key: the plain refusal, no section named (guards the hint from guessing)."""
    message = str(device_error(write_file(tmp_path, "chip.toml", TOML.replace("links = 4", "links = 4\nbogus = 1"))))
    assert "did you mean" not in message and message.endswith("efficiency, comm_sms, pj_per_bit"), message
