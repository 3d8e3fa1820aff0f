"""Every error, warning and note line on stderr names the command that spoke, as argparse names it in a
usage error (``archsim train: error: …``, ``archsim bppsa rnn: note: …``). Before, an input error read
``archsim: error: …`` while a usage error of the same command read ``archsim train: error: …``, notes
were a mix of ``archsim: note:`` and ``archsim plan: note:``, and ``archsim bppsa rnn --bogus`` said
``archsim bppsa:`` where ``--hidden x`` said ``archsim bppsa rnn:``: stderr of several commands
gathered in one log could not say which spoke. The library's warnings keep their text unprefixed."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.console import prefix

CLUSTERS = Path(__file__).resolve().parents[1] / "configs" / "clusters"
NODE = str(CLUSTERS / "a100_node.toml")  # 8 A100s on one server
MISSING = "no_such_network.csv"


@pytest.fixture
def chip(tmp_path, chip_cfg) -> str:
    """A ``.cfg`` device of 4 arrays: an array command costs one and says so (a note), and says it prices int8."""
    path = tmp_path / "chip.cfg"
    path.write_text(chip_cfg(arrays=4))
    return str(path)


def _sweep_spec(folder: Path, network: str, array: str) -> str:
    path = folder / "spec.toml"
    path.write_text(f'[sweep]\nname = "p"\nnetworks = ["{network}"]\narrays = ["{array}"]\nbatches = [4]\n'
                    'processors = [1]\nmethods = ["layerpipe"]\n')
    return str(path)


def _stderr(capsys, argv: list[str], code: int) -> list[str]:
    assert main(argv) == code
    return capsys.readouterr().err.splitlines()


# command words, an argv that is refused as input (not as usage: argparse named those already), and its prefix
REFUSED = [
    (["cost", MISSING], "archsim cost"),
    (["schedule", MISSING, "--policy", "mp"], "archsim schedule"),
    (["plan", MISSING, "--cluster", NODE, "--microbatches", "2"], "archsim plan"),
    (["bppsa", "rnn", "--seq-len", "8", "--processors", "4", "--config", "no_such.cfg"], "archsim bppsa rnn"),
    (["train", "gpt3_1.3b", "--cluster", NODE, "--global-batch", "8", "--tp", "4", "--pp", "4"], "archsim train"),
]


@pytest.mark.parametrize(("argv", "name"), REFUSED, ids=[name for _, name in REFUSED])
def test_an_input_error_names_its_command(argv, name, capsys):
    (line,) = _stderr(capsys, argv, 2)
    assert line.startswith(f"{name}: error: "), line
    assert prefix() == "archsim"  # the run over, nothing said later (a library call) is named after it


def test_a_sweep_input_error_names_sweep(tmp_path, capsys):
    (line,) = _stderr(capsys, ["sweep", str(tmp_path / "no_such.toml")], 2)
    assert line.startswith("archsim sweep: error: "), line


def test_a_usage_error_and_an_input_error_of_one_command_agree(capsys):
    """argparse names a nested command's parser ``archsim bppsa rnn``; an argument none of the parsers
    knows is reported by the top parser, and was named ``archsim bppsa`` after the first command word."""
    (unknown,) = _stderr(capsys, ["bppsa", "rnn", "--bogus"], 2)
    (bad_value,) = _stderr(capsys, ["bppsa", "rnn", "--hidden", "x"], 2)
    (input_error,) = _stderr(capsys, ["bppsa", "rnn", "--config", "no_such.cfg"], 2)
    assert unknown == "archsim bppsa rnn: error: unrecognized arguments: --bogus"
    assert bad_value.startswith("archsim bppsa rnn: error: argument --hidden")
    assert input_error.startswith("archsim bppsa rnn: error: ")


@pytest.mark.parametrize("argv", [[], ["nosuch"], ["--bogus"]])
def test_with_no_command_chosen_the_error_is_archsims(argv, capsys):
    (line,) = _stderr(capsys, argv, 2)
    assert line.startswith("archsim: error: "), line


# an array command given a .cfg device of 4 arrays notes it (twice: one array of 4, priced at int8)
ARRAY_NOTES = [
    (["cost", "layerpipe_sample", "--batch", "4"], "archsim cost"),
    (["schedule", "layerpipe_sample", "--batch", "4", "--policy", "mp", "--processors", "2"], "archsim schedule"),
    (["bppsa", "rnn", "--seq-len", "8", "--processors", "4"], "archsim bppsa rnn"),
]


@pytest.mark.parametrize(("argv", "name"), ARRAY_NOTES, ids=[name for _, name in ARRAY_NOTES])
def test_a_note_names_its_command(argv, name, chip, capsys):
    notes = _stderr(capsys, [*argv, "--config", chip], 0)
    assert len(notes) == 2 and all(line.startswith(f"{name}: note: ") for line in notes), notes
    assert "device of 4 arrays" in notes[0]


def test_plans_notes_name_plan(chip, capsys):
    """plan's own note (the servers' devices are not what it prices on) and array_from_args' alike."""
    notes = _stderr(capsys, ["plan", "layerpipe_sample", "--cluster", NODE, "--microbatches", "2", "--config", chip], 0)
    assert len(notes) == 3 and all(line.startswith("archsim plan: note: ") for line in notes), notes
    assert any("servers name a100" in line for line in notes)  # the --config device's notes follow the run


