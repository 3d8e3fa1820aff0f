"""``archsim schedule``'s error on an unknown (or blank) NETWORK lists every network it takes by name: the CSVs in
``layers/`` and the block network of out-of-order backprop's BERT (``bert_large_blocks``, one layer per encoder
block, docs/cli.md). Failed before: the list was ``layers/``'s alone, without the block network schedule takes."""

from __future__ import annotations

from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
# the reference, read independently: every CSV in layers/, and the block network the ooo-pipe policies take
EXPECTED = sorted([path.stem for path in (ROOT / "layers").glob("*.csv")] + ["bert_large_blocks"])


def _listed(err: str) -> list[str]:
    assert len(err.strip().splitlines()) == 1, err
    return err.strip().rsplit("; shipped: ", 1)[1].split(", ")


@pytest.mark.parametrize("network", ["nosuchnet", ""])
def test_schedule_lists_every_network_it_takes_by_name(capsys, network):
    assert main(["schedule", network, "--policy", "gpipe", "--processors", "2"]) == 2
    assert sorted(_listed(capsys.readouterr().err)) == EXPECTED


def test_the_library_lists_them_too():
    with pytest.raises(InputError) as caught:
        archsim.schedule("nosuchnet", policy="gpipe", processors=2)
    assert sorted(_listed(str(caught.value))) == EXPECTED


def test_a_near_miss_of_the_block_network_is_named(capsys):
    assert main(["schedule", "bert_large_block", "--policy", "ooo-pipe1", "--processors", "4"]) == 2
    assert "(did you mean 'bert_large_blocks'?)" in capsys.readouterr().err


def test_other_commands_still_list_the_csvs_alone(capsys):
    """cost takes no block network: its list stays layers/' (bert_large_blocks would be refused there)."""
    assert main(["cost", "nosuchnet"]) == 2
    assert sorted(_listed(capsys.readouterr().err)) == sorted(path.stem for path in (ROOT / "layers").glob("*.csv"))
