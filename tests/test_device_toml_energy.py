"""A device TOML's ``[energy]`` section: the same keys as a SCALE-Sim ``.cfg`` device file's, read by the same
reader (:func:`archsim.energy.table.read_cfg_energy`), so the two forms of one chip price one iteration alike.

Failed before the fix: a device TOML with ``[energy]`` was refused (``unknown section [energy]``), its chip's pJ
figures reachable only through a ``.cfg``."""

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
    """A bad ``[energy]`` value in a TOML is refused as a .cfg's is, naming the key and its line."""
    from archsim.training.energy import load_priced_device

    text = CHIP_TOML.format(energy=body)
    (tmp_path / "chip.toml").write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_priced_device(tmp_path / "chip.toml")
    assert caught.value.where.field == field and words in caught.value.message
    if "leakage" not in body:
        assert caught.value.where.line == text.splitlines().index(body.strip()) + 1
