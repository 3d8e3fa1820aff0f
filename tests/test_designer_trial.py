"""Designer's trial (an accelerator architect who writes a device file of their own chip from the docs and drives it
through cost, energy, train, search and a device sweep): the defects it found, each checked against an independent
reference — the docs' statement of what a file holds or an output says, a hand count."""

from __future__ import annotations

import re
from pathlib import Path

from archsim import cli

# A SCALE-Sim .cfg device file written from docs/formats.md ("Device files", "SCALE-Sim .cfg"): SCALE-Sim's own
# sections, which require the three SramSzkB keys, plus [archsim] ClockGHz and the device sections.
CFG = """[general]
run_name = mychip

[architecture_presets]
ArrayHeight:    128
ArrayWidth:     128
IfmapSramSzkB:    1024
FilterSramSzkB:   1024
OfmapSramSzkB:    512
IfmapOffset:    0
FilterOffset:   10000000
OfmapOffset:    20000000
Dataflow : os

[archsim]
ClockGHz = 1.0

[device]
name = mychip
arrays = 4
{device}
[memory]
hbm_gib = 16
hbm_gbps = 800

[links]
intra_gbps = 200
"""


def _cluster(tmp_path: Path, device: str) -> Path:
    cluster = tmp_path / "cluster.toml"
    cluster.write_text(f'[cluster]\nname = "mine"\n\n[[servers]]\ncount = 1\ngpus = 8\ndevice = "{device}"\n',
                       encoding="utf-8")
    return cluster


# --- a .cfg tiles device's unread-keys note names the keys the file states ---------------------------------------------
# Failed before: a gemm = "tiles" .cfg device got "this key is not read: [memory] sram_kib_per_array", a key a .cfg
# cannot state (formats.md: its SRAM is its three SramSzkB, and sram_kib_per_array beside them is refused), while the
# SramSzkB keys it must state to be read at all were never named.

def test_a_cfg_tiles_device_note_names_the_sram_keys_the_file_states(tmp_path, capsys):
    cfg = tmp_path / "chip.cfg"
    cfg.write_text(CFG.format(device="gemm = tiles\nboard_watts = 300\n"), encoding="utf-8")
    assert cli.main(["train", "gpt2", "--cluster", str(_cluster(tmp_path, "chip.cfg")), "--dp", "8",
                     "--global-batch", "8"]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "is a gemm = \"tiles\" device" in line]
    assert len(notes) == 1, notes
    named = re.findall(r"\b(\w+SramSzkB)\b", notes[0])
    assert named == ["IfmapSramSzkB", "FilterSramSzkB", "OfmapSramSzkB"]
    assert all(f"{key}:" in cfg.read_text(encoding="utf-8") for key in named)  # keys the file states
    assert "sram_kib_per_array" not in notes[0]  # a key a .cfg is refused for stating
