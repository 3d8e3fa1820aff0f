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
  and its prediction taken apart (benchmarks/published_gpt3.py, docs/accuracy.md "Published large
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

* Llama 3 405B on 8,192 and 16,384 H100s beside the Llama 3 paper's Table 4 (its CP 1 rows and its CP 16 row at
  sequence 131,072): printed by ``bench_llama3_throughput.py``'s functions, which hold the rows and say how
  they are set (runnable on its own).

Then a check of the GEMM model at these sizes where a measurement exists: the GEMMs of at least
0.1 TFLOP in the Hopper check's probe (benchmarks/results/gpu_efficiency_probe_h100-80gb-hbm3.csv,
timed on an H100 80GB HBM3) against archsim's time for them (the A100's kernel constants, as train
uses on an H100): the measured TFLOP/s and predicted / measured time.

Writes benchmarks/results/published_throughput.csv atomically; also the CPU seconds of each prediction.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd

from archsim.outputs import atomic_write_text
from archsim.training.cluster_file import load_gpu_cluster, single_node
from archsim.training.grad_accumulation import per_microbatch_seconds
from archsim.training.parallel import Parallelism, schedule_rejection
from archsim.workload.transformer import TransformerConfig

# the benchmarks folder is not a package: its siblings by path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_llama3_throughput import llama3_long_rows, llama3_rows, print_llama3, print_llama3_long
from published_gpt3 import (
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
from published_predict import ROOT, predict

GPT3 = TransformerConfig("gpt3-175b", "gpt", layers=96, hidden=12288, heads=96, vocab=51200, seq=2048, ffn=4 * 12288,
                         kv_heads=96, tied_embeddings=True, positions=2048)
LLAMA = TransformerConfig("llama-2-7b-like", "llama", layers=32, hidden=4096, heads=32, vocab=32000, seq=4096,
                          ffn=11008, kv_heads=32, tied_embeddings=False)
PUBLISHED_GPT3_TFLOPS = GPT3_1024_TFLOPS  # Narayanan et al. 2021 §5.1 (1,024 GPUs, batch 1,536): TFLOP/s per GPU
MPT7B = TransformerConfig("mpt-7b-like", "gpt", layers=32, hidden=4096, heads=32, vocab=50432, seq=4096, ffn=4 * 4096,
                          kv_heads=32, tied_embeddings=True)
NEMO_LLAMA2_7B = {"tflops_per_gpu": 780.0, "tokens_per_gpu_second": 16934.0}  # NeMo 24.09 summary, FP8, 8 GPUs


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
