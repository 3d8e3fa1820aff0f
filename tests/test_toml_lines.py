"""A value or key error in a TOML file names the key's line, as README promises ("file, line and field"): before
archsim/toml_lines.py only a syntax error had a line (each reader test here failed on that code: no ``line N``),
and a key of the 2nd [[servers]] table was named as a bare ``gpus``. Every expected line is counted by hand in the
text the test writes (or found by searching the shipped file's text for the line edited)."""

from __future__ import annotations

from pathlib import Path

import pytest

from archsim.cli import main
from archsim.errors import InputError
from archsim.toml_errors import line_of
from archsim.toml_lines import key_lines

ROOT = Path(__file__).resolve().parent.parent

TRICKY = '''# a comment with [table] and key = 1
title = """a multi-line string
[not.a.table]
not_a_key = 2"""
"quoted.key" = 1          # one key whose name holds a dot
'literal' = 'x = [y]'
site.owner.name = "x"
numbers = [ 1, # [fake] = 3
  "]", \'\'\'
[still.a.string] = 4\'\'\',
  { inner = 1, deeper = { leaf = 2 } } ]
[ table . 'sub' ]
point = { x = 1, y = [1,
  2] }

[[servers]]
gpus = 8
[[servers.disks]]
size = 1
[[servers]]
gpus = 4
a."b.c" = "\\"]"
'''


def test_the_locator_reads_tricky_toml():
    """Each path's line as counted by hand in TRICKY (tomllib parses it: the text is valid TOML)."""
    import tomllib

    tomllib.loads(TRICKY)
    lines = key_lines(TRICKY)
    expected = {
        ("title",): 2, ("quoted.key",): 5, ("literal",): 6,
        ("site",): 7, ("site", "owner"): 7, ("site", "owner", "name"): 7,
        ("numbers",): 8, ("numbers", "inner"): 11, ("numbers", "deeper"): 11, ("numbers", "deeper", "leaf"): 11,
        ("table", "sub"): 12, ("table", "sub", "point"): 13, ("table", "sub", "point", "x"): 13,
        ("table", "sub", "point", "y"): 13,
        ("servers", 0): 16, ("servers", 0, "gpus"): 17, ("servers", 0, "disks", 0): 18,
        ("servers", 0, "disks", 0, "size"): 19,
        ("servers", 1): 20, ("servers", 1, "gpus"): 21, ("servers", 1, "a"): 22, ("servers", 1, "a", "b.c"): 22,
    }
    assert lines == expected


def test_a_dotted_keys_parent_on_two_lines_has_no_line():
    lines = key_lines("a.b = 1\na.c = 2\n")
    assert lines == {("a",): None, ("a", "b"): 1, ("a", "c"): 2}
    assert line_of(lines, "a") is None and line_of(lines, "c") == 2


def test_a_field_finds_its_line_only_where_one_key_is_meant():
    text = '[cluster]\nseed = 1\n[[servers]]\ngpus = 8\n[[servers]]\ngpus = 4\ngpu = "x"\n'
    lines = key_lines(text)
    assert line_of(lines, "seed") == 2 and line_of(lines, "cluster.seed") == 2
    assert line_of(lines, "servers[2].gpus") == 6 and line_of(lines, "servers[1].gpus") == 4
    assert line_of(lines, "gpus") is None  # two tables' key: never the wrong one's line
    assert line_of(lines, "gpu") is None  # one table has it, but a bare name may mean the other (that lacks it)
    assert line_of(lines, "servers[1].gpu") is None and line_of(lines, "servers[3].gpus") is None
    assert line_of(lines, "nonsense[") is None


CLUSTER = '''[cluster]
inter_server_gbps = 200

[[servers]]
gpu = "a100-80gb"
gpus = 8

[[servers]]
gpu = "a100-80gb"
gpus = {gpus}
{extra}intra_server_gbps = 4800
'''


