"""A boolean written as text in a TOML file (``split_k = "true"``, ``nvls = "true"``) is a string, not the boolean
it was meant as: refused naming the key, as a number written as text is ("write the number without quotes").
A TOML device file read ``split_k = "true"`` as true; ``nvls`` and a model config's ``tied_embeddings`` were
refused as "expected true or false, got 'true'", which does not say what is wrong. A ``.cfg``'s values are all
text and stay read as such (docs/formats.md, "Device files")."""

from __future__ import annotations

from pathlib import Path

import pytest

from archsim.cli import main
from archsim.devices.device_file import load_device
from archsim.errors import InputError
from archsim.workload.model_files import load_transformer

ROOT = Path(__file__).resolve().parents[1]
DEVICES = ROOT / "configs" / "devices"
TPU = (DEVICES / "tpu_v4_like.toml").read_text(encoding="utf-8")
CFG = (DEVICES / "scalesim_32x32_device.cfg").read_text(encoding="utf-8")
MODEL = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")


@pytest.mark.parametrize("text", ['"true"', '"false"', '"True"'])
def test_a_device_files_boolean_as_text_is_refused_naming_the_key(text, tmp_path):
    path = tmp_path / "chip.toml"
    path.write_text(TPU.replace('gemm = "arrays"', f'gemm = "arrays"\nsplit_k = {text}'), encoding="utf-8")
    with pytest.raises(InputError, match="write true or false without quotes") as caught:
        load_device(path)
    assert caught.value.where.field == "device.split_k"


def test_a_device_files_boolean_is_read(tmp_path):
    """The same key unquoted, and a .cfg's text ``true``, are read as the boolean."""
    path = tmp_path / "chip.toml"
    path.write_text(TPU.replace('gemm = "arrays"', 'gemm = "arrays"\nsplit_k = true'), encoding="utf-8")
    assert load_device(path).split_k is True
    cfg = tmp_path / "chip.cfg"
    cfg.write_text(CFG.replace("arrays = 16", "arrays = 16\ngemm = arrays\nsplit_k = true"), encoding="utf-8")
    assert load_device(cfg).split_k is True


def test_a_cluster_files_nvls_as_text_is_one_line_naming_the_key(tmp_path, capsys):
    cluster = tmp_path / "cluster.toml"
    cluster.write_text('[cluster]\nname = "two_h100"\n\n[network]\nnics_per_server = 8\nnic_gbps = 400\n'
                       'gpus_per_nic = 1\nnvls = "true"\n\n[[servers]]\ncount = 2\ngpus = 8\ngpu = "h100-sxm"\n',
                       encoding="utf-8")
    assert main(["train", MODEL, "--cluster", str(cluster), "--tp", "8", "--dp", "2", "--global-batch", "4"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert "'nvls'" in captured.err and "write true or false without quotes" in captured.err


def test_a_model_configs_boolean_as_text_says_to_drop_the_quotes(tmp_path):
    path = tmp_path / "model.toml"
    path.write_text('[transformer]\nfamily = "gpt"\nlayers = 2\nhidden = 64\nheads = 4\nvocab = 100\nseq = 32\n'
                    'tied_embeddings = "false"\n', encoding="utf-8")
    with pytest.raises(InputError, match="write true or false without quotes") as caught:
        load_transformer(path)
    assert caught.value.where.field == "tied_embeddings"
