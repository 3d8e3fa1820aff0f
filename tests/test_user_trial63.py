"""A training-systems engineer plans a Llama-3-70B-like run on 8 × 8 H100 with eight 400 Gb/s rails: ``archsim
train`` at TP 8, PP 4, interleaved, and ``archsim search`` on 64 GPUs, from the command line and from Python.

Each test here failed on the code before its fix (the docstring says how). The references are outside the code:
Narayanan et al. 2021 (SC'21), §2.2.2: 1F1B with several model chunks per device is the interleaved schedule, a
different schedule from plain 1F1B; docs/api.md: a result's repr is the one line a notebook shows for it.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import archsim

ROOT = Path(__file__).resolve().parents[1]
MODEL = str(ROOT / "configs/transformers/gpt_1024h_24l.json")
CLUSTER = str(ROOT / "configs/clusters/a100_node.toml")


@pytest.mark.parametrize(("settings", "order"), [
    ({"interleave": 2}, "interleaved-1f1b v2"),  # 1F1B over two chunks a rank: Megatron's interleaved schedule
    ({"schedule": "interleaved-1f1b", "interleave": 3}, "interleaved-1f1b v3"),
    ({"schedule": "zb-v"}, "zb-v v2"),  # a V: two chunks a rank by its shape
    ({}, "1f1b,"),  # one chunk a rank: plain 1F1B, no chunk count
])
def test_a_train_result_repr_names_the_schedule_that_ran(settings, order):
    """Failed before: ``archsim.train(..., interleave=5)`` (Megatron's interleaved 1F1B, as the meta's ``schedule``
    says) showed ``TrainResult(tp 8 × pp 4 × dp 2, micro-batch 1, 1f1b, …)`` in a notebook: the plain 1F1B its
    flags do not run, with no word of the chunks, whose bubble and memory differ."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result, _ = archsim.train(MODEL, cluster=CLUSTER, tp=2, pp=2, dp=2, global_batch=16, micro_batch=1,
                                  **settings)
    text = repr(result)
    assert f"micro-batch 1, {order}" in text, text
    assert result.to_dict()["meta"]["schedule"] == order.split(" ")[0].rstrip(","), text
