"""A TP that splits neither the model's heads nor a server is refused for the heads first: the model's property,
before the cluster's. Before, TP 3 on Llama-3-8B over 15 of two servers' 16 GPUs was told only that its TP groups
straddle servers, and the user who fixed that met the heads next."""

from __future__ import annotations

from pathlib import Path

import pytest

import archsim
from archsim.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
LLAMA = str(ROOT / "tests" / "data" / "hf_configs" / "llama3_8b.json")  # 32 heads, 8 KV heads, FFN 14336
TWO_SERVERS = str(ROOT / "configs" / "clusters" / "h100_2_servers.toml")  # 2 × 8 GPUs


def test_tp_3_is_refused_for_the_heads_before_the_servers():
    with pytest.raises(InputError, match=r"TP 3 must divide the heads \(32\)") as error:
        archsim.train(LLAMA, cluster=TWO_SERVERS, tp=3, pp=1, dp=5, global_batch=15)
    assert error.value.where.field == "tp"



def test_a_tp_dividing_the_heads_that_straddles_servers_is_still_told_so():
    # TP 4 over a 6 + 4-GPU cluster: 4 divides the heads, but the second group holds GPUs 4–7, 2 of one server
    # and 2 of the next
    cluster = ROOT / "tests" / "data" / "output_forms" / "six_then_four.toml"
    with pytest.raises(InputError, match="holds part of a server and part of another"):
        archsim.train(LLAMA, cluster=str(cluster), tp=4, pp=1, dp=2, global_batch=8)
