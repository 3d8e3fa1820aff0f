"""``train --sweep dp=fill``: a ``--sweep tp=… --sweep pp=…`` grid left DP at 1, so most points used part of the
cluster (noted on stderr, with no way to fill it). ``dp=fill`` gives each point DP = the cluster's GPUs ÷ (TP · CP ·
PP); a point where that does not divide is skipped and counted."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.errors import InputError
from archsim.training.sweep import parse_axis, points

ROOT = Path(__file__).resolve().parents[1]
GPT2 = str(ROOT / "configs" / "transformers" / "gpt2.json")
CLUSTER = str(ROOT / "configs" / "clusters" / "h100_2_servers.toml")  # 2 servers of 8 H100s: 16 GPUs


def test_fill_gives_each_point_the_dp_that_fills_the_cluster() -> None:
    """Brute force over TP 1..5 × CP 1, 2 × PP 1, 2, 4 on 16 GPUs: the points kept are exactly those whose
    TP · CP · PP divides 16, each with DP = 16 ÷ (TP · CP · PP)."""
    axes = [("tp", (1, 2, 3, 4, 5)), ("cp", (1, 2)), ("pp", (1, 2, 4)), parse_axis("dp=fill")]
    got = [(p["tp"], p["cp"], p["pp"], p["dp"]) for p in points({"global_batch": 32}, axes, 16)]
    expected = [(tp, cp, pp, 16 // (tp * cp * pp)) for tp in (1, 2, 3, 4, 5) for cp in (1, 2) for pp in (1, 2, 4)
                if 16 % (tp * cp * pp) == 0]
    assert got == expected
    assert all(tp * cp * pp * dp == 16 for tp, cp, pp, dp in got)


def test_fill_stands_alone() -> None:
    assert parse_axis("dp=fill") == ("dp", ("fill",))
    with pytest.raises(InputError, match="fill stands alone"):
        parse_axis("dp=fill,2")


def test_sweep_fills_the_cluster_and_counts_the_points_it_skips(capsys) -> None:
    """TP 1, 2, 3 × PP 1, 2 on 16 GPUs: TP 3's two points do not divide 16 and are skipped (one note counting them),
    the other four each use all 16 GPUs, so no point is noted as leaving GPUs idle."""
    argv = ["train", GPT2, "--cluster", CLUSTER, "--global-batch", "48", "--sweep", "tp=1,2,3", "--sweep", "pp=1,2",
            "--sweep", "dp=fill", "--format", "csv"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    lines = [line for line in captured.out.splitlines() if not line.startswith("#")]
    head = lines[0].split(",")
    rows = [dict(zip(head, line.split(","))) for line in lines[1:]]
    assert [(r["tp"], r["pp"], r["dp"]) for r in rows] == [("1", "1", "16"), ("1", "2", "8"), ("2", "1", "8"),
                                                            ("2", "2", "4")]
    assert {r["gpus"] for r in rows} == {"16"}
    assert "dp=fill skipped 2 of the sweep's 6 points: TP × PP does not divide the cluster's 16 GPUs " \
           "(tp 3 × pp 1, tp 3 × pp 2)" in captured.err
    assert not re.search(r"uses? \d+ of the cluster's", captured.err)  # the idle-GPU note: none


def test_train_sweep_fill_and_a_grid_it_leaves_empty() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = archsim.train_sweep(GPT2, sweep={"tp": [2, 3], "dp": "fill"}, cluster=CLUSTER, global_batch=16)
    assert result.to_dict()["rows"][0]["dp"] == 8 and len(result) == 1
    assert any("dp=fill skipped 1 of the sweep's 2 points" in str(w.message) for w in caught)
    with pytest.raises(InputError, match="no point's TP × CP × PP divides the cluster's 16 GPUs"):
        archsim.train_sweep(GPT2, sweep={"tp": [3, 5], "dp": "fill"}, cluster=CLUSTER, global_batch=15)
