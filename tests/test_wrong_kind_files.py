"""User trial 29: a file of the wrong kind given where another is read was parsed as the expected kind, and
the error described its bytes, not the mix-up — ``train model.onnx``: 'transformer config is not UTF-8 text',
``train net.csv``: 'not valid TOML', ``cost model.pt``: 'topology file is not UTF-8 text', ``cost model.py``:
'header has 2 columns'. Each test failed before its fix: the line did not name what the file is."""

from __future__ import annotations

from pathlib import Path

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
NODE = str(ROOT / "configs" / "clusters" / "h100_1gpu.toml")


def test_a_network_file_given_to_train_is_named_as_one(tmp_path, capsys):
    """``train``/``search`` on an ONNX file or a topology CSV: the line names it a network and says where it goes."""
    onnx = tmp_path / "model.onnx"
    onnx.write_bytes(b"\x08\x08\x12\x07pytorch\x1a\x032.1:\x80\x01")  # an ONNX ModelProto's first bytes
    for network in (str(onnx), str(ROOT / "docs" / "examples" / "tiny_resnet.csv")):
        for command in ("train", "search"):
            assert main([command, network, "--cluster", NODE, "--global-batch", "8"]) == 2
            err = capsys.readouterr().err.strip()
            assert err.startswith(f"archsim {command}: error: ") and "\n" not in err
            assert "network" in err and "transformer config" in err and "cost" in err, err


def test_a_pytorch_file_given_to_an_array_command_says_how_pytorch_is_read(tmp_path, capsys):
    """A checkpoint (``.pt``, ``.pth``) and a ``.py`` without ``:ClassName``: one line naming the way in."""
    checkpoint = tmp_path / "model.pt"
    checkpoint.write_bytes(b"PK\x03\x04\x00\x00\x08\x08\x00\x00\x80\x01")  # torch.save's zip archive opening
    module = tmp_path / "model.py"
    module.write_text("import torch\n\nclass Net(torch.nn.Module):\n    pass\n")
    for command in ("cost", "import"):
        for path in (checkpoint, module):
            assert main([command, str(path), *(["--array", "8x8"] if command == "cost" else
                                                ["-o", str(tmp_path / "out.csv")])]) == 2
            err = capsys.readouterr().err.strip()
            assert err.startswith(f"archsim {command}: error: ") and "\n" not in err
            assert ":ClassName" in err and "--input-shape" in err, err
    assert not (tmp_path / "out.csv").exists()
