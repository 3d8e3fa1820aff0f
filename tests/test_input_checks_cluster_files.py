"""Cluster-file keys ``train`` and ``search`` would not read, refused with one line (issue #40):
``gpu_memory_gb`` beside a board that sizes the GPU, a bandwidth range where one figure is used."""

from __future__ import annotations

from pathlib import Path

import pytest
from input_checks_common import GPT2

from archsim.cli import main


# -- cluster files: keys train and search would not read
def _cluster(tmp_path: Path, cluster_keys: str) -> Path:
    path = tmp_path / "cluster.toml"
    path.write_text(f'[cluster]\nname = "two"\n{cluster_keys}\n[[servers]]\ncount = 2\ngpus = 8\n'
                    'intra_server_gbps = 4800\ngpu = "a100-80gb"\n')
    return path


@pytest.mark.parametrize("command", ["train", "search"])
def test_gpu_memory_gb_is_refused_where_the_board_sizes_the_gpu(tmp_path, capsys, command):
    """``gpu_memory_gb = 40`` beside 80 GB A100s: train and search planned with 80 GB, without a word."""
    cluster = _cluster(tmp_path, "inter_server_gbps = 200\ngpu_memory_gb = 40")
    assert main([command, str(GPT2), "--cluster", str(cluster), "--global-batch", "16"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "'gpu_memory_gb'" in err and "a100-40gb" in err


def test_a_bandwidth_range_is_refused_where_one_figure_is_used(tmp_path, capsys):
    """``inter_server_gbps = [100, 400]`` (plan draws within it) trained at 100 Gb/s, without a word."""
    cluster = _cluster(tmp_path, "inter_server_gbps = [100, 400]")
    assert main(["train", str(GPT2), "--cluster", str(cluster), "--global-batch", "16", "--dp", "16"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "'inter_server_gbps'" in err and "one" in err
