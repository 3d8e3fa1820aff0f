"""The library's notes are kept by a context variable (:func:`archsim.console.notes_kept`), never by
:class:`warnings.catch_warnings`, which swaps the process's one filter list: a thread warning while another ran
inside one lost its warning (caught in the other's record, or ignored by its filter). Each test runs a block that
was a ``catch_warnings`` (``archsim cluster``'s trace, ``archsim search``'s run, a device sweep's point) in a
thread while the main thread warns in the middle of it.

Failed before the fix: the main thread's warning never reached its own record, in each of the three."""

from __future__ import annotations

import threading
import warnings
from pathlib import Path

from test_cluster_trace_warning import TRACE
from tiny_search import tiny_files

import archsim.api
import archsim.cluster.trace
from archsim.cli import main
from archsim.console import library_note, notes_kept

ROOT = Path(__file__).resolve().parents[1]
MINE = "the main thread's own warning"


def beside(monkeypatch, module, name: str, job):
    """Run ``job`` in a thread; once that thread calls ``module.name`` (inside the block under test) the main
    thread warns, then lets it go on. Returns the main thread's warnings' texts and ``job``'s value."""
    inside, warned = threading.Event(), threading.Event()
    real = getattr(module, name)

    def held(*args, **kwargs):
        inside.set()
        assert warned.wait(60)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, held)
    out: dict[str, object] = {}

    def run() -> None:
        try:
            out["value"] = job()
        except Exception as exc:  # noqa: BLE001 - re-raised in the main thread
            out["error"] = exc
        finally:
            inside.set()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        thread = threading.Thread(target=run)
        thread.start()
        assert inside.wait(120)
        warnings.warn(MINE, UserWarning, stacklevel=1)
        warned.set()
        thread.join(300)
    if "error" in out:
        raise out["error"]  # type: ignore[misc]
    return [str(w.message) for w in caught], out.get("value")


def test_no_library_module_swaps_the_warning_filters():
    """torch_import is the one exception: the warnings it silences are torch's exporter's own, which no archsim
    function says (a context variable cannot reach them)."""
    users = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "archsim").rglob("*.py")
                   if "catch_warnings(" in path.read_text(encoding="utf-8"))
    assert users == ["archsim/workload/torch_import.py"]


def test_notes_kept_in_one_thread_leave_another_thread_warning():
    entered, warned = threading.Event(), threading.Event()
    kept_there: list[str] = []

    def keeper() -> None:
        with notes_kept() as kept:
            entered.set()
            warned.wait(30)
            library_note("the thread's note")
        kept_there.extend(kept)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        thread = threading.Thread(target=keeper)
        thread.start()
        assert entered.wait(30)
        library_note("the main thread's note")
        warned.set()
        thread.join(30)
    assert [str(w.message) for w in caught] == ["the main thread's note"]
    assert kept_there == ["the thread's note"]


def test_cluster_keeps_its_trace_note_beside_another_thread(tmp_path, monkeypatch, capsys):
    trace = tmp_path / "trace.csv"
    trace.write_text(TRACE, encoding="utf-8")
    argv = ["cluster", "--trace", str(trace), "--gpus", "2", "--policy", "jigsaw", "--out", str(tmp_path / "o")]
    mine, code = beside(monkeypatch, archsim.cluster.trace, "load_tiresias_csv", lambda: main(argv))
    err = capsys.readouterr().err
    assert code == 0, err
    assert mine == [MINE]  # neither lost nor joined by the trace's note
    notes = [line for line in err.splitlines() if "under half" in line]
    assert len(notes) == 1 and notes[0].startswith("archsim cluster: note: ") and "job short" in notes[0]


def test_search_prints_its_note_beside_another_thread(tmp_path, monkeypatch, capsys):
    """3 GPUs, a global batch of 7, 4 heads and 4 layers: no TP × PP × DP split, an empty answer whose note
    ``archsim.search`` warns and the command prints itself, once."""
    model, cluster = tiny_files(tmp_path)
    argv = ["search", model, "--cluster", cluster, "--global-batch", "7", "--gpus", "3", "--format", "json"]
    mine, code = beside(monkeypatch, archsim.api, "search", lambda: main(argv))
    err = capsys.readouterr().err
    assert code == 0, err
    assert mine == [MINE]  # neither ignored nor joined by search's note
    assert err.count("no configuration on 3 GPUs") == 1 and err.startswith("archsim search: note: "), err


def test_a_device_point_drops_its_notes_beside_another_thread(tmp_path, monkeypatch):
    """A point whose memory does not fit (GPT-2, micro-batch 64, no recompute, on 32 GiB chips) is its row's
    ``fits_memory`` False, not a warning: neither in the point's thread nor in the main one."""
    from archsim.sweep.device_points import point_rows
    from archsim.sweep.spec import load_spec

    (tmp_path / "chip.toml").write_text((ROOT / "configs/devices/tpu_v4_like.toml").read_text(encoding="utf-8"))
    (tmp_path / "spec.toml").write_text('[sweep]\nmodel = "gpt2"\ndevice = "chip.toml"\nchips = [1]\n'
                                        'global_batch = 64\nmicro_batch = 64\nrecompute = "none"\ndtype = "bf16"\n'
                                        'attention = "standard"\n')
    spec = load_spec(tmp_path / "spec.toml")
    mine, rows = beside(monkeypatch, archsim.api, "train", lambda: point_rows(next(iter(spec.units()))))
    assert mine == [MINE]
    [row] = rows  # type: ignore[misc]
    assert row["fits_memory"] is False and row["peak_memory_gib"] > 32
