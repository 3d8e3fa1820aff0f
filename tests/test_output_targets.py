"""Every output flag through one writer (issue 39, D1): a regular file is replaced atomically, a
character device or FIFO is written through in place and stays what it was, and a folder, a
dangling symlink, a socket or a FIFO without a reader is one line and exit 2.

The devices are this test's own nodes (``os.mknod`` twins of ``/dev/null`` and ``/dev/full`` in a
temp folder, so a broken writer replaces nothing of the machine's): making them needs root, which
CI has; elsewhere those cases skip."""

from __future__ import annotations

import argparse
import os
import socket
import stat
import threading
import time
from pathlib import Path

import pytest
from output_commands import COMMANDS, SWEEP_SPEC
from test_cli_help import subcommand_parsers
from test_robustness import clean_error

from archsim import cli
from archsim.cli import main
from archsim.errors import InputError
from archsim.output_files import write_output
from archsim.output_targets import output_flag

NULL, FULL = os.makedev(1, 3), os.makedev(1, 7)  # Linux's numbers for /dev/null and /dev/full


def output_flags() -> set[tuple[str, str]]:
    """(command, flag) of every option that names a file to write (its type is ``output_flag``)."""
    return {(name.removeprefix("archsim "), action.option_strings[-1])
            for name, parser in subcommand_parsers(cli.build_parser())
            for action in parser._actions if action.type is output_flag and action.help != argparse.SUPPRESS}


def _argv(command: str, folder: Path) -> list[str]:
    """A quick invocation of ``command`` (output_commands' where it has one), without its output flag."""
    if command in ("sweep", "report"):
        spec = folder / "columns.toml"
        if not spec.exists():
            spec.write_text(SWEEP_SPEC, encoding="utf-8")
        results = folder / "results"
        if command == "report":
            assert main(["sweep", str(spec), "--out", str(results), "--quiet"]) == 0
            return ["report", str(results)]
        return ["sweep", str(spec), "--out", str(results), "--quiet"]
    by_command = {"schedule": "schedule (layer-wise)", "plan": "plan (spp)", "validate-gpu": "validate-gpu stats"}
    if command == "import":
        return ["import", "layerpipe_sample"]
    if command == "pipeline":  # a timeline needs micro-batches
        return [*COMMANDS["pipeline"], "--microbatches", "2"]
    return list(COMMANDS[by_command.get(command, command)])


# every output flag, plus the per-stage schedule's --schedule-csv (another code path behind the same flag)
CASES = sorted(output_flags() | {("schedule (per stage)", "--schedule-csv")})


def argv_for(command: str, flag: str, target: Path, folder: Path) -> list[str]:
    return [*_argv(command, folder), flag, str(target)]


def test_cases_cover_every_output_flag():
    flags = output_flags()
    assert {("cost", "--out"), ("train", "--schedule-csv"), ("search", "--pareto-html"), ("sweep", "--report"),
            ("report", "--out"), ("import", "--out"), ("validate-gpu", "--markdown")} <= flags
    assert ("sweep", "--out") not in flags and ("cluster", "--trace") not in flags  # a folder, an input
    metavars = {action.metavar for _, parser in subcommand_parsers(cli.build_parser()) for action in parser._actions
                if action.type is output_flag}
    assert metavars <= {"FILE", "OUT.html", "OUT.csv", "OUT.json", "OUT.md", None}  # None: --trace, --chrome-trace's old name
    # every FILE/OUT.* option is an output flag: none is left writing without the check
    assert flags == {(name.removeprefix("archsim "), action.option_strings[-1])
                     for name, parser in subcommand_parsers(cli.build_parser()) for action in parser._actions
                     if str(action.metavar).startswith("OUT") or action.metavar == "FILE"}


def device(folder: Path, kind: int = NULL) -> Path:
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root (CI runs as root)")
    path = folder / "device"
    os.mknod(path, stat.S_IFCHR | 0o666, kind)
    return path


