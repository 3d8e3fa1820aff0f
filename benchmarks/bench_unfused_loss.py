"""Megatron's unfused fp32 LM-head loss (`benchmarks/unfused_loss.py`: 18 kernels forward,
8 backward, 38 and 14 bytes per logit) in place of archsim's one fused op each way (22 and 8 bytes),
judged on vTrain's 1,008 measured A100 iterations. Tried, not adopted (docs/accuracy.md).

    python benchmarks/bench_unfused_loss.py [--refit] [--checks]

For the shipped head and the unfused one, with the stored constants (and with ``--refit``: each list's
constants refitted on the 16-layer runs by :func:`archsim.training.calibrate.fit_kernels`, as
``bench_vtrain_e2e.py --refit``, then every run predicted with them): fit and held-out MAPE, the
held-out signed bias per TP degree, search's acceptance (first choice within 5% of each group's
measured best), the TP 1 PP 4 12-layer cell, and the least squares of docs/accuracy.md ("Measured
cost per layer and micro-batch": time = m·L·x + m·y + c over each cell's PP 1 runs) for y, the cost
per micro-batch outside the layers (ms), measured and predicted. ``--checks`` adds the Hopper
iterations (both op lists) and GPT-3 175B's TFLOP/s per GPU at those constants.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from archsim.training import calibrate, fitted, hf_switch_ops, iteration, layer_ops, op_work
from archsim.training.cluster_file import single_node
from archsim.training.measured import read_measured
from archsim.training.parallel import padded_vocab
from benchmarks.bench_e2e_variants import acceptance, other_checks
from benchmarks.model_swap import swapped
from benchmarks.unfused_loss import cross_entropy_ops

SHIPPED_HEAD = layer_ops.head_work


def unfused_head_work(c, micro_batch: int, tp: int = 1, sequence_parallel: bool = False,
                      dtype: str = "fp16") -> op_work.Work:
    """archsim's head with its fused ``cross_entropy`` op each way replaced by Megatron's kernels (counted in
    fp16/bf16 elements: the runs it is checked on are fp16)."""
    work = SHIPPED_HEAD(c, micro_batch, tp, sequence_parallel, dtype)
    forward, backward = cross_entropy_ops(c.seq * micro_batch, padded_vocab(c.vocab, tp) // tp)

    def lowered(ops, loss):
        return tuple(x for op in ops for x in (loss if op.layer == "cross_entropy" else (op,)))

    return replace(work, forward=lowered(work.forward, forward), backward=lowered(work.backward, backward))


@contextmanager
def unfused_loss():
    with swapped((iteration, hf_switch_ops), "head_work", unfused_head_work):
        yield


def predicted_ms(runs, efficiency) -> np.ndarray:
    """Each run's iteration (ms) by the closed form the fit uses (equal to the simulator's on these runs)."""
    iteration._model_pieces.cache_clear()  # its key holds neither the constants nor the head in force
    cluster = single_node()
    return np.array([calibrate.fast_seconds(r, replace(cluster.machine(r.parallelism()), efficiency=efficiency)) * 1e3
                     for r in runs])


def outside_layers(runs, times: np.ndarray, tp: int, hidden: int) -> dict[int, float]:
    """y (ms per micro-batch outside the layers) per micro-batch, least squares over the cell's PP 1 runs."""
    out = {}
    for b in (1, 2, 4, 8):
        pick = [i for i, r in enumerate(runs) if r.pp == 1 and r.tp == tp and r.hidden == hidden and r.micro_batch == b]
        if len({runs[i].layers for i in pick}) < 2:
            continue
        m = np.array([runs[i].global_batch / (runs[i].dp * b) for i in pick])
        a = np.column_stack([m * [runs[i].layers for i in pick], m, np.ones(len(pick))])
        out[b] = float(np.linalg.lstsq(a, times[pick], rcond=None)[0][1])
    return out


def ends_ms(run, efficiency) -> float:
    """archsim's embedding and head per micro-batch (ms): forward, backward and their TP collectives."""
    par = run.parallelism()
    machine = replace(single_node().machine(par), efficiency=efficiency)
    pieces = iteration.model_pieces(run.config(), par, machine)
    return 1e3 * sum(p.forward + p.backward_input + p.backward_weight + p.tp_forward + p.tp_backward
                     for p in (pieces["embedding"], pieces["head"]))


def report(name: str, runs, efficiency, checks: bool) -> None:
    held = np.array([not fitted.is_fit_run(r.layers) for r in runs])
    measured = np.array([r.milliseconds for r in runs])
    predicted = predicted_ms(runs, efficiency)
    ape, signed = np.abs(predicted / measured - 1), predicted / measured - 1
    print(f"{name}: {efficiency}\n  fit MAPE {ape[~held].mean():.4f}, held-out MAPE {ape[held].mean():.4f} "
          f"(signed {signed[held].mean():+.4f}, max {ape[held].max():.3f})")
    bias = {t: signed[held & np.array([r.tp == t for r in runs])].mean() for t in (1, 2, 4, 8)}
    print("  held-out signed bias per TP: " + ", ".join(f"TP {t} {v:+.3f}" for t, v in bias.items()))
    cell = {}
    for i, r in enumerate(runs):
        if r.tp == 1 and r.pp == 4 and r.layers == 12:
            cell.setdefault((r.hidden, r.micro_batch), []).append(signed[i])
    print("  TP 1 PP 4 12 layers, signed error (mean, runs): "
          + ", ".join(f"h{h} b{b} {np.mean(v):+.1%} ({len(v)})" for (h, b), v in sorted(cell.items())))
    for tp in (1, 2):
        for hidden in (1024, 2048):
            ours, theirs = outside_layers(runs, measured, tp, hidden), outside_layers(runs, predicted, tp, hidden)
            pieces = {b: ends_ms(next(r for r in runs if (r.tp, r.hidden, r.micro_batch) == (tp, hidden, b)), efficiency)
                      for b in ours}
            print(f"  y TP {tp} h{hidden} (measured / archsim's embedding + head / least squares of the predictions, "
                  "ms): " + ", ".join(f"b{b} {ours[b]:.1f} / {pieces[b]:.1f} / {theirs[b]:.1f}" for b in ours))
    print(f"  search's first choice within 5% of the measured best: {acceptance(runs, efficiency)}")
    if checks:
        print(f"  {other_checks(efficiency)}")
    sys.stdout.flush()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--refit", action="store_true", help="also refit the four constants per op list")
    parser.add_argument("--checks", action="store_true", help="also the Hopper iterations and GPT-3 175B")
    args = parser.parse_args(argv)
    runs = read_measured(ROOT / "tests" / "data" / "e2e" / "vtrain_single_node_shown.csv")
    for name, context in (("shipped head", nullcontext), ("unfused loss", unfused_loss)):
        with context():
            iteration._model_pieces.cache_clear()
            report(f"{name}, stored constants", runs, fitted.A100_KERNELS, args.checks)
            if args.refit:
                efficiency, loss = calibrate.fit_kernels(runs)
                report(f"{name}, refitted (fit loss {loss:.4f})", runs, efficiency, args.checks)
        iteration._model_pieces.cache_clear()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
