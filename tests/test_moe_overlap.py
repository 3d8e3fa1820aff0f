"""Megatron-Core's overlaps of a mixture of experts' all-to-alls with compute (``--overlap-moe-expert-parallel-comm``,
``--moe-shared-expert-overlap``; archsim/training/moe_overlap.py): the exposed all-to-all seconds with and without
them counted by hand from a layer's pieces and Megatron's schedule (the paired steps of its no-pipelining and
interleaved 1F1B, each paired layer's all-to-alls hidden up to the partner's compute), off changing nothing, and
the combinations Megatron-Core asserts against refused in one line."""

from __future__ import annotations

import json
import warnings
from dataclasses import replace
from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.errors import InputError
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.iteration import clear_model_cache, model_pieces
from archsim.training.moe_overlap import pair_hidden, paired_hidden, with_overlap
from archsim.training.parallel import Parallelism
from archsim.training.piece_cost import PieceCost
from archsim.training.search_space import REASONS, Candidate, rejection
from archsim.workload.transformer import TransformerConfig

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = str(ROOT / "configs" / "clusters" / "h100_2_servers.toml")  # 2 servers of 8 H100s
L = 4  # layers
TINY = TransformerConfig("tiny", "llama", L, 1024, 8, 1024, 1024, 2048, 8, False, experts=16, experts_per_token=4,
                         expert_ffn=1024)
SHARED = TransformerConfig("tiny", "llama", L, 1024, 8, 1024, 1024, 2048, 8, False, experts=16, experts_per_token=4,
                           expert_ffn=1024, shared_expert_ffn=2048)


