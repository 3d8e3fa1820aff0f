"""docs/security.md's statements about outputs, killed runs and a spec's names, each checked: every
row of its two tables has a check here (a row added or dropped without one fails), and the killed-run
paragraph's claims name the kill test's cases. The checks act on this test's own files and nodes."""

from __future__ import annotations

import argparse
import os
import socket
import stat
import threading
from pathlib import Path
from unittest import mock

import pytest
import test_sweep_kill
from test_docs import ROOT

from archsim.errors import InputError
from archsim.output_files import write_output
from archsim.output_targets import output_flag
from archsim.sweep.spec import load_spec

SECURITY = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
NULL, FULL = os.makedev(1, 3), os.makedev(1, 7)


def table_rows(header: str) -> list[list[str]]:
    """The rows (cells) of the docs table whose header line is ``header``."""
    lines = SECURITY[SECURITY.index(header):].splitlines()[2:]
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return rows


def refused_before_work(path: Path | str, words: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=words):
        output_flag(str(path))  # when the command line is read
    with pytest.raises(InputError, match=words):
        write_output(path, "x\n")


def need_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root (CI runs as root)")


def regular(tmp: Path) -> None:
    new = tmp / "new.csv"
    write_output(new, "a\n")
    old = new.stat().st_ino
    write_output(new, "b\n")
    assert new.read_text() == "b\n" and new.stat().st_ino != old  # renamed into place, not rewritten
    assert os.listdir(tmp) == ["new.csv"]  # no temp file left
    new.chmod(0o600)
    write_output(new, "c\n")
    assert stat.S_IMODE(new.stat().st_mode) == 0o600  # the old file's permissions kept


def read_only(tmp: Path) -> None:
    kept = tmp / "kept.csv"
    kept.write_text("old\n")
    kept.chmod(0o444)
    refused_before_work(kept, "a read-only file")
    assert kept.read_text() == "old\n" and os.listdir(tmp) == ["kept.csv"]


def symlink_to_file(tmp: Path) -> None:
    real, link = tmp / "real.csv", tmp / "link.csv"
    real.write_text("old\n")
    link.symlink_to(real)
    write_output(link, "new\n")
    assert link.is_symlink() and real.read_text() == "new\n"


def own_descriptor(tmp: Path) -> None:
    log = tmp / "log"
    log.write_text("earlier\n")
    inode = log.stat().st_ino
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)  # what `>> log` hands a process
    try:
        for name in (f"/dev/fd/{fd}", f"/proc/self/fd/{fd}"):
            write_output(name, "new\n")
    finally:
        os.close(fd)
    assert log.read_text() == "earlier\nnew\nnew\n" and log.stat().st_ino == inode
    assert sorted(os.listdir(tmp)) == ["log"]
    with pytest.raises(InputError, match="cannot write here"):  # the descriptor is closed now
        write_output(f"/dev/fd/{fd}", "x\n")


def character_device(tmp: Path) -> None:
    need_root()
    null, full = tmp / "null", tmp / "full"
    os.mknod(null, stat.S_IFCHR | 0o666, NULL)
    os.mknod(full, stat.S_IFCHR | 0o666, FULL)
    before = os.stat(null).st_ino
    write_output(null, "x\n")
    with pytest.raises(InputError, match="No space left on device"):
        write_output(full, "x\n")
    assert stat.S_ISCHR(os.stat(null).st_mode) and os.stat(null).st_ino == before and os.stat(full).st_rdev == FULL
    assert sorted(os.listdir(tmp)) == ["full", "null"]


def fifo(tmp: Path) -> None:
    path = tmp / "pipe"
    os.mkfifo(path)
    with pytest.raises(InputError, match="a FIFO with no reader"):
        write_output(path, "x\n")
    got = []
    reader = threading.Thread(target=lambda: got.append(path.read_bytes()))  # a blocking open: waits for us
    reader.start()
    for _ in range(2000):  # the reader's open is under way once the kernel counts it; retry until then
        try:
            write_output(path, "through\n")
            break
        except InputError:
            threading.Event().wait(0.005)
    reader.join(30)
    assert got == [b"through\n"] and stat.S_ISFIFO(os.lstat(path).st_mode)


