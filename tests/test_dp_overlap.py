"""The DP all-reduce bucketed under the backward (archsim.training.dp_overlap), against a brute-force
queue of buckets, Megatron's bucket size as documented, and train's iteration: ``none`` unchanged
(vTrain's runs), ``bucketed`` never slower, equal with one bucket or no DP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from archsim.cli import main
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.dp_overlap import bucket_parameters, exposed_seconds
from archsim.training.parallel import Parallelism
from archsim.training.run import train
from archsim.workload.transformer import TransformerConfig

ROOT = Path(__file__).resolve().parents[1]


def _queue(buckets: int, bucket_seconds: float, window: float) -> float:
    """One communication stream: bucket i's gradients ready at window·(i + 1)/n, each bucket sent
    after the one before it; the time past the window when the last ends."""
    free = 0.0
    for i in range(buckets):
        free = max(free, window * (i + 1) / buckets) + bucket_seconds
    return free - window


@given(st.integers(1, 60), st.floats(1e-6, 1.0), st.floats(0.0, 10.0))
def test_exposed_time_equals_the_queue(buckets, bucket_seconds, window):
    assert exposed_seconds(buckets, bucket_seconds, window) == pytest.approx(_queue(buckets, bucket_seconds, window),
                                                                            rel=1e-9, abs=1e-12)


def test_megatron_bucket_size():
    """Megatron Core's default: max(40,000,000, 1,000,000 × DP) parameters."""
    assert bucket_parameters(1) == bucket_parameters(40) == 40_000_000
    assert bucket_parameters(64) == 64_000_000


BIG = TransformerConfig("big", "gpt", layers=8, hidden=4096, heads=32, vocab=50304, seq=1024, ffn=16384, kv_heads=32,
                        tied_embeddings=True, positions=1024)


@pytest.mark.parametrize("pp", [1, 2])
def test_bucketed_hides_part_of_the_all_reduce_and_none_is_unchanged(pp):
    """DP over the network between vTrain's servers: a rank of about 110 or 230 M parameters fills 3 or
    6 buckets of 40 M; bucketed is faster, by what it hides of the all-reduce, and never below one
    bucket's all-reduce."""
    cluster = load_gpu_cluster(ROOT / "configs" / "clusters" / "vtrain_a100.toml")
    base = Parallelism(tp=8, pp=pp, dp=2, global_batch=16, micro_batch=1)
    bucketed = Parallelism(tp=8, pp=pp, dp=2, global_batch=16, micro_batch=1, dp_overlap="bucketed")
    machines = cluster.laid_out(base)
    plain, hidden = train(BIG, base, machines[0], machines), train(BIG, bucketed, machines[0], machines)
    dp_plain = max(p["dp_allreduce"] for p in plain.post)
    dp_hidden = max(p["dp_allreduce"] for p in hidden.post)
    assert 0 < dp_hidden < dp_plain
    assert plain.iteration_seconds - hidden.iteration_seconds == pytest.approx(dp_plain - dp_hidden, rel=1e-6)
    assert dp_hidden >= dp_plain / 6  # at least one bucket's all-reduce stays exposed


def test_one_bucket_or_no_dp_changes_nothing(capsys):
    """A rank of fewer than 40 M parameters fills one bucket, whose all-reduce is all exposed; without
    DP there is none to hide."""
    model = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")
    cluster = str(ROOT / "configs" / "clusters" / "vtrain_a100.toml")
    out = {}
    for overlap in ("none", "bucketed"):
        for dp in (1, 2):
            assert main(["train", model, "--cluster", cluster, "--tp", "8", "--pp", "2", "--dp", str(dp),
                         "--global-batch", "8",
                         "--dp-overlap", overlap, "--attention", "standard", "--format", "json"]) == 0
            out[overlap, dp] = json.loads(capsys.readouterr().out)["meta"]
    assert out["bucketed", 2]["dp_overlap"] == "bucketed"
    for dp in (1, 2):  # gpt_1024h_24l: about 350 M parameters over TP 8 × PP 2, about 22 M a rank
        assert out["none", dp]["iteration_seconds"] == out["bucketed", dp]["iteration_seconds"]


def test_bad_overlap_is_one_line(capsys):
    model = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")
    cluster = str(ROOT / "configs" / "clusters" / "a100_node.toml")
    assert main(["train", model, "--cluster", cluster, "--global-batch", "8", "--dp-overlap", "always"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_search_takes_the_overlap_and_its_rows_say_so():
    """search --dp-overlap bucketed: every row carries it (Megatron's --overlap-grad-reduce in its
    arguments, --dp-overlap in its command) and no configuration is slower than without it."""
    from archsim.api import search
    from archsim.training.search_rows import RowContext, train_command

    cluster = load_gpu_cluster(ROOT / "configs" / "clusters" / "vtrain_a100.toml")
    kwargs = {"cluster": cluster, "global_batch": 16, "gpus": 32, "schedule": ["1f1b"], "recompute": ["full"],
              "max_micro_batch": 1, "sequence_parallel": "off", "top": 10**6, "refine": 0}
    plain = {(r["tp"], r["pp"], r["dp"]): r for r in search(BIG, **kwargs).rows}
    rows = search(BIG, dp_overlap="bucketed", **kwargs).rows
    assert {(r["tp"], r["pp"], r["dp"]) for r in rows} == set(plain)
    faster = 0
    for r in rows:
        assert r["dp_overlap"] == "bucketed" and "--overlap-grad-reduce" in r["megatron_args"]
        assert "--dp-overlap bucketed" in train_command("m.toml", "c.toml", r, RowContext(16))
        before = plain[(r["tp"], r["pp"], r["dp"])]["iteration_seconds"]
        assert r["iteration_seconds"] <= before
        faster += r["iteration_seconds"] < before
    assert faster > 0