class FifoReader:
    """A FIFO with a reader: its read end is open before the command runs (so a writer's
    non-blocking open finds it), and a thread drains it until the test says the writer is done."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path, self.data, self.done = path, bytearray(), threading.Event()
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        while True:
            finished = self.done.is_set()
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:  # a writer is there, with nothing written yet
                chunk = None
            if chunk:
                self.data += chunk
            elif finished:
                return
            else:
                time.sleep(0.005)

    def close(self) -> bytes:
        self.done.set()
        self.thread.join(timeout=30)
        os.close(self.fd)
        return bytes(self.data)


@pytest.mark.parametrize(("command", "flag"), CASES)
def test_a_device_is_written_through_and_stays_a_device(tmp_path, command, flag):
    node = device(tmp_path)
    before = os.stat(node)
    assert main(argv_for(command, flag, node, tmp_path)) == 0
    after = os.stat(node)
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".device")]  # no temp file beside it


@pytest.mark.parametrize(("command", "flag"), CASES)
def test_a_fifo_gets_the_output_and_stays_a_fifo(tmp_path, command, flag):
    fifo = FifoReader(tmp_path / "pipe")
    try:
        code = main(argv_for(command, flag, fifo.path, tmp_path))
    finally:
        data = fifo.close()
    assert code == 0 and stat.S_ISFIFO(os.lstat(fifo.path).st_mode)
    text = data.decode("utf-8")
    if flag in ("--gantt", "--report", "--pareto-html") or (command == "report" and flag == "--out"):
        assert text.rstrip().endswith("</html>") and len(text) > 1000  # a page; plotly's ids differ per run
    else:  # the same bytes a regular file gets
        regular = tmp_path / "regular"
        assert main(argv_for(command, flag, regular, tmp_path)) == 0
        expected = regular.read_text(encoding="utf-8").replace(str(regular), "TARGET")  # a report names its file
        assert text.replace(str(fifo.path), "TARGET") == expected and text


@pytest.mark.parametrize(("command", "flag"), CASES)
@pytest.mark.parametrize("target", ["folder", "dangling symlink"])
def test_a_folder_or_a_dangling_symlink_is_one_line(tmp_path, capsys, command, flag, target):
    path = tmp_path / "target"
    if target == "folder":
        path.mkdir()
    else:
        path.symlink_to(tmp_path / "nowhere")
    argv = argv_for(command, flag, path, tmp_path)
    capsys.readouterr()
    line = clean_error(capsys, *argv)
    assert ("a folder" if target == "folder" else "a symlink to nothing") in line
    assert path.is_dir() if target == "folder" else (path.is_symlink() and not (tmp_path / "nowhere").exists())


def test_a_fifo_without_a_reader_is_refused_at_once(tmp_path, capsys):
    path = tmp_path / "pipe"
    os.mkfifo(path)
    assert "a FIFO with no reader" in clean_error(capsys, "cost", "layerpipe_sample", "--out", path)
    assert stat.S_ISFIFO(os.lstat(path).st_mode)


def test_a_full_device_is_one_line_and_stays(tmp_path, capsys):
    """`/dev/full` through `train --schedule-csv` was replaced by a regular file (issue 39)."""
    node = device(tmp_path, FULL)
    assert main([*COMMANDS["train"], "--schedule-csv", str(node)]) == 2
    err = capsys.readouterr().err.splitlines()  # (the table on stdout was written before)
    assert len(err) == 1 and err[0].startswith("archsim train: error: ") and "No space left on device" in err[0]
    assert stat.S_ISCHR(os.stat(node).st_mode) and os.stat(node).st_rdev == FULL


def test_a_socket_is_refused(tmp_path, capsys):
    path = tmp_path / "sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        assert "a socket" in clean_error(capsys, "cost", "layerpipe_sample", "--out", path)
        assert stat.S_ISSOCK(os.lstat(path).st_mode)
    finally:
        server.close()


def test_a_symlink_to_a_file_keeps_the_link_and_replaces_the_file(tmp_path):
    real = tmp_path / "real.csv"
    real.write_text("old\n", encoding="utf-8")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    write_output(link, "new\n")
    assert link.is_symlink() and real.read_text(encoding="utf-8") == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.csv", "real.csv"]


def test_a_regular_file_is_replaced_atomically(tmp_path, monkeypatch):
    """A write that fails midway leaves the old file whole (a regular file goes through a rename)."""
    target = tmp_path / "out.csv"
    target.write_text("old\n", encoding="utf-8")

    def fail(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(InputError, match="No space left"):
        write_output(target, "new\n")
    assert target.read_text(encoding="utf-8") == "old\n" and sorted(os.listdir(tmp_path)) == ["out.csv"]



def test_a_replaced_file_keeps_its_permissions(tmp_path):
    """A private (0600) file stayed private: the rename put a fresh 0644 file (umask 022) in its place,
    readable by everyone; the replacement takes the old file's mode."""
    target = tmp_path / "private.csv"
    target.write_text("old\n", encoding="utf-8")
    target.chmod(0o600)
    old = os.umask(0o022)
    try:
        write_output(target, "new\n")
    finally:
        os.umask(old)
    assert target.read_text(encoding="utf-8") == "new\n" and stat.S_IMODE(os.stat(target).st_mode) == 0o600