def refused_kinds(tmp: Path) -> None:
    (tmp / "folder").mkdir()
    refused_before_work(tmp / "folder", "a folder")
    for ending in ("/", "/.", "/.."):
        refused_before_work(f"{tmp / 'out'}{ending}", "names a folder")
    assert not (tmp / "out").exists()
    (tmp / "dangling").symlink_to(tmp / "nowhere")
    refused_before_work(tmp / "dangling", "a symlink to nothing")
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(tmp / "sock"))
        refused_before_work(tmp / "sock", "a socket")
    finally:
        server.close()
    if os.geteuid() == 0:
        os.mknod(tmp / "disk", stat.S_IFBLK | 0o600, os.makedev(7, 0))
        refused_before_work(tmp / "disk", "a block device")


def refused_where_it_would_go(tmp: Path) -> None:
    (tmp / "file").write_text("x")
    refused_before_work(tmp / "file" / "out.csv", "file is a file, not a folder")
    refused_before_work(tmp / "new" / ("x" * 300), "a name too long")
    refused_before_work(tmp / ("y" * 250), "a name too long")  # fits NAME_MAX; its temp file does not
    refused_before_work(Path("/proc/archsim-security.csv"), "cannot create files in /proc")
    with mock.patch("os.access", lambda p, mode: Path(p) != tmp):  # root passes permission bits
        refused_before_work(tmp / "sub" / "out.csv", "no permission to create files in")
    assert os.listdir(tmp) == ["file"]
    write_output(tmp / "sub" / "out.csv", "x\n")  # a new folder under a writable one is made
    assert (tmp / "sub" / "out.csv").read_text() == "x\n"


def folder_refuses_rename(tmp: Path) -> None:
    kept = tmp / "kept.csv"
    kept.write_text("old\n")
    with mock.patch("os.access", lambda p, mode: Path(p) != tmp):
        refused_before_work(kept, "no permission to create files in")
    assert kept.read_text() == "old\n" and os.listdir(tmp) == ["kept.csv"]


def os_refuses(tmp: Path) -> None:
    (tmp / "out.csv").write_text("old\n")

    def full(*_args):
        raise OSError(28, "No space left on device")

    with mock.patch("os.fsync", full), pytest.raises(InputError, match="No space left") as caught:
        write_output(tmp / "out.csv", "new\n")
    assert caught.value.where.file == str(tmp / "out.csv")
    assert os.listdir(tmp) == ["out.csv"] and (tmp / "out.csv").read_text() == "old\n"


WRITES = {"a regular file, or a new name": regular,
          "a read-only regular file (no write permission bit, or none for this user)": read_only, "a symlink to a regular file": symlink_to_file,
          "this process's own descriptor: `/dev/stdout`, `/dev/stderr`, `/dev/fd/N`, `/proc/self/fd/N`": own_descriptor,
          "a character device (`/dev/null`, a terminal)": character_device, "a FIFO": fifo,
          "a folder (or a name written as one: `out/`, `out/.`, `out/..`, which were written as a file `out` until "
          "2026-12-03), a dangling symlink, a socket, a block device (a disk)": refused_kinds,
          "a new name where a file is in the way (`blocked/g.html`, `blocked` a file), under a folder this process "
          "cannot create files in (no permission, a read-only mount, `/proc`, `/sys`), or longer than the file "
          "system allows": refused_where_it_would_go,
          "an existing regular file whose folder refuses the rename (no permission to create the temp file beside "
          "it)": folder_refuses_rename,
          "a place the OS refuses only when written (a full disk)": os_refuses}


def test_every_output_row_has_a_check():
    assert [row[0] for row in table_rows("| the name is | what archsim does |")] == list(WRITES)


@pytest.mark.parametrize("row", WRITES)
def test_the_output_row_holds(tmp_path, row):
    WRITES[row](tmp_path)


SPEC = '[sweep]\nnetworks = [{networks}]\narrays = ["8x8"]\nbatches = [2]\nprocessors = [2]\nmethods = ["gpipe"]\n'


def spec(folder: Path, networks: str = '"layerpipe_sample"', tables: str | None = None):
    text = SPEC.format(networks=networks) + (f"energy_tables = [{tables}]\nclocks_ghz = [1.0]\n" if tables else "")
    path = folder / "s.toml"
    path.write_text(text, encoding="utf-8")
    return load_spec(path)


