"""A profiled one-GPU iteration, kernel class by kernel class, beside archsim's prediction of it (nothing fitted).

``benchmarks/gpu_train_profile.py`` records, per training point of the plain-PyTorch GPT, every CUDA kernel's calls
and GPU seconds in one iteration, the iteration's CUDA-event time and the kernels' sum (``busy``). Why: the Hopper
check (docs/accuracy.md) says archsim is too fast at small micro-batches with full recompute, and the profile says
where the time goes. This sorts the kernels by name into archsim's op classes (:func:`kernel_class`), sets beside
each class the seconds ``archsim train --implementation pytorch-eager`` gives the same class on
``configs/clusters/h200_1gpu.toml`` (its op bodies, :func:`archsim.devices.kernel_ops.op_parts`, launch excluded,
as :mod:`archsim.training.op_classes` splits them), and the GPU's idle time (iteration − busy) beside archsim's
launch gaps plus its host-issue floor's excess. A check: the H200's data fits nothing here (issue #37).

    python benchmarks/bench_train_profile.py > benchmarks/results/train_profile_h200.md
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PROFILE = ROOT / "benchmarks" / "results" / "gpu_train_profile_h200.csv"
MEASURED = ROOT / "benchmarks" / "results" / "gpu_train_measured_h200.csv"
CLUSTER = ROOT / "configs" / "clusters" / "h200_1gpu.toml"
CLASSES = ("gemm", "flash", "softmax", "layernorm", "elementwise", "reduction", "embedding", "optimizer", "memset_memcpy")
# Ordered: the first match wins (FlashAttention's kernel names carry cutlass types, the optimizer's multi-tensor
# kernels elementwise functors). softmax holds the loss's NLL kernels too, as archsim's head list pairs them.
RULES = (
    ("memset_memcpy", r"^(memset|memcpy)"),
    ("flash", r"flash|fmha"),
    ("gemm", r"nvjet|gemm|cutlass|cublas|xmma|splitkreduce"),
    ("optimizer", r"multi_tensor|adam|foreach|lpnorm"),
    ("softmax", r"softmax|nll_loss"),
    ("layernorm", r"layer_norm|gammabeta"),
    ("embedding", (r"embedding|radix_sort|segment|unique_by_key|compute_grad_weight|sum_and_scatter|devicescan|"
                  r"devicecompact|gather_kernel")),
    ("reduction", r"reduce_kernel"),
    ("elementwise", r"elementwise|dropout|catarray|copy|fill"),
)


def kernel_class(name: str) -> str:
    """The archsim op class of a CUDA kernel named ``name`` (:data:`RULES`; ``other`` when none matches)."""
    for cls, pattern in RULES:
        if re.search(pattern, name, re.IGNORECASE):
            return cls
    return "other"


@dataclass(frozen=True)
class Measured:
    """One profiled point: its settings, the iteration's and the kernels' seconds, calls and seconds per class."""

    point: str
    model: str
    seq: int
    dtype: str
    attention: str
    recompute: str
    micro_batch: int
    global_batch: int
    iteration: float  # s, CUDA events, median of 3
    busy: float  # s, every kernel, memset and copy of the profiled iteration
    calls: int  # kernels launched in it
    seconds: dict[str, float]  # s per class
    class_calls: dict[str, int]

    @property
    def idle(self) -> float:
        """Seconds the GPU waited for the host (iteration − busy)."""
        return self.iteration - self.busy


def read_profile(path: Path = PROFILE) -> list[Measured]:
    """Every point of a ``gpu_train_profile.py`` CSV, its kernel rows summed by :func:`kernel_class`."""
    lines = [line for line in path.read_text().splitlines() if line and not line.startswith("#")]
    points: dict[str, dict] = {}
    for row in csv.DictReader(lines):
        p = points.setdefault(row["point"], {"row": row, "seconds": dict.fromkeys(CLASSES, 0.0),
                                             "calls": dict.fromkeys(CLASSES, 0)})
        if row["kind"] in ("iteration", "busy"):
            p[row["kind"]] = (float(row["seconds"]), int(row["calls"]))
        elif row["kind"] == "kernel":
            cls = kernel_class(row["name"])
            p["seconds"][cls] = p["seconds"].get(cls, 0.0) + float(row["seconds"])
            p["calls"][cls] = p["calls"].get(cls, 0) + int(row["calls"])
        else:
            raise ValueError(f"{path}: unknown row kind {row['kind']!r}")
    out = []
    for name, p in points.items():
        r = p["row"]
        out.append(Measured(name, r["model"], int(r["seq"]), r["dtype"], r["attention"], r["recompute"],
                            int(r["micro_batch"]), int(r["global_batch"]), p["iteration"][0], p["busy"][0],
                            p["busy"][1], p["seconds"], p["calls"]))
    return out


def op_class(op) -> str:
    """The class of one of archsim's ops (:class:`~archsim.lowering.TrainingOp`), named as :func:`kernel_class`'s."""
    if op.layer.startswith("flash_attention"):
        return "flash"
    if op.gemms:
        return "gemm"
    if op.kernel:
        return {"ln": "layernorm", "softmax": "softmax"}[op.kernel[0]]
    if op.layer == "nll_loss":
        return "softmax"
    if "bias_grad" in op.layer:
        return "reduction"
    if op.layer in ("embedding", "position_embedding"):
        return "embedding"
    return "elementwise"


@dataclass(frozen=True)
class Predicted:
    """archsim's iteration of a point (s): op bodies per class (launch excluded), the launch gaps, the host floor's
    excess over the GPU time of the passes it binds, and the ops the host floor counts (Megatron's list)."""

    iteration: float
    seconds: dict[str, float]
    launch: float
    host: float
    host_ops: int  # Megatron-list ops the host issues per iteration (host_s is stated per one)
    eager_ops: int  # plain PyTorch's ops (archsim's eager list) per iteration
    host_s: float
    launch_s: float

    @property
    def idle(self) -> float:
        """archsim's seconds with no kernel body running: launch gaps plus the host floor's excess."""
        return self.launch + self.host


def predict(m: Measured) -> Predicted:
    """``archsim train`` of ``m``'s point (pytorch-eager, h200_1gpu.toml) and its parts: per micro-batch, each
    piece's op bodies by class (:func:`~archsim.devices.kernel_ops.op_parts`), its launches (the recounted op
    seconds less the bodies), its host excess (the piece's host-floored passes less their GPU time); then the
    optimizer step and the gradient sums of the run's breakdown (bodies: elementwise, optimizer)."""
    import archsim
    from archsim.devices.kernel_ops import op_parts
    from archsim.training.cluster_file import load_gpu_cluster
    from archsim.training.iteration import host_issues, model_pieces, piece_works, recounted_op_seconds
    from archsim.training.parallel import Parallelism
    from archsim.training.train_layout import lay_out
    from benchmarks.gpt_model import archsim_config, load_shape

    # the measured GPT at the point's sequence (its learned positions as long: gpt_model.archsim_config)
    c = archsim_config(load_shape(ROOT / "configs" / "transformers" / f"{m.model}.json", m.seq))
    result, _ = archsim.train(c, cluster=CLUSTER, global_batch=m.global_batch, micro_batch=m.micro_batch, seq=m.seq,
                              recompute=m.recompute, dtype=m.dtype, implementation="pytorch-eager",
                              attention=m.attention)
    par = Parallelism(1, 1, 1, m.global_batch, m.micro_batch, m.recompute, attention=m.attention)
    laid = lay_out(c, load_gpu_cluster(CLUSTER, m.dtype), par, implementation="pytorch-eager")
    machine, par = laid.machines[0], laid.par
    lists, counted = piece_works(c, m.micro_batch, 1, False, m.attention, "pytorch-eager", m.dtype)
    costs = model_pieces(c, par, machine)
    seconds = dict.fromkeys(CLASSES, 0.0)
    launch = host = 0.0
    host_ops = eager_ops = 0
    n = m.global_batch // m.micro_batch
    for work, theirs, key, times in zip(lists, counted, ("layer", "embedding", "head"), (c.layers, 1, 1)):
        redo = m.recompute == "full" and key == "layer"
        ops = [*work.forward, *work.backward]
        parts = op_parts(ops, machine.gpu, machine.kernels, machine.dtype)
        body = parts.gemm + parts.memory
        gpu = recounted_op_seconds(work, machine, theirs)
        nf = len(work.forward)
        repeat = [2 if redo and i < nf else 1 for i in range(len(ops))]
        for op, t, r in zip(ops, body, repeat):
            share = float(t) * r * times * n
            if op.layer == "mask_fill":  # a clone (the profiler's Memcpy DtoD) and the in-place fill, equal bytes
                seconds["memset_memcpy"] += share / 2
                share /= 2
            seconds[op_class(op)] += share
        own = float(sum(g * r for g, r in zip(gpu, repeat)))
        launch += (own - float(sum(b * r for b, r in zip(body, repeat)))) * times * n
        cost = costs[key]
        host += (cost.forward + cost.backward_input + cost.backward_weight + cost.recompute - own) * times * n
        f, b = host_issues(theirs)
        host_ops += (f * (2 if redo else 1) + b) * times * n
        eager_ops += (len(work.forward) * (2 if redo else 1) + len(work.backward)) * times * n
    breakdown = result.breakdown
    seconds["optimizer"] += breakdown["optimizer"]
    seconds["elementwise"] += breakdown["grad_accumulation"]
    e = machine.efficiency
    return Predicted(result.iteration_seconds, seconds, launch, host, host_ops, eager_ops, e.host_s, e.launch_s)


def point_table(m: Measured, p: Predicted) -> list[str]:
    lines = [f"\n## {m.point}\n", (f"iteration: measured {m.iteration * 1e3:.1f} ms, archsim {p.iteration * 1e3:.1f} ms "
             f"({p.iteration / m.iteration - 1:+.1%}); GPU busy {m.busy * 1e3:.1f} ms ({m.busy / m.iteration:.0%}) in "
             f"{m.calls} kernels; archsim's parts sum to {(sum(p.seconds.values()) + p.idle) * 1e3:.1f} ms\n"),
             "| class | measured ms | calls | archsim ms | archsim − measured ms |", "| --- | --- | --- | --- | --- |"]
    for cls in (*CLASSES, "other"):
        got, want = m.seconds.get(cls, 0.0), p.seconds.get(cls, 0.0)
        if got or want:
            lines.append(f"| {cls} | {got * 1e3:.1f} | {m.class_calls.get(cls, 0)} | {want * 1e3:.1f} | "
                         f"{(want - got) * 1e3:+.1f} |")
    lines.append(f"| kernels (busy) | {m.busy * 1e3:.1f} | {m.calls} | {sum(p.seconds.values()) * 1e3:.1f} | "
                 f"{(sum(p.seconds.values()) - m.busy) * 1e3:+.1f} |")
    lines.append(f"| GPU idle: iteration − busy / archsim launch {p.launch * 1e3:.1f} + host excess {max(p.host, 0.0) * 1e3:.1f} | "
                 f"{m.idle * 1e3:.1f} | | {p.idle * 1e3:.1f} | {(p.idle - m.idle) * 1e3:+.1f} |")
    return lines


def miss_by_class(m: Measured, p: Predicted) -> tuple[str, float]:
    """The kernel class whose archsim − measured seconds is the largest in size, and that difference (s)."""
    diffs = {cls: p.seconds.get(cls, 0.0) - m.seconds.get(cls, 0.0) for cls in (*CLASSES, "other")}
    worst = max(diffs, key=lambda k: abs(diffs[k]))
    return worst, diffs[worst]


def host_lines(pairs: list[tuple[Measured, Predicted]]) -> list[str]:
    """The host's issue rate where the GPU waits: the iteration over the kernels it launched, over archsim's eager
    ops, and over the Megatron-list ops ``host_s`` is stated per, beside ``host_s`` and ``launch_s``."""
    lines = ["\n## The host's issue time per op (iteration ÷ ops; a host-bound iteration's issue rate)\n",
             ("| point | busy | iteration ms | µs per launched kernel | µs per eager op | µs per Megatron op "
             "(archsim host_s) | archsim's host floor ms | µs idle per kernel (archsim launch_s) |"),
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for m, p in pairs:
        lines.append(f"| {m.point} | {m.busy / m.iteration:.0%} | {m.iteration * 1e3:.1f} | "
                     f"{m.iteration / m.calls * 1e6:.1f} | {m.iteration / p.eager_ops * 1e6:.1f} | "
                     f"{m.iteration / p.host_ops * 1e6:.1f} ({p.host_s * 1e6:.1f}) | {p.host_ops * p.host_s * 1e3:.1f} | "
                     f"{m.idle / m.calls * 1e6:.1f} ({p.launch_s * 1e6:.1f}) |")
    return lines


def checkpoint_lines(pairs: list[tuple[Measured, Predicted]], runs: Path = MEASURED) -> list[str]:
    """Full recompute's host cost: each fp16 full-recompute point's host time per Megatron op beside the same
    model, batch and micro-batch without recompute (the Hopper check's ``gpu_train_measured_h200.csv``, whose
    iteration times are CUDA-event medians too), and what archsim misses per checkpointed layer and micro-batch."""
    from archsim.training.measured import read_measured

    measured = read_measured(runs)
    lines = ["\n## Full recompute's host time (torch.utils.checkpoint) against the same run without it\n",
             (f"The run without recompute from `{runs.name}`; µs per Megatron op = iteration ÷ the ops archsim's host "
             "floor counts (host_s is stated per one); the miss = (measured − archsim) ÷ (micro-batches × layers).\n"),
             ("| point | busy | µs per Megatron op, full | the same without recompute (ms measured) | ratio | "
             "archsim's host_s µs | miss per checkpointed layer ms |"), "| --- | --- | --- | --- | --- | --- | --- |"]
    for m, p in pairs:
        if m.recompute != "full" or m.dtype != "fp16":
            continue
        hidden, layers = (int(x) for x in re.findall(r"\d+", m.model)[:2])
        none = [r for r in measured if (r.hidden, r.layers, r.micro_batch, r.global_batch, r.recompute)
                == (hidden, layers, m.micro_batch, m.global_batch, "none")]
        if not none:
            continue
        q = predict(replace(m, recompute="none", iteration=none[0].milliseconds / 1e3))
        full, plain = m.iteration / p.host_ops, none[0].milliseconds / 1e3 / q.host_ops
        per_layer = (m.iteration - p.iteration) / (m.global_batch // m.micro_batch * layers)
        lines.append(f"| {m.point} | {m.busy / m.iteration:.0%} | {full * 1e6:.1f} | {plain * 1e6:.1f} "
                     f"({none[0].milliseconds:.1f}) | {full / plain:.2f} | {p.host_s * 1e6:.1f} | {per_layer * 1e3:.2f} |")
    return lines


def report(path: Path = PROFILE) -> str:
    """The markdown the command prints."""
    measured = read_profile(path)
    pairs = [(m, predict(m)) for m in measured]
    lines = ["# A profiled iteration by kernel class beside archsim (benchmarks/bench_train_profile.py; nothing fitted)\n",
             (f"Measured: `{path.name}` (benchmarks/gpu_train_profile.py: one iteration under torch.profiler per point; "
             "kernels sorted by name into archsim's op classes, `bench_train_profile.RULES`). archsim: `archsim train "
             "--implementation pytorch-eager` on `h200_1gpu.toml` at the point's dtype, attention, recompute, micro-batch, "
             "global batch 16 and sequence; per class its op bodies (launch excluded), the optimizer step and the gradient "
             "sums; GPU idle = archsim's launch gaps (launch_s per kernel, paid as often as Megatron's ops) plus the "
             "host-issue floor's excess (host_s per Megatron op where a pass's host time exceeds its GPU time).")]
    for m, p in pairs:
        lines += point_table(m, p)
    lines += host_lines(pairs)
    lines += checkpoint_lines(pairs)
    lines += ["\n## Summary: which class explains the miss\n",
              ("archsim − measured, ms: the iteration = the kernels (busy) + the GPU's idle time; the kernel class "
              "that differs most.\n"),
              "| point | busy share | iteration | kernels | idle | largest class | its ms |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for m, p in pairs:
        worst, diff = miss_by_class(m, p)
        kernels = sum(p.seconds.values()) - m.busy
        lines.append(f"| {m.point} | {m.busy / m.iteration:.0%} | {(p.iteration - m.iteration) * 1e3:+.1f} | "
                     f"{kernels * 1e3:+.1f} | {(p.idle - m.idle) * 1e3:+.1f} | {worst} | {diff * 1e3:+.1f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", type=Path, default=PROFILE, help="a gpu_train_profile.py CSV")
    args = parser.parse_args(argv)
    print(report(args.profile), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
