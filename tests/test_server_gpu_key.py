"""A device file written in a cluster's ``gpu`` key: the refusal names ``device`` as the key to write,
whether or not the table states its in-server link (docs/formats.md, Cluster, ``device``)."""

from pathlib import Path

import pytest

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
GPT = ROOT / "configs" / "transformers" / "gpt2.json"


@pytest.mark.parametrize("intra", ["", "intra_server_gbps = 1600\n"])
@pytest.mark.parametrize("name", ["mychip.toml", "mychip.cfg"])
@pytest.mark.parametrize("command", [["train", "--dp", "2"], ["search"]])
def test_a_device_file_as_gpu_is_refused_naming_device(tmp_path, capsys, intra, name, command):
    cluster = tmp_path / "c.toml"
    cluster.write_text(f'[cluster]\nname = "x"\n[[servers]]\ngpus = 2\n{intra}gpu = "{name}"\n')
    argv = [command[0], str(GPT), "--cluster", str(cluster), "--global-batch", "8", *command[1:]]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f'device = "{name}"' in err and "field 'servers[1].gpu'" in err, err


def test_an_unknown_catalog_name_still_lists_the_catalog(tmp_path, capsys):
    """A name that is no file name keeps the catalog's list, with or without the in-server link."""
    cluster = tmp_path / "c.toml"
    cluster.write_text('[cluster]\nname = "x"\n[[servers]]\ngpus = 2\ngpu = "warp-9"\n')
    assert main(["train", str(GPT), "--cluster", str(cluster), "--global-batch", "8", "--dp", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown GPU 'warp-9'" in err and "a100-80gb" in err, err
