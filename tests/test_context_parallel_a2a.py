"""Context parallelism's all-to-all exchange (``--cp-comm a2a``, DeepSpeed-Ulysses as TransformerEngine's
``AttnFuncWithCPAndQKVOA2A`` runs it) against independent references: each all-to-all's bytes counted by hand
from Llama-3-8B's shape (32 query heads, 8 K/V heads of 128), the seconds on a link of known bandwidth, the
attention's causal pairs by brute force, the heads TransformerEngine refuses, CP 1 unchanged, and a2a against
p2p inside one server by a hand count of the two exchanges' bytes. Every test failed before the option existed
(``a2a`` not among the choices)."""

from __future__ import annotations

import json
import warnings
from dataclasses import replace
from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.collectives import LinkClass
from archsim.errors import InputError
from archsim.lowering import TrainingOp
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.context_parallel import flash_steps
from archsim.training.iteration import clear_model_cache, model_pieces
from archsim.training.layer_ops import block_work
from archsim.training.parallel import Parallelism
from archsim.workload.model_files import load_transformer

ROOT = Path(__file__).resolve().parents[1]
LLAMA = ROOT / "tests" / "data" / "hf_configs" / "llama3_8b.json"  # 32 heads, 8 K/V heads, head dim 128
H100 = ROOT / "configs" / "clusters" / "h100_2_servers.toml"  # 2 servers of 8 H100s
MIB = 2**20


def _layer(seq: int, cp_comm: str, cp: int = 4, link: LinkClass | None = None, tp: int = 2):
    """A layer's pieces for Llama-3-8B at TP ``tp`` × CP ``cp`` in bf16, the CP links replaced by ``link``."""
    c = load_transformer(str(LLAMA), seq=seq)
    par = Parallelism(tp, 1, 1, 1, cp=cp, cp_comm=cp_comm, attention="flash", recompute="none")
    machine = load_gpu_cluster(str(H100), "bf16").machine(par)
    if link is not None:
        machine = replace(machine, links=replace(machine.links, cp=link, cp_hop=link))
    clear_model_cache()
    layer = model_pieces(c, par, machine)["layer"]
    clear_model_cache()
    return layer, machine


