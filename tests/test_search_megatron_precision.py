"""A search row's ``megatron_args`` carry the precision the row was priced in: Megatron-LM trains in fp32
unless given ``--fp16`` or ``--bf16`` (``megatron/training/arguments.py``: ``params_dtype`` is
``torch.float`` otherwise), so arguments without the flag would launch another run than the one ranked."""

from __future__ import annotations

import pytest

import archsim
from tests.tiny_search import tiny_files


@pytest.mark.parametrize(("dtype", "flag", "attention"), [("fp16", "--fp16", "flash"), ("bf16", "--bf16", "flash"),
                                                          ("fp32", None, "standard")])
def test_megatron_args_name_the_searched_precision(tmp_path, dtype, flag, attention):
    model, cluster = tiny_files(tmp_path)
    found = archsim.search(model, cluster=cluster, global_batch=8,
                           top=3, schedule=["1f1b"], max_micro_batch=1, refine=0, recompute=["none"],
                           sequence_parallel="off", attention=attention, dtype=dtype, progress=False)
    assert found.rows and all(row["megatron_args"] for row in found.rows)  # 1F1B, even split: Megatron runs them
    for row in found.rows:
        words = row["megatron_args"].split()
        assert [w for w in words if w in ("--fp16", "--bf16")] == ([flag] if flag else [])
