"""Measured training iterations (vTrain's released single-node A100 runs) and the model archsim
predicts each with — shared by the benchmark, its fit and the tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from archsim.errors import InputError
from archsim.training.parallel import Parallelism
from archsim.validate import read_text
from archsim.workload.transformer import TransformerConfig

VOCAB = 50257  # GPT-2's vocabulary, as the measured runs used


@dataclass(frozen=True)
class MeasuredRun:
    gpus: int
    global_batch: int
    micro_batch: int
    hidden: int
    heads: int
    layers: int
    seq: int
    tp: int
    dp: int
    pp: int
    milliseconds: float

    def config(self) -> TransformerConfig:
        """The GPT the run trained: learned positions, FFN 4h, tied embeddings."""
        return TransformerConfig(f"gpt-h{self.hidden}-l{self.layers}", "gpt", self.layers, self.hidden, self.heads,
                                 VOCAB, self.seq, 4 * self.hidden, self.heads, True, self.seq)

    def parallelism(self) -> Parallelism:
        """Megatron-DeepSpeed as measured: 1F1B, full recomputation, no sequence parallelism."""
        return Parallelism(self.tp, self.pp, self.dp, self.global_batch, self.micro_batch, "full")

    @property
    def shape(self) -> tuple[int, int]:
        return self.hidden, self.layers


def read_measured(path: str | Path) -> list[MeasuredRun]:
    """Rows of ``vtrain_single_node_shown.csv`` (header: GPUs, global batch, …, iteration time (ms))."""
    lines = read_text(path, "measured runs").splitlines()
    runs = []
    for number, line in enumerate(lines[1:], start=2):
        cells = [c.strip() for c in line.split(",")]
        if not line.strip():
            continue
        try:
            gpus, batch, micro, hidden, heads, layers, seq, tp, dp, pp = (int(c) for c in cells[:10])
            runs.append(MeasuredRun(gpus, batch, micro, hidden, heads, layers, seq, tp, dp, pp, float(cells[10])))
        except (ValueError, IndexError, TypeError):
            raise InputError("expected 10 integers and a time in ms", file=str(path), line=number) from None
        if runs[-1].gpus != runs[-1].tp * runs[-1].dp * runs[-1].pp:
            raise InputError("GPUs ≠ TP × DP × PP", file=str(path), line=number)
    return runs


__all__ = ["VOCAB", "MeasuredRun", "read_measured"]
