"""User trial 64: an accelerator designer's slips in a device sweep spec, a device file and a SCALE-Sim ``.cfg``
device, each held to the rule the docs state or to its sibling input's behaviour (docs/formats.md, "Device sweep
spec" and "Device files"). Each test failed on the code before its fix (its docstring says how)."""

from __future__ import annotations

from pathlib import Path

import pytest
from device_files import device_message
from test_robustness import clean_error, write

from archsim.cli import main
from archsim.devices.device_file import load_device
from archsim.errors import InputError
from archsim.sweep.spec import load_spec

REPO = Path(__file__).resolve().parents[1]
TPU_TOML = REPO / "configs" / "devices" / "tpu_v4_like.toml"  # 8 × 128 × 128, sram_kib_per_array = 4096
CHIP_CFG = REPO / "configs" / "devices" / "scalesim_32x32_device.cfg"  # 16 × 32 × 32 ws arrays, 16 GiB
H100 = str(REPO / "configs" / "clusters" / "h100_1gpu.toml")
BASE = '[sweep]\nmodel = "gpt2"\ndevice = "tpu_v4_like"\nchips = [4]\nglobal_batch = 16\n'
INT32_MAX = 2**31 - 1


def _spec_error(tmp_path: Path, extra: str) -> InputError:
    with pytest.raises(InputError) as caught:
        load_spec(write(tmp_path / "s.toml", BASE + extra))
    return caught.value


# -- 1. a misspelt choice in a sweep spec is told the one it resembles, as train's flag is ----------------------

@pytest.mark.parametrize(("key", "typo", "flag", "meant"), [
    ("dtype", "bf17", "--dtype", "bf16"), ("recompute", "ful", "--recompute", "full"),
    ("attention", "flsh", "--attention", "flash"),
])
def test_a_misspelt_device_spec_choice_is_told_what_train_tells(tmp_path, capsys, key, typo, flag, meant):
    """Before the fix: ``unknown value 'bf17'; choose from fp32, fp16, bf16``, no guess, where train's flag of the
    same name and every misspelt key of the spec get one. The reference is train's own refusal of the typo."""
    told = clean_error(capsys, "train", "gpt2", "--gpu", "h100", "--global-batch", "1", flag, typo)
    assert f"did you mean '{meant}'?" in told, told
    error = _spec_error(tmp_path, f'{key} = "{typo}"\n')
    assert error.where.field == key and f"(did you mean '{meant}'?)" in error.message, error.message


def test_a_device_spec_value_like_no_choice_gets_no_guess(tmp_path):
    """A name no choice resembles is refused with the list alone (passes on both codes: the hint is no blanket)."""
    error = _spec_error(tmp_path, 'dtype = "zzz"\n')
    assert "choose from fp32, fp16, bf16" in error.message and "did you mean" not in error.message


@pytest.mark.parametrize(("line", "field", "meant"), [('mode = "exakt"\n', "mode", "exact"),
                                                      ('engine = "cycel"\n', "engine", "cycle")])
def test_a_misspelt_array_spec_choice_is_told_the_one_it_resembles(tmp_path, line, field, meant):
    """The array sweep's two choices, the device spec's siblings: before the fix no guess."""
    spec = write(tmp_path / "s.toml", '[sweep]\nnetworks = ["layerpipe_sample"]\narrays = ["32x32"]\n'
                                      'batches = [4]\nprocessors = [2]\nmethods = ["layerpipe"]\n' + line)
    with pytest.raises(InputError) as caught:
        load_spec(spec)
    assert caught.value.where.field == field and f"(did you mean '{meant}'?)" in caught.value.message


# -- 2. and 3. one check of sram_kib_per_array: whole KiB, 3 at the least, for the device file and the spec -------

def test_the_spec_states_the_least_sram_it_takes(tmp_path):
    """Before the fix: ``expected a non-empty list of integers in 1…2147483647`` although 1 and 2 are refused. The
    least is 3 KiB by the split rule (docs/formats.md: one figure in three operand buffers of whole KiB, 1 KiB each
    at the least): 3 loads, 2 does not, and the list's error says 3."""
    assert load_spec(write(tmp_path / "ok.toml", BASE + "sram_kib_per_array = [3]\n")).sram_kib_per_array == (3,)
    assert "below the 3 KiB" in _spec_error(tmp_path, "sram_kib_per_array = [2]\n").message
    for extra in ("sram_kib_per_array = []\n", "sram_kib_per_array = [-1]\n"):
        error = _spec_error(tmp_path, extra)
        assert error.where.field == "sram_kib_per_array" and "whole KiB in 3…" in error.message, error.message
        assert "1…" not in error.message


