"""FSDP inside each pipeline stage (``--fsdp`` with PP > 1) and ``--fsdp-reshard none`` (Llama 3's, Dubey et al.
2024 §3.3.2: "we do not reshard after forward computation to avoid an extra all-gather communication during
backward passes") against hand counts: the bytes a GPU holds (its stage's parameters, counted from Megatron's GPT
layer 12h² + 13h and the embedding's tables, times the bytes per parameter over the DP shards), the collectives of a
step priced by the ring formulas on those hand-counted bytes, PP 1 unchanged without the switch, and the
refusals."""

from __future__ import annotations

import json
from dataclasses import replace
from itertools import pairwise

import pytest

import archsim
from archsim.cli import main
from archsim.collectives import collective_seconds
from archsim.errors import InputError
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.fsdp import fsdp_sync, held_state_bytes
from archsim.training.parallel import Parallelism
from archsim.workload.model_files import load_transformer
from tests.test_fsdp import GPT_350M, NODE

H = 1024
LAYER = 12 * H * H + 13 * H  # Megatron's GPT layer: QKV, projection, two MLP GEMMs with biases, two LayerNorms
TOKENS, POSITIONS = 50304 * H, 1024 * H  # vocabulary padded to 50,304; 1,024 learned positions
FIRST = 12 * LAYER + TOKENS + POSITIONS  # PP 2, 12 layers a stage: the embedding on the first
LAST = 12 * LAYER + 2 * H + TOKENS  # the final LayerNorm and the LM head's copy of the token table on the last
KEYS = {"cluster": str(NODE), "pp": 2, "dp": 4, "global_batch": 32, "micro_batch": 2, "recompute": "full"}


def run(**extra):
    result, _ = archsim.train(str(GPT_350M), **{**KEYS, **extra})
    return result


@pytest.mark.parametrize("mode", ["after-forward", "none"])
def test_held_bytes_per_gpu_by_hand(mode):
    """fp16, DP 4: 16/4 bytes a parameter of the stage's sharded states; after-forward adds 2·2 + 2 = 6 per
    parameter of the largest unit (two units gathered, one unit's gradient), none every parameter of the stage
    gathered (2) and one unit's fp16 gradient (2 per parameter of the largest). The largest unit: the embedding
    (52.5·10⁶) on the first stage, the head with the final norm (51.5·10⁶) on the last, both above a layer's
    12.6·10⁶. The activations are the unsharded run's."""
    on, off = run(fsdp=True, fsdp_reshard=mode), run()
    for memory, params, root in zip(on.memory, (FIRST, LAST), (TOKENS + POSITIONS, 2 * H + TOKENS), strict=True):
        assert memory.parameters == params
        hand = 16 / 4 * params + (6 * root if mode == "after-forward" else 2 * params + 2 * root)
        assert memory.states == pytest.approx(hand, rel=1e-12)
    assert [m.activations for m in on.memory] == [m.activations for m in off.memory]


@pytest.mark.parametrize("mode,gathers", [("after-forward", 2), ("none", 1)])
@pytest.mark.parametrize("interleave", [1, 2])
def test_collectives_of_a_step_by_hand(mode, gathers, interleave):
    """With no compute to hide under, a rank exposes every collective it issues: per micro-batch (4 a pipeline)
    each layer's all-gather of its 2·LAYER fp16 bytes twice (after-forward) or once (none) and its reduce-scatter,
    the root's (the first stage's embedding) all-gather and reduce-scatter once, over the 4 GPUs of the DP group;
    with two chunks a rank the same units split in two sequences, the same sum."""
    c = load_transformer(GPT_350M)
    par = Parallelism(1, 2, 4, 32, 2, interleave=interleave, fsdp=True, fsdp_reshard=mode)
    machine = load_gpu_cluster(NODE, "fp16").machine(par)
    link = machine.links.dp

    def ag(n):
        return float(collective_seconds("all-gather", 2 * n, 4, link))

    def rs(n):
        return float(collective_seconds("reduce-scatter", 2 * n, 4, link))

    root = TOKENS + POSITIONS
    hand = 4 * (ag(root) + rs(root) + 12 * (gathers * ag(LAYER) + rs(LAYER)))
    before, after = fsdp_sync(c, par, machine, FIRST, 0.0, 0.0, rank=0)
    assert before["fsdp_exposed_communication"] == pytest.approx(hand, rel=1e-12) and after == {}


