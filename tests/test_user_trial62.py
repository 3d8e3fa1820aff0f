"""User trial 62: an accelerator designer's chip (8 cores × 2 arrays of 256 × 256 at 1.2 GHz, 96 MB of SRAM, 2.4 TB/s
of HBM, 6 links of 100 GB/s) as a device TOML and a SCALE-Sim ``.cfg``, and the slips a new user makes in them. A
misspelt section or table is told the one it resembles, as a misspelt key is (docs/formats.md: "an unknown key's
naming the nearest valid one"). Each test failed on the code before its fix (its docstring says how)."""

from pathlib import Path

import pytest
from device_files import device_message, device_toml, scalesim_chip_cfg, write_file

from archsim.cli import main
from archsim.errors import InputError
from archsim.training.cluster_file import load_gpu_cluster

CHIP_TOML = device_toml(name="MyChip", gemm="arrays", arrays=16, arrays_per_core=2, rows=256, cols=256,
                        dataflow="ws", clock_mhz=1200, sram_kib=6144, hbm_gib=96, hbm_gbps=2400, intra_gbps=600,
                        links=6)
CHIP_CFG = scalesim_chip_cfg(16, 1.2, 2400, "mychip", "MyChip", size=256, sram_kb=(2048, 2048, 2048),
                             hbm_gib=96, intra_gbps=600, links=6)
CLUSTER = '[cluster]\nname = "c"\n\n[[servers]]\ncount = 1\ngpus = 8\ndevice = "chip.toml"\n'


@pytest.mark.parametrize(("name", "text", "typo", "meant"), [
    ("chip.toml", CHIP_TOML, "[memroy]", "[memory]"), ("chip.toml", CHIP_TOML, "[link]", "[links]"),
    ("chip.toml", CHIP_TOML, "[computer]", "[compute]"), ("chip.cfg", CHIP_CFG, "[link]", "[links]"),
    ("chip.cfg", CHIP_CFG, "[architecture_preset]", "[architecture_presets]"),
])
def test_a_misspelt_section_is_told_the_one_it_resembles(tmp_path, name, text, typo, meant):
    """Before the fix: "unknown section [memroy]; expected [device], [compute], …", the list alone."""
    assert text.count(meant) == 1
    path = write_file(tmp_path, name, text.replace(meant, typo))
    message = device_message(path)
    assert f"unknown section {typo} (did you mean '{meant}'?)" in message, message


def test_a_section_like_none_gets_no_guess(tmp_path):
    """A name no section resembles (``[foo]``) is refused with the list alone, no guess (passes on both codes)."""
    message = device_message(write_file(tmp_path, "chip.toml", CHIP_TOML.replace("[links]", "[foo]")))
    assert "unknown section [foo]; expected [device]" in message and "did you mean" not in message


def test_a_key_above_the_first_header_is_not_called_a_section(tmp_path):
    """``name = "MyChip"`` written above ``[device]`` was "unknown section [name]": it is a key, and [device]'s."""
    message = device_message(write_file(tmp_path, "chip.toml", 'name = "MyChip"\n' + CHIP_TOML))
    assert "line 1" in message and "field 'name'" in message and "unknown section" not in message
    assert "before the first section header" in message and "name is a [device] key" in message


