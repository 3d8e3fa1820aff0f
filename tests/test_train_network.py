"""What ``archsim train`` priced the network at, and the warnings it gives, the same from the library:
a TP group across servers is a :class:`UserWarning` of ``archsim.train`` with the line the command prints."""

from __future__ import annotations

import warnings

import pytest
from test_docs import ROOT

import archsim
from archsim.cli import main

MODEL = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")
TWO_H100_SERVERS = str(ROOT / "configs" / "clusters" / "h100_2_servers.toml")


def test_the_library_warns_of_a_tp_group_across_servers_as_the_command_does(capsys):
    """TP 16 on two 8-GPU servers: ``archsim train`` prints one warning line; ``archsim.train`` issued
    none (a notebook priced all-reduces over the NICs without a word). TP 8 × DP 2 stays in each server."""
    assert main(["train", MODEL, "--cluster", TWO_H100_SERVERS, "--tp", "16", "--global-batch", "4",
                 "--format", "json"]) == 0
    printed = capsys.readouterr().err.strip()
    assert printed == "archsim train: warning: a TP group spans 2 servers: its all-reduces cross the network"
    with pytest.warns(UserWarning) as caught:
        archsim.train(MODEL, cluster=TWO_H100_SERVERS, tp=16, global_batch=4)
    assert [str(w.message) for w in caught] == [printed.removeprefix("archsim train: warning: ")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        archsim.train(MODEL, cluster=TWO_H100_SERVERS, tp=8, dp=2, global_batch=4)
