"""``archsim search`` refuses a grid above its cap naming the flag that grows it most: CP (with its exchanges), EP and
ETP are axes of the grid too (before: the line named only --max-micro-batch, --gpus, --schedule or --chunks, so a
search grown by ``--cp 1 2 4 8 16 --cp-comm p2p all_gather a2a`` was told to lower --max-micro-batch)."""

from __future__ import annotations

from pathlib import Path

from archsim.cli import main

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def test_a_grid_grown_by_cp_is_refused_naming_cp(capsys):
    code = main(["search", str(CONFIGS / "transformers" / "gpt3_175b.toml"), "--cluster",
                 str(CONFIGS / "clusters" / "a100_384_servers.toml"), "--global-batch", "1536",
                 "--cp", "1", "2", "4", "8", "16", "--cp-comm", "p2p", "all_gather", "a2a", "--max-micro-batch", "8"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "argument --cp" in err and "CP and its exchanges" in err and "--cp-comm" in err and "--etp" in err