def networks_files(tmp: Path) -> None:
    (tmp / "models").mkdir()
    for name in ("net.csv", "models/net.csv", "plain"):  # a suffix, a '/', an existing file
        (tmp / name).write_text((ROOT / "layers" / "layerpipe_sample.csv").read_text())
        assert spec(tmp, f'"{name}"').networks == (str((tmp / name).resolve()),)
    with pytest.raises(InputError, match="not found in the spec's folder"):
        spec(tmp, '"missing.csv"')


def networks_shipped(tmp: Path) -> None:
    assert spec(tmp, '"vgg16"').networks == ("vgg16",)
    with pytest.raises(InputError, match="no shipped network named 'passwd'"):
        spec(tmp, '"passwd"')


def tables_files(tmp: Path) -> None:
    table = Path(str(ROOT / "configs" / "energy" / "horowitz45.toml")).read_text()
    (tmp / "t.toml").write_text(table)
    assert spec(tmp, tables='"t.toml"').designs[0].energy_table == str((tmp / "t.toml").resolve())
    with pytest.raises(InputError, match="inside"):
        spec(tmp, tables='"../t.toml"')


def tables_shipped(tmp: Path) -> None:
    assert spec(tmp, tables='"horowitz45"').designs[0].energy_table == "horowitz45"
    for name in ("/etc/passwd", "nosuch"):
        with pytest.raises(InputError, match="energy_tables"):
            spec(tmp, tables=f'"{name}"')


def arrays_files(tmp: Path) -> None:
    (tmp / "arrays").mkdir()
    for name in ("a.cfg", "arrays/a.CFG"):
        (tmp / name).write_text((ROOT / "configs" / "arrays" / "scalesim_32x32_ws.cfg").read_text())
        path = tmp / "s.toml"
        path.write_text(SPEC.replace('["8x8"]', f'["{name}"]').format(networks='"layerpipe_sample"'))
        assert [a.path for a in load_spec(path).arrays] == [str((tmp / name).resolve())]
    for name, words in (("missing.cfg", "not found in the spec's folder"), ("../a.cfg", "inside"),
                        ("/etc/passwd.cfg", "inside")):
        path.write_text(SPEC.replace('["8x8"]', f'["{name}"]').format(networks='"layerpipe_sample"'))
        with pytest.raises(InputError, match=words) as caught:
            load_spec(path)
        assert caught.value.where.field == "arrays"


def arrays_shapes(tmp: Path) -> None:
    assert spec(tmp).arrays == ((8, 8),)
    (tmp / "a").write_text((ROOT / "configs" / "arrays" / "scalesim_32x32_ws.cfg").read_text())  # no .cfg suffix
    path = tmp / "s.toml"
    for name in ("a", "/etc/passwd"):
        path.write_text(SPEC.replace('["8x8"]', f'["{name}"]').format(networks='"layerpipe_sample"'))
        with pytest.raises(InputError, match="expected ROWSxCOLS") as caught:
            load_spec(path)
        assert caught.value.where.field == "arrays"


DEVICE_SPEC = '[sweep]\nmodel = "{model}"\ndevice = "{device}"\nchips = [1]\nglobal_batch = 1\n'


def device_spec(folder: Path, model: str = "gpt2", device: str = "tpu_v4_like"):
    path = folder / "s.toml"
    path.write_text(DEVICE_SPEC.format(model=model, device=device), encoding="utf-8")
    return load_spec(path)


def model_files(tmp: Path) -> None:
    (tmp / "models").mkdir()
    for name in ("m.json", "models/m.json", "plain"):  # a suffix, a '/', an existing file
        (tmp / name).write_text((ROOT / "configs" / "transformers" / "gpt2.json").read_text())
        if name == "plain":  # read, and refused as what it is not: a config is a .json or a .toml
            with pytest.raises(InputError) as caught:
                device_spec(tmp, name)
            assert caught.value.where.field == "model" and "plain" in str(caught.value)
            continue
        assert device_spec(tmp, name).setup.model_path == str((tmp / name).resolve())
    for name, words in (("missing.json", "not found in the spec's folder"), ("../m.json", "inside")):
        with pytest.raises(InputError, match=words):
            device_spec(tmp, name)


def model_shipped(tmp: Path) -> None:
    assert Path(device_spec(tmp, "gpt2").setup.model_path).resolve() == (ROOT / "configs/transformers/gpt2.json").resolve()
    for name in ("passwd", "/etc/passwd"):
        with pytest.raises(InputError) as caught:
            device_spec(tmp, name)
        assert caught.value.where.field == "model"


