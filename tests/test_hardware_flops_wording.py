"""``hardware_tflops_per_gpu`` counts attention's whole s × s square (the papers' convention) while causal
FlashAttention's time is priced on the blocks it computes, about half: the docs call it model plus recomputed FLOPs as
Korthikanti et al. count them, not "the FLOPs run" (which they called it before)."""

from __future__ import annotations

import re
from pathlib import Path

from archsim.training.throughput import model_flops, recomputed_flops
from archsim.workload.transformer import TransformerConfig

ROOT = Path(__file__).resolve().parents[1]
GPT = TransformerConfig("gpt-small", "gpt", layers=2, hidden=256, heads=4, vocab=1024, seq=512, ffn=1024,
                        kv_heads=4, tied_embeddings=True, positions=512)


def test_flash_recompute_counts_the_whole_square():
    """FlashAttention's backward reruns QKᵀ: counted as 2·heads·head_dim per query-key pair over all s² pairs of
    each sequence and layer (hand count: 2 · 4 · 64 · 512² · 2 layers · batch 3), not the causal s(s + 1)/2."""
    extra = recomputed_flops(GPT, 3, "none", "flash")
    assert extra == 2 * 4 * 64 * 512 * 512 * 2 * 3
    assert model_flops(GPT, 3) > 0


def _rows(name: str) -> list[str]:
    """The paragraphs (blank-line separated) of docs/``name`` that describe ``hardware_tflops_per_gpu``."""
    text = (ROOT / "docs" / name).read_text(encoding="utf-8")
    return [p for p in re.split(r"\n\s*\n", text) if "`hardware_tflops_per_gpu` (" in p or
            "| `hardware_tflops_per_gpu` |" in p]


def test_docs_say_what_hardware_flops_count():
    for name in ("training.md", "formats.md", "search.md"):
        described = [line for p in _rows(name) for line in [" ".join(p.split())]]
        assert described, name
        for text in described:
            start = text.index("`hardware_tflops_per_gpu`")
            said = text[start:start + 400]
            assert "the FLOPs run" not in said and "the FLOPs the GPUs run" not in said, (name, said)
            assert "whole s × s square" in said and "Korthikanti" in said, (name, said)