def _quiet(**keys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return archsim.train(str(LLAMA), cluster=str(H100), dtype="bf16", **keys)


def test_each_all_to_all_s_bytes_and_seconds_by_hand():
    """TP 2, CP 4, sequence 32,768, micro-batch 1: a rank holds 8,192 tokens; Q and O are 8,192 × 16 heads × 128 × 2
    bytes = 32 MiB, K and V 8,192 × 4 × 128 × 2 = 8 MiB. On a 1 GB/s link without latency an all-to-all of B bytes
    sends (CP − 1)/CP of them: forward (Q, K, V, O) 3/4 · 80 MiB / 10⁹ s, backward (dO, dQ, dK, dV) the same, and
    none of it is hidden under attention."""
    q, kv = 8192 * 16 * 128 * 2, 8192 * 4 * 128 * 2
    assert (q, kv) == (32 * MIB, 8 * MIB)
    slow = LinkClass("slow", 1e9, 1.0, 0.0, 0.0)
    layer, _ = _layer(32768, "a2a", link=slow)
    hand = 3 / 4 * (q + kv + kv + q) / 1e9
    assert layer.cp_forward == pytest.approx(hand, rel=1e-12)
    assert layer.cp_backward == pytest.approx(hand, rel=1e-12)
    rows = [name for name, _, _ in layer.ops if name.startswith("cp.")]
    assert rows == ["cp.q,k,v,o all-to-all (a2a: 32 MiB, 2 × 8 MiB, 32 MiB)",
                    "cp.do,dq,dk,dv all-to-all (a2a: 2 × 32 MiB, 2 × 8 MiB)"]


@pytest.mark.parametrize("cp", [2, 4])
def test_a2a_attention_per_rank_is_one_cp_th_of_cp_1_s(cp):
    """After the all-to-all a rank attends all s tokens at 1/CP of its heads, causal, in one kernel: its (q, k ≤ q)
    pairs counted one by one are the whole sequence's × heads / CP, and its FlashAttention GEMM FLOPs (forward and
    backward) are the CP-1 layer's over CP."""
    s, heads = 96, 16
    steps = flash_steps(s, heads, 4, cp, True, "a2a")
    assert steps == ((s, heads // cp, 4 // cp, True),)
    pairs = sum(1 for q in range(s) for k in range(s) if k <= q)
    assert sum(t * (t + 1) // 2 * h for t, h, _, _ in steps) * cp == pairs * heads
    c = load_transformer(str(LLAMA), seq=8192)

    def flash(work):
        ops: tuple[TrainingOp, ...] = (*work.forward, *work.backward)
        return sum(2 * g.m * g.k * g.n * g.count for op in ops if op.layer == "flash_attention" for g in op.gemms)

    whole = flash(block_work(c, 1, 2, attention="flash", dtype="bf16"))
    mine = flash(block_work(c, 1, 2, attention="flash", dtype="bf16", cp=cp, cp_comm="a2a"))
    assert mine * cp == whole


def test_heads_cp_does_not_divide_are_refused_as_transformer_engine_refuses_them(capsys):
    """TransformerEngine asserts num_heads % cp_size == 0 for Q and K/V and replicates no K/V head: Llama-3-8B at
    TP 2 has 4 K/V heads per rank, so CP 8 is refused (CP 2 and 4 offered), in one line, on the cp field; at TP 1
    (8 K/V heads) CP 8 runs. GPT-3 1.3B's 16 heads at TP 2 (8 per rank) refuse CP 16 alike. p2p runs CP 8."""
    with pytest.raises(InputError) as err:
        _quiet(tp=2, cp=8, cp_comm="a2a", global_batch=1, seq=32768)
    text = str(err.value)
    assert err.value.where.field == "cp" and "\n" not in text
    assert "16 query and 4 key/value heads" in text and "CP 2 or 4 does" in text
    _quiet(tp=1, cp=8, cp_comm="a2a", global_batch=1, seq=32768)
    _quiet(tp=2, cp=8, cp_comm="p2p", global_batch=1, seq=32768)
    gpt = ROOT / "configs" / "transformers" / "gpt3_1.3b.toml"
    with pytest.raises(InputError, match="8 query and 8 key/value heads over CP 16.*CP 2, 4 or 8 does"):
        archsim.train(str(gpt), cluster=str(ROOT / "configs" / "clusters" / "dgx_h100_superpod.toml"), tp=2,
                      cp=16, cp_comm="a2a", global_batch=1)
    assert main(["train", str(LLAMA), "--cluster", str(H100), "--seq", "32768", "--tp", "2", "--cp", "8",
                 "--global-batch", "1", "--cp-comm", "a2a"]) == 2
    err_line = capsys.readouterr().err
    assert err_line.startswith("archsim train: error:") and err_line.count("\n") == 1 and "--cp-comm a2a" in err_line


def test_at_cp_1_a2a_changes_nothing():
    keys = {"tp": 2, "dp": 8, "global_batch": 8, "seq": 8192}
    before, rates = _quiet(**keys)
    with pytest.warns(UserWarning, match="exchanges nothing"):
        after, rates_after = archsim.train(str(LLAMA), cluster=str(H100), dtype="bf16", cp_comm="a2a", **keys)
    assert after.iteration_seconds == before.iteration_seconds and after.breakdown == before.breakdown
    assert [m.total for m in after.memory] == [m.total for m in before.memory] and rates_after.mfu == rates.mfu


def test_a2a_against_p2p_inside_one_server_by_hand_bytes():
    """Llama-3-8B at 131,072 tokens, TP 2 × CP 4 = one 8-GPU NVLink server: each rank holds 32,768 tokens. p2p
    sends K/V of 32,768 tokens (32,768 × 4 × 128 × 2 × 2 = 64 MiB) 3 times forward and 1 + 2 + 2 + 1 times backward:
    576 MiB, each send under a step's attention, so only what the attention loses beside it to NCCL's SMs is
    exposed, less than the sends themselves (none with the SMs free: tests/test_comm_sms_fsdp_cp.py). a2a sends 3/4 of Q, K, V, O and dO, dQ, dK, dV
    (2 × (128 + 32 + 32 + 128) MiB): 480 MiB, fewer bytes, but in series with attention: its seconds are those
    bytes' all-to-alls on the server's link, counted here from the link's own latency and bandwidth."""
    q, kv, one = 32768 * 16 * 128 * 2, 32768 * 4 * 128 * 2, 32768 * 4 * 128 * 2 * 2
    p2p_bytes = (3 + 1 + 2 + 2 + 1) * one
    a2a_bytes = 3 / 4 * 2 * (q + kv + kv + q)
    assert (p2p_bytes, a2a_bytes) == (576 * MIB, 480 * MIB)
    p2p, machine = _layer(131072, "p2p")
    a2a, _ = _layer(131072, "a2a")
    link = machine.links.cp
    assert link.name == "nvlink"  # inside the server
    steps = [t for name, kind, t in p2p.ops if name == "flash_attention"]
    hop = machine.links.cp_hop
    assert hop.launch_s + 2 * one / hop.bus_bandwidth < min(steps)  # the longest send (K/V + dK/dV) hides
    sends = 7 * hop.launch_s + p2p_bytes / hop.bus_bandwidth  # 3 forward, 4 backward messages
    assert 0 < p2p.cp_forward + p2p.cp_backward < sends
    hand = 8 * (link.launch_s + 3 * link.alpha_s) + a2a_bytes / link.bus_bandwidth
    assert a2a.cp_forward + a2a.cp_backward == pytest.approx(hand, rel=1e-12)
    assert a2a.cp_forward + a2a.cp_backward > p2p.cp_forward + p2p.cp_backward


def test_memory_counts_the_all_to_all_buffers_by_hand():
    """TP 2 × CP 4 at 32,768 tokens: a2a holds each of Q, K, V's send copy and receive buffer, 2 × (32 + 8 + 8) MiB
    = 96 MiB beyond a rank's activations; p2p its two K/V and dK/dV receive buffers, 4 × 16 MiB = 64 MiB: the
    activations differ by 32 MiB and nothing else does."""
    keys = {"tp": 2, "cp": 4, "dp": 2, "global_batch": 2, "seq": 32768}
    p2p, _ = _quiet(**keys)
    a2a, _ = _quiet(cp_comm="a2a", **keys)
    assert a2a.memory[0].activations - p2p.memory[0].activations == 32 * MIB
    assert a2a.memory[0].parameters == p2p.memory[0].parameters


def test_a_cp_group_across_servers_with_a2a_is_warned_of(capsys):
    """GPT-3 1.3B (16 heads) at TP 2 × CP 8 on two 8-GPU servers: each CP group holds GPU t of 8 TP pairs, 16 GPUs
    over both servers, so its all-to-alls cross the network: one warning line. TP 2 × CP 4 stays in a server, and
    p2p across the servers is not warned of (Llama 3's layout)."""
    gpt = str(ROOT / "configs" / "transformers" / "gpt3_1.3b.toml")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        archsim.train(gpt, cluster=str(H100), tp=2, cp=8, cp_comm="a2a", global_batch=1)
        archsim.train(gpt, cluster=str(H100), tp=2, cp=4, dp=2, cp_comm="a2a", global_batch=2)
        archsim.train(gpt, cluster=str(H100), tp=2, cp=8, global_batch=1)
    spans = [str(w.message) for w in caught if "CP group" in str(w.message)]
    assert spans == ["a CP group spans 2 servers: its all-to-alls (a2a) cross the network"]
    assert main(["train", gpt, "--cluster", str(H100), "--tp", "2", "--cp", "8", "--cp-comm", "a2a",
                 "--global-batch", "1"]) == 0
    assert "warning: a CP group spans 2 servers" in capsys.readouterr().err


def test_search_tries_a2a_and_drops_the_cps_it_cannot_split_heads_over(capsys):
    """Search at TP 2 can try CP 2 with a2a; its row's command and Megatron-LM arguments name it and it runs
    through train to the row's seconds. CP 8 with a2a at every TP (4 K/V heads per TP 2 rank) is rejected."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = archsim.search(str(LLAMA), cluster=str(H100), global_batch=4, top=40, schedule="1f1b",
                                max_micro_batch=1, recompute="full", sequence_parallel="on", dtype="bf16",
                                seq=16384, cp=[2], cp_comm=["a2a"])
    row = next(r for r in result.rows if r["cp_comm"] == "a2a")
    assert "--cp 2 --cp-comm a2a" in row["command"]
    assert "--context-parallel-size 2 --cp-comm-type a2a" in row["megatron_args"]
    assert main(["train", *row["command"].split()[2:], "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)["meta"]
    assert got["cp_comm"] == "a2a" and got["iteration_seconds"] == pytest.approx(row["iteration_seconds"], rel=1e-12)
    assert Parallelism(2, 1, 1, 1, cp=8, cp_comm="a2a").cp_comm == "a2a"  # a valid choice: refused by the heads


def test_search_files_a2a_heads_refusal_under_its_own_reason():
    """CP 8 with a2a splits the sequence of 16,384 tokens into 16 chunks (it divides), but at TP 2 a rank's
    8 / 2 = 4 K/V heads do not divide over 8: rejected as ``cp-divides-heads``, not ``cp-splits-sequence``;
    TP 1 (8 K/V heads) stays."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = archsim.search(str(LLAMA), cluster=str(H100), global_batch=4, top=40, schedule="1f1b",
                                max_micro_batch=1, recompute="full", sequence_parallel="off", dtype="bf16",
                                seq=16384, cp=[8], cp_comm=["a2a"])
    assert result.rejected.get("cp-divides-heads", 0) >= 1
    assert not result.rejected.get("cp-splits-sequence")
    assert {r["tp"] for r in result.rows} == {1}


def test_sweep_warns_of_a2a_cp_groups_across_servers_as_train_does(capsys):
    """``train --sweep tp=1,2`` at CP 8 with a2a on two 8-GPU servers: TP 1 × CP 8 is one server's 8 GPUs, TP 2 × CP 8
    needs all 16, its CP groups (GPU t of 8 TP pairs) over both servers: the one warning ``train`` gives that point,
    counted over the sweep's points as its TP-span line is. With p2p nothing is said."""
    gpt = str(ROOT / "configs" / "transformers" / "gpt3_1.3b.toml")
    common = ["train", gpt, "--cluster", str(H100), "--global-batch", "1", "--cp", "8", "--format", "csv"]
    capsys.readouterr()
    assert main([*common, "--cp-comm", "a2a", "--sweep", "tp=1,2"]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert warned == [("archsim train: warning: 1 of the sweep's 2 points (tp 2 × cp 8 × pp 1 × dp 1): a CP group "
                       "spans 2 servers: its all-to-alls (a2a) cross the network")]
    assert main([*common, "--sweep", "tp=1,2"]) == 0
    assert "warning" not in capsys.readouterr().err