def test_none_saves_one_gather_per_layer_and_micro_batch():
    """The paper's reason for not resharding: one all-gather fewer per layer and micro-batch; with the layers'
    compute far above a gather (the premise, checked) the exposed part is the first layer's forward all-gather and
    the root's either way, and after-forward's backward adds the last layer's all-gather before its backward. The SMs
    free (``comm_sms`` 0), so a hidden gather costs nothing (tests/test_comm_sms_fsdp_cp.py prices NCCL's SMs)."""
    free = replace(load_gpu_cluster(NODE, "fp16"), comm_sms=0)
    full, kept = run(fsdp=True, cluster=free), run(fsdp=True, fsdp_reshard="none", cluster=free)
    par = Parallelism(1, 2, 4, 32, 2, fsdp=True)
    link = load_gpu_cluster(NODE, "fp16").machine(par).links.dp
    g = float(collective_seconds("all-gather", 2 * LAYER, 4, link))
    assert g < full.forward_seconds / 4 / 12
    slowest = full.finishing_rank
    assert kept.finishing_rank == slowest
    assert full.breakdown["fsdp_exposed_communication"] - kept.breakdown["fsdp_exposed_communication"] == \
        pytest.approx(4 * g, rel=1e-9)


def test_pp1_unchanged_without_the_switch():
    """PP 1: ``fsdp`` alone (the path before the switch existed) and with ``after-forward`` named give the same
    iteration, memory and rows, the memory still 16/8 a parameter plus 6 per parameter of the root (the existing
    path's hand count, tests/test_fsdp.py)."""
    keys = {"cluster": str(NODE), "dp": 8, "global_batch": 64, "micro_batch": 2, "recompute": "full"}
    before, _ = archsim.train(str(GPT_350M), fsdp=True, **keys)
    named, _ = archsim.train(str(GPT_350M), fsdp=True, fsdp_reshard="after-forward", **keys)
    assert named.iteration_seconds == before.iteration_seconds
    assert named.memory == before.memory and named.ops == before.ops
    root = TOKENS + POSITIONS + 2 * H
    assert named.memory[0].states == pytest.approx(16 / 8 * (24 * LAYER + root) + 6 * root, rel=1e-12)
    assert "fsdp_reshard" not in named.to_dict()["meta"]


@pytest.mark.parametrize("mode", ["after-forward", "none"])
@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32"])
def test_more_shards_never_raise_held_bytes(mode, dtype):
    """Over DP × CP = 1 … 1,024 shards, the states a GPU holds for a stage of 10⁹ parameters whose largest unit
    is 10⁸ never grow."""
    held = []
    for dp in (1, 2, 4, 8, 64, 1024):
        states, unit = held_state_bytes(dtype, "megatron", Parallelism(1, 2, dp, dp, 1, fsdp=True, fsdp_reshard=mode))
        held.append(states * 1e9 + unit * 1e8)
    assert all(b <= a for a, b in pairwise(held))


def test_refusals(capsys):
    with pytest.raises(InputError, match="give --fsdp too"):
        Parallelism(1, 2, 2, 4, 1, fsdp_reshard="none")
    with pytest.raises(InputError, match="after-forward, none"):
        Parallelism(1, 2, 2, 4, 1, fsdp=True, fsdp_reshard="never")
    with pytest.raises(InputError, match="fsdp"):
        archsim.search(str(GPT_350M), cluster=str(NODE), global_batch=8, fsdp_reshard="none")
    assert main(["train", str(GPT_350M), "--cluster", str(NODE), "--pp", "2", "--dp", "4", "--global-batch", "8",
                 "--fsdp-reshard", "none"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("archsim train: error:") and err.count("\n") == 1 and "--fsdp" in err


def test_the_search_meta_says_the_reshard_mode_it_ran(capsys):
    """Failed before: the search's JSON meta listed what it searched (cp, cp_comm, fsdp) but not ``fsdp_reshard``,
    which its rows carry. With ``--fsdp --fsdp-reshard none`` the meta says ``none``, as each row does, and its other
    keys are those of ``--fsdp`` alone, where the default ``after-forward`` is left out (as train's meta and the
    rows leave it); archsim.search's document says the same."""
    argv = ["search", str(GPT_350M), "--cluster", str(NODE), "--global-batch", "32", "--refine", "0", "--top", "2",
            "--schedule", "1f1b", "--max-micro-batch", "1", "--recompute", "full", "--fsdp", "--format", "json"]
    assert main(argv) == 0
    after_forward = json.loads(capsys.readouterr().out)
    assert "fsdp_reshard" not in after_forward["meta"]
    assert main([*argv, "--fsdp-reshard", "none"]) == 0
    document = json.loads(capsys.readouterr().out)
    meta, rows = document["meta"], document["rows"]
    assert meta["fsdp"] is True and meta["fsdp_reshard"] == "none"
    assert rows and all(row["fsdp_reshard"] == "none" for row in rows)
    assert [k for k in meta if k != "fsdp_reshard"] == list(after_forward["meta"])
    found = archsim.search(str(GPT_350M), cluster=str(NODE), global_batch=32, refine=0, top=2, schedule="1f1b",
                           max_micro_batch=1, recompute="full", fsdp=True, fsdp_reshard="none")
    assert found.to_dict()["meta"]["fsdp_reshard"] == "none"
