"""Too long a sequence for a learned position table (GPT-2's config.json: n_positions 1024) is refused naming the
setting the caller used: ``--seq N`` from train and search, ``seq=N`` (field ``seq``) from the API,
``--dim seq=N`` from the array commands and ``import`` (no ``--seq`` there), ``dim={'seq': N}`` (field ``dim``)
from the API's ``dim``. Failed before: every one said "give --seq (--dim seq= in the array commands, seq= in the
API)", naming ``--seq`` first, a flag the API and ``import`` do not have."""

from __future__ import annotations

import pytest
from input_checks_common import GPT2, NODE

import archsim
from archsim.cli import main
from archsim.errors import InputError


def test_the_api_names_the_seq_keyword():
    with pytest.raises(InputError) as caught:
        archsim.train(GPT2, cluster=NODE, global_batch=8, seq=4096)
    assert caught.value.where.field == "seq"
    assert caught.value.message.endswith("cannot run a sequence of 4096: give seq=N of at most 1024")
    assert "--" not in caught.value.message


def test_the_apis_dim_names_the_dim_keyword():
    with pytest.raises(InputError) as caught:
        archsim.load_network(GPT2, dim={"seq": 2048})
    assert caught.value.where.field == "dim"
    assert caught.value.message.endswith("cannot run a sequence of 2048: give dim={'seq': N} of at most 1024")


def test_train_names_seq(capsys):
    assert main(["train", str(GPT2), "--cluster", str(NODE), "--global-batch", "8", "--seq", "4096"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("archsim train: error: ") and line.endswith("give --seq N of at most 1024"), line


@pytest.mark.parametrize("command", ["import", "cost"])
def test_import_and_the_array_commands_name_dim_seq(tmp_path, capsys, command):
    extra = ["-o", str(tmp_path / "gpt2.csv")] if command == "import" else []
    assert main([command, str(GPT2), "--dim", "seq=4096", *extra]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"archsim {command}: error: ") and "field 'dim'" in line, line
    assert line.endswith("give --dim seq=N of at most 1024") and "--seq" not in line, line
    assert not (tmp_path / "gpt2.csv").exists()
