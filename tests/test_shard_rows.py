"""State sharding seen where it acts: one dispatch by sharding after the backward; FSDP's collectives as train's
rows, checked against the ring formulas written out by hand; search rows that say the sharding; and the
GPU's memory on ``--sweep`` and ``--runs`` rows, read off the catalog by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import archsim
from archsim.choices.training import SHARDINGS
from archsim.cli import main
from archsim.collectives import LinkClass
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.dp_sharding import SYNCS
from archsim.training.parallel import Parallelism


def test_one_dispatch_covers_every_sharding():
    """Each of the three shardings has its function, and each Parallelism names the one it runs."""
    assert tuple(SYNCS) == SHARDINGS
    assert Parallelism(1, 1, 2, 2, 1).sharding == "none"
    assert Parallelism(1, 1, 2, 2, 1, distributed_optimizer=True).sharding == "distributed-optimizer"
    assert Parallelism(1, 1, 2, 2, 1, fsdp=True).sharding == "fsdp"


ROOT = Path(__file__).resolve().parents[1]
GPT_350M = ROOT / "configs" / "transformers" / "gpt_1024h_24l.json"
NODE = ROOT / "configs" / "clusters" / "a100_node.toml"


def _ring(kind: str, s: float, n: int, link: LinkClass) -> float:
    """NCCL's ring all-gather or reduce-scatter of S bytes over n GPUs, written out: α₀ + (n − 1)α + γS/2 +
    (n − 1)/n·S/(ηB) on Simple, or with each of the link's other protocols' own α₀, α and share of ηB (NCCL's LL128:
    archsim.nccl_protocols), whichever is faster."""
    simple = link.launch_s + (n - 1) * link.alpha_s + link.copy_s_per_byte * s / 2 + \
        (n - 1) / n * s / (link.efficiency * link.bandwidth)
    return min([simple, *(p.launch_s + (n - 1) * p.alpha_s + link.copy_s_per_byte * s / 2
                          + (n - 1) / n * s / (p.fraction * link.efficiency * link.bandwidth) for p in link.protocols)])


def test_fsdp_collectives_are_train_rows():
    """Failed before (train's rows had no FSDP collective, only the iteration's exposed sum): GPT 350M (24 layers,
    hidden 1,024, tied vocabulary 50,257 padded to 50,304, 1,024 positions) on one DGX A100 at DP 8 in bf16. A
    layer holds 12h² + 13h parameters, the root unit the token table, the positions and the final LayerNorm; per
    micro-batch the root's all-gather (2 bytes a parameter) and reduce-scatter (4: fp32 gradients), a layer's
    all-gather before its forward and again before its backward and its reduce-scatter: their seconds are the
    ring formulas on those bytes over the node's NVLink. The op rows the run shares with the replicated one
    are unchanged."""
    keys = {"cluster": str(NODE), "dp": 8, "global_batch": 16, "dtype": "bf16"}
    on, _ = archsim.train(str(GPT_350M), fsdp=True, **keys)
    off, _ = archsim.train(str(GPT_350M), **keys)
    h = 1024
    layer, root = 12 * h * h + 13 * h, 50304 * h + 1024 * h + 2 * h
    link = load_gpu_cluster(NODE, "bf16").machine(Parallelism(1, 1, 8, 16, 1, fsdp=True)).links.dp
    assert isinstance(link, LinkClass)  # one server: NVLink's ring, not a spanning group
    rows = [r for r in on.to_dict()["rows"] if r["name"].startswith("fsdp.")]
    assert [(r["piece"], r["op"]) for r in rows] == [("root", "F"), ("layer", "F"), ("layer", "B"), ("layer", "B"),
                                                     ("root", "B")]
    hand = (_ring("all-gather", 2 * root, 8, link) + 2 * _ring("all-gather", 2 * layer, 8, link)
            + _ring("reduce-scatter", 4 * layer, 8, link) + _ring("reduce-scatter", 4 * root, 8, link))
    assert sum(r["seconds"] for r in rows) == pytest.approx(hand, rel=1e-12)
    assert rows[3]["name"] == f"fsdp.reduce-scatter (reduce-scatter, {4 * layer / 2**20:.3g} MiB)"
    assert rows[0]["name"] == f"fsdp.all-gather (all-gather, {2 * root / 2**20:.3g} MiB)"
    pieces = ("layer", "embedding", "head")
    assert [r for r in on.to_dict()["rows"] if r["piece"] in pieces and r not in rows] == \
        [r for r in off.to_dict()["rows"] if r["piece"] in pieces]
    assert not any(r["name"].startswith("fsdp.") for r in off.to_dict()["rows"])


MIXED = ROOT / "configs" / "clusters" / "mixed_counts_h100_a100.toml"
GPT3_1_3B = str(ROOT / "configs" / "transformers" / "gpt3_1.3b.toml")


def test_sweep_and_runs_rows_carry_the_fullest_ranks_gpu_memory(tmp_path, capsys):
    """Failed before (the rows had no ``memory_capacity_gib``; train's meta had it). One DGX H100 (80 GB boards:
    80 GiB, as NVIDIA's) and two 4-GPU A100 40 GB servers (40 GiB), TP 4 · PP 2 · DP 2, GPT-3 1.3B: at micro-batch
    8 without recompute the A100 rank is the fuller by share of its own GPU, so its 40 GiB; on one DGX A100 80 GB,
    80 GiB. A sweep point that cannot run has none; each row's figure is train's meta for its layout."""
    base = ["train", GPT3_1_3B, "--format", "json"]
    mixed = [*base, "--cluster", str(MIXED), "--tp", "4", "--pp", "2", "--dp", "2", "--global-batch", "32",
             "--recompute", "none"]
    assert main([*mixed, "--micro-batch", "8"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert main([*mixed, "--sweep", "micro_batch=8,3"]) == 0  # 3 does not divide 32 / DP 2: a row with its reason
    points = json.loads(capsys.readouterr().out)["rows"]
    assert [p["memory_capacity_gib"] for p in points] == [40.0, None] and points[1]["error"]
    assert meta["memory_capacity_gib"] == 40.0
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch,global_batch,recompute\n4,2,2,8,32,none\n", encoding="utf-8")
    assert main([*base, "--cluster", str(MIXED), "--runs", str(runs)]) == 0
    assert [r["memory_capacity_gib"] for r in json.loads(capsys.readouterr().out)["rows"]] == [40.0]
    runs.write_text("tp,pp,dp,micro_batch,global_batch\n1,1,8,1,16\n2,2,2,1,16\n", encoding="utf-8")
    assert main([*base, "--cluster", str(NODE), "--runs", str(runs)]) == 0
    assert [r["memory_capacity_gib"] for r in json.loads(capsys.readouterr().out)["rows"]] == [80.0, 80.0]


@pytest.mark.parametrize(("flag", "sharding"), [(None, None), ("--distributed-optimizer", "distributed-optimizer"),
                                                ("--fsdp", "fsdp")])
def test_search_rows_say_their_sharding(flag, sharding, capsys):
    """Each row says which sharding it runs (``distributed_optimizer`` or ``fsdp`` true), only when one is set (rows
    without a sharding keep their keys). Megatron-LM's arguments carry ``--use-distributed-optimizer``
    with the distributed optimizer (its flag, ``megatron/training/arguments.py``), and for FSDP, which is PyTorch's,
    neither that flag nor any FSDP one: the layout's flags alone."""
    argv = ["search", GPT3_1_3B, "--cluster", str(NODE), "--global-batch", "16", "--top", "2", "--refine", "0",
            "--schedule", "1f1b", "--format", "json", *([flag] if flag else [])]
    assert main(argv) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    keys = {"distributed-optimizer": "distributed_optimizer", "fsdp": "fsdp"}
    assert rows and all({key: r[key] for key in keys.values() if key in r} == ({keys[sharding]: True} if sharding else {})
                        for r in rows)
    for r in rows:
        args = r["megatron_args"].split()
        assert ("--use-distributed-optimizer" in args) == (sharding == "distributed-optimizer")
        assert not any("fsdp" in a for a in args)
        assert args[:2] == ["--tensor-model-parallel-size", str(r["tp"])]
