"""Qwen2-MoE and Qwen3-MoE configs without ``intermediate_size``: every layer of theirs is routed
(``decoder_sparse_step`` 1, no ``mlp_only_layers``: the reader refuses others), so the dense MLP width sizes no
work; they are read, with the model cards' parameter counts, and priced as the same config with the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import archsim
from archsim.workload.model_files import load_transformer

DATA = Path(__file__).parent / "data" / "hf_configs"
CLUSTER = Path(__file__).parent.parent / "configs" / "clusters" / "a100_node.toml"


def _without(tmp_path: Path, name: str, **changes) -> Path:
    fields = json.loads((DATA / name).read_text())
    fields.pop("intermediate_size")
    fields.update(changes)
    path = tmp_path / name
    path.write_text(json.dumps(fields))
    return path


@pytest.mark.parametrize("name,total,active", [
    # Qwen1.5-MoE-A2.7B's card: 14.3B total, 2.7B activated (rounded); Qwen3-30B-A3B's: 30.5B total, 3.3B
    # activated (cut, not rounded: 3.3 ≤ it < 3.4)
    ("qwen1_5_moe_a2_7b.json", 14.3, (2.65, 2.75)), ("qwen3_30b_a3b.json", 30.5, (3.3, 3.4))])
def test_qwen_moe_without_intermediate_size_is_read_with_the_cards_counts(tmp_path, name, total, active):
    c = load_transformer(_without(tmp_path, name))
    assert round(c.parameter_count / 1e9, 1) == total
    assert active[0] <= c.active_parameter_count / 1e9 < active[1]


def test_qwen_moe_without_intermediate_size_trains_as_with_it(tmp_path):
    # the key's value changes nothing: a two-layer Qwen3-MoE is priced alike without it and with it
    small = {"num_hidden_layers": 2}
    with_key = tmp_path / "with.json"
    with_key.write_text(json.dumps({**json.loads((DATA / "qwen3_30b_a3b.json").read_text()), **small}))
    without = _without(tmp_path, "qwen3_30b_a3b.json", **small)
    runs = [archsim.train(str(path), cluster=str(CLUSTER), tp=1, pp=1, dp=8, ep=8, global_batch=8, micro_batch=1,
                          seq=512, dtype="bf16")[0] for path in (with_key, without)]
    assert runs[0].iteration_seconds == runs[1].iteration_seconds > 0
    assert runs[0].peak_memory_gib == runs[1].peak_memory_gib > 0
