"""A model file that fixes a batch (an ONNX export's first input) is read per sample, so the batch costed replaces
the file's: ``cost``, ``energy``, ``pipeline`` and ``schedule`` said so in one note (a UserWarning from the library,
:func:`archsim.workload.shipped.file_batch_note`). The same note where the same situation arose without it: an
array sweep whose ``batches`` leave out the file's, ``archsim.schedule`` (its loader), and ``plan`` without
``--batch``, whose mini-batch is ``--microbatches`` × the micro-batch (default 4)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import archsim
from archsim.cli import main

REPO = Path(__file__).resolve().parents[1]
CLUSTER = str(REPO / "configs" / "clusters" / "a100_node.toml")
TAIL = "fixes batch 8; archsim reads its layers per sample and costs"  # after the file as the run names it
NOTE = f"fc8.onnx {TAIL}"  # a sweep names it as its spec does


def _fc8(folder: Path) -> Path:
    """x [8, 64] → Gemm 64 → 32 → Gemm 32 → 16: two fc layers, exported at a fixed batch of 8."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weights = [numpy_helper.from_array(np.zeros((32, 64), np.float32), "w1"),
               numpy_helper.from_array(np.zeros((16, 32), np.float32), "w2")]
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w1"], ["h"], name="fc1", transB=1),
         helper.make_node("Gemm", ["h", "w2"], ["y"], name="fc2", transB=1)], "fc",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 16])], weights)
    path = folder / "fc8.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _notes(text: str) -> list[str]:
    return [line for line in text.splitlines() if "fixes batch" in line]


def _caught(call) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning) and "fixes batch" in str(w.message)]


@pytest.mark.parametrize(("batches", "said"), [("[16, 32]", "batches 16, 32"), ("[16]", "batch 16"), ("[8, 16]", None)])
def test_an_array_sweep_notes_a_file_batch_none_of_its_batches_is(tmp_path, capsys, batches, said):
    """Defect: a sweep of fc8.onnx at batches 16 and 32 costed them with no word of the file's 8 (failed before the
    fix: no note). One note names the spec's batches and the key to change; a spec listing 8 says nothing."""
    _fc8(tmp_path)
    spec = tmp_path / "s.toml"
    spec.write_text(f'[sweep]\nname = "f"\nnetworks = ["fc8.onnx"]\narrays = ["32x32"]\nbatches = {batches}\n'
                    'processors = [2]\nmethods = ["gpipe"]\n', encoding="utf-8")
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    notes = _notes(capsys.readouterr().err)
    if said is None:
        assert notes == []
        return
    line = f"archsim sweep: note: {NOTE} {said} (the spec's batches): list 8 in batches to cost the file's batch"
    assert notes == [line]
    assert _caught(lambda: archsim.run_sweep(str(spec), out=tmp_path / "api")) == [notes[0].split("note: ", 1)[1]]


def test_the_schedule_library_warns_the_file_batch_as_the_command_notes_it(tmp_path, capsys):
    """Defect: ``archsim.schedule`` of fc8.onnx (its own loader) returned batch 32's schedule with no warning, where
    ``archsim schedule`` notes it (failed before the fix: none). One UserWarning, at the caller's line."""
    path = _fc8(tmp_path)
    assert main(["schedule", str(path), "--policy", "gpipe", "--processors", "2"]) == 0
    line = f"archsim schedule: note: {path} {TAIL} batch 32 (--batch 32): give --batch 8 to cost the file's batch"
    assert _notes(capsys.readouterr().err) == [line]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        archsim.schedule(str(path), policy="gpipe", processors=2)
    said = [w for w in caught if "fixes batch" in str(w.message)]
    assert [str(w.message) for w in said] == [f"{path} {TAIL} batch 32 (batch=32): give batch=8 to cost the file's batch"]
    assert said[0].filename == __file__
    assert _caught(lambda: archsim.schedule(str(path), policy="gpipe", processors=2, batch=8)) == []


@pytest.mark.parametrize(("flags", "said"), [
    (["--microbatches", "4"], 16),  # 4 micro-batches of the default 4 samples
    (["--microbatches", "2", "--micro-batch", "2"], 4),
    (["--microbatches", "4", "--batch", "32"], 32),
    (["--microbatches", "2"], None),  # 2 × 4 = 8: the file's batch
    (["--microbatches", "2", "--batch", "8"], None),
])
def test_plan_notes_a_file_batch_other_than_its_mini_batch(tmp_path, capsys, flags, said):
    """Defect: ``plan`` without ``--batch`` priced fc8.onnx's layers at its micro-batch with no word of the file's
    8 (failed before the fix: no note); with ``--batch`` it said it. Now it notes the mini-batch it plans either
    way, once; the library warns it too."""
    path = _fc8(tmp_path)
    assert main(["plan", str(path), "--cluster", CLUSTER, *flags]) == 0
    notes = _notes(capsys.readouterr().err)
    line = f"archsim plan: note: {path} {TAIL} batch {said} (--batch {said}): give --batch 8 to cost the file's batch"
    expected = [] if said is None else [line]
    assert notes == expected
    keywords = {flag.lstrip("-").replace("-", "_"): int(value) for flag, value in zip(flags[::2], flags[1::2])}
    warned = _caught(lambda: archsim.plan(str(path), cluster=CLUSTER, **keywords))
    line = f"{path} {TAIL} batch {said} (batch={said}): give batch=8 to cost the file's batch"
    assert warned == ([] if said is None else [line])
