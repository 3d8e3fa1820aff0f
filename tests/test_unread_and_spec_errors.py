"""Two kinds of one-line message, each compared with the exact line written out here.

Unread keys: an array device file (``gemm = "arrays"``) stating ``[device] board_watts`` has a key its kind does not
read, which every reader of the file says in one note (docs/formats.md, "Device files"). ``archsim gemm`` and
``archsim schedule`` read ``--config``'s arrays without it, as did ``archsim.gemm``, ``archsim.schedule``,
``archsim.profile``, ``archsim.plan`` and ``archsim.bppsa_rnn``: each test below failed before the note was added
there (no such line, or no such UserWarning); the shipped device's run, stating neither key, guards against a note
said of a file that states none.

Sweep specs: an axis entry at fault (a string where a number goes, a negative size, an empty list, a repeat) was
refused without the entry (``expected a non-empty list of integers in 1…2147483647``, ``a value is given twice``);
each line now names the key, the entry and what the key takes. Each spec test failed before: its line differed.
"""

import warnings
from pathlib import Path

import pytest

import archsim
from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
DEVICE_CFG = (ROOT / "configs" / "devices" / "scalesim_32x32_device.cfg").read_text()
UNREAD = 'is a gemm = "arrays" device'
WHY = "(its energy is the energy model's, not board power × time)"


def _note(config: Path) -> str:
    return f'{config} is a gemm = "arrays" device: this key is not read: [device] board_watts {WHY}'


@pytest.mark.parametrize("command", [["gemm", "--m", "4", "--k", "4", "--n", "4"],
                                     ["schedule", "ffnn8", "--policy", "gpipe", "--processors", "2",
                                      "--microbatches", "2"]])
def test_gemm_and_schedule_note_a_device_files_unread_key_once(unread_key_chip, capsys, command):
    """Each says the note cost and energy say, once, on stderr, named after the command."""
    assert main([*command, "--config", str(unread_key_chip)]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if UNREAD in line]
    assert lines == [f"archsim {command[0]}: note: {_note(unread_key_chip)}"]


def test_gemm_on_the_shipped_device_says_no_such_note(capsys):
    """configs/devices/scalesim_32x32_device.cfg states neither board_watts nor l2_bytes_per_clock: no note."""
    assert "board_watts" not in DEVICE_CFG and "l2_bytes_per_clock" not in DEVICE_CFG
    assert main(["gemm", "--m", "4", "--k", "4", "--n", "4", "--config",
                 str(ROOT / "configs" / "devices" / "scalesim_32x32_device.cfg")]) == 0
    assert UNREAD not in capsys.readouterr().err


JOBS = {
    "gemm": lambda cfg: archsim.gemm(m=4, k=4, n=4, config=cfg),
    "schedule": lambda cfg: archsim.schedule("ffnn8", policy="gpipe", processors=2, microbatches=2, config=cfg),
    "profile": lambda cfg: archsim.profile("ffnn8", config=cfg),
    "plan": lambda cfg: archsim.plan("ffnn8", cluster=ROOT / "configs" / "clusters" / "a100_node.toml",
                                     microbatches=2, baselines="none", config=cfg),
    "bppsa_rnn": lambda cfg: archsim.bppsa_rnn(seq_len=[2, 4], processors=[2], config=cfg),
}