def test_the_misspelt_section_through_train_is_one_line(tmp_path, capsys):
    write_file(tmp_path, "chip.toml", CHIP_TOML.replace("[memory]", "[memroy]"))
    cluster = write_file(tmp_path, "cl.toml", CLUSTER)
    assert main(["train", "gpt3_1.3b", "--cluster", str(cluster), "--global-batch", "8"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "(did you mean '[memory]'?)" in err, err


@pytest.mark.parametrize(("old", "new", "meant", "line"), [
    ("[cluster]", "[clustr]", "[cluster]", 1), ("[[servers]]", "[[server]]", "[[servers]]", 4),
    ("[[servers]]", "[server]", "[[servers]]", 4),
])
def test_a_misspelt_cluster_table_is_told_the_one_it_resembles(tmp_path, old, new, meant, line):
    """The cluster file's tables alike (docs/formats.md: ``[[server]]`` for ``[[servers]]``), at the header's line;
    before the fix "unknown table; a cluster file has one [cluster] table, …" without the guess, and a ``[[server]]``
    without its line."""
    write_file(tmp_path, "chip.toml", CHIP_TOML)
    path = write_file(tmp_path, "cl.toml", CLUSTER.replace(old, new))
    assert path.read_text().splitlines()[line - 1] == new
    with pytest.raises(InputError) as caught:
        load_gpu_cluster(path)
    assert f"unknown table (did you mean '{meant}'?)" in caught.value.message, caught.value.message
    assert caught.value.where.line == line


@pytest.mark.parametrize(("section", "line", "fix"), [
    ("[compute]", "gemm_efficiency = 85", "write 0.85"), ("[memory]", "memory_efficiency = 80.8", "write 0.808"),
    ("[links]", "efficiency = 90", "write 0.9"),
])
def test_a_share_written_as_a_percentage_is_told_the_fraction(tmp_path, section, line, fix):
    """85 % written as 85 where a fraction in (0, 1] belongs: refused before and after, but ``[links] efficiency``
    read 'expected a fraction in (0, 1] or "nccl" > 0 and <= 1' (its bound twice) and none named the fraction."""
    message = device_message(write_file(tmp_path, "chip.toml", CHIP_TOML.replace(section, f"{section}\n{line}")))
    assert f"got '{line.split(' = ')[1]}': if it is a percentage, {fix}" in message, message
    assert "<=" not in message


@pytest.mark.parametrize("value", ["850", "0", "-0.5"])
def test_a_share_outside_any_percent_gets_no_guess(tmp_path, value):
    """850, 0 or −0.5 is no percentage of a fraction: the refusal alone (passes on both codes but the bound's words)."""
    text = CHIP_TOML.replace("[compute]", f"[compute]\ngemm_efficiency = {value}")
    message = device_message(write_file(tmp_path, "chip.toml", text))
    assert message.endswith(f"expected a fraction in (0, 1], got '{value}'"), message


@pytest.mark.parametrize(("name", "text", "written"), [
    ("chip.toml", CHIP_TOML, '"ncc"'), ("chip.toml", CHIP_TOML, '"NCCL"'), ("chip.cfg", CHIP_CFG, "ncc"),
])
def test_a_misspelt_nccl_is_told_nccl(tmp_path, name, text, written):
    """``efficiency = "ncc"`` was told to "write the number without quotes" (a TOML) or given no hint (a .cfg)."""
    message = device_message(write_file(tmp_path, name, text.replace("[links]", f"[links]\nefficiency = {written}")))
    assert "(did you mean 'nccl'?)" in message and "without quotes" not in message, message
    assert "line" in message


def test_a_number_in_quotes_is_still_told_to_drop_them(tmp_path):
    """``efficiency = "0.9"``: a TOML number in quotes (passes on both codes)."""
    message = device_message(write_file(tmp_path, "chip.toml", CHIP_TOML.replace("[links]", '[links]\nefficiency = "0.9"')))
    assert "without quotes" in message and "did you mean" not in message


def _train_err(capsys, tmp_path: Path, chip: str) -> str:
    write_file(tmp_path, "chip.toml", chip)
    cluster = write_file(tmp_path, "cl.toml", CLUSTER)
    assert main(["train", "gpt3_1.3b", "--cluster", str(cluster), "--global-batch", "8", "--tp", "2"]) == 0
    return capsys.readouterr().err


def test_a_tiles_device_notes_the_sram_and_energy_it_does_not_read(tmp_path, capsys):
    """The chip switched to ``gemm = "tiles"`` keeps its SRAM per array and an ``[energy]`` figure: a tiles device is
    priced at board power × time (docs/formats.md: its energy, no SRAM's), so train's seconds and joules are the same
    without them; before the fix neither was said, as an array device's unread ``board_watts`` is."""
    tiles = CHIP_TOML.replace('gemm = "arrays"', 'gemm = "tiles"\nboard_watts = 500')
    with_energy = tiles + "\n[energy]\nmac_pj = 0.5\n"
    err = _train_err(capsys, tmp_path, with_energy)
    notes = [line for line in err.splitlines() if 'is a gemm = "tiles" device' in line]
    assert len(notes) == 1 and notes[0].startswith("archsim train: note: "), err
    assert "[memory] sram_kib_per_array" in notes[0] and "[energy]" in notes[0], notes
    bare = tiles.replace("sram_kib_per_array = 6144\n", "")
    assert 'is a gemm = "tiles"' not in _train_err(capsys, tmp_path, bare)  # nothing unread: no note


def test_the_catalog_a100_as_a_tiles_file_gets_no_note(capsys):
    """The shipped A100 file states nothing a tiles device leaves unread (passes on both codes)."""
    cluster = Path(__file__).resolve().parents[1] / "configs" / "clusters" / "a100_node_device_file.toml"
    assert main(["train", "gpt3_1.3b", "--cluster", str(cluster), "--global-batch", "8", "--tp", "2"]) == 0
    assert "not read" not in capsys.readouterr().err


@pytest.mark.parametrize(("intra", "links", "warned"), [(4800, 6, True), (600, 6, False), (4800, 1, False),
                                                         (3000, 6, False)])
def test_a_link_share_above_any_chips_link_is_warned_as_gbit(tmp_path, capsys, intra, links, warned):
    """6 links of 100 GB/s written in Gbit/s (intra_gbps = 4800, the cluster file's unit) is 800 GB/s a link per
    direction, 16 NVLink 5 links' worth (50 GB/s a link per direction, NVIDIA's figure) in one: warned, naming 600.
    Before, 4800 stayed under the whole fabric's bound (10,000 GB/s) and ran 8× the link without a word. 4800 over one
    link, or 3000 over 6 (500 a link, NVLink-C2C's 450 with headroom), is possible: no warning."""
    chip = CHIP_TOML.replace("intra_gbps = 600", f"intra_gbps = {intra}").replace("links = 6", f"links = {links}")
    err = _train_err(capsys, tmp_path, chip)
    line = (f"[links] intra_gbps = {intra} GB/s over links = {links} is {intra / links:g} GB/s a link per direction, "
            f"above any chip's link (≤ 500 GB/s): if it is in Gbit/s, write intra_gbps = {intra / 8:g}")
    assert (line in err) is warned, err


@pytest.mark.parametrize("command", [["cost", "resnet50"], ["gemm", "--m", "8", "--k", "8", "--n", "8"]])
def test_a_cluster_file_given_as_the_config_is_named_a_cluster_file(tmp_path, capsys, command):
    """``--config cluster.toml`` (the cluster file where its device file goes): since sections are told the one they
    resemble, [cluster] would be "did you mean '[compute]'?"; it is named a cluster file, at its first table's line,
    as ``train --cluster chip.toml`` names a device file."""
    write_file(tmp_path, "chip.toml", CHIP_TOML)
    cluster = write_file(tmp_path, "cl.toml", CLUSTER)
    assert main([*command, "--config", str(cluster)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{cluster}, line 1: this is a cluster file, not a device file" in err, err
    assert "did you mean" not in err
