"""Whether a ``--config`` or device file is a device TOML is one rule, :func:`archsim.array.device_sections.is_device_toml`
(its suffix, any case), read by every reader of a device file; a model file, a cluster file or an energy table is a TOML
for reasons of its own and keeps its own check."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from archsim.array.device_sections import is_device_toml

ARCHSIM = Path(__file__).parents[1] / "archsim"


@pytest.mark.parametrize(("path", "toml"), [
    ("chip.toml", True), ("CHIP.TOML", True), (Path("a/b/chip.Toml"), True),
    ("chip.cfg", False), ("chip.toml.cfg", False), ("toml", False), ("chip.tom", False), (None, False),
])
def test_a_device_toml_is_told_by_its_suffix_in_any_case(path, toml):
    assert is_device_toml(path) is toml


# the readers of a device file or of --config: none spells the suffix rule itself
DEVICE_READERS = ["array/config.py", "array/device_notes.py", "array/sparse_network.py", "array/options.py",
                  "array/gemm_run.py", "policies/schedule_array.py", "energy/table.py", "energy_run.py", "device_toml.py",
                  "devices/device_file.py", "chip_time.py", "plan_flags.py", "api.py", "api_array.py",
                  "api_inputs.py", "api_schedule.py", "commands/common.py", "commands/gemm.py",
                  "commands/schedule.py"]
INLINE = re.compile(r'suffix(\.lower\(\))?\s*==\s*"\.toml"')


@pytest.mark.parametrize("module", DEVICE_READERS)
def test_no_device_file_reader_spells_the_rule_inline(module):
    text = (ARCHSIM / module).read_text(encoding="utf-8")
    assert not INLINE.search(text), f"{module} checks the .toml suffix itself: use is_device_toml"
