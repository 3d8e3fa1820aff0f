"""A search row's ``megatron_args`` carry the precision the row was priced in: Megatron-LM trains in fp32
unless given ``--fp16`` or ``--bf16`` (``megatron/training/arguments.py``: ``params_dtype`` is
``torch.float`` otherwise), so arguments without the flag would launch another run than the one ranked."""

from __future__ import annotations

import pytest

import archsim

GPT = """[transformer]
family = "gpt"
layers = 4
hidden = 256
heads = 4
vocab = 1000
seq = 128
"""
A100_NODE = """[cluster]
[[servers]]
gpus = 4
gpu = "a100-80gb"
"""


@pytest.mark.parametrize(("dtype", "flag", "attention"), [("fp16", "--fp16", "flash"), ("bf16", "--bf16", "flash"),
                                                          ("fp32", None, "standard")])
def test_megatron_args_name_the_searched_precision(tmp_path, dtype, flag, attention):
    (tmp_path / "gpt.toml").write_text(GPT)
    (tmp_path / "cluster.toml").write_text(A100_NODE)
    found = archsim.search(str(tmp_path / "gpt.toml"), cluster=str(tmp_path / "cluster.toml"), global_batch=8,
                           top=3, schedule=["1f1b"], max_micro_batch=1, refine=0, recompute=["none"],
                           sequence_parallel="off", attention=attention, dtype=dtype, progress=False)
    assert found.rows and all(row["megatron_args"] for row in found.rows)  # 1F1B, even split: Megatron runs them
    for row in found.rows:
        words = row["megatron_args"].split()
        assert [w for w in words if w in ("--fp16", "--bf16")] == ([flag] if flag else [])
