"""A device TOML's ``[energy]`` section: the same keys as a SCALE-Sim ``.cfg`` device file's, read by the same
reader (:func:`archsim.energy.file_energy.read_cfg_energy`), so the two forms of one chip price one iteration alike.

Failed before the fix: a device TOML with ``[energy]`` was refused (``unknown section [energy]``), its chip's pJ
figures reachable only through a ``.cfg``."""

from pathlib import Path

import pytest

from archsim.errors import InputError
from tests.chip_pair import ENERGY_ZEROS, chip_cfg, chip_toml, energy_body, hand_macs, train_meta

# one chip twice: 8 output-stationary 64 × 64 arrays (4 per core) at 1.2 GHz, SRAMs 512/512/256 KiB
CHIP_CFG = chip_cfg()

CHIP_TOML = chip_toml().replace("{lanes}", "")

ZEROS = ENERGY_ZEROS


@pytest.mark.parametrize("mac_pj", [1.0, 2.5])
def test_a_device_tomls_energy_is_its_macs_times_its_mac_pj(mac_pj, tmp_path, capsys):
    """Reference: the hand count of one iteration's MACs × the TOML's mac_pj, every other figure zero."""
    energy = {"mac_pj": mac_pj, **dict.fromkeys(ZEROS, 0)}
    meta = train_meta(tmp_path, capsys, "chip.toml", CHIP_TOML.format(energy=energy_body(energy, toml=True)))
    assert meta["energy_j"] == pytest.approx(hand_macs() * mac_pj * 1e-12, rel=1e-12)
    assert "[energy]" in meta["energy_source"]


@pytest.mark.parametrize("energy", [{"mac_pj": 0.7, "dram_read_pj": 30.0, "ifmap_read_pj": 1.5},
                                    {"table": "horowitz45", "filter_write_pj": 4.0}])
def test_a_device_toml_and_cfg_of_one_chip_and_energy_price_train_alike(energy, tmp_path, capsys):
    """The TOML and the .cfg stating the same chip and ``[energy]`` end in one record: the same joules."""
    cfg = train_meta(tmp_path, capsys, "chip.cfg", CHIP_CFG.format(energy=energy_body(energy, toml=False)))
    toml = train_meta(tmp_path, capsys, "chip.toml", CHIP_TOML.format(energy=energy_body(energy, toml=True)))
    assert toml["energy_j"] == cfg["energy_j"] and toml["energy_source"] == cfg["energy_source"]
    plain = train_meta(tmp_path, capsys, "plain.toml", CHIP_TOML.format(energy=""))
    assert plain["energy_j"] != toml["energy_j"]  # the figures are read, not the default table's


def test_a_device_toml_and_cfg_give_the_same_priced_device(tmp_path):
    """One record: load_priced_device of the two forms carries the same table and figures."""
    from archsim.training.energy import load_priced_device

    energy = {"table": "horowitz45", "mac_pj": 0.5}
    (tmp_path / "chip.cfg").write_text(CHIP_CFG.format(energy=energy_body(energy, toml=False)), encoding="utf-8")
    (tmp_path / "chip.toml").write_text(CHIP_TOML.format(energy=energy_body(energy, toml=True)), encoding="utf-8")
    cfg, toml = load_priced_device(tmp_path / "chip.cfg"), load_priced_device(tmp_path / "chip.toml")
    assert (toml.energy_table, toml.energy_figures) == (cfg.energy_table, cfg.energy_figures) == \
        ("horowitz45", (("mac_pj", 0.5),))


@pytest.mark.parametrize(("body", "field", "words"), [
    ('mac_pj = "1.0"\n', "energy.mac_pj", "expected a number"),
    ("mac_pjj = 1.0\n", "energy.mac_pjj", "unknown energy figure"),
    ("mac_pj = -1\n", "energy.mac_pj", "non-negative"),
    ("pe_leakage_mw = 0.01\n", "energy.pe_leakage_mw", "static_watts"),
    ("table = 3\n", "energy.table", "expected a table's name"),
])
def test_a_device_tomls_bad_energy_key_is_one_line_naming_its_line(body, field, words, tmp_path):
    """A bad ``[energy]`` value in a TOML is refused as a .cfg's is, naming the key and its line (a leakage figure,
    refused once the section is read, had none before: ``FILE, field 'energy.pe_leakage_mw'``)."""
    from archsim.training.energy import load_priced_device

    text = CHIP_TOML.format(energy=body)
    (tmp_path / "chip.toml").write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_priced_device(tmp_path / "chip.toml")
    assert caught.value.where.field == field and words in caught.value.message
    assert caught.value.where.line == text.splitlines().index(body.strip()) + 1


# a table of its own beside the chip: the shipped one with static power, which train prices as static_watts
LEAKY_TABLE = (Path(__file__).resolve().parents[1] / "configs" / "energy" / "horowitz45.toml").read_text(
    encoding="utf-8").replace("pe_mw = 0.0", "pe_mw = 0.5")


@pytest.mark.parametrize("form", ["toml", "cfg"])
@pytest.mark.parametrize(("body", "key"), [("sram_leakage_mw_per_kib = 0.2\n", "sram_leakage_mw_per_kib"),
                                           ("table = leaky.toml\n", "table")])
def test_a_refused_leakage_names_its_line_in_either_form(form, body, key, tmp_path, capsys):
    """Defect: train's refusal of a device file's leakage (a figure, or a table that has some) named the file and
    the key but no line, where the same reader's other refusals give ``file, line N``. The line is counted here in
    the text written; the command's one error line says it too."""
    from archsim.cli import main
    from tests.chip_pair import CLUSTER, TINY

    template = CHIP_TOML if form == "toml" else CHIP_CFG
    entry = body.replace("leaky.toml", '"leaky.toml"') if form == "toml" else body
    text = template.format(energy=entry)
    (tmp_path / "leaky.toml").write_text(LEAKY_TABLE, encoding="utf-8")
    (tmp_path / f"chip.{form}").write_text(text, encoding="utf-8")
    (tmp_path / "cluster.toml").write_text(CLUSTER.format(device=f"chip.{form}"), encoding="utf-8")
    (tmp_path / "tiny.toml").write_text(TINY, encoding="utf-8")
    line = text.splitlines().index(entry.strip()) + 1
    code = main(["train", str(tmp_path / "tiny.toml"), "--cluster", str(tmp_path / "cluster.toml"), "--tp", "1",
                 "--pp", "1", "--dp", "1", "--global-batch", "1", "--micro-batch", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert f"chip.{form}, line {line}, field 'energy.{key}'" in err[0] and "static_watts" in err[0]