@pytest.mark.parametrize(("gpus", "extra", "message"), [
    ("-8", "", "/c.toml, line 10, field 'servers[2].gpus': expected a positive integer, got '-8'"),
    ("8", "bogus = 1\n", "/c.toml, line 11, field 'servers[2].bogus': unknown key in [[servers]]"),
    ("8", "gpu_watts = -1\n", "/c.toml, line 11, field 'servers[2].gpu_watts': expected a positive number"),
])
def test_train_names_the_line_and_the_table_of_a_servers_key(tmp_path, capsys, gpus, extra, message):
    path = tmp_path / "c.toml"
    path.write_text(CLUSTER.format(gpus=gpus, extra=extra))
    assert main(["train", "gpt2", "--cluster", str(path), "--global-batch", "64"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err


def test_an_unknown_catalog_gpu_names_its_table_and_line(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text(CLUSTER.format(gpus="8", extra="").replace('gpu = "a100-80gb"\ngpus = 8\nintra', 'gpu = "z9"\n'
                                                                                                    'gpus = 8\nintra'))
    assert main(["train", "gpt2", "--cluster", str(path), "--global-batch", "64"]) == 2
    assert "/c.toml, line 9, field 'servers[2].gpu': unknown GPU 'z9'" in capsys.readouterr().err


def test_plan_names_the_line_of_a_cluster_key(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text('[cluster]\ninter_server_gbps = 50\ninter_server_link = "bogus"\n\n[[servers]]\ngpus = 2\n'
                    "intra_server_gbps = 128\n")
    assert main(["plan", "layerpipe_sample", "--cluster", str(path), "--microbatches", "4",
                 "--out", str(tmp_path / "p.csv")]) == 2
    assert "/c.toml, line 3, field 'inter_server_link': expected one of" in capsys.readouterr().err


def test_a_missing_key_has_no_line(tmp_path):
    """A key that is not there has no line: the other table's ``gpus`` (line 6) is not it."""
    path = tmp_path / "c.toml"
    path.write_text(CLUSTER.format(gpus="8", extra="").replace("gpus = 8\nintra", "intra"))
    from archsim.training.cluster_file import load_gpu_cluster

    with pytest.raises(InputError) as caught:
        load_gpu_cluster(path)
    assert caught.value.where.line is None and caught.value.where.field == "servers[2].gpus"


def test_a_device_files_key_names_its_line(tmp_path):
    text = (ROOT / "configs/devices/tpu_v4_like.toml").read_text()
    assert "clock_mhz = 1050\n" in text
    path = tmp_path / "chip.toml"
    path.write_text(text.replace("clock_mhz = 1050", "clock_mhz = -5"))
    from archsim.devices.device_file import load_device

    with pytest.raises(InputError) as caught:
        load_device(path)
    assert caught.value.where.line == text.splitlines().index("clock_mhz = 1050") + 1 == 19
    assert caught.value.where.field == "compute.clock_mhz"


def test_an_energy_tables_key_names_its_line(tmp_path):
    text = (ROOT / "configs/energy/horowitz45.toml").read_text()
    path = tmp_path / "table.toml"
    path.write_text(text.replace("per_pe = 3\n", "per_pe = -3\n"))
    from archsim.energy.table import load_table

    with pytest.raises(InputError) as caught:
        load_table(str(path))
    assert caught.value.where.field == "register.per_pe"
    assert caught.value.where.line == text.splitlines().index("per_pe = 3") + 1 == 38  # counted: after the comments above it


def test_a_sweep_specs_key_names_its_line(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text('# a spec\n[sweep]\nnetworks = ["layerpipe_sample"]\narrays = ["32x32"]\nbatches = [16]\n'
                    'processors = [2]\nmethods = ["gpipe"]\nmode = "bogus"\n')
    assert main(["sweep", str(path), "--out", str(tmp_path / "out")]) == 2
    assert "/s.toml, line 8, field 'mode': unknown mode 'bogus'" in capsys.readouterr().err


def test_a_transformer_tomls_key_names_its_line(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text('[transformer]\nfamily = "gpt"\nlayers = 2\nhidden = 64\nheads = 4\nvocab = 100\nseq = 32\n'
                    "bogus = 1\n")
    from archsim.workload.model_files import load_transformer

    with pytest.raises(InputError) as caught:
        load_transformer(path)
    assert (caught.value.where.line, caught.value.where.field) == (8, "bogus")
