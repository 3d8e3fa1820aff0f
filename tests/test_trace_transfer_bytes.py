"""A training run's pipeline transfers carry the bytes their hop is priced from — the micro-batch's
s·b·h activation (and its gradient back) over TP, at the dtype's width — in the Chrome trace and the
timeline's transfer table, while every simulated time stays what it was when they carried 0 bytes
(a hop's time is its priced latency alone, the bytes ride an infinite-bandwidth link)."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from archsim.api import train
from archsim.cli import main
from archsim.policies.stage_orders import published_order
from archsim.policies.stage_run import run_order
from archsim.training.cluster_file import single_node
from archsim.training.iteration import model_pieces
from archsim.training.parallel import Parallelism
from archsim.training.stages import stage_times
from archsim.workload.model_files import load_transformer, transformer_path

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = str(ROOT / "configs/clusters/a100_node.toml")

# gpt2.json: n_positions 1024 (the sequence), n_embd 768 (the hidden size); micro-batch 2, TP 2
SEQ, HIDDEN, MICRO_BATCH, TP = 1024, 768, 2, 2
ELEMENT = {"fp16": 2, "fp32": 4}


def hop_bytes_by_hand(dtype: str) -> int:
    """One micro-batch's activation at a stage boundary, per TP rank (Megatron's scatter/gather)."""
    return MICRO_BATCH * SEQ * HIDDEN * ELEMENT[dtype] // TP


# (dtype, attention, schedule) → iteration_seconds measured before the transfers carried bytes, by
# `archsim train gpt2 --cluster configs/clusters/a100_node.toml --tp 2 --pp 2 --dp 2 --global-batch 16
#  --micro-batch 2 --schedule S [--dtype fp32 --attention standard] --format json`; the fp32 one since
# fp32 Megatron's memory-bound ops count fp32 elements (2026-12-01: 0.2521629776860737 before, the transfers'
# bytes changing nothing then or now; tests/test_fp32_traffic.py), and since fp32 runs Megatron's unfused
# softmax on every shape (2026-12-01: 0.24651748699639495 before, the fused kernel at 6 heads × micro-batch 2); the
# flash ones since FlashAttention-2's backward runs its D and dQ-conversion kernels beside its main one
# (2026-12-03: 0.0950287231592462 and 0.0918263424173143 before); all with overlapped pipeline sends (`--p2p
# overlapped`, the default when recorded), stated below; the TP 2 all-reduces on NCCL's LL128 below 16 MB since
# 2026-12-06 (0.09919272315924618, 0.0959903424173143 and 0.25879552644942755 on Simple alone)
BEFORE = {("fp16", "flash", "1f1b"): 0.09887955534012971,
          ("fp16", "flash", "zb-h1"): 0.0956771745981978,
          ("fp32", "standard", "1f1b"): 0.25534900030496477}


@pytest.mark.parametrize("dtype, attention, schedule", list(BEFORE))
def test_chrome_trace_transfers_carry_the_hop_bytes(tmp_path, capsys, dtype, attention, schedule):
    trace = tmp_path / "t.json"
    assert main(["train", "gpt2", "--cluster", CLUSTER, "--tp", "2", "--pp", "2", "--dp", "2",
                 "--global-batch", "16", "--micro-batch", "2", "--schedule", schedule, "--dtype", dtype,
                 "--attention", attention, "--p2p", "overlapped", "--format", "json", "--chrome-trace", str(trace)]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["meta"]["iteration_seconds"] == BEFORE[(dtype, attention, schedule)]
    hops = [e for e in json.loads(trace.read_text())["traceEvents"] if e.get("cat") == "comm"]
    microbatches = 16 // (2 * MICRO_BATCH)
    assert len(hops) == 2 * microbatches  # one activation down and one gradient up per micro-batch
    assert {e["args"]["bytes"] for e in hops} == {hop_bytes_by_hand(dtype)}


def test_the_timeline_transfer_table_carries_the_same_bytes():
    result, _ = train("gpt2", cluster=CLUSTER, global_batch=16, tp=2, pp=2, dp=2, micro_batch=2, p2p="overlapped")
    assert result.iteration_seconds == BEFORE[("fp16", "flash", "1f1b")]
    frame = result.timeline.transfers_frame()
    assert len(frame) == 2 * 4  # 4 micro-batches per DP rank, each hop down and back
    assert set(frame["bytes"].tolist()) == {hop_bytes_by_hand("fp16")}


@pytest.mark.parametrize("schedule, interleave", [("1f1b", 1), ("gpipe", 1), ("interleaved-1f1b", 2),
                                                  ("zb-h1", 1), ("zb-h2", 1), ("zb-v", 1)])
def test_carried_bytes_leave_every_time_as_a_zero_byte_transfer_has_it(schedule, interleave):
    """The same order on the profile training builds and on it without the bytes (the links of the
    old path: no send bytes, no bandwidth): every op and transfer starts and ends at the same float."""
    config = load_transformer(transformer_path("gpt2"))
    par = Parallelism(TP, 2, 1, 8, MICRO_BATCH, "full", interleave=interleave, schedule=schedule)
    machine = single_node("a100-80gb", 8).machine(par)
    times = stage_times(config, par, machine, model_pieces(config, par, machine))
    order = published_order(par.schedule_name, par.pp, par.microbatches, par.chunks)
    carried, bare = run_order(order, times).timeline, run_order(order, replace(times, send_bytes=(), bandwidth=None)).timeline
    assert carried.makespan == bare.makespan
    for column in ("start", "end"):
        assert np.array_equal(getattr(carried.slots, column), getattr(bare.slots, column))
        assert np.array_equal(getattr(carried.transfers, column), getattr(bare.transfers, column))
    assert len(carried.transfers) > 0
    assert {t.bytes for t in carried.transfers} == {hop_bytes_by_hand("fp16")}
    assert {t.bytes for t in bare.transfers} == {0}