def device_files(tmp: Path) -> None:
    (tmp / "devices").mkdir()
    for name in ("d.toml", "devices/d.toml", "plain"):  # a suffix, a '/', an existing file
        (tmp / name).write_text((ROOT / "configs" / "devices" / "tpu_v4_like.toml").read_text())
        if name == "plain":  # read, and refused as what it is not: a device file is a .toml or a .cfg
            with pytest.raises(InputError, match="a device file is a .toml or a SCALE-Sim .cfg"):
                device_spec(tmp, device=name)
            continue
        assert device_spec(tmp, device=name).setup.device_path == str((tmp / name).resolve())
    for name, words in (("missing.toml", "not found in the spec's folder"), ("../d.toml", "inside")):
        with pytest.raises(InputError, match=words):
            device_spec(tmp, device=name)


def device_shipped(tmp: Path) -> None:
    shipped = ROOT / "configs" / "devices"
    for name, file in (("tpu_v4_like", "tpu_v4_like.toml"), ("scalesim_32x32_device", "scalesim_32x32_device.cfg")):
        assert Path(device_spec(tmp, device=name).setup.device_path).resolve() == (shipped / file).resolve()
    for name in ("passwd", "/etc/passwd"):
        with pytest.raises(InputError) as caught:
            device_spec(tmp, device=name)
        assert caught.value.where.field == "device"


NAMES = {("`networks`", "a file beside"): networks_files, ("`networks`", "anything else"): networks_shipped,
         ("`energy_tables`", "ending in `.toml`"): tables_files, ("`energy_tables`", "anything else"): tables_shipped,
         ("`arrays`", "ending in `.cfg`"): arrays_files, ("`arrays`", "anything else"): arrays_shapes,
         ("`model` (device sweep)", "a file beside"): model_files, ("`model` (device sweep)", "anything else"): model_shipped,
         ("`device` (device sweep)", "a file beside"): device_files,
         ("`device` (device sweep)", "anything else"): device_shipped}


def test_every_spec_name_row_has_a_check():
    rows = table_rows("| key | a name that is | reads |")
    assert len(rows) == len(NAMES)
    for (key, start), row in zip(NAMES, rows, strict=True):
        assert row[0] == key and row[1].startswith(start), row


@pytest.mark.parametrize("row", NAMES, ids=lambda row: " ".join(row))
def test_the_spec_name_row_holds(tmp_path, row):
    NAMES[row](tmp_path)


def test_the_killed_run_paragraph_names_the_kill_tests_cases():
    """The paragraph says which cases are killed; the kill test must run those very cases."""
    paragraph = SECURITY[SECURITY.index("**A killed run leaves nothing running"):]
    paragraph = paragraph[:paragraph.index("\n\n")]
    assert "`tests/test_sweep_kill.py`: 1, 2 and 4 workers and `--dask local`" in " ".join(paragraph.split())
    cases = next(mark for mark in test_sweep_kill.test_a_killed_sweep_leaves_no_worker_and_no_lock.pytestmark
                 if mark.name == "parametrize").args[1]
    assert cases == [["--workers", "1"], ["--workers", "2"], ["--workers", "4"], ["--dask", "local", "--workers", "2"]]
    assert "PR_SET_PDEATHSIG" in paragraph and "kill -9" in paragraph


def test_the_results_folder_row_holds(tmp_path, capsys):
    """'What archsim reads': a sweep's folder is read for its own files, and a network file its
    results.csv names outside it is never opened: a FIFO there would block or be refused if it were."""
    import test_report_confined

    from archsim.cli import main

    row = next(row for row in table_rows("| input | given as | read from |") if row[0].startswith("a sweep's folder"))
    assert "only inside it" in row[2]
    paragraph = SECURITY[SECURITY.index("**A results folder reads nothing outside it.**"):]
    assert "`tests/test_report_confined.py`" in paragraph[:paragraph.index("\n\n")]
    results = test_report_confined.sweep(tmp_path, tmp_path / "results")
    os.mkfifo(tmp_path / "net.csv")
    for hostile in (str(tmp_path / "net.csv"), "../net.csv"):
        test_report_confined.renamed(results, hostile, sha256="0" * 64)
        assert main(["report", str(results), "--out", str(tmp_path / "r.html")]) == 0
        assert "not read" in capsys.readouterr().err
    assert stat.S_ISFIFO(os.lstat(tmp_path / "net.csv").st_mode)
