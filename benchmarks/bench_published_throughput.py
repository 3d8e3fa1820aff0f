"""`archsim train`'s TFLOP/s per GPU and MFU on published large runs, printed beside the published figure.

    .venv/bin/python benchmarks/bench_published_throughput.py

* GPT-3 175B on 1,024 A100 80GB (128 DGX A100 servers) at batch 1,536, sequence 2,048: Narayanan et
  al. 2021 §5.1 give 140 TFLOP/s per GPU (their formula 96·B·s·l·h²(1 + s/6h + V/16lh) with full
  recompute, V = 51,200) and no parallel layout; their Table 1 has no 175B row. Predicted with TP 8,
  micro-batch 1, standard attention (Megatron-LM of 2021 had no FlashAttention), full recompute, as
  TP 8 × PP 8 × DP 16 (the layout the issue assumed) and TP 8 × PP 16 × DP 8 (Megatron-LM's 2021
  ``examples/pretrain_gpt3_175B.sh`` for 128 nodes), plain 1F1B and interleaved with 2 and 3 chunks
  per rank (§5.1 runs interleave; the chunk count is not given). archsim's hardware TFLOP/s is the
  same formula (archsim.training.throughput). Then the published figures it can be checked against
  and its prediction taken apart (benchmarks/published_gpt3.py, docs/training.md "Published large
  runs"): Table 2's 175B runs (TP 8 × PP 12 at 384–1,536 GPUs), Table 1's rows, Korthikanti et al.
  2022's Table 4 (one layer of a 22B model, TP 8), cuBLASLt GEMMs measured on an A100, and the
  per-layer decomposition with what Megatron-LM of 2021 ran that archsim does not model. Each GPT-3
  line is printed twice: today's Megatron-LM (``--grad-accumulation fused``, the default) and the 2021
  software the papers ran (``--grad-accumulation unfused``: autograd's gradient add after each
  micro-batch's backward but the first).
* A Llama-2-7B-like model (32 layers, hidden 4,096, 32 heads, FFN 11,008, vocabulary 32,000) at
  sequence 4,096 with FlashAttention-2 on 16 H100s (configs/clusters/h100_2_servers.toml): DP 16 and
  TP 2 × DP 8, micro-batch 1 and 2, global batch 256, no recompute; its MFU, with the standard-attention
  MFU beside it. And NVIDIA NeMo's published Llama-2-7B pre-training setting (NeMo Framework 24.09
  performance summary: 8 GPUs, global batch 128, micro-batch 1, sequence 4,096, TP 1, PP 1; 780 model
  TFLOP/s per GPU, 16,934 tokens/s per GPU) on 8 of those H100s. NeMo ran FP8 with its distributed
  optimizer; archsim models bf16 (the H100 lines run at --dtype bf16, fp32 gradients) and a replicated
  Adam state, so the two are printed side by side, not as a check (the run does not fit 80 GB without the distributed optimizer). The
  published bf16 MFU the Llama line is read against: MosaicML llm-foundry's MPT-7B at sequence 4,096
  on 8 H100s (FlashAttention, FSDP, micro-batch 16, activation checkpointing): 40.42%, beside archsim's
  MFU for that setting (DP 8, full recompute, --fsdp; and with replicated Adam, which would not fit).

* Llama 3 405B (configs/transformers/llama3_405b.toml) on 8,192 and 16,384 H100s of Meta's RoCE cluster
  (configs/clusters/llama3_h100_2048_servers.toml): Dubey et al. 2024 (arXiv 2407.21783), Table 4's CP 1 rows
  (TP 8, PP 16, DP 64 / 128, 16M tokens of sequence 8,192; 430 and 400 TFLOP/s per GPU, BF16 MFU 43% and 41%),
  beside archsim's model TFLOP/s and MFU at V = 1, 2, 4 chunks per rank (not published) with Meta's stage split,
  no recompute, sequence parallelism, bf16, flash, the distributed optimizer for their FSDP, micro-batch 1 (not
  published); per-term breakdown, the 8,192 → 16,384 step, and the same without the pods' oversubscription
  (benchmarks/published_llama3.py; docs/training.md, "Llama 3 405B on 8,192 and 16,384 H100s"). Then Table 4's
  CP 16 row (sequence 131,072, TP 8 × CP 16 × PP 16 × DP 8 on 16,384 GPUs: 380 TFLOP/s per GPU, MFU 38%) beside
  archsim's prediction at V = 1, 2, 4 under --cp-comm p2p and all_gather (Llama 3's), set as the 8K rows, with
  what counting attention's causal half instead of the whole s² square would make of the figures
  (docs/training.md, "Context parallelism").

Then a check of the GEMM model at these sizes where a measurement exists: the GEMMs of at least
0.1 TFLOP in the Hopper check's probe (benchmarks/results/gpu_efficiency_probe_h100-80gb-hbm3.csv,
timed on an H100 80GB HBM3) against archsim's time for them (the A100's kernel constants, as train
uses on an H100): the measured TFLOP/s and predicted / measured time.

Writes benchmarks/results/published_throughput.csv atomically; also the CPU seconds of each prediction.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd

from archsim.outputs import atomic_write_text
from archsim.training.cluster import GpuCluster
from archsim.training.cluster_file import load_gpu_cluster, single_node
from archsim.training.grad_accumulation import per_microbatch_seconds
from archsim.training.parallel import Parallelism, schedule_rejection
from archsim.training.run import train
from archsim.training.throughput import throughput
from archsim.workload.model_files import load_transformer
from archsim.workload.transformer import TransformerConfig

sys.path.insert(0, str(Path(__file__).resolve().parent))
from published_gpt3 import (  # the benchmarks folder is not a package: its siblings by path
    GPT3_1024_TFLOPS,
    KORTHIKANTI_22B,
    KORTHIKANTI_TABLE4,
    MPT7B_H100_MFU,
    NARAYANAN_TABLE1,
    NARAYANAN_TABLE2,
    gemm_rate_check,
    gemm_shapes,
    gpt,
    layer_decomposition,
    published_seconds,
)
from published_llama3 import LLAMA3_405B_CONFIG, LLAMA3_TABLE4, LLAMA3_TABLE4_LONG, meta_stage_layers

ROOT = Path(__file__).resolve().parents[1]
GPT3 = TransformerConfig("gpt3-175b", "gpt", layers=96, hidden=12288, heads=96, vocab=51200, seq=2048, ffn=4 * 12288,
                         kv_heads=96, tied_embeddings=True, positions=2048)
LLAMA = TransformerConfig("llama-2-7b-like", "llama", layers=32, hidden=4096, heads=32, vocab=32000, seq=4096,
                          ffn=11008, kv_heads=32, tied_embeddings=False)
PUBLISHED_GPT3_TFLOPS = GPT3_1024_TFLOPS  # Narayanan et al. 2021 §5.1 (1,024 GPUs, batch 1,536): TFLOP/s per GPU
MPT7B = TransformerConfig("mpt-7b-like", "gpt", layers=32, hidden=4096, heads=32, vocab=50432, seq=4096, ffn=4 * 4096,
                          kv_heads=32, tied_embeddings=True)
NEMO_LLAMA2_7B = {"tflops_per_gpu": 780.0, "tokens_per_gpu_second": 16934.0}  # NeMo 24.09 summary, FP8, 8 GPUs


def predict(c: TransformerConfig, cluster_file: str | GpuCluster, par: Parallelism, dtype: str = "fp16") -> dict:
    """archsim's prediction of one run in ``dtype``: fp16 for the A100 papers' runs, bf16 for the H100 runs
    they are read against (bf16's gradients fp32, as Megatron-LM keeps them); a cluster file in
    configs/clusters/ or a cluster already read (and edited)."""
    cluster = cluster_file if isinstance(cluster_file, GpuCluster) else \
        load_gpu_cluster(ROOT / "configs" / "clusters" / cluster_file, dtype)
    start = time.process_time()
    machines = cluster.rank_machines(par)
    assert machines is not None
    result = train(c, par, machines[0], machines)
    cpu = time.process_time() - start
    rates = throughput(c, par.global_batch, par.recompute, result.iteration_seconds, par.gpus,
                       machines[0].gpu.peak(dtype), par.attention)
    fits = all(m.total <= mc.gpu.memory_bytes for m, mc in zip(result.memory, machines))
    return {"model": c.name, "dtype": dtype, "gpus": par.gpus, "tp": par.tp, "cp": par.cp, "cp_comm": par.cp_comm,
            "seq": c.seq, "pp": par.pp, "dp": par.dp, "micro_batch": par.micro_batch,
            "interleave": par.interleave, "recompute": par.recompute, "attention": par.attention,
            "grad_accumulation": par.grad_accumulation or "fused",
            "iteration_seconds": result.iteration_seconds, "tflops_per_gpu": rates.tflops_per_gpu,
            "hardware_tflops_per_gpu": rates.hardware_tflops_per_gpu, "mfu": rates.mfu,
            "peak_memory_gib": result.peak_memory_gib, "fits_memory": fits, "cpu_s": cpu,
            **{f"{k}_s": v for k, v in result.breakdown.items()}}


def gpt3_rows() -> list[dict]:
    """GPT-3 175B at 1,024 GPUs (two layouts, three schedules) and Table 2's three runs, beside the papers:
    each with today's fused gradient accumulation and with 2021's unfused one (the software they ran)."""
    runs = [(Parallelism(8, pp, dp, 1536, 1, "full", False, v, "1f1b"), "Narayanan 2021 §5.1", GPT3_1024_TFLOPS)
            for pp, dp in ((8, 16), (16, 8)) for v in (1, 2, 3)]
    runs += [(Parallelism(8, 12, gpus // 96, 1536, 1, "full", False, v, "1f1b"), "Narayanan 2021 Table 2", published)
             for gpus, published in NARAYANAN_TABLE2 for v in (1, 2)]
    rows = []
    for par, source, published in runs:
        for accumulation in ("fused", "unfused"):
            row = predict(GPT3, "a100_384_servers.toml", replace(par, grad_accumulation=accumulation))
            rows.append(row | {"source": source, "published_hardware_tflops_per_gpu": published})
    for row in rows:
        row["vs_published"] = row["hardware_tflops_per_gpu"] / row["published_hardware_tflops_per_gpu"] - 1
        layers = GPT3.layers // row["pp"] * 1536 // row["dp"]  # layer-micro-batches per rank
        gap = published_seconds(GPT3, 1536, row["gpus"], row["published_hardware_tflops_per_gpu"]) - row["iteration_seconds"]
        row["gap_ms_per_layer_microbatch"] = gap / layers * 1e3
    return rows


def table1_rows() -> list[dict]:
    """Narayanan et al. 2021 Table 1 (micro-batch not published: 1 and 2; 1F1B, and 2 chunks where they split
    and Megatron-LM's interleaved schedule takes the micro-batches: 310.1B at micro-batch 2 has m = 72, PP 16)."""
    rows = []
    for r in NARAYANAN_TABLE1:
        c = gpt(f"gpt-{r.billions:g}b", r.layers, r.hidden, r.heads)
        dp = r.gpus // (r.tp * r.pp)
        for v in (1, 2):
            for mb in (1, 2):
                if v > 1 and (r.layers % (r.pp * v) or schedule_rejection("interleaved-1f1b", r.pp, r.batch // (mb * dp))):
                    continue  # an even split that Megatron-LM's interleaved schedule runs (PP > 1, m a multiple of PP)
                row = predict(c, "a100_384_servers.toml", Parallelism(r.tp, r.pp, dp, r.batch, mb, "full", False, v, "1f1b"))
                rows.append(row | {"hidden": r.hidden, "published_hardware_tflops_per_gpu": r.tflops,
                                   "vs_published": row["hardware_tflops_per_gpu"] / r.tflops - 1})
    return rows


def korthikanti_table4() -> list[tuple[str, float, float, float, float]]:
    """(row, forward ms, archsim, backward ms, archsim) for one layer of the 22B model: TP 8, micro-batch 4,
    its forward and TP all-reduces; the backward with its recompute and all-reduces."""
    from archsim.training.iteration import model_pieces

    node = single_node("a100-80gb", 8)
    out = []
    for name, recompute, sp, forward, backward in KORTHIKANTI_TABLE4:
        par = Parallelism(8, 1, 1, 4, 4, recompute, sp, attention="standard")
        layer = model_pieces(KORTHIKANTI_22B, par, node.machine(par))["layer"]
        f = layer.forward + layer.tp_forward
        b = layer.backward_input + layer.backward_weight + layer.recompute + layer.tp_backward
        out.append((name, forward, f * 1e3, backward, b * 1e3))
    return out


def print_decomposition(rows: list[dict]) -> None:
    """archsim's GPT-3 layer by class, the published gap per layer and micro-batch, what it is made of."""
    cluster = load_gpu_cluster(ROOT / "configs" / "clusters" / "a100_384_servers.toml")
    par = Parallelism(8, 12, 4, 1536, 1, "full", False, 1, "1f1b")
    machine = cluster.rank_machines(par)[0]
    parts = layer_decomposition(GPT3, par, machine)
    total = sum(parts.values())
    print(f"\nGPT-3 175B, one layer and micro-batch on one GPU (TP 8, micro-batch 1, full recompute), archsim: "
          f"{total * 1e3:.2f} ms = " + ", ".join(f"{k} {v * 1e3:.2f}" for k, v in parts.items()))
    shapes = sorted({(m, k, n) for _, _, m, k, n in gemm_shapes(GPT3, par)})
    print("  its weight GEMMs (m × k × n): " + ", ".join(f"{m}×{k}×{n}" for m, k, n in shapes))
    table2 = [r for r in rows if r["source"] == "Narayanan 2021 Table 2" and r["interleave"] == 1
              and r["grad_accumulation"] == "fused"]
    gaps = [r["gap_ms_per_layer_microbatch"] for r in table2]
    unfused = replace(par, grad_accumulation="unfused")
    accumulate = per_microbatch_seconds(GPT3, unfused, machine, 1, False, False) * 1e3  # one layer's share
    print(f"  Table 2 (TP 8 × PP 12, 1F1B): published time - archsim's = {min(gaps):.2f}-{max(gaps):.2f} ms per layer and "
          f"micro-batch at 384, 768, 1,536 GPUs ({', '.join(format(r['vs_published'], '+.1%') for r in table2)} in TFLOP/s)")
    left = [g - accumulate for g in gaps]
    print(f"  of it, Megatron-LM 2021's unfused fp16 gradient accumulation (--grad-accumulation unfused: autograd add, "
          f"6 B per parameter and micro-batch after the first, at the memory-bound rate) {accumulate:.2f} ms; left unexplained "
          f"{min(left):.2f}-{max(left):.2f} ms ({min(left) / (total * 1e3):.1%}-{max(left) / (total * 1e3):.1%} of "
          "archsim's layer)")
    at_1024 = [r for r in rows if r["source"] == "Narayanan 2021 §5.1" and r["grad_accumulation"] == "fused"]
    print("  §5.1's 1,024 GPUs (layout not published): published - archsim = " + ", ".join(
        f"PP {r['pp']} v{r['interleave']} {r['gap_ms_per_layer_microbatch']:.2f}" for r in at_1024) + " ms per layer and micro-batch")
    print("Korthikanti et al. 2022 Table 4, one layer of the 22B model (TP 8, micro-batch 4), measured / archsim ms:")
    for name, f, fa, b, ba in korthikanti_table4():
        print(f"  {name:24s} forward {f:5.1f} / {fa:5.2f} ({fa / f - 1:+.1%})  backward {b:5.1f} / {ba:5.2f} ({ba / b - 1:+.1%})")
    print("A100 cuBLASLt fp16 GEMMs (Azure ND A100 v4, measured) / archsim's tile model, TFLOP/s:")
    checks = gemm_rate_check(machine)
    for m, n, k, measured, predicted in checks:
        print(f"  {m}×{n}×{k}: {measured:.1f} / {predicted:.1f} ({predicted / measured - 1:+.1%})")
    slower = checks[-1][4] / checks[-1][3]  # the measured shape nearest GPT-3's (k = 12,288)
    gemms = sum(v for k, v in parts.items() if k.startswith("GEMM"))
    par22 = Parallelism(8, 1, 1, 4, 4, "full", False, attention="standard")
    parts22 = layer_decomposition(KORTHIKANTI_22B, par22, single_node("a100-80gb", 8).machine(par22))
    gemms22 = sum(v for k, v in parts22.items() if k.startswith("GEMM"))
    print(f"  what if (not adopted): every weight GEMM {slower:.3f}× slower, as at {checks[-1][0]}×{checks[-1][1]}×"
          f"{checks[-1][2]}: GPT-3's layer +{gemms * (slower - 1) * 1e3:.2f} ms; the 22B layer with recompute "
          f"{sum(parts22.values()) * 1e3:.2f} → {(sum(parts22.values()) + gemms22 * (slower - 1)) * 1e3:.2f} ms "
          f"(Table 4: {KORTHIKANTI_TABLE4[2][3] + KORTHIKANTI_TABLE4[2][4]:.1f})")


def same_layout_check() -> None:
    """§5.1's 175B figure beside Table 1's 145.6B row on the layout the acceptance names (TP 8, PP 8, micro-batch 1,
    m = 96 micro-batches per pipeline, 2021 software): both models have GPT-3's layer (hidden 12,288, 96 heads,
    sequence 2,048) and differ in layers per stage (12 against 10) and DP (16 against 24), so a model whose time
    follows each layer's work gives them nearly the same TFLOP/s per GPU; the published pair differ by 148/140."""
    t1 = next(r for r in NARAYANAN_TABLE1 if r.billions == 145.6)
    c = gpt("gpt-145.6b", t1.layers, t1.hidden, t1.heads)
    print("Same layout, two published figures (TP 8 × PP 8, micro-batch 1, m = 96, 2021 software: unfused accumulation):")
    for v in (1, 2):
        small = predict(c, "a100_384_servers.toml", Parallelism(8, 8, t1.gpus // 64, t1.batch, 1, "full", False, v, "1f1b",
                                                               grad_accumulation="unfused"))
        large = predict(GPT3, "a100_384_servers.toml", Parallelism(8, 8, 16, 1536, 1, "full", False, v, "1f1b",
                                                                  grad_accumulation="unfused"))
        a, b = small["hardware_tflops_per_gpu"], large["hardware_tflops_per_gpu"]
        print(f"  v{v}: 145.6B (Table 1, 1,536 GPUs) archsim {a:.1f} vs {t1.tflops:.0f} ({a / t1.tflops - 1:+.1%}); "
              f"175B (§5.1, 1,024 GPUs) archsim {b:.1f} vs {GPT3_1024_TFLOPS:.0f} ({b / GPT3_1024_TFLOPS - 1:+.1%}); "
              f"175B / 145.6B: archsim {b / a:.3f}, published {GPT3_1024_TFLOPS / t1.tflops:.3f}")


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


def print_llama3_long(rows: list[dict]) -> None:
    """Table 4's CP 16 row beside archsim's prediction per K/V exchange and V, and the FLOPs convention's note."""
    r = LLAMA3_TABLE4_LONG
    print(f"Llama 3 405B, sequence {r.seq:,}, {r.gpus:,} H100, TP {r.tp} × CP {r.cp} × PP {r.pp} × DP {r.dp}, "
          f"{r.global_batch} sequences, micro-batch 1: published {r.tflops:.0f} TFLOP/s per GPU, MFU {r.mfu:.2f} "
          f"({r.source}); archsim:")
    for row in rows:
        fits = "fits" if row["fits_memory"] else "does not fit 80 GB"
        print(f"  --cp-comm {row['cp_comm']}, V {row['interleave']}: {row['tflops_per_gpu']:.1f} model TFLOP/s per GPU, "
              f"MFU {row['mfu']:.3f} ({row['vs_published']:+.0%}); {row['iteration_seconds']:.2f} s, "
              f"cp_communication {row.get('cp_communication_s', 0.0):.3f} s, {row['peak_memory_gib']:.1f} GiB ({fits}), "
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
        fits = "fits" if row["fits_memory"] else "does not fit 80 GB"
        print(f"Llama 3 405B, {row['gpus']:,} H100, TP 8 × PP 16 × DP {row['dp']}, V {row['interleave']}, micro-batch 1: "
              f"{row['tflops_per_gpu']:.0f} model TFLOP/s per GPU, MFU {row['mfu']:.3f} vs "
              f"{row['published_tflops_per_gpu']:.0f}, {row['published_mfu']:.2f} published ({row['source']}): "
              f"{row['vs_published']:+.1%}; {row['iteration_seconds']:.2f} s, {row['peak_memory_gib']:.1f} GiB ({fits}), "
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
    gpt3 = gpt3_rows()
    rows = list(gpt3)
    for tp, mb in ((1, 1), (1, 2), (2, 1), (2, 2)):
        for attention in ("flash", "standard"):
            rows.append(predict(LLAMA, "h100_2_servers.toml",
                                Parallelism(tp, 1, 16 // tp, 256, mb, "none", False, attention=attention), "bf16"))
    nemo = predict(LLAMA, "h100_2_servers.toml", Parallelism(1, 1, 8, 128, 1, "none", False, attention="flash"), "bf16")
    rows.append(nemo)
    mpt = predict(MPT7B, "h100_2_servers.toml", Parallelism(1, 1, 8, 256, 16, "full", False, attention="flash"), "bf16")
    rows.append(mpt)  # replicated Adam, the table's row as before; FSDP's full sharding printed below
    llama3 = llama3_rows()
    rows += llama3
    sharded = predict(MPT7B, "h100_2_servers.toml",
                      Parallelism(1, 1, 8, 256, 16, "full", False, attention="flash", fsdp=True), "bf16")
    frame = pd.DataFrame(rows)
    shown = ["model", "dtype", "tp", "pp", "dp", "micro_batch", "interleave", "attention", "iteration_seconds", "tflops_per_gpu",
             "hardware_tflops_per_gpu", "mfu", "peak_memory_gib", "fits_memory", "cpu_s"]
    print(frame[shown].to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    for row, old in zip(gpt3[::2], gpt3[1::2]):  # today's (fused), then 2021's software (unfused)
        print(f"GPT-3 175B, {row['gpus']:,} A100, TP 8 × PP {row['pp']} × DP {row['dp']}, interleave {row['interleave']}: "
              f"{row['hardware_tflops_per_gpu']:.1f} TFLOP/s per GPU (recompute counted; 2021 setting, unfused "
              f"accumulation: {old['hardware_tflops_per_gpu']:.1f}) vs "
              f"{row['published_hardware_tflops_per_gpu']:.0f} published ({row['source']}): {row['vs_published']:+.1%} "
              f"(2021 setting {old['vs_published']:+.1%}); "
              "breakdown (s): " + ", ".join(f"{k[:-2]} {row[k]:.2f}" for k in row if k.endswith("_s") and k != "cpu_s"))
    table1 = table1_rows()
    print("Narayanan et al. 2021 Table 1 (micro-batch not published), archsim hardware TFLOP/s per GPU vs published:")
    for hidden in sorted({r["hidden"] for r in table1}):
        mine = [r for r in table1 if r["hidden"] == hidden]
        print(f"  hidden {hidden:,} ({mine[0]['model']}, TP {mine[0]['tp']} × PP {mine[0]['pp']}): published "
              f"{mine[0]['published_hardware_tflops_per_gpu']:.0f}; " + ", ".join(
                  f"mb {r['micro_batch']} v{r['interleave']} {r['hardware_tflops_per_gpu']:.0f} ({r['vs_published']:+.0%})"
                  for r in mine))
    same_layout_check()
    print_decomposition(gpt3)
    tokens = LLAMA.seq * 128 / nemo["iteration_seconds"] / 8
    print(f"Llama-2-7B, 8 H100, NeMo's setting: archsim (bf16, flash) {nemo['tflops_per_gpu']:.0f} model TFLOP/s per "
          f"GPU, {tokens:,.0f} tokens/s per GPU, MFU {nemo['mfu']:.2f} of the bf16 peak; NeMo 24.09 published (FP8) "
          f"{NEMO_LLAMA2_7B['tflops_per_gpu']:.0f} TFLOP/s, {NEMO_LLAMA2_7B['tokens_per_gpu_second']:,.0f} tokens/s per GPU")
    print(f"MPT-7B-like, sequence 4,096, 8 H100, bf16, flash, micro-batch 16, full recompute, FSDP full sharding: "
          f"archsim MFU {sharded['mfu']:.3f}, {sharded['peak_memory_gib']:.1f} GiB per GPU (exposed FSDP collectives "
          f"{sharded['fsdp_exposed_communication_s'] * 1e3:.0f} ms of {sharded['iteration_seconds']:.2f} s; replicated "
          f"Adam: MFU {mpt['mfu']:.3f}, {mpt['peak_memory_gib']:.0f} GiB, would not fit); llm-foundry published "
          f"{MPT7B_H100_MFU:.3f}: {sharded['mfu'] / MPT7B_H100_MFU - 1:+.0%}")
    print_llama3(llama3)
    long_context = llama3_long_rows()
    print_llama3_long(long_context)
    frame = pd.concat([frame, pd.DataFrame(long_context)], ignore_index=True)
    atomic_write_text(ROOT / "benchmarks" / "results" / "published_throughput.csv", frame.to_csv(index=False))
    large_gemms_on_h100()
    return 0


def large_gemms_on_h100(min_flops: float = 1e11) -> None:
    """The probe's measured GEMMs of at least ``min_flops`` against archsim's GEMM time for them."""
    import io

    from archsim.devices.device import catalog_device
    from archsim.devices.kernel_ops import device_gemm_seconds
    from archsim.training.fitted import kernels

    path = ROOT / "benchmarks" / "results" / "gpu_efficiency_probe_h100-80gb-hbm3.csv"
    text = "".join(line for line in path.read_text(encoding="utf-8").splitlines(keepends=True)
                   if not line.startswith("#"))
    probe = pd.read_csv(io.StringIO(text))
    gemms = probe[probe.section == "gemm"]
    flops = 2 * gemms.m * gemms.k * gemms.n * gemms["count"]
    big = gemms[flops >= min_flops]
    h100 = catalog_device("h100-80gb-sxm")
    ratio = device_gemm_seconds(big.m, big.k, big.n, big["count"], h100, kernels(h100.name)) / big.seconds
    measured = flops[flops >= min_flops] / big.seconds / 1e12
    print(f"H100 GEMMs of >= {min_flops / 1e12:g} TFLOP measured ({len(big)}): {measured.min():.0f}-{measured.max():.0f} "
          f"TFLOP/s; archsim predicted / measured time: median {ratio.median():.3f}, {ratio.min():.3f}-{ratio.max():.3f}")


if __name__ == "__main__":
    sys.exit(main())