def _train(c: TransformerConfig, **keys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return archsim.train(c, cluster=CLUSTER, dtype="bf16", recompute="none", **({"global_batch": 16} | keys))[0]


def _layer(c: TransformerConfig, par: Parallelism) -> PieceCost:
    par = replace(par, attention="flash")  # train's default for megatron: the compute the all-to-alls hide under
    clear_model_cache()
    layer = model_pieces(c, par, load_gpu_cluster(CLUSTER, "bf16").machine(par))["layer"]
    clear_model_cache()
    return layer


def _slowed_by_hand(p: PieceCost, kinds: str, ops: float) -> float:
    """Seconds ``ops`` of ``p``'s rows of ``kinds`` take on the SMs NCCL leaves them: the rows' re-timed seconds
    (``p.slowed``, the kernel model's tile waves on N − k SMs) over their own, times ``ops``."""
    own = sum(t for (_, kind, t), _ in zip(p.ops, p.slowed) if kind in kinds)
    slowed = sum(s for (_, kind, _), s in zip(p.ops, p.slowed) if kind in kinds)
    return ops * slowed / own


def _hidden_by_hand(p: PieceCost) -> float:
    """One paired layer (forward and backward of one kind): the forward's all-to-alls under the backward's compute,
    the backward's under the forward's. A compute of C seconds whose ops take C′ beside the all-to-all (NCCL's SMs
    taken: archsim/training/comm_sms.py) does a·C/C′ of its work in the all-to-all's a seconds: that much is hidden,
    at most C (until 2026-12-04: min(a, C), the SMs free)."""
    f_ops = p.forward
    b_ops = p.backward_input + p.backward_weight + p.recompute
    forward = f_ops + p.tp_forward + p.cp_forward
    backward = b_ops + p.tp_backward + p.cp_backward
    forward_slowed = forward - f_ops + _slowed_by_hand(p, "F", f_ops)
    backward_slowed = backward - b_ops + _slowed_by_hand(p, "DG", b_ops)
    assert forward_slowed > forward and backward_slowed > backward  # the layer's GEMMs lose waves
    return min(p.ep_forward * backward / backward_slowed, backward) + min(p.ep_backward * forward / forward_slowed,
                                                                           forward)


def test_a_paired_layer_hides_each_all_to_all_up_to_the_partners_compute():
    f = PieceCost(forward=5.0, backward_input=0.0, backward_weight=0.0, recompute=0.0, tp_forward=0.0,
                  tp_backward=0.0, ops=(), ep_forward=3.0, ep_backward=0.0)
    b = PieceCost(forward=0.0, backward_input=1.5, backward_weight=0.5, recompute=0.0, tp_forward=0.0,
                  tp_backward=0.0, ops=(), ep_forward=0.0, ep_backward=1.0)
    assert pair_hidden(f, b) == 2.0 + 1.0  # 3 s of forward a2a under 2 s of backward: 1 s stays out; 1 s under 5 s
    assert pair_hidden(b, f) == 0.0  # b's forward has no a2a, f's backward none


def test_without_a_pipeline_all_but_the_first_forward_and_last_backward_pair():
    """PP 1, EP 8 over DP 8, m = 16 / 8 = 2: Megatron's phases F0 | B0 + F1 | B1, one paired step of L layers."""
    par = Parallelism(1, 1, 8, 16, recompute="none", ep=8)
    p = _layer(TINY, par)
    assert p.ep_forward > 0 and p.ep_backward > 0
    off, on = _train(TINY, dp=8, ep=8), _train(with_overlap(TINY, True, False), dp=8, ep=8)
    m = 2
    assert off.breakdown["ep_communication"] == pytest.approx(m * L * (p.ep_forward + p.ep_backward), rel=1e-12)
    hidden = (m - 1) * L * _hidden_by_hand(p)
    assert on.breakdown["ep_communication"] == pytest.approx(off.breakdown["ep_communication"] - hidden, rel=1e-9)
    assert on.iteration_seconds == pytest.approx(off.iteration_seconds - hidden, rel=1e-9)
    assert on.breakdown["compute"] == off.breakdown["compute"]


def test_interleaved_pairs_the_steady_state_after_megatrons_warm_up():
    """PP 2, VPP 2, m = 16 / 4 = 4: 8 passes a rank; warm-up (PP − r − 1)·2 + (v − 1)·PP + 1 = 5 forwards on rank 0,
    3 on rank 1, so 3 and 5 paired steps, one layer a virtual stage."""
    c = with_overlap(TINY, True, False)
    result = _train(c, pp=2, dp=4, ep=4, interleave=2)
    par = result.parallelism
    h = _hidden_by_hand(_layer(TINY, Parallelism(1, 1, 4, 4, recompute="none", ep=4)))
    clear_model_cache()
    machine = load_gpu_cluster(CLUSTER, "bf16").machine(par)
    pieces = model_pieces(c, par, machine)
    hidden = paired_hidden(c, par, result.run.order, [pieces, pieces])
    assert hidden == pytest.approx((3 * h, 5 * h), rel=1e-12)
    off = _train(TINY, pp=2, dp=4, ep=4, interleave=2)
    rank = result.finishing_rank
    assert result.breakdown["ep_communication"] == pytest.approx(off.breakdown["ep_communication"] - hidden[rank],
                                                                 rel=1e-9)
    assert result.iteration_seconds < off.iteration_seconds


def test_the_shared_expert_hides_the_forwards_dispatch_and_combine():
    par = Parallelism(1, 1, 8, 8, recompute="none", ep=8)
    off, on = _layer(SHARED, par), _layer(with_overlap(SHARED, False, True), par)

    def rows(prefix: str, kind: str = "F") -> float:
        return sum(t for name, k, t in off.ops if k == kind and name.startswith(prefix))

    fc1 = rows("shared_expert.fc1") + rows("shared_expert.swiglu")
    hidden = min(rows("moe.dispatch ("), fc1) + min(rows("moe.combine ("), rows("shared_expert.fc2"))
    assert hidden > 0
    assert on.ep_forward == pytest.approx(off.ep_forward - hidden, rel=1e-12)
    assert on.ep_backward == off.ep_backward and on.forward == off.forward
    with pytest.raises(InputError, match="no shared expert"):  # nothing to hide under: refused, not run unsaid
        with_overlap(TINY, False, True)


def test_off_changes_nothing():
    assert with_overlap(TINY, False, False) is TINY
    plain = _train(TINY, pp=2, dp=4, ep=4, interleave=2)
    off = _train(TINY, pp=2, dp=4, ep=4, interleave=2, overlap_moe_expert_parallel_comm=False,
                 moe_shared_expert_overlap=False)
    assert off.iteration_seconds == plain.iteration_seconds and off.breakdown == plain.breakdown
    assert off.to_dict() == plain.to_dict()
    assert "overlap_moe_expert_parallel_comm" not in json.dumps(plain.to_dict())


@pytest.mark.parametrize(("keys", "match"), [
    ({"ep": 1}, "needs EP > 1"),
    ({"pp": 2, "dp": 4, "ep": 4}, "interleaved 1F1B only.*not plain 1F1B.*interleave"),
    ({"pp": 2, "dp": 4, "ep": 4, "interleave": 2, "schedule": "interleaved-zb"}, "not interleaved-zb"),
    ({"recompute": "full"}, "refuses full recomputation"),
    ({"dtype": "fp32"}, "bf16 or fp16 only"),
])
def test_the_combinations_megatron_asserts_against_are_refused(keys, match):
    base = {"dp": 8, "ep": 8, "global_batch": 16, "dtype": "bf16", "recompute": "none"} | keys
    with pytest.raises(InputError, match=match), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        archsim.train(TINY, cluster=CLUSTER, overlap_moe_expert_parallel_comm=True, **base)


def test_both_switches_together_are_refused():
    with pytest.raises(InputError, match="exclude each other"):
        _train(SHARED, dp=8, ep=8, overlap_moe_expert_parallel_comm=True, moe_shared_expert_overlap=True)


def test_the_flag_prices_as_the_keyword_and_the_meta_states_it(tmp_path, capsys):
    model = tmp_path / "tiny.json"
    model.write_text(json.dumps({"model_type": "mixtral", "num_hidden_layers": 4, "hidden_size": 1024,
                                 "num_attention_heads": 8, "num_key_value_heads": 8, "intermediate_size": 1024,
                                 "vocab_size": 1024, "max_position_embeddings": 1024, "num_local_experts": 16,
                                 "num_experts_per_tok": 4}))
    argv = ["train", str(model), "--cluster", CLUSTER, "--seq", "1024", "--dtype", "bf16", "--dp", "8", "--ep", "8",
            "--global-batch", "16", "--recompute", "none", "--format", "json"]
    assert main([*argv, "--overlap-moe-expert-parallel-comm"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["meta"]["overlap_moe_expert_parallel_comm"] is True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result, _ = archsim.train(str(model), cluster=CLUSTER, seq=1024, dtype="bf16", dp=8, ep=8, global_batch=16,
                                  recompute="none", overlap_moe_expert_parallel_comm=True)
    assert doc["meta"]["iteration_seconds"] == pytest.approx(result.iteration_seconds, rel=1e-12)
    assert main([*argv, "--ep", "1", "--overlap-moe-expert-parallel-comm"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--overlap-moe-expert-parallel-comm" in err


@pytest.mark.parametrize(("k", "code", "words"), [
    (Candidate(1, 1, 8, 1, "none", "1f1b", 1, False, ep=1), "a2a-overlap-needs-ep", "needs EP > 1"),
    (Candidate(1, 2, 4, 1, "none", "1f1b", 1, False, ep=4), "a2a-overlap-needs-interleaving", "interleaved 1F1B only"),
    (Candidate(1, 1, 8, 1, "full", "1f1b", 1, False, ep=8), "a2a-overlap-beside-full-recompute", "full recomputation"),
])
def test_search_rejects_what_train_refuses_by_the_same_rule(k, code, words):
    c = with_overlap(TINY, True, False)
    assert code in REASONS
    assert rejection(c, k, 16, 8) == code and rejection(TINY, k, 16, 8) is None
    with pytest.raises(InputError, match=words):
        model_pieces(c, k.parallelism(16), load_gpu_cluster(CLUSTER, "bf16").machine(k.parallelism(16)))


def test_a_search_row_is_trains_with_the_flag_and_names_it():
    """PP 1, EP 16 over DP 16, micro-batch 1 (m = 4): a listed row is re-timed by train's run, so it is train's
    with the overlap, 3 paired steps below the row without it; its commands carry the flag."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        keys = {"cluster": CLUSTER, "seq": 1024, "dtype": "bf16", "global_batch": 64, "gpus": 16, "recompute": "none",
                "schedule": ["1f1b"], "max_micro_batch": 1, "ep": [16], "sequence_parallel": "off"}
        on = archsim.search(TINY, overlap_moe_expert_parallel_comm=True, **keys)
        off = archsim.search(TINY, **keys)
    row = next(r for r in on.rows if r["pp"] == 1)
    plain = next(r for r in off.rows if r["pp"] == 1)
    assert row["timing"] == "event"
    assert row["iteration_seconds"] == pytest.approx(_train(TINY, dp=16, ep=16, global_batch=64,
                                                            overlap_moe_expert_parallel_comm=True).iteration_seconds,
                                                     rel=1e-9)
    p = _layer(TINY, Parallelism(1, 1, 16, 16, recompute="none", ep=16))
    assert plain["iteration_seconds"] - row["iteration_seconds"] == pytest.approx(3 * L * _hidden_by_hand(p), rel=1e-6)
    assert "--overlap-moe-expert-parallel-comm" in row["megatron_args"]
    assert row["command"].endswith("--overlap-moe-expert-parallel-comm") or " --overlap-moe-expert-parallel-comm" in \
        row["command"]
    assert "--overlap-moe-expert-parallel-comm" not in plain["megatron_args"] + plain["command"]
    assert on.to_dict()["meta"]["overlap_moe_expert_parallel_comm"] is True


def test_search_refuses_fp32_and_both_switches_once():
    with pytest.raises(InputError, match="bf16 or fp16 only"), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        archsim.search(TINY, cluster=CLUSTER, seq=1024, dtype="fp32", global_batch=64, gpus=16,
                       overlap_moe_expert_parallel_comm=True)
    with pytest.raises(InputError, match="exclude each other"), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        archsim.search(SHARED, cluster=CLUSTER, seq=1024, dtype="bf16", global_batch=64, gpus=16,
                       overlap_moe_expert_parallel_comm=True, moe_shared_expert_overlap=True)
