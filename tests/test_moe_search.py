"""``archsim search`` plans expert parallelism for a mixture of experts: an EP axis over the divisors of the expert
count, each row's EP dividing the experts and CP × DP (CP 1 here) (Megatron-Core's rules, the ones train refuses by), MoE at TP > 1
only with sequence parallelism, the row's Megatron arguments naming ``--expert-model-parallel-size``, and the best
row's ``archsim train`` command timing the same seconds."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

import archsim
from archsim.cli import main

CLUSTER = Path(__file__).resolve().parents[1] / "configs" / "clusters" / "h100_2_servers.toml"
EXPERTS = 8
SMALL_MOE = {"model_type": "mixtral", "num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 4,
             "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1024, "max_position_embeddings": 512,
             "num_local_experts": EXPERTS, "num_experts_per_tok": 2}
KEYS = {"gpus": 8, "global_batch": 16, "seq": 128, "max_micro_batch": 2, "schedule": ["1f1b", "interleaved-1f1b"],
        "top": 200}


def _config(tmp_path) -> Path:
    path = tmp_path / "small_moe.json"
    path.write_text(json.dumps(SMALL_MOE))
    return path


def test_every_row_is_a_layout_megatron_core_takes(tmp_path):
    result = archsim.search(_config(tmp_path), cluster=CLUSTER, refine=0, **KEYS)
    rows = result.rows
    assert {r["ep"] for r in rows} == {1, 2, 4, 8}  # 8 GPUs: EP 8 at DP 8, EP 4 at DP 4 or 8, …
    for r in rows:
        assert EXPERTS % r["ep"] == 0 and r["dp"] % r["ep"] == 0
        assert r["tp"] == 1 or r["sequence_parallel"]  # MoELayer.forward raises at TP > 1 without it
        args = r["megatron_args"]
        assert (f"--expert-model-parallel-size {r['ep']}" in args) == (r["ep"] > 1)
        assert f"--num-experts {EXPERTS}" in args and "--moe-router-topk 2" in args
    assert result.rejected["moe-needs-sequence-parallel"] > 0 and result.rejected["ep-divides-dp"] > 0


def test_the_best_row_trains_to_the_same_seconds(tmp_path, capsys):
    rows = archsim.search(_config(tmp_path), cluster=CLUSTER, **{**KEYS, "top": 20}).rows
    # the best (1F1B: its closed form is exact) and the best re-timed by the event simulator at EP > 1
    picked = [rows[0], next(r for r in rows if r["timing"] == "event" and r["ep"] > 1)]
    assert picked[0]["ep"] > 1
    for best in picked:
        command = shlex.split(best["command"])
        assert command[:2] == ["archsim", "train"]
        code = main([*command[1:], "--format", "json"])
        trained = json.loads(capsys.readouterr().out)["meta"]
        assert code == 0 and trained["ep"] == best["ep"]
        assert trained["iteration_seconds"] == pytest.approx(best["iteration_seconds"], rel=1e-9)


def test_ep_flag_restricts_the_axis_and_names_what_it_rejects(tmp_path, capsys):
    code = main(["search", str(_config(tmp_path)), "--cluster", str(CLUSTER), "--gpus", "8", "--global-batch", "16",
                 "--seq", "128", "--max-micro-batch", "1", "--schedule", "1f1b", "--ep", "2,3", "--refine", "0",
                 "--top", "50", "--format", "json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 0 and document["meta"]["ep"] == "2,3"
    assert {r["ep"] for r in document["rows"]} == {2}
    assert document["meta"]["rejected"]["ep-divides-experts"] > 0  # EP 3 of 8 experts: Megatron-Core asserts


def test_a_dense_search_has_no_ep(tmp_path):
    dense = tmp_path / "dense.json"
    dense.write_text(json.dumps({k: v for k, v in SMALL_MOE.items() if k not in ("num_local_experts",
                                                                                 "num_experts_per_tok")}
                                | {"model_type": "llama"}))
    result = archsim.search(dense, cluster=CLUSTER, refine=0, **KEYS)
    assert result.rows and not any("ep" in r for r in result.rows) and "ep" not in result.document["meta"]
    assert not any("expert" in r["megatron_args"] for r in result.rows)


def test_a_row_under_the_distributed_optimizer_holds_what_train_holds(tmp_path, capsys):
    """The experts' optimizer states are sharded over their expert-DP ranks (DP/EP), the dense ones' over DP: the
    search's memory counted the experts over DP too, below train's figure for the same layout."""
    rows = archsim.search(_config(tmp_path), cluster=CLUSTER, refine=0, distributed_optimizer=True,
                          **{**KEYS, "schedule": ["1f1b"]}).rows
    picked = [r for r in rows if r["ep"] > 1 and r["dp"] > r["ep"]][:3]  # expert-DP smaller than DP
    assert picked
    for row in picked:
        code = main([*shlex.split(row["command"])[1:], "--format", "json"])
        trained = json.loads(capsys.readouterr().out)["meta"]
        assert code == 0 and trained["distributed_optimizer"] and trained["ep"] == row["ep"]
        assert trained["peak_memory_gib"] == pytest.approx(row["peak_memory_gib"], rel=1e-9)