def test_a_read_only_file_is_refused_before_any_work(tmp_path, capsys):
    """A file with no write permission (chmod 444) was silently replaced by a writable one: the rename
    needs only the folder's permission. It is refused, as the shell's ``>`` refuses it, and stays."""
    target = tmp_path / "kept.csv"
    target.write_text("old\n", encoding="utf-8")
    target.chmod(0o444)
    assert "read-only" in clean_error(capsys, "cost", "layerpipe_sample", "--out", target)
    assert target.read_text(encoding="utf-8") == "old\n" and stat.S_IMODE(os.stat(target).st_mode) == 0o444


def test_a_block_device_is_refused_before_it_is_opened(tmp_path, capsys):
    """A disk is never an output: refused on its type alone (this node's disk is loop device 7:0)."""
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root (CI runs as root)")
    node = tmp_path / "disk"
    os.mknod(node, stat.S_IFBLK | 0o600, os.makedev(7, 0))
    assert "a block device" in clean_error(capsys, "cost", "layerpipe_sample", "--out", node)
    assert stat.S_ISBLK(os.stat(node).st_mode)


@pytest.mark.parametrize("name", ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"])
def test_out_to_the_processes_own_stdout_appends_to_the_shells_file(tmp_path: Path, name: str) -> None:
    """`archsim … --out /dev/stdout >> log`: the log the shell opened for appending keeps its earlier
    lines and its inode, and the output follows them — a writer that replaced the file the link leads
    to would leave only the new output in a new file."""
    import subprocess
    import sys

    log = tmp_path / "log.txt"
    log.write_text("earlier run\n", encoding="utf-8")
    inode = log.stat().st_ino
    with open(log, "a", encoding="utf-8") as appended:
        done = subprocess.run([sys.executable, "-m", "archsim", "cost", "layerpipe_sample", "--format", "csv",
                               "--out", name], stdout=appended, stderr=subprocess.PIPE, text=True, timeout=120,
                              check=False)
    assert done.returncode == 0, done.stderr
    text = log.read_text(encoding="utf-8")
    assert log.stat().st_ino == inode
    assert text.startswith("earlier run\n") and len(text.splitlines()) > 2
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_closed_own_descriptor_is_one_line() -> None:
    fd = os.open(os.devnull, os.O_WRONLY)
    os.close(fd)
    with pytest.raises(InputError, match="cannot write here"):
        write_output(f"/dev/fd/{fd}", "x")


def test_a_flag_abbreviated_to_an_output_flags_prefix_is_refused_and_writes_nothing(tmp_path, monkeypatch, capsys):
    """``archsim pipeline --schedule 1f1b`` (pipeline has no ``--schedule``) was read by argparse's prefix matching
    as ``--schedule-csv 1f1b`` and replaced the user's file ``1f1b`` with a schedule CSV, exit 0. Every flag must be
    spelt whole: the line names the unknown argument and the file keeps its bytes (failed before: the file
    was overwritten). pipeline has a ``--schedule`` since, so the prefix here is ``--schedule-c``."""
    monkeypatch.chdir(tmp_path)
    precious = tmp_path / "1f1b"
    precious.write_text("precious\n")
    line = clean_error(capsys, "pipeline", "layerpipe_sample", "--processors", "3", "--microbatches", "2",
                       "--schedule-c", "1f1b")
    assert "unrecognized arguments: --schedule-c 1f1b" in line
    assert precious.read_text() == "precious\n"


def test_every_parser_refuses_abbreviated_flags():
    """One rule for every command and sub-command (argparse's ``allow_abbrev``): a prefix of a flag is not that flag."""
    parsers = [parser for _, parser in subcommand_parsers(cli.build_parser())]
    assert len(parsers) >= 15 and all(not parser.allow_abbrev for parser in parsers)


def test_a_write_makes_one_temp_file_and_a_refused_folder_is_one_line(tmp_path: Path, monkeypatch) -> None:
    """A write made two temp files: its check's probe (made and removed) and the temp file it renames. The write's
    own temp file is the probe now: a new name, an existing file and a file of a new folder (probed first, where
    mkdir would otherwise make the folder) count 1, 1 and 2 files made (hand count). Failed before: 2, 2, 2.
    A folder that refuses files (``/proc``) is still the probe's one line, and nothing is left there."""
    import tempfile

    made = []
    real = tempfile.mkstemp

    def counted(*args, **kwargs):
        made.append(kwargs.get("dir"))
        return real(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", counted)
    counts = []
    for target in (tmp_path / "new.csv", tmp_path / "new.csv", tmp_path / "sub" / "new.csv"):
        made.clear()
        write_output(target, "a,b\n")
        counts.append(len(made))
    assert counts == [1, 1, 2]
    assert (tmp_path / "sub" / "new.csv").read_text() == "a,b\n"
    with pytest.raises(InputError, match=r"cannot create files in /proc"):
        write_output("/proc/archsim-write-test.csv", "a\n")
    assert not [name for name in os.listdir("/proc") if "archsim-write-test" in name]
