"""`archsim train`'s TFLOP/s per GPU and MFU on Llama 3 405B's published runs, printed beside Table 4.

    .venv/bin/python benchmarks/bench_llama3_throughput.py

Llama 3 405B (configs/transformers/llama3_405b.toml) on 8,192 and 16,384 H100s of Meta's RoCE cluster
(configs/clusters/llama3_h100_2048_servers.toml): Dubey et al. 2024 (arXiv 2407.21783), Table 4's CP 1 rows
(TP 8, PP 16, DP 64 / 128, 16M tokens of sequence 8,192; 430 and 400 TFLOP/s per GPU, BF16 MFU 43% and 41%),
beside archsim's model TFLOP/s and MFU at V = 1, 2, 4 chunks per rank (not published) with Meta's stage split,
no recompute, sequence parallelism, bf16, flash, the distributed optimizer for their FSDP, micro-batch 1 (not
published); per-term breakdown, the 8,192 → 16,384 step, and the same without the pods' oversubscription
(benchmarks/published_llama3.py; docs/accuracy.md, "Llama 3 405B on 8,192 and 16,384 H100s"). Then Table 4's
CP 16 row (sequence 131,072, TP 8 × CP 16 × PP 16 × DP 8 on 16,384 GPUs: 380 TFLOP/s per GPU, MFU 38%) beside
archsim's prediction at V = 1, 2, 4 under --cp-comm p2p and all_gather (Llama 3's), set as the 8K rows, with
what counting attention's causal half instead of the whole s² square would make of the figures
(docs/training.md, "Context parallelism").

``bench_published_throughput.py`` prints the same lines (after its GPT-3, Llama 2 and MPT ones) and writes
these rows into benchmarks/results/published_throughput.csv; run alone, this prints them and writes nothing.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from archsim.training.cluster import GpuCluster
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.parallel import Parallelism
from archsim.workload.model_files import load_transformer
from archsim.workload.transformer import TransformerConfig

sys.path.insert(0, str(Path(__file__).resolve().parent))
from published_llama3 import (  # the benchmarks folder is not a package: its siblings by path
    LLAMA3_405B_CONFIG,
    LLAMA3_TABLE4,
    LLAMA3_TABLE4_LONG,
    meta_stage_layers,
)
from published_predict import ROOT, predict

LLAMA3_CLUSTER = "llama3_h100_2048_servers.toml"  # Meta's RoCE H100 fabric, §3.3.1 (its 8,192-GPU run: the first half)


def llama3_sharding(fsdp_reshard: str | None, grad_sync: str = "micro-batch") -> dict:
    """The Llama 3 rows' state sharding: None, the distributed optimizer with bucketed reduce-scatters (the
    stand-in before FSDP ran beside PP); else FSDP inside each pipeline stage with ``fsdp_reshard`` (``none``:
    §3.3.2's, parameters kept from the forward to the backward) and ``grad_sync`` (``step``: PyTorch's pipeline
    runtime, one reduce-scatter per stage a step)."""
    if fsdp_reshard is None:
        return {"dp_overlap": "bucketed", "distributed_optimizer": True}
    return {"fsdp": True, "fsdp_reshard": fsdp_reshard, "fsdp_grad_sync": grad_sync}


def llama3_rows(cluster: str | GpuCluster = LLAMA3_CLUSTER, chunks: tuple[int, ...] = (1, 2, 4),
                fsdp_reshard: str | None = None, grad_sync: str = "micro-batch") -> list[dict]:
    """Llama 3 405B on 8,192 and 16,384 H100s (Table 4's CP 1 rows) beside the published TFLOP/s and MFU: TP 8,
    PP 16, DP 64 / 128, 2,048 sequences of 8,192 tokens, bf16, flash, no recompute (§3.3.2: none at 8K), sequence
    parallelism (TP's cited Korthikanti et al.), the distributed optimizer with bucketed reduce-scatters for their
    FSDP (optimizer states and gradients sharded, parameters kept whole between forward and backward), micro-batch 1
    (not published), interleaved with V chunks per rank (not published) and Meta's split (one layer fewer on the
    first and last chunks); ``fsdp_reshard`` given: FSDP in each stage in its place (:func:`llama3_sharding`)."""
    c = load_transformer(ROOT / "configs" / "transformers" / LLAMA3_405B_CONFIG)
    rows = []
    for r in LLAMA3_TABLE4:
        for v in chunks:
            par = Parallelism(r.tp, r.pp, r.dp, r.global_batch, 1, "none", True, v, "1f1b",
                              stage_layers=meta_stage_layers(c.layers, r.pp, v), attention="flash",
                              **llama3_sharding(fsdp_reshard, grad_sync))
            row = predict(c, cluster, par, "bf16")
            rows.append(row | {"source": r.source, "published_tflops_per_gpu": r.tflops, "published_mfu": r.mfu,
                               "vs_published": row["tflops_per_gpu"] / r.tflops - 1})
    return rows


def llama3_long_rows(cluster: str | GpuCluster = LLAMA3_CLUSTER, chunks: tuple[int, ...] = (1, 2, 4),
                     comms: tuple[str, ...] = ("p2p", "all_gather"), fsdp_reshard: str | None = None,
                     grad_sync: str = "micro-batch") -> list[dict]:
    """Table 4's CP 16 row (sequence 131,072, TP 8 × CP 16 × PP 16 × DP 8, 128 sequences) beside archsim's
    prediction, set as the 8,192-token rows are (:func:`llama3_rows`: no recompute, each CP rank holds 8,192
    tokens, the 8K rows' activations) with ``--cp 16`` under each K/V exchange, at V = 1, 2, 4 chunks per rank."""
    r = LLAMA3_TABLE4_LONG
    c = load_transformer(ROOT / "configs" / "transformers" / LLAMA3_405B_CONFIG, seq=r.seq)
    rows = []
    for comm in comms:
        for v in chunks:
            par = Parallelism(r.tp, r.pp, r.dp, r.global_batch, 1, "none", True, v, "1f1b",
                              stage_layers=meta_stage_layers(c.layers, r.pp, v), attention="flash",
                              cp=r.cp, cp_comm=comm, **llama3_sharding(fsdp_reshard, grad_sync))
            row = predict(c, cluster, par, "bf16")
            rows.append(row | {"source": r.source, "published_tflops_per_gpu": r.tflops, "published_mfu": r.mfu,
                               "vs_published": row["tflops_per_gpu"] / r.tflops - 1})
    return rows


def causal_half_factor(c: TransformerConfig, global_batch: int) -> tuple[float, float]:
    """(the s² square's share of the model FLOPs, the model FLOPs counting the causal half s(s + 1)/2 over those
    counting the square): archsim counts attention's whole s² (``model_flops``, PaLM's and Narayanan et al.'s
    convention), and a count of the causal pairs alone would scale every TFLOP/s and MFU by the second."""
    from archsim.training.throughput import model_flops

    whole = model_flops(c, global_batch)
    square = global_batch * 12 * c.layers * c.attention_width * c.seq * c.seq
    half = global_batch * 12 * c.layers * c.attention_width * c.seq * (c.seq + 1) / 2
    return square / whole, (whole - square + half) / whole


def memory_words(row: dict) -> str:
    """A row's peak GiB per GPU and whether it fits the H100's memory (the catalog's: what CUDA gives a program), as
    each Llama 3 line says it."""
    return f"{row['peak_memory_gib']:.1f} GiB ({'fits' if row['fits_memory'] else 'does not fit its H100'})"


def print_llama3_long(rows: list[dict]) -> None:
    """Table 4's CP 16 row beside archsim's prediction per K/V exchange and V, and the FLOPs convention's note."""
    r = LLAMA3_TABLE4_LONG
    print(f"Llama 3 405B, sequence {r.seq:,}, {r.gpus:,} H100, TP {r.tp} × CP {r.cp} × PP {r.pp} × DP {r.dp}, "
          f"{r.global_batch} sequences, micro-batch 1: published {r.tflops:.0f} TFLOP/s per GPU, MFU {r.mfu:.2f} "
          f"({r.source}); archsim:")
    for row in rows:
        print(f"  --cp-comm {row['cp_comm']}, V {row['interleave']}: {row['tflops_per_gpu']:.1f} model TFLOP/s per GPU, "
              f"MFU {row['mfu']:.3f} ({row['vs_published']:+.0%}); {row['iteration_seconds']:.2f} s, "
              f"cp_communication {row.get('cp_communication_s', 0.0):.3f} s, {memory_words(row)}, "
              f"{row['cpu_s']:.1f} CPU s")
    c = load_transformer(ROOT / "configs" / "transformers" / LLAMA3_405B_CONFIG, seq=r.seq)
    share, factor = causal_half_factor(c, r.global_batch)
    example = next((x for x in rows if x["cp_comm"] == "p2p" and x["interleave"] == 2), rows[0])
    print(f"  FLOPs convention: archsim's model FLOPs count attention's whole s² square, {share:.0%} of the count at "
          f"{r.seq:,} tokens; the paper does not say whether Meta counts it whole. Counted as the causal half, "
          f"archsim's figures would be {factor:.3f} times these (--cp-comm {example['cp_comm']} V "
          f"{example['interleave']}: {example['tflops_per_gpu'] * factor:.0f})")


def print_llama3(rows: list[dict]) -> None:
    """Each Llama 3 row beside Table 4 with archsim's per-term breakdown; the published and predicted drop from
    DP 64 to DP 128; the same runs on a fabric without the pods' 1:7 oversubscription."""
    for row in rows:
        print(f"Llama 3 405B, {row['gpus']:,} H100, TP 8 × PP 16 × DP {row['dp']}, V {row['interleave']}, micro-batch 1: "
              f"{row['tflops_per_gpu']:.0f} model TFLOP/s per GPU, MFU {row['mfu']:.3f} vs "
              f"{row['published_tflops_per_gpu']:.0f}, {row['published_mfu']:.2f} published ({row['source']}): "
              f"{row['vs_published']:+.1%}; {row['iteration_seconds']:.2f} s, {memory_words(row)}, "
              f"{row['cpu_s']:.1f} CPU s; breakdown (s): " + ", ".join(
                  f"{k[:-2]} {row[k]:.3f}" for k in row if k.endswith("_s") and k != "cpu_s"))
    for v in sorted({r["interleave"] for r in rows}):
        small, large = (next(r for r in rows if r["interleave"] == v and r["dp"] == dp) for dp in (64, 128))
        print(f"  V {v}: 16,384 / 8,192 GPUs TFLOP/s per GPU, archsim {large['tflops_per_gpu'] / small['tflops_per_gpu']:.3f}, "
              f"published {large['published_tflops_per_gpu'] / small['published_tflops_per_gpu']:.3f}")
    cluster = load_gpu_cluster(ROOT / "configs" / "clusters" / LLAMA3_CLUSTER, "bf16")
    assert cluster.network is not None
    flat = replace(cluster, network=replace(cluster.network, servers_per_leaf=0, oversubscription=1.0))
    print("  without the pods' 1:7 oversubscription (one non-blocking fabric): " + ", ".join(
        f"DP {r['dp']} V {r['interleave']} {r['tflops_per_gpu']:.0f} ({r['vs_published']:+.1%})"
        for r in llama3_rows(flat, (2,))))


def main() -> int:
    print_llama3(llama3_rows())
    print_llama3_long(llama3_long_rows())
    return 0


if __name__ == "__main__":
    sys.exit(main())
