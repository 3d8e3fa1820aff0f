"""The search's misses on vTrain's shown A100 runs and the TP-dependent error behind them (issue #38):
which groups `archsim search` ranks wrong, what archsim's predicted micro-batch is made of in the
TP 2 cells where the error jumps, and candidate mechanisms tried as variants.

    python benchmarks/bench_search_misses.py [--part errors|misses|breakdown|variants ...] [--refit]

(about 10 s without ``--refit``; each refitted variant adds about a minute)

* ``errors``: the signed error of :func:`archsim.training.measured.predict` (predicted / measured − 1)
  by TP and micro-batch, the mean over the cell's runs of hidden 1,024 and 2,048, and each hidden's.
* ``misses``: every group (model, GPUs, global batch) where the search's first choice among the
  measured configurations is more than 5% slower than the measured best
  (:func:`archsim.training.search_acceptance.group_outcomes`): first choice and measured best as
  (TP, PP, DP, micro-batch), the measured and predicted ms of both, each one's signed error, and which
  error flips the order (the one further from the median signed error of all runs); then how many
  misses have a TP 2 · micro-batch ≥ 4, a TP 4 · micro-batch ≤ 2 or a TP 8 configuration as best or
  first choice.
* ``breakdown``: archsim's predicted layer and micro-batch at TP 2, micro-batch 2 and 4, hidden 1,024
  and 2,048 (PP 1): each GEMM per GPU (M×N×K, the tile and waves the model picks, the split, µs),
  the memory-bound ops, each TP all-reduce (MiB, archsim's µs beside the nccl-tests time on the same
  GPU count interpolated log-log in the shipped ``a100_AR_GPU{n}`` tables), the kernel gaps, the host's
  issue floor and which bound the pass takes; beside it the measured ms per layer and micro-batch of the
  cell (least squares of ``bench_shard_cells.py``).
* ``variants``: each candidate with the stored constants and (``--refit``) with memory, launch_s and
  host_s refitted on the 16-layer runs at the stored η_gemm (``calibrate.fit_kernels``, step 2 of the
  two-step fit): held-out MAPE, the search's first choice within 5% (all groups), the signed error of
  the TP 2 · micro-batch 4 and TP 8 runs, GPT-3 175B's TFLOP/s per GPU (1 chunk; published 140) and the
  Hopper iterations' time MAPE (Megatron's list; never fitted). Candidates:

  - ``nccl-tables``: every one-server all-reduce (TP, DP, the tied embedding's) at the nccl-tests
    time of its size and GPU count (what NCCL's protocol choice by size, LL / LL128 / Simple, gives on
    these GPUs, measured; sizes below the tables' 1 MiB at their 1 MiB time), instead of the α–β
    line fitted on ≥ 16 MB. No constant: the measured collective itself, an upper bound on what a
    protocol model of the collective could do.
  - ``split-k``: the tensor-core GEMMs may split K (cuBLAS's split-K kernels for a small output with a
    long reduction: the SIMT path's splits and reduction kernel), the best of tile × split.
  - ``pure-gpu``: the host floor removed (a pass is its GPU time alone), to show how much of each cell
    the host bound decides.
  - ``queue``: each pass as :func:`queued_pass` — the host issues an op (or collective) every
    ``host_s`` and the GPU runs it once issued and the previous one done, a max-plus recursion over
    the pass's ops in order, instead of max(the GPU's sum, the host's): a kernel gap appears only
    where the GPU drains its queue (the TP collectives placed after the projection and FC2 forward,
    after QKV's and FC1's δ backward).
  - ``run-ahead``: the host runs ahead across a piece's forward, recompute and backward (nothing
    synchronizes between them in PyTorch), so a layer takes max(the GPU's sum over the three, the
    host's) rather than the sum of each pass's max. It can only lower a time, and only where the passes
    have different bounds. ``run-ahead-backward``: only the recompute and the backward merge (one backward step).
  - ``async-allreduce`` and ``launch-floor``: ``bench_e2e_variants.py``'s (the backward all-reduce of a
    column-parallel layer beside its weight-gradient GEMM; a kernel occupying the GPU for max(its work,
    the launch interval)), here under the two-step fit (η_gemm held) rather than the joint one.

docs/accuracy.md ("The search's misses, by cell") quotes what this prints.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from archsim import collectives
from archsim.collectives import LinkClass
from archsim.devices import kernel_ops
from archsim.devices.kernels import SPLITS, compute_seconds
from archsim.lowering import Gemm
from archsim.training import calibrate, fitted, iteration
from archsim.training.cluster_file import load_gpu_cluster, single_node
from archsim.training.layer_ops import block_work
from archsim.training.measured import MeasuredRun, predict, read_measured
from archsim.training.nccl_fit import read_nccl_tables
from archsim.training.parallel import Parallelism
from archsim.training.search_acceptance import fractions, group_outcomes
from benchmarks.bench_e2e_variants import async_allreduce, launch_floor
from benchmarks.bench_shard_cells import measured_per_layer
from benchmarks.model_swap import swapped

RUNS = ROOT / "tests" / "data" / "e2e" / "vtrain_single_node_shown.csv"
NCCL = ROOT / "tests" / "data" / "e2e" / "nccl_allreduce"


def signed_errors(runs: list[MeasuredRun], cluster=None) -> dict[MeasuredRun, float]:
    return {p.run: p.error for p in predict(runs, cluster or single_node())}


def cell_errors(errors: dict[MeasuredRun, float], by_hidden: bool = False) -> dict[tuple[int, ...], float]:
    """Mean signed error per (TP, micro-batch) over its runs of both hiddens (``by_hidden``: per
    (TP, micro-batch, hidden))."""
    cells: dict[tuple[int, ...], list[float]] = defaultdict(list)
    for r, e in errors.items():
        cells[(r.tp, r.micro_batch, r.hidden) if by_hidden else (r.tp, r.micro_batch)].append(e)
    return {k: float(np.mean(v)) for k, v in sorted(cells.items())}


def part_errors(runs) -> None:
    errors = signed_errors(runs)
    cells, hidden = cell_errors(errors), cell_errors(errors, by_hidden=True)
    print("signed error by TP and micro-batch 1/2/4/8, over the runs of both hiddens [hidden 1,024; 2,048]:")
    for tp in (1, 2, 4, 8):
        print(f"  TP{tp}: " + " / ".join(f"{cells[(tp, mb)]:+.1%} [{hidden[(tp, mb, 1024)]:+.1%}; "
                                         f"{hidden[(tp, mb, 2048)]:+.1%}]" for mb in (1, 2, 4, 8)))


def _flagged(k: tuple[int, int, int, int]) -> str:
    tp, _, _, mb = k
    if tp == 2 and mb >= 4:
        return "TP2·mb≥4"
    if tp == 4 and mb <= 2:
        return "TP4·mb≤2"
    return "TP8" if tp == 8 else ""


def part_misses(runs) -> None:
    errors = signed_errors(runs)
    median = float(np.median(list(errors.values())))
    by_group: dict[tuple, dict[tuple, list[MeasuredRun]]] = defaultdict(lambda: defaultdict(list))
    for r in runs:
        by_group[(r.hidden, r.layers, r.gpus, r.global_batch)][(r.tp, r.pp, r.dp, r.micro_batch)].append(r)
    outcomes = group_outcomes(runs)
    misses = [o for o in outcomes if not o.first_within_5pct]
    print(f"{len(misses)} of {len(outcomes)} groups missed (first choice > 5% slower than the measured best); "
          f"median signed error of all runs {median:+.1%}")
    print("hidden layers GPUs batch | first (tp,pp,dp,mb) meas/pred ms err | best meas/pred ms err | flips")
    counts: dict[str, int] = defaultdict(int)
    for o in misses:
        group = by_group[(o.hidden, o.layers, o.gpus, o.global_batch)]
        first, best = o.ranked[0], o.measured_best

        def figures(key, group=group):
            rows = group[key]
            measured = float(np.mean([r.milliseconds for r in rows]))
            e = float(np.mean([errors[r] for r in rows]))
            return measured, measured * (1 + e), e

        mf, pf, ef = figures(first)
        mb_, pb, eb = figures(best)
        flips = "best slow" if abs(eb - median) >= abs(ef - median) else "first fast"
        tags = {t for t in (_flagged(first), _flagged(best)) if t}
        for t in tags:
            counts[t] += 1
        counts["any flagged"] += bool(tags)
        print(f"{o.hidden:5d} {o.layers:3d} {o.gpus} {o.global_batch:4d} | {first} {mf:7.1f}/{pf:7.1f} {ef:+.1%} "
              f"{_flagged(first):9s}| {best} {mb_:7.1f}/{pb:7.1f} {eb:+.1%} {_flagged(best):9s}| {flips}")
    print("misses with such a configuration as first choice or measured best: "
          + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))


def nccl_seconds(tables, nbytes, n: int) -> np.ndarray:
    """The nccl-tests all-reduce time of ``nbytes`` over ``n`` GPUs, log-log interpolated in the table
    (clamped to its smallest and largest size's time per byte-scaled end)."""
    t = tables[n]
    s = np.asarray(nbytes, dtype=np.float64)
    low = np.log(np.clip(s, t.sizes[0], t.sizes[-1]))
    out = np.exp(np.interp(low, np.log(t.sizes), np.log(t.seconds)))
    return np.where(s > t.sizes[-1], out * s / t.sizes[-1], out)


def gemm_row(g: Gemm, path, constants) -> str:
    """A GEMM's M×N×K (count), its chosen tile, waves and split, µs (the model's best of tile × split)."""
    best = (np.inf, None, 1)
    for tile in path.tiles:
        for s in path.splits:
            t = float(compute_seconds(g.count, g.m, g.n, g.k, replace(path, tiles=(tile,), splits=(s,)), constants, 2))
            if t < best[0]:
                best = (t, tile, s)
    t, tile, s = best
    tiles = int(np.ceil(g.m / tile[0]) * np.ceil(g.n / tile[1]) * g.count * s)
    waves = tiles / path.cores
    whole = float(kernel_ops.path_gemm_seconds(g.count, g.m, g.n, g.k, path, constants, 2))
    return (f"{g.m}x{g.n}x{g.k}" + (f" x{g.count}" if g.count > 1 else "") + f" tile {tile[0]}x{tile[1]} "
            f"split {s} waves {waves:.2f} ({int(np.ceil(waves))}) loop {t * 1e6:.1f} µs, kernel {whole * 1e6:.1f} µs")


def part_breakdown(runs) -> None:
    cluster = single_node()
    tables = read_nccl_tables(NCCL, "a100")
    measured = measured_per_layer(runs)
    for hidden in (1024, 2048):
        for mb in (2, 4):
            run = next(r for r in runs if (r.hidden, r.tp, r.micro_batch, r.pp) == (hidden, 2, mb, 1))
            par = run.parallelism()
            machine = cluster.machine(par)
            e = machine.efficiency
            path = kernel_ops.gemm_path(machine.gpu, "fp16", e)
            layer = iteration.model_pieces(run.config(), par, machine)["layer"]
            work = block_work(run.config(), mb, 2)
            print(f"hidden {hidden}, TP 2, micro-batch {mb}: measured {measured[(hidden, 2, mb)]:.2f} ms per layer "
                  f"and micro-batch; archsim {(layer.forward + layer.recompute + layer.backward_input + layer.backward_weight + layer.tp_forward + layer.tp_backward) * 1e3:.2f} ms")
            gemm_s = memory_s = 0.0
            kernels = 0
            for op, (_, kind, t) in zip((*work.forward, *work.backward), layer.ops):
                weight = 2 if kind == "F" else 1  # the forward runs again in the recompute
                kernels += weight * (len(op.gemms) + (op.vector_elements > 0))
                if op.gemms:
                    gemm_s += weight * t
                    for g in op.gemms:
                        print(f"  {kind} {op.layer:12s} {gemm_row(g, path, e)}")
                else:
                    memory_s += weight * t
            colls = [(n, k, t) for n, k, t in layer.ops if "all-reduce" in n]
            nccl = 0.0
            for (name, phase, t), c in zip(colls, (*work.forward_collectives, *work.backward_collectives)):
                ref = float(nccl_seconds(tables, c.bytes, 2))
                nccl += (2 if phase == "F" else 1) * ref
                print(f"  {phase} {name}: archsim {t * 1e6:.1f} µs, nccl-tests 2 GPUs {ref * 1e6:.1f} µs")
            tp = 2 * layer.tp_forward + layer.tp_backward
            ops_f, ops_b = iteration.host_issues(work)
            host_f, host_b = e.host_s * ops_f, e.host_s * ops_b
            gaps = kernels * e.launch_s
            print(f"  per layer and micro-batch (forward ×2 with the recompute): GEMMs {gemm_s * 1e3:.3f} ms, "
                  f"memory-bound {memory_s * 1e3:.3f} ms (both with their gaps: {kernels} kernels × "
                  f"{e.launch_s * 1e6:.1f} µs = {gaps * 1e3:.3f} ms), TP all-reduces {tp * 1e3:.3f} ms "
                  f"(nccl-tests {nccl * 1e3:.3f} ms); host floor {(2 * host_f + host_b) * 1e3:.3f} ms "
                  f"({2 * ops_f + ops_b} ops × {e.host_s * 1e6:.1f} µs)")
            gpu_f = sum(t for _, k, t in layer.ops if k == "F" and "all-reduce" not in _) + layer.tp_forward
            gpu_b = sum(t for n, k, t in layer.ops if k in "DG") + layer.tp_backward
            print(f"  forward: GPU {gpu_f * 1e3:.3f} ms vs host {host_f * 1e3:.3f} ms -> "
                  f"{'GPU' if gpu_f > host_f else 'host'}; backward: GPU {gpu_b * 1e3:.3f} ms vs host "
                  f"{host_b * 1e3:.3f} ms -> {'GPU' if gpu_b > host_b else 'host'}")


@contextmanager
def nccl_tables():
    tables = read_nccl_tables(NCCL, "a100")
    original = collectives.collective_seconds

    def seconds(kind, nbytes, n, link):
        if kind == "all-reduce" and isinstance(link, LinkClass) and n in tables:
            return nccl_seconds(tables, nbytes, n)
        return original(kind, nbytes, n, link)

    from archsim.training import dp_overlap, fsdp, stages
    with swapped((iteration, stages, dp_overlap, fsdp), "collective_seconds", seconds):
        yield


@contextmanager
def split_k():
    original = kernel_ops.gemm_path

    def path(device, dtype, constants):
        p = original(device, dtype, constants)
        return replace(p, splits=SPLITS) if p is not None and dtype == "fp16" else p

    with swapped((kernel_ops,), "gemm_path", path):
        yield


@contextmanager
def pure_gpu():
    with swapped((fitted,), "A100_KERNELS", replace(fitted.A100_KERNELS, host_s=0.0)):
        yield


# where a TP collective is issued in its pass: after the last op of this layer (else at the pass's end)
AFTER = {("attn", "F"): "proj", ("mlp", "F"): "fc2", ("attn", "B"): "qkv", ("mlp", "B"): "fc1"}


def queued_pass(ops: list[tuple[str, float]], colls: list[tuple[str, float]], phase: str, host_s: float) -> float:
    """A pass's seconds when the host issues one op or collective every ``host_s`` and the GPU runs each
    as soon as it is issued and the previous one is done (a max-plus recursion: PyTorch's asynchronous
    launches into one stream): finish_i = max(finish_(i−1), issued_i) + t_i."""
    stream = list(ops)
    for name, t in colls:
        layer = AFTER.get((name.split(".")[0], phase))
        where = max((i for i, (n, _) in enumerate(stream) if n == layer), default=len(stream) - 1)
        stream.insert(where + 1, (name, t))
    finish = 0.0
    for i, (_, t) in enumerate(stream):
        finish = max(finish, (i + 1) * host_s) + t
    return finish


@contextmanager
def queue():
    original = iteration.piece_cost

    def piece_cost(work, par, machine, recompute, counted=None):
        cost = original(work, par, machine, recompute, counted)
        if counted is not None:
            return cost
        host = machine.efficiency.host_s
        ops = [(n, t) for n, k, t in cost.ops if k in "FDG" and "(" not in n]
        nf = len(work.forward)
        colls = [(n.split(" (")[0], t) for n, k, t in cost.ops if "(" in n]
        ncf = len(work.forward_collectives)
        forward = queued_pass(ops[:nf], colls[:ncf], "F", host)
        backward = queued_pass(ops[nf:], colls[ncf:], "B", host)
        f = forward - cost.tp_forward
        redo = f + cost.tp_forward if recompute == "full" else 0.0 if recompute == "none" else cost.recompute
        return replace(cost, forward=f, backward_input=backward - cost.backward_weight - cost.tp_backward,
                       recompute=redo)

    with swapped((iteration,), "piece_cost", piece_cost):
        yield


@contextmanager
def run_ahead(forward_too: bool = True):
    """``forward_too`` False: only the recompute and the backward merge (the forward keeps its own max)."""
    original = iteration.piece_cost

    def piece_cost(work, par, machine, recompute, counted=None):
        cost = original(work, par, machine, recompute, counted)
        if counted is not None or recompute == "selective":
            return cost
        again = 1 if recompute == "full" else 0
        gpu_f = sum(t for _, k, t in cost.ops if k == "F")  # the forward's ops and collectives
        gpu_b = sum(t for _, k, t in cost.ops if k in "DGB")
        issued_f, issued_b = iteration.host_issues(work)
        host_f, host_b = machine.efficiency.host_s * issued_f, machine.efficiency.host_s * issued_b
        if forward_too:
            forward = gpu_f - cost.tp_forward
            total = max((1 + again) * gpu_f + gpu_b, (1 + again) * host_f + host_b)
        else:
            forward = cost.forward
            total = forward + cost.tp_forward + max(again * gpu_f + gpu_b, again * host_f + host_b)
        return replace(cost, forward=forward, recompute=gpu_f * again,
                       backward_input=total - forward - cost.tp_forward - gpu_f * again - cost.backward_weight
                       - cost.tp_backward)

    with swapped((iteration,), "piece_cost", piece_cost):
        yield


def run_ahead_backward():
    return run_ahead(forward_too=False)


VARIANTS = {"stored": nullcontext, "nccl-tables": nccl_tables, "split-k": split_k, "pure-gpu": pure_gpu,
            "async-allreduce": async_allreduce, "launch-floor": launch_floor, "queue": queue,
            "run-ahead": run_ahead, "run-ahead-backward": run_ahead_backward}


def checks(runs, constants) -> str:
    from benchmarks.bench_e2e_variants import a100_constants
    from benchmarks.bench_published_throughput import GPT3
    from benchmarks.bench_published_throughput import predict as predict_run

    with a100_constants(constants):
        iteration._model_pieces.cache_clear()
        errors = signed_errors(runs)
        held = [abs(e) for r, e in errors.items() if not fitted.is_fit_run(r.layers)]
        outcome = fractions(group_outcomes(runs))["first_within_5pct"]
        cells = cell_errors(errors)
        gpt3 = predict_run(GPT3, "a100_384_servers.toml", Parallelism(8, 8, 16, 1536, 1, "full", False, 1, "1f1b"))
        hopper = []
        for slug, name in (("h100-80gb-hbm3", "h100_1gpu"), ("h200", "h200_1gpu")):
            measured = read_measured(ROOT / "benchmarks" / "results" / f"gpu_train_measured_{slug}.csv")
            gpu = load_gpu_cluster(ROOT / "configs" / "clusters" / f"{name}.toml")
            hopper.append(np.mean([abs(p.error) for p in predict(measured, gpu)]))
        iteration._model_pieces.cache_clear()
    tp2 = " / ".join(f"{cells[(2, mb)]:+.1%}" for mb in (1, 2, 4, 8))
    tp8 = " / ".join(f"{cells[(8, mb)]:+.1%}" for mb in (1, 2, 4, 8))
    return (f"held-out MAPE {np.mean(held):.3%}, first choice within 5% {outcome:.1%}, TP2 mb1-8 {tp2}, "
            f"TP8 {tp8}; GPT-3 {gpt3['hardware_tflops_per_gpu']:.1f} TFLOP/s; Hopper H100 / H200 "
            f"{hopper[0]:.1%} / {hopper[1]:.1%}")


def part_variants(runs, refit: bool, names=None) -> None:
    for name in names or VARIANTS:
        context = VARIANTS[name]
        with context():
            iteration._model_pieces.cache_clear()
            print(f"{name}, stored constants: {checks(runs, fitted.A100_KERNELS)}", flush=True)
            if refit and name not in ("stored", "pure-gpu"):
                constants, fit_mape = calibrate.fit_kernels(runs, gemm=fitted.A100_KERNELS.gemm)
                print(f"{name}, refitted (memory {constants.memory:.3f}, launch {constants.launch_s * 1e6:.1f} µs, "
                      f"host {constants.host_s * 1e6:.1f} µs; fit MAPE {fit_mape:.3%}): {checks(runs, constants)}",
                      flush=True)
        iteration._model_pieces.cache_clear()


PARTS = ("errors", "misses", "breakdown", "variants")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=PARTS, action="append")
    parser.add_argument("--variant", choices=tuple(VARIANTS), action="append", help="(default: all)")
    parser.add_argument("--refit", action="store_true", help="refit memory, launch_s and host_s per variant")
    args = parser.parse_args(argv)
    runs = read_measured(RUNS)
    for part in args.part or PARTS:
        if part == "variants":
            part_variants(runs, args.refit, args.variant)
        else:
            {"errors": part_errors, "misses": part_misses, "breakdown": part_breakdown}[part](runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