def test_trains_note_names_train(capsys):
    (line,) = _stderr(capsys, ["train", "gpt3_1.3b", "--cluster", NODE, "--global-batch", "8"], 0)
    assert line.startswith("archsim train: note: this layout uses 1 of the cluster's 8 GPUs"), line


def test_a_sweeps_note_names_sweep(tmp_path, chip, capsys):
    spec = _sweep_spec(tmp_path, "layerpipe_sample", Path(chip).name)
    notes = [line for line in _stderr(capsys, ["sweep", spec, "--out", str(tmp_path / "out"), "--quiet"], 0)
             if ": note: " in line]
    assert len(notes) == 1 and notes[0].startswith("archsim sweep: note: ") and "device of 4 arrays" in notes[0]


def test_the_librarys_warnings_carry_no_prefix(chip, capsys):
    """The API warns the notes' texts: the CLI's lines less their prefix, and nothing on stderr."""
    assert main(["cost", "layerpipe_sample", "--batch", "4", "--config", chip]) == 0
    lines = capsys.readouterr().err.splitlines()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        archsim.cost("layerpipe_sample", batch=4, config=chip)
    assert [str(w.message) for w in caught] == [line.removeprefix("archsim cost: note: ").replace(
        "--dtype fp16", "dtype='fp16'") for line in lines]  # the advice in the keyword a library user types
    assert not any(str(w.message).startswith("archsim") for w in caught)
    assert capsys.readouterr().err == ""


# the one module besides console.py that names sys.stderr: tqdm draws its bars there (no line of archsim's own)
STDERR_READERS = {"progress.py": "the bars tqdm draws on stderr, and whether stderr is a terminal"}


def test_every_stderr_line_goes_through_the_console():
    """No module of archsim but console.py writes to stderr (``sys.stderr.write``, ``print(..., file=sys.stderr)``,
    a stream bound to ``sys.stderr``): one place gives each line its prefix and keeps a status line (numba's compile
    ticker) from running into the next. Failed before: jit.py's ticker wrote ``sys.stderr`` itself, and
    output_files.py printed the ``wrote FILE`` lines there."""
    import ast

    root = Path(archsim.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(root).as_posix()
        if name in ("console.py", *STDERR_READERS):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and node.attr in ("stderr", "__stderr__")
                    and isinstance(node.value, ast.Name) and node.value.id == "sys"):
                found.append(f"{name}:{node.lineno}")
    assert not found, found


def test_a_note_said_under_a_live_status_line_starts_a_line_of_its_own(capsys):
    """A note said while numba's ticker is drawn erases the ticker's text first (the ticker draws itself again
    below it); before, the note was appended to ``  compiling …: 3 s`` on one line (the ticker wrote stderr
    itself, the note knew nothing of it)."""
    from archsim import console

    console.status("  compiling a kernel: 3 s")
    console.note("something")
    console.line("wrote out.json")
    console.status("")
    err = capsys.readouterr().err
    assert err == ("\r  compiling a kernel: 3 s" + "\r\x1b[K" + "archsim: note: something\n" + "wrote out.json\n"
                   + "\r\x1b[K")
