"""Llama 3 405B's Table 4 rows (8,192 tokens: the two CP 1 rows; 131,072: the CP 16 row, all-gather K/V, Llama 3's)
with FSDP inside each pipeline stage (``--fsdp``; ``--fsdp-reshard none``: Dubey et al. 2024 §3.3.2, "we do not
reshard after forward computation", and ``after-forward``: PyTorch's FULL_SHARD; ``--fsdp-grad-sync step``:
PyTorch's pipeline runtime, the gradients held unsharded to one reduce-scatter per stage a step) beside the
distributed optimizer the rows used before, at V = 1, 2, 4 chunks per rank. Prints TFLOP/s per GPU, MFU, GiB per
GPU and whether it fits the H100 (79.2 GiB under CUDA). Run: ``python benchmarks/bench_llama3_fsdp.py`` (about a minute of CPU per
sharding)."""

from __future__ import annotations

from bench_llama3_throughput import llama3_long_rows, llama3_rows, memory_words


def row_line(name: str, r: dict) -> str:
    """One row under one sharding: layout, TFLOP/s per GPU beside Table 4's, MFU, GiB per GPU, exposed seconds."""
    return (f"{name}: seq {r['seq']:,}, {r['gpus']:,} GPUs, CP {r.get('cp', 1)}, DP {r['dp']}, V {r['interleave']}: "
            f"{r['tflops_per_gpu']:.0f} TFLOP/s per GPU (published {r['published_tflops_per_gpu']:.0f}, "
            f"{r['vs_published']:+.1%}), MFU {r['mfu']:.3f}, {memory_words(r)}, "
            f"FSDP exposed {r.get('fsdp_exposed_communication_s', 0.0):.3f} s, "
            f"DP {r.get('dp_communication_s', 0.0):.3f} s of {r['iteration_seconds']:.2f} s")


def main() -> int:
    for name, mode, sync in (("distributed optimizer", None, "micro-batch"),
                             ("fsdp, reshard none", "none", "micro-batch"),
                             ("fsdp, reshard none, grad sync step", "none", "step"),
                             ("fsdp, reshard after-forward", "after-forward", "micro-batch")):
        rows = llama3_rows(fsdp_reshard=mode, grad_sync=sync) + \
            llama3_long_rows(comms=("all_gather",), fsdp_reshard=mode, grad_sync=sync)
        print("\n".join(row_line(name, r) for r in rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
