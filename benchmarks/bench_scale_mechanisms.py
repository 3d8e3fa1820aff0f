"""What grows from 64 to 512 GPUs in archsim's model, on vTrain's cluster (configs/clusters/vtrain_a100.toml:
servers of 8 A100s, 8 × 100 Gb/s NICs each): the figures docs/accuracy.md ("What grows at 512 GPUs")
quotes.

    .venv/bin/python benchmarks/bench_scale_mechanisms.py

1. A GPT-3 6.7B-shaped model (Brown et al. 2020, Table 2.1: 32 layers, d_model 4,096, 32 heads,
   sequence 2,048) at TP 4, PP 8, weak-scaled from DP 2 (64 GPUs) to DP 16 (512 GPUs), 16 samples per
   DP rank, micro-batch 1: each part of the slowest rank's iteration.
2. A DP all-reduce of each rank's gradients (that model's TP 4 · PP 8 shard) over DP = 2 … 64 servers,
   one GPU per server and TP rank: NCCL's ring and tree as archsim prices them, and which it takes.
3. 512 GPUs at TP 8, DP 64 (the DP groups span all 64 servers) on a fabric whose leaves hold 32
   servers with 2:1 oversubscription above them (hypothetical: vTrain's fabric is not published),
   and the TP 4 PP 8 DP 16 run of 1, whose DP groups stay within 8 servers of one leaf.
4. The pipeline hops priced per hop (NVLink inside a server) against every hop at the network's.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from archsim.collectives import collective_seconds
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.memory import stage_memory
from archsim.training.parallel import Parallelism
from archsim.training.run import train
from archsim.workload.transformer import TransformerConfig

GPT_6_7B = TransformerConfig("gpt3-6.7b", "gpt", layers=32, hidden=4096, heads=32, vocab=50257, seq=2048, ffn=16384,
                             kv_heads=32, tied_embeddings=True, positions=2048)
CLUSTER = ROOT / "configs" / "clusters" / "vtrain_a100.toml"


def _run(cluster, par):
    machines = cluster.laid_out(par)
    return train(GPT_6_7B, par, machines[0], machines)


def main() -> int:
    cluster = load_gpu_cluster(CLUSTER)
    print("1. TP 4 PP 8, 16 samples per DP rank, micro-batch 1 (seconds of the slowest rank)")
    for dp in (2, 16):
        par = Parallelism(tp=4, pp=8, dp=dp, global_batch=16 * dp, micro_batch=1, recompute="full")
        result = _run(cluster, par)
        parts = ", ".join(f"{k} {v:.4f}" for k, v in result.breakdown.items() if v)
        print(f"   {par.gpus:4d} GPUs: {result.iteration_seconds:.4f} s  ({parts})")
    print("2. DP all-reduce of one TP 4 · PP 8 shard's gradients, one GPU per server (NCCL's pick of ring and tree)")
    shard = stage_memory(GPT_6_7B, Parallelism(tp=4, pp=8, dp=1, global_batch=1), 4, 1, False, False, True)
    nbytes = shard.parameters * 2
    print(f"   {shard.parameters / 1e6:.0f} M parameters, {nbytes / 2**20:.0f} MiB")
    for servers in (2, 8, 16, 64):
        par = Parallelism(tp=8, dp=servers, global_batch=servers)
        link = cluster.machine(par).links.dp
        ring_tree = [float(collective_seconds("all-reduce", nbytes, servers, link)) * 1e3]
        print(f"   {servers:3d} servers: {ring_tree[0]:.2f} ms  (latency part: "
              f"{float(collective_seconds('all-reduce', 1.0, servers, link)) * 1e3:.3f} ms)")
    print("3. 512 GPUs under leaves of 32 servers, 2:1 oversubscribed above them")
    net = replace(cluster.network, servers_per_leaf=32, oversubscription=2.0)
    for tp, pp, dp in ((8, 1, 64), (4, 8, 16)):
        par = Parallelism(tp=tp, pp=pp, dp=dp, global_batch=16 * dp, micro_batch=1, recompute="full")
        flat, over = _run(cluster, par), _run(replace(cluster, network=net), par)
        print(f"   TP {tp} PP {pp} DP {dp}: non-blocking {flat.iteration_seconds:.4f} s, oversubscribed "
              f"{over.iteration_seconds:.4f} s (DP all-reduce {flat.breakdown['dp_communication'] * 1e3:.1f} → "
              f"{over.breakdown['dp_communication'] * 1e3:.1f} ms)")
    print("4. Pipeline hops per hop: TP 2 PP 16 DP 1 on 32 GPUs (four ranks a server), 64 micro-batches")
    par = Parallelism(tp=2, pp=16, dp=1, global_batch=64, micro_batch=1, recompute="full")
    machines = cluster.laid_out(par)
    per_hop = train(GPT_6_7B, par, machines[0], machines).iteration_seconds
    flat_machine = replace(machines[0], links=replace(machines[0].links, pp_hops=()))
    every = train(GPT_6_7B, par, flat_machine).iteration_seconds
    print(f"   every hop at the network's {every:.4f} s, per hop {per_hop:.4f} s ({(per_hop / every - 1) * 100:+.2f}%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