def test_a_fraction_of_a_kib_is_refused_by_both_readers_of_the_key(tmp_path):
    """Before the fix: ``sram_kib_per_array = 2048.7`` loaded from a device file (priced as three 682 KiB buffers)
    while the docs speak of whole KiB. Now the device file refuses it at its key, as the spec's axis does; a whole
    number written as a float (2048.0) is 2048 KiB in both."""
    text = TPU_TOML.read_text(encoding="utf-8")
    chip = write(tmp_path / "chip.toml", text.replace("sram_kib_per_array = 4096", "sram_kib_per_array = 2048.7"))
    message = device_message(chip)
    assert "field 'memory.sram_kib_per_array'" in message and "whole KiB" in message and "2048.7" in message
    error = _spec_error(tmp_path, "sram_kib_per_array = [2048.7]\n")
    assert error.where.field == "sram_kib_per_array" and "whole KiB" in error.message
    whole = write(tmp_path / "whole.toml", text.replace("sram_kib_per_array = 4096", "sram_kib_per_array = 2048.0"))
    assert load_device(whole).sram_bytes_per_array == 2048 * 1024
    assert load_spec(write(tmp_path / "w.toml", BASE + "sram_kib_per_array = [2048.0]\n")).sram_kib_per_array == (2048,)


def test_the_largest_sram_is_the_same_for_both_readers(tmp_path):
    """Before the fix the spec took at most 2³¹ − 1 KiB where the device file takes three buffers of that
    (docs/formats.md: at most 6,442,450,941): a figure the file states could not be swept back to it."""
    most = 3 * INT32_MAX
    assert load_spec(write(tmp_path / "ok.toml", BASE + f"sram_kib_per_array = [{most}]\n")).sram_kib_per_array \
        == (most,)
    error = _spec_error(tmp_path, f"sram_kib_per_array = [{most + 1}]\n")
    assert f"at most {most} KiB" in error.message
    text = TPU_TOML.read_text(encoding="utf-8")
    chip = write(tmp_path / "chip.toml", text.replace("sram_kib_per_array = 4096", f"sram_kib_per_array = {most + 1}"))
    assert f"at most {most} KiB" in device_message(chip)


# -- 4. a .cfg device's own keys in any case, as configparser reads SCALE-Sim's --------------------------------

def _cfg(tmp_path: Path, old: str, new: str) -> Path:
    text = CHIP_CFG.read_text(encoding="utf-8")
    assert text.count(old) == 1
    return write(tmp_path / "chip.cfg", text.replace(old, new))


def test_a_cfg_devices_key_in_capitals_is_the_key(tmp_path):
    """Before the fix: ``HBM_GIB`` in ``[memory]`` was refused as unknown, while the same file's ``ArrayHeight``
    is read in any case (configparser lowercases keys). The reference: the file spelt in lowercase."""
    same = load_device(_cfg(tmp_path, "hbm_gib = 16", "HBM_GIB = 16"))
    assert same == load_device(CHIP_CFG)
    assert load_device(_cfg(tmp_path, "intra_gbps", "Intra_Gbps")) == load_device(CHIP_CFG)


def test_a_cfg_key_twice_in_two_cases_is_one_key_given_twice(tmp_path):
    """As SCALE-Sim's keys are: ``hbm_gib`` and ``HBM_GIB`` in one section are refused as one key written twice
    (passes on both codes: before the fix the reader's duplicate check already ignored case)."""
    message = device_message(_cfg(tmp_path, "hbm_gib = 16", "hbm_gib = 16\nHBM_GIB = 16"))
    assert "given twice in [memory]" in message, message


def test_a_bad_cfg_value_in_capitals_is_named_as_written_at_its_line(tmp_path):
    """The key is named as the file spells it, at its line (configparser hands it on lowercased). Before the fix:
    ``unknown key`` for the value's key, its value never checked."""
    chip = _cfg(tmp_path, "hbm_gib = 16", "HBM_GIB = -1")
    line = 1 + CHIP_CFG.read_text(encoding="utf-8").splitlines().index("hbm_gib = 16")
    message = device_message(chip)
    assert f"line {line}, field 'memory.HBM_GIB': expected a positive number" in message, message
    unknown = device_message(_cfg(tmp_path, "hbm_gib = 16", "HBM_GIBS = 16"))
    assert "field 'memory.HBM_GIBS'" in unknown and "did you mean 'hbm_gib'?" in unknown, unknown


# -- 5. train's link line says what the chip is ----------------------------------------------------------------

def _links(capsys, *argv) -> list[str]:
    assert main([str(a) for a in argv]) == 0
    return [line for line in capsys.readouterr().out.splitlines() if line.startswith(("# intra_server",
                                                                                      "# inter_server"))]


def test_the_link_line_says_device_for_a_device_files_chip(tmp_path, capsys):
    """Before the fix: ``100 GB/s per direction per GPU (fabric)`` for a systolic-array chip, where the does-not-fit
    line says "per device" of it. A catalog GPU's line keeps "per GPU". The .cfg states intra_gbps = 100."""
    cluster = write(tmp_path / "c.toml", f'[cluster]\nname = "c"\n\n[[servers]]\ngpus = 2\ndevice = "{CHIP_CFG}"\n')
    lines = _links(capsys, "train", "gpt2", "--cluster", cluster, "--global-batch", "2", "--dp", "2")
    assert lines[0] == "# intra_server: 100 GB/s per direction per device (fabric), NVLS off", lines
    lines = _links(capsys, "train", "gpt2", "--cluster", H100, "--global-batch", "1")
    assert lines[0].startswith("# intra_server: ") and lines[0].endswith(" per direction per GPU (nvlink), NVLS off")
