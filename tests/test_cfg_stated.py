"""A SCALE-Sim ``.cfg``'s clock, ``Bandwidth`` and interface mode are read in one place
(:func:`archsim.array.cfg_lines.cfg_stated`, by :func:`~archsim.array.config.read_scalesim_cfg`'s rules): what the cycle
engine's DRAM rate (:func:`~archsim.array.device_rate.device_dram_rate`) and its CALC note
(:func:`~archsim.array.options.calc_mode_note`) read of a file is what the array was read from."""

import re
from pathlib import Path

import pytest

from archsim.array.cfg_lines import CfgStated, cfg_stated
from archsim.array.config import read_scalesim_cfg
from archsim.array.device_rate import device_dram_rate
from archsim.array.options import calc_mode_note
from archsim.errors import InputError

ROOT = Path(__file__).resolve().parents[1]

# One 8 × 8 array with a device's sections: 16 GB/s of HBM. Its [archsim], [run_presets] and Bandwidth are
# written by each test in the spellings configparser (SCALE-Sim's reader, and archsim's) takes alike.
ARRAY = """[architecture_presets]
ArrayHeight: 8
ArrayWidth: 8
IfmapSramSzkB: 1
FilterSramSzkB: 1
OfmapSramSzkB: 1
Dataflow: ws
{bandwidth}
[run_presets]
{mode}
[archsim]
{clock}
[device]
name = tiny
arrays = 1

[memory]
hbm_gib = 1
hbm_gbps = 16

[links]
intra_gbps = 10
"""


def _cfg(tmp_path: Path, *, clock: str = "", mode: str = "", bandwidth: str = "", bom: bool = False) -> Path:
    path = tmp_path / "chip.cfg"
    text = ARRAY.format(clock=clock, mode=mode, bandwidth=bandwidth)
    path.write_bytes(("\ufeff" if bom else "").encode() + text.encode())
    return path


# (clock line, interface line): keys in another case, spaces around ':' or '=', a value's case and padding
SPELLINGS = [
    ("clockghz=0.5", "interfacebandwidth=calc"),
    ("CLOCKGHZ :   0.5  ", "INTERFACEBANDWIDTH =   Calc  "),
    ("  ClockGHz   =0.5", "  InterfaceBandwidth:CALC"),
]


@pytest.mark.parametrize("bom", [False, True])
@pytest.mark.parametrize(("clock", "mode"), SPELLINGS)
def test_each_spelling_reads_as_the_main_reader_reads_it(tmp_path, clock, mode, bom):
    """By hand: 0.5 GHz, CALC, no Bandwidth; the main reader's array says the same clock, and CALC (not USER)."""
    path = _cfg(tmp_path, clock=clock, mode=mode, bom=bom)
    assert cfg_stated(path) == CfgStated(clock_ghz=0.5, bandwidth=False, interface="CALC")
    array = read_scalesim_cfg(path)
    assert array.clock_hz == 0.5e9 and not array.user_bandwidth
    # 16 GB/s ÷ (1 B × 0.5 GHz) = 32 words/cycle; 2-byte words: 16
    assert device_dram_rate(path, 1) == (32, 16.0, 0.5)
    assert device_dram_rate(path, 2) == (16, 16.0, 0.5)
    assert calc_mode_note(path) is not None and "InterfaceBandwidth: CALC" in calc_mode_note(path)


def test_a_file_stating_bandwidth_or_user_or_no_mode(tmp_path):
    """Bandwidth written in another case: that rate is the file's (no hbm_gbps rate); USER and no mode: no CALC note.
    16 GB/s at 0.5 GHz is 16 two-byte words: the Bandwidth the device readers accept beside hbm_gbps."""
    path = _cfg(tmp_path, clock="ClockGHz: 0.5", mode="interfacebandwidth: user", bandwidth="bandwidth : 16")
    assert cfg_stated(path) == CfgStated(clock_ghz=0.5, bandwidth=True, interface="USER")
    assert read_scalesim_cfg(path).bandwidth == (16,) and read_scalesim_cfg(path).user_bandwidth
    assert device_dram_rate(path, 1) is None
    assert calc_mode_note(path) is None
    path = _cfg(tmp_path)  # nothing written: no clock (so no rate), SCALE-Sim's CALC by default but no note
    assert cfg_stated(path) == CfgStated(clock_ghz=None, bandwidth=False, interface=None)
    assert read_scalesim_cfg(path).clock_hz is None and not read_scalesim_cfg(path).user_bandwidth
    assert device_dram_rate(path, 1) is None and calc_mode_note(path) is None


@pytest.mark.parametrize(("clock", "mode"), [("ClockGHz = 0.5 GHz", ""), ("ClockGHz = 50", ""),
                                             ("ClockGHz = 0.5", "InterfaceBandwidth = USR")])
def test_a_bad_value_is_refused_as_the_main_reader_refuses_it(tmp_path, clock, mode):
    """Before: device_dram_rate's float() of the clock raised a bare ValueError (or read 50 GHz, outside archsim's
    clocks) and calc_mode_note read past both, where the main reader refuses the file in one line at its line; now
    one refusal, the same, wherever the file is read."""
    path = _cfg(tmp_path, clock=clock, mode=mode)
    with pytest.raises(InputError) as main_reader:
        read_scalesim_cfg(path)
    with pytest.raises(InputError) as stated:
        cfg_stated(path)
    assert str(stated.value) == str(main_reader.value)
    assert stated.value.where.line is not None and "\n" not in str(stated.value)
    for reader in (lambda: device_dram_rate(path, 1), lambda: calc_mode_note(path)):  # the two that read it apart
        with pytest.raises(InputError) as caller:
            reader()
        assert str(caller.value) == str(main_reader.value)


def test_a_device_toml_names_no_calc_mode():
    assert calc_mode_note(ROOT / "configs" / "devices" / "tpu_v4_like.toml") is None


SHIPPED = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "configs").rglob("*.cfg"))


@pytest.mark.parametrize("name", SHIPPED)
def test_each_shipped_cfg_reads_as_its_text_says(name):
    """The reference: the file's text, by regular expression (a key at a line's start, any case, ':' or '=')."""
    path = ROOT / name
    text = path.read_text(encoding="utf-8-sig")

    def written(key: str) -> str | None:
        found = re.search(rf"^\s*{key}\s*[:=]\s*(.*?)\s*$", text, flags=re.IGNORECASE | re.MULTILINE)
        return None if found is None else found[1]

    clock, mode = written("ClockGHz"), written("InterfaceBandwidth")
    assert cfg_stated(path) == CfgStated(None if clock is None else float(clock), written("Bandwidth") is not None,
                                         None if mode is None else mode.upper())


def test_shipped_cfgs_are_found():
    assert len(SHIPPED) >= 5 and "configs/devices/scalesim_32x32_device.cfg" in SHIPPED
