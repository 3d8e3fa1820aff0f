"""A PyTorch model from the command line: ``model.py:ClassName --input-shape …`` wherever a NETWORK goes.

References: the hand counts in tests/data/torch/tiny_model.py's docstring (never archsim's output).
"""

from __future__ import annotations

import tomllib

import pytest
from test_docs import ROOT

from archsim.cli import main
from archsim.workload import load_network

torch = pytest.importorskip("torch")

MODEL = ROOT / "tests" / "data" / "torch" / "tiny_model.py"
TINY = f"{MODEL}:TinyNet"


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_class_in_a_file_loads_with_the_hand_counted_macs():
    network = load_network(TINY, input_shape="1,3,16,16")
    assert [layer.kind for layer in network.layers] == ["conv", "elementwise", "pool", "fc"]
    assert [layer.macs for layer in network.layers if layer.kind in ("conv", "fc")] == [55_296, 5_120]


def test_import_and_every_network_command_take_it(capsys, tmp_path):
    out_csv = tmp_path / "tiny.csv"
    code, _, err = run(["import", TINY, "--input-shape", "1,3,16,16", "-o", str(out_csv)], capsys)
    assert code == 0 and "4 layers" in err
    assert [layer.macs for layer in load_network(out_csv).layers] == [55_296, 0, 0, 5_120]
    for argv in (["cost", TINY], ["pipeline", TINY, "--processors", "2"]):
        code, _, err = run([*argv, "--input-shape", "1x3x16x16", "--format", "csv"], capsys)
        assert code == 0, err


@pytest.mark.parametrize("argv, words", [
    ([TINY], "needs --input-shape"),
    ([TINY, "--input-shape", "1,3,0,16"], "positive integers"),
    ([TINY, "--input-shape", "1,3,a,16"], "positive integers"),
    ([TINY, "--input-shape", "100000,3,1000,1000"], "over the limit"),
    ([f"{MODEL}:Missing", "--input-shape", "1,3,16,16"], "found: NeedsArguments, TinyNet"),
    ([f"{MODEL}:NeedsArguments", "--input-shape", "1,4"], "built with no arguments"),
    ([f"{ROOT}/no_such_model.py:TinyNet", "--input-shape", "1,3,16,16"], "no such Python file"),
    (["layerpipe_sample", "--input-shape", "1,3,16,16"], "applies to a PyTorch model"),
    ([TINY, "--input-shape", "1,3,16,16", "--dim", "seq=4"], "--input-shape"),
])
def test_mistakes_are_one_line(argv, words, capsys):
    code, out, err = run(["cost", *argv], capsys)
    assert code == 2 and out == "" and words in err and len(err.strip().splitlines()) == 1


@pytest.mark.long
@pytest.mark.filterwarnings("ignore::FutureWarning")  # torch's own exporter warns about its internals
def test_the_torch_extra_carries_the_exporters_dependency(tmp_path):
    """A user's own torch.onnx.export (its default exporter) needs onnxscript: the torch extra brings it."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(req.startswith("onnxscript") for req in extras["torch"])
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU())
    module.eval()
    torch.onnx.export(module, (torch.zeros(1, 3, 8, 8),), str(tmp_path / "m.onnx"), external_data=False)
    assert [layer.kind for layer in load_network(tmp_path / "m.onnx").layers] == ["conv", "elementwise"]


def test_a_slow_import_shows_its_phases_on_a_terminal(monkeypatch):
    """Importing torch and tracing take seconds: a terminal sees which phase is under way, a file nothing."""
    import io
    import sys

    from archsim.workload import torch_file

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(torch_file, "PROGRESS_DELAY_S", 0.0)  # as if each phase had taken seconds
    for stream in (Terminal(), io.StringIO()):
        monkeypatch.setattr(sys, "stderr", stream)
        torch_file.load_torch_file(TINY, "1,3,16,16")
        shown = stream.getvalue()
        if stream.isatty():
            assert "tiny_model.py:TinyNet" in shown and "importing torch" in shown and "tracing TinyNet" in shown
        else:
            assert shown == ""