@pytest.mark.parametrize("job", sorted(JOBS))
def test_the_api_warns_it_once_at_the_callers_line(unread_key_chip, job):
    """One UserWarning, the command's note as is, pointing at this file (the caller's line), as archsim.cost's."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        JOBS[job](unread_key_chip)
    said = [w for w in caught if UNREAD in str(w.message)]
    assert [str(w.message) for w in said] == [_note(unread_key_chip)]
    assert Path(said[0].filename).name == Path(__file__).name


ARRAY_SPEC = ('[sweep]\nname = "q"\nnetworks = ["layerpipe_sample"]\narrays = ["32x32"]\ndataflows = ["ws"]\n'
              'methods = ["layerpipe"]\nmode = "paper"\n')


def _refusal(tmp_path: Path, capsys, text: str) -> str:
    spec = tmp_path / "spec.toml"
    spec.write_text(text)
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out")]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert not (tmp_path / "out").exists()
    return line.removeprefix(f"archsim sweep: error: {spec}, ")


INT32 = "integers in 1…2147483647"
ARRAY_CASES = [
    ('batches = [16, "x"]\nprocessors = [2]\n',
     (f"line 8, field 'batches': expected a non-empty list of {INT32}, got the string 'x' (write the number without "
      "quotes) among them")),
    ("batches = [16, -4]\nprocessors = [2]\n",
     f"line 8, field 'batches': expected a non-empty list of {INT32}, got '-4' among them"),
    ("batches = []\nprocessors = [2]\n", f"line 8, field 'batches': expected a non-empty list of {INT32}, got []"),
    ("batches = [16]\nprocessors = [2, 5000]\n",  # archsim's processor counts: 1…4096 (validate.MAX_PROCESSORS)
     "line 9, field 'processors': expected a non-empty list of integers in 1…4096, got '5000' among them"),
    ('batches = [16]\nprocessors = [2]\nonly = ["conv", 3]\n',
     "line 10, field 'only': expected a list of strings, got '3' among them"),
    ('batches = [16]\nprocessors = [2]\nclocks_ghz = [1.0, "fast"]\n',
     ("line 10, field 'clocks_ghz': expected a list of clocks in GHz, got the string 'fast' (write the number without "
      "quotes) among them")),
    ("batches = [16]\nprocessors = [2]\nsram_kb = [64, 1.5]\n",
     f"line 10, field 'sram_kb': expected a non-empty list of {INT32}, got '1.5' among them"),
    ("batches = [16]\nprocessors = [2]\ndtypes = []\n",
     "line 10, field 'dtypes': expected at least one dtype of int8, fp32, fp16, bf16, fp8, got []"),  # fp8: 2026-12-06
]


@pytest.mark.parametrize(("axes", "expected"), ARRAY_CASES)
def test_an_array_sweeps_bad_entry_is_named(tmp_path, capsys, axes, expected):
    """The spec's line, its key and the entry at fault, and what the key takes (ARRAY_CASES, written out)."""
    assert _refusal(tmp_path, capsys, ARRAY_SPEC + axes) == expected


def test_an_array_sweeps_empty_methods_say_which_it_takes(tmp_path, capsys):
    """``methods = []``: the line names the four partitioners a sweep takes (docs/formats.md's ``methods`` row)."""
    text = ARRAY_SPEC.replace('methods = ["layerpipe"]', "methods = []") + "batches = [16]\nprocessors = [2]\n"
    assert _refusal(tmp_path, capsys, text) == ("line 6, field 'methods': expected at least one method of "
                                                "layerpipe, pipedream, gpipe, ooo, got []")


DEVICE_SPEC = '[sweep]\nmodel = "gpt3_1.3b"\ndevice = "tpu_v4_like"\nglobal_batch = 64\n'
DEVICE_CASES = [
    ("chips = [4, 8, 4]\n",
     ("line 5, field 'chips': '4' is given twice: expected distinct integers in 1…16384, each value one point of the "
      "sweep")),
    ("chips = [4]\nhbm_gbps = []\n", "line 6, field 'hbm_gbps': expected a non-empty list of GB/s in (0, 10⁷), got []"),
    ('chips = [4]\narray_shapes = ["8x128x128", "2x256x256", "8x128x128"]\n',
     ("line 6, field 'array_shapes': '8x128x128' is given twice: expected distinct COUNTxROWSxCOLS texts such as "
      '"8x128x128", each value one point of the sweep')),
]


@pytest.mark.parametrize(("axes", "expected"), DEVICE_CASES)
def test_a_device_sweeps_empty_or_repeated_axis_is_named(tmp_path, capsys, axes, expected):
    """Before: ``expected a non-empty list`` and ``a value is given twice``, neither naming the entry or the range."""
    assert _refusal(tmp_path, capsys, DEVICE_SPEC + axes) == expected
