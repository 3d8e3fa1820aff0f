"""What a cluster file states that train or search does not read is a ``note:`` line of ``archsim train`` and
``archsim search`` on stderr; ``archsim.train``, ``train_runs`` and ``search`` warned its warnings but not its
notes (a notebook ran on a superseded key without a word). Each now warns the command's notes, one
:class:`UserWarning` each, from the same function (docs/api.md)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from test_user_trial_chip import CHIP

import archsim
from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
MODEL = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")

# inter_server_gbps superseded by [network] (100 ≠ 200 Gb/s), a switch_tiers that changes nothing, and a price
# that train does not read (search's cost objective does)
NOTED = """[cluster]
name = "two_a100_servers"
inter_server_gbps = 100

[network]
nics_per_server = 4
nic_gbps = 200
gpus_per_nic = 2
switch_tiers = 3

[[servers]]
count = 2
gpus = 8
intra_server_gbps = 4800
gpu = "a100-80gb"
price_per_gpu_hour = 2.5
"""


def _file(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _stderr_lines(capsys, command: str, argv: list[str]) -> list[str]:
    """The command's stderr lines, less their ``archsim COMMAND: note: `` prefix (exit 0)."""
    assert main([command, *argv]) == 0
    prefix = f"archsim {command}: note: "
    lines = capsys.readouterr().err.splitlines()
    assert all(line.startswith(prefix) for line in lines), lines  # these runs give notes only
    return [line.removeprefix(prefix) for line in lines]


def _warned(call) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    assert all(w.category is UserWarning for w in caught)
    return [str(w.message) for w in caught]


def test_train_warns_the_cluster_notes_train_prints(tmp_path, capsys):
    cluster = _file(tmp_path, "cluster.toml", NOTED)
    printed = _stderr_lines(capsys, "train", [MODEL, "--cluster", cluster, "--tp", "8", "--dp", "2",
                                              "--global-batch", "4"])
    keys = [line.split(" ", 1)[0] for line in printed]
    assert keys == ["inter_server_gbps", "switch_tiers", "price_per_gpu_hour"]
    assert _warned(lambda: archsim.train(MODEL, cluster=cluster, tp=8, dp=2, global_batch=4)) == printed


def test_search_warns_the_cluster_notes_search_prints(tmp_path, capsys):
    """Search reads ``price_per_gpu_hour`` (its cost objective): no note of it, from either."""
    cluster = _file(tmp_path, "cluster.toml", NOTED)
    printed = _stderr_lines(capsys, "search", [MODEL, "--cluster", cluster, "--global-batch", "4", "--gpus", "2",
                                               "--top", "1", "--refine", "0", "--schedule", "1f1b",
                                               "--max-micro-batch", "1", "--recompute", "none"])
    assert [line.split(" ", 1)[0] for line in printed] == ["inter_server_gbps", "switch_tiers"]
    found = _warned(lambda: archsim.search(MODEL, cluster=cluster, global_batch=4, gpus=2, top=1, refine=0,
                                           schedule="1f1b", max_micro_batch=1, recompute="none", progress=False))
    assert found == printed


def test_train_runs_warns_the_cluster_notes_train_runs_prints(tmp_path, capsys):
    cluster = _file(tmp_path, "cluster.toml", NOTED)
    runs = _file(tmp_path, "runs.csv", "gpus,tp,pp,dp,micro_batch,global_batch,recompute,sequence_parallel,"
                                       "interleave,measured_seconds\n16,8,1,2,1,4,full,false,1,0.5\n")
    printed = _stderr_lines(capsys, "train", [MODEL, "--cluster", cluster, "--runs", runs])
    assert [line.split(" ", 1)[0] for line in printed] == ["inter_server_gbps", "switch_tiers", "price_per_gpu_hour"]
    assert _warned(lambda: archsim.train_runs(MODEL, runs=runs, cluster=cluster)) == printed


@pytest.mark.parametrize("job", ["train", "search"])
def test_fp32_on_a_devices_arrays_is_warned_as_the_command_notes_it(job, tmp_path, capsys):
    """A ``gemm = "arrays"`` device file without fp32 lanes, trained in fp32: its GEMMs run on the arrays at
    their fp16 rate, which the command notes and the library now warns."""
    _file(tmp_path, "chip.toml", CHIP)
    cluster = _file(tmp_path, "cluster.toml", '[cluster]\nname = "mychip2"\n\n[[servers]]\ncount = 1\ngpus = 2\n'
                                              'intra_server_gbps = 9600\ndevice = "chip.toml"\n')
    flags = {"cluster": cluster, "global_batch": 2, "dtype": "fp32", "attention": "standard"}
    if job == "train":
        argv = ["--dp", "2"]
        flags |= {"dp": 2}
    else:
        argv = ["--top", "1", "--refine", "0", "--schedule", "1f1b", "--max-micro-batch", "1", "--recompute", "none"]
        flags |= {"top": 1, "refine": 0, "schedule": "1f1b", "max_micro_batch": 1, "recompute": "none",
                  "progress": False}
    printed = _stderr_lines(capsys, job, [MODEL, "--cluster", cluster, "--global-batch", "2", "--dtype", "fp32",
                                          "--attention", "standard", *argv])
    assert len(printed) == 1 and printed[0].startswith("MyChip states no fp32 lanes")
    assert _warned(lambda: getattr(archsim, job)(MODEL, **flags)) == printed
