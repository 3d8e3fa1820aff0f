"""archsim train against the 1,008 measured single-node A100 iterations (vTrain's released runs).

    python benchmarks/bench_vtrain_e2e.py            # report with the stored constants
    python benchmarks/bench_vtrain_e2e.py --p2p overlapped  # the report with overlapped sends (the default until 2026-12-05)
    python benchmarks/bench_vtrain_e2e.py --refit    # refit the kernel constants (two steps: archsim/training/fitted.py) and
                                                     # the NVLink constants (2/4/8-GPU tables), print them

Reports the mean absolute percentage error (MAPE) on the held-out runs (the 12-, 20- and 24-layer
models: nothing was fitted on them), on the fit runs and on all, labelled; the held-out MAPE of the host-bound
runs (``host_bound_seconds`` over 10% of the prediction: they rest on the fitted host time per op) and of the
others (:func:`host_share.host_split`); per parallelism; the
worst 5% with their breakdown; where the time goes; how far the closed form used for fitting is from
the event simulator. Writes reports/vtrain_e2e.html (predicted vs measured, coloured by parallelism),
reports/vtrain_e2e_error.html (each held-out run's error against its host floor's share: host_share.py)
and benchmarks/results/vtrain_e2e.json.

    python benchmarks/bench_vtrain_e2e.py --measured RUNS.csv --cluster configs/clusters/h200_1gpu.toml

checks the same model, unchanged, on any measured CSV of that format — e.g. the one-GPU runs of
``benchmarks/gpu_train_measure.py`` on a Hopper GPU, with their ``recompute`` and ``peak_memory_gib``
columns — on a cluster whose GPU is the one that ran them: per run predicted vs measured iteration time
and peak memory and their errors; MAPE overall, per recompute, per model and of the host-bound runs vs the
others (:func:`host_share.host_bound`), each run's host share. Nothing is fitted on these
runs. Writes benchmarks/results/gpu_train_<gpu-slug>.md and .csv (``--markdown`` / ``--csv`` elsewhere), and
beside the .md its name with ``_error.html``: each run's error against its host floor's share (not committed).

    python benchmarks/bench_vtrain_e2e.py --measured RUNS.csv --cluster … --efficiency-probe PROBE.csv

adds, side by side, the MAPE with the four kernel constants measured on that GPU by microbenchmarks
(``benchmarks/gpu_efficiency_probe.py``'s CSV, fitted by :func:`archsim.training.calibrate.fit_probe`:
still nothing fitted on the iterations), overall, per recompute and per model, and the fitted constants.
``--implementation pytorch-eager`` predicts with the op list of plain PyTorch
(:mod:`archsim.training.eager_ops`, what gpu_train_measure.py runs) instead of Megatron's; its files
are gpu_train_<gpu-slug>_pytorch-eager.md and .csv.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from batch_doubling import doubling_markdown
from host_share import host_bound, host_share, host_split, write_error_figure

from archsim.choices.training import DEFAULT_P2P, P2P_MODES
from archsim.devices.kernel_constants import KernelConstants
from archsim.json_text import dumps
from archsim.training import fitted
from archsim.training.calibrate import fast_seconds, fit_kernels
from archsim.training.cluster_file import single_node
from archsim.training.measured import MeasuredRun, Prediction, predict, read_measured

DATA = ROOT / "tests" / "data" / "e2e"


def closed_form(run: MeasuredRun, machine, p2p: str = DEFAULT_P2P) -> float:
    return fast_seconds(run, machine, p2p)


def refit(runs: list[MeasuredRun]) -> KernelConstants:
    """The two-step kernel fit (archsim/training/fitted.py): gemm on DeepBench's compute-bound V100 GEMMs,
    then the other three on the 16-layer runs with it held."""
    from archsim.validation.gemm_rate import fit_on_deepbench

    rate = fit_on_deepbench(ROOT / "benchmarks" / "results", fitted.A100_KERNELS)
    print(f"gemm on DeepBench's compute-bound V100 fp16 GEMMs: {rate.gemm:.3f} (seconds MAPE {rate.loss:.4f})")
    efficiency, loss = fit_kernels(runs, gemm=rate.gemm)
    print(f"fit on {sum(fitted.is_fit_run(r.layers) for r in runs)} runs with it held: MAPE {loss:.4f}, {efficiency}")
    return efficiency


def group(run: MeasuredRun) -> str:
    return f"TP{run.tp} DP{run.dp} PP{run.pp}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--refit", action="store_true")
    parser.add_argument("--html", default=str(ROOT / "reports" / "vtrain_e2e.html"))
    parser.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "vtrain_e2e.json"))
    parser.add_argument("--measured", default=None, help="another measured CSV to check (with --cluster)")
    parser.add_argument("--cluster", default=None, help="cluster TOML whose GPU ran the --measured runs")
    parser.add_argument("--markdown", default=None, help="--measured: summary (default results/gpu_train_<gpu>.md)")
    parser.add_argument("--csv", default=None, help="--measured: per-run table (default results/gpu_train_<gpu>.csv)")
    parser.add_argument("--efficiency-probe", default=None,
                        help="--measured: also predict with the constants fitted to this gpu_efficiency_probe.py CSV")
    parser.add_argument("--implementation", default="megatron", choices=("megatron", "pytorch-eager"),
                        help="--measured: whose op list archsim predicts with (default megatron)")
    parser.add_argument("--p2p", default=DEFAULT_P2P, choices=P2P_MODES,
                        help=f"the vTrain runs' pipeline sends, as archsim train's --p2p (default {DEFAULT_P2P}, "
                             "train's; megatron: blocking on their 1F1B; overlapped: the default until 2026-12-05)")
    args = parser.parse_args(argv)
    if args.measured or args.cluster:
        if not (args.measured and args.cluster):
            parser.error("--measured and --cluster go together")
        return check_measured(args.measured, args.cluster, args.markdown, args.csv, args.efficiency_probe,
                              args.implementation)
    runs = read_measured(Path(args.data) / "vtrain_single_node_shown.csv")
    if args.refit:
        from archsim.collectives import LinkClass
        from archsim.devices.gpu_lookup import gpu
        from archsim.training.nccl_fit import fit_link, fit_protocols, read_nccl_tables

        tables = read_nccl_tables(Path(args.data) / "nccl_allreduce", "a100")
        link = fit_link([tables[n] for n in fitted.NCCL_FIT_GPUS],
                        LinkClass("nvlink", gpu("a100-80gb").nvlink_bytes_per_s, 0.7, 5e-6, 20e-6))
        print("A100 NVLink fit on", fitted.NCCL_FIT_GPUS, "GPUs:", link)
        print("  its LL128 at every size:", fit_protocols([tables[n] for n in fitted.NCCL_FIT_GPUS], lambda n: link,
                                                          ("LL128",)))
        from archsim.nvlink_rings import ring_count

        v100 = gpu("v100-32gb")
        tables = read_nccl_tables(Path(args.data) / "nccl_allreduce", "v100")
        link = fit_link([tables[n] for n in fitted.NCCL_FIT_GPUS],
                        LinkClass("nvlink", v100.nvlink_link_bytes_per_s, 0.7, 5e-6, 20e-6),
                        bandwidth_of=lambda n: ring_count(tuple(range(n))) * v100.nvlink_link_bytes_per_s)
        print("V100 NVLink-ring fit on", fitted.NCCL_FIT_GPUS, "GPUs:", link)
        rings = lambda n: replace(link, bandwidth=ring_count(tuple(range(n))) * v100.nvlink_link_bytes_per_s)
        print("  its LL128 at every size:", fit_protocols([tables[n] for n in fitted.NCCL_FIT_GPUS], rings, ("LL128",)))
        refit(runs)
        return 0
    cluster = single_node()
    rows = [{"run": p.run, "predicted_ms": p.milliseconds, "breakdown": p.breakdown, "peak_memory_gib": p.peak_memory_gib,
             "closed_ms": closed_form(p.run, cluster.machine(p.run.parallelism()), args.p2p) * 1e3,
             "host_bound_ms": p.host_bound_seconds * 1e3, "error": p.error}
            for p in predict(runs, cluster, p2p=args.p2p)]
    measured = np.array([r["run"].milliseconds for r in rows])
    predicted = np.array([r["predicted_ms"] for r in rows])
    ape = np.abs(predicted / measured - 1)
    held = np.array([not fitted.is_fit_run(r["run"].layers) for r in rows])
    summary = {"held_out_mape": float(ape[held].mean()), "held_out_runs": int(held.sum()),
               "fit_mape": float(ape[~held].mean()), "fit_runs": int((~held).sum()),
               "all_mape": float(ape.mean()), "held_out_max_ape": float(ape[held].max()),
               "held_out_signed_mean": float((predicted / measured - 1)[held].mean()),
               "closed_form_vs_simulator_max": float(np.max(np.abs(np.array([r["closed_ms"] for r in rows])
                                                                   / predicted - 1))),
               "efficiency": str(fitted.A100_KERNELS),
               "largest_peak_memory_gib": float(max(r["peak_memory_gib"] for r in rows)),
               "runs_not_fitting_80gb": int(sum(r["peak_memory_gib"] > 80 for r in rows)),
               "held_out_host_split": host_split([r for r, h in zip(rows, held) if h])}
    print(json.dumps(summary, indent=1))
    groups = sorted({group(r["run"]) for r in rows})
    per_group = {g: float(ape[held & np.array([group(r["run"]) == g for r in rows])].mean()) for g in groups}
    print("held-out MAPE by parallelism:")
    for g, v in per_group.items():
        print(f"  {g:16s} {v:.3f}")
    for b in sorted({r["run"].micro_batch for r in rows}):
        pick = held & np.array([r["run"].micro_batch == b for r in rows])
        print(f"  micro-batch {b}: held-out MAPE {ape[pick].mean():.3f} (signed {(predicted / measured - 1)[pick].mean():+.3f})")
    tp_collective_gap(rows)
    worst = np.argsort(-ape)[: max(1, len(rows) // 20)]
    print(f"worst 5% ({len(worst)} runs), all data:")
    for i in worst:
        r = rows[i]
        run = r["run"]
        share = {k: round(v * 1e3, 1) for k, v in r["breakdown"].items() if v}
        print(f"  {group(run):14s} h{run.hidden} L{run.layers} B{run.global_batch} b{run.micro_batch}: measured "
              f"{run.milliseconds:.1f} ms, predicted {r['predicted_ms']:.1f} ({r['predicted_ms'] / run.milliseconds - 1:+.0%}) "
              f"{share}")
    total = {k: float(np.mean([r["breakdown"][k] / (r["predicted_ms"] / 1e3) for r in rows]))
             for k in rows[0]["breakdown"]}
    print("where the time goes (mean share of the predicted iteration, all runs):")
    for k, v in total.items():
        print(f"  {k:26s} {v:.3f}")
    summary.update(per_group=per_group, time_shares=total,
                   worst=[{"config": group(rows[i]["run"]), "hidden": rows[i]["run"].hidden,
                           "layers": rows[i]["run"].layers, "global_batch": rows[i]["run"].global_batch,
                           "micro_batch": rows[i]["run"].micro_batch, "measured_ms": rows[i]["run"].milliseconds,
                           "predicted_ms": rows[i]["predicted_ms"]} for i in worst])
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(dumps(summary, indent=1))
    _plot(rows, held, Path(args.html), summary)
    held_rows = [{"hidden": r["run"].hidden, "layers": r["run"].layers, "recompute": r["run"].recompute,
                  "global_batch": r["run"].global_batch, "micro_batch": r["run"].micro_batch,
                  "predicted_ms": r["predicted_ms"], "host_bound_ms": r["host_bound_ms"], "error": r["error"]}
                 for r, h in zip(rows, held) if h]
    write_error_figure(held_rows, Path(args.html).with_name(f"{Path(args.html).stem}_error.html"),
                       f"archsim train's error vs its host floor's share, {len(held_rows)} held-out A100 runs")
    return 0


def tp_collective_gap(rows: list[dict]) -> None:
    """Each TP > 1 run's missing time (measured − predicted) over its TP all-reduces (6 per layer and
    micro-batch under full recompute), median and IQR per TP and buffer size (docs/accuracy.md, the
    TP = 8 bias): a per-collective cost shows as a tight, size-ordered figure."""
    cells: dict[tuple[int, int], list[float]] = {}
    for r in rows:
        run = r["run"]
        if run.tp == 1:
            continue
        collectives = 6 * run.layers // run.pp * (run.global_batch // (run.micro_batch * run.dp))
        gap = (run.milliseconds - r["predicted_ms"]) / 1e3 / collectives * 1e6
        cells.setdefault((run.tp, run.seq * run.micro_batch * run.hidden * 2 // 2**20), []).append(gap)
    print("missing time per TP all-reduce (µs, all data): TP, buffer MiB, runs, median (IQR)")
    for (tp, mib), gaps in sorted(cells.items()):
        low, high = np.percentile(gaps, [25, 75])
        print(f"  TP {tp} {mib:3d} MiB {len(gaps):4d}  {np.median(gaps):+6.0f} ({low:+.0f} … {high:+.0f})")


def _plot(rows, held, path: Path, summary) -> None:
    import plotly.graph_objects as go

    figure = go.Figure()
    for g in sorted({group(r["run"]) for r in rows}):
        pick = [i for i, r in enumerate(rows) if group(r["run"]) == g]
        figure.add_trace(go.Scatter(
            x=[rows[i]["run"].milliseconds for i in pick], y=[rows[i]["predicted_ms"] for i in pick], mode="markers",
            name=g, marker={"symbol": ["circle" if held[i] else "x" for i in pick]},
            text=[f"h{rows[i]['run'].hidden} L{rows[i]['run'].layers} B{rows[i]['run'].global_batch} "
                  f"b{rows[i]['run'].micro_batch}" for i in pick]))
    top = max(max(r["run"].milliseconds for r in rows), max(r["predicted_ms"] for r in rows))
    figure.add_trace(go.Scatter(x=[0, top], y=[0, top], mode="lines", name="y = x", line={"dash": "dot"}))
    figure.update_layout(title=(f"archsim train vs 1,008 measured A100 iterations — held-out MAPE "
                                f"{summary['held_out_mape']:.1%} (circles: held out, x: fit)"),
                         xaxis_title="measured (ms)", yaxis_title="predicted (ms)", width=1000, height=800)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.write_html(str(path), include_plotlyjs="cdn")


PER_RUN = ("hidden", "layers", "heads", "seq", "global_batch", "micro_batch", "recompute", "measured_ms", "predicted_ms",
           "error", "measured_gib", "predicted_gib", "memory_error")


def check_measured(csv_path: str, cluster_path: str, markdown: str | None, per_run: str | None,
                   probe_path: str | None = None, implementation: str = "megatron") -> int:
    """The ``--measured`` check (module docstring); exit 2 with one line on bad input."""
    from archsim.devices.gpu_lookup import find_gpu, gpu
    from archsim.errors import InputError
    from archsim.outputs import atomic_write_text
    from archsim.training.cluster_file import load_gpu_cluster
    from archsim.training.measured import read_measured_table
    from archsim.validation.gpu_study import slug

    try:
        table = read_measured_table(csv_path)
        cluster = load_gpu_cluster(cluster_path)
        name = table.meta.get("gpu") or next((r.gpu_name for r in table.runs if r.gpu_name), "")
        known = find_gpu(name) if name else None
        if known is None or gpu(known).name != cluster.gpu.name:
            raise InputError(f"the runs were measured on {name or 'an unnamed GPU'!r}, the cluster has "
                             f"{cluster.gpu.name}", file=cluster_path, field="gpu")
        if not table.runs:
            raise InputError("no measured runs", file=csv_path)
        trained = {"dtype": table.meta.get("dtype", "fp16"), "attention": table.meta.get("attention", "standard")}
        predictions = predict(table.runs, cluster, implementation=implementation, **trained)
        fit = probed = None
        if probe_path:
            fit = probe_fit(probe_path, cluster.gpu)
            probed = [p.error for p in predict(table.runs, cluster, fit.efficiency, implementation, **trained)]
    except InputError as exc:
        print(f"bench_vtrain_e2e: {exc}", file=sys.stderr)
        return 2
    rows = [measured_row(p) for p in predictions]
    gpu_slug = summary_stem(csv_path, slug(name)) + ("" if implementation == "megatron" else f"_{implementation}")
    results = ROOT / "benchmarks" / "results"
    text = "\n".join([",".join(PER_RUN), *(",".join(_cell(r[c]) for c in PER_RUN) for r in rows)]) + "\n"
    print(f"wrote {atomic_write_text(per_run or results / f'gpu_train_{gpu_slug}.csv', text)}", file=sys.stderr)
    if probed is not None:
        for r, error in zip(rows, probed):
            r["probe_error"] = error
    summary = measured_markdown(rows, table.meta, name, cluster_path, csv_path, fit, probe_path, implementation)
    print(summary)
    written = atomic_write_text(markdown or results / f"gpu_train_{gpu_slug}.md", summary)
    print(f"wrote {written}", file=sys.stderr)
    figure = write_error_figure(rows, written.with_name(f"{written.stem}_error.html"),
                                f"archsim train's error vs its host floor's share, {len(rows)} runs on {name}")
    print(f"wrote {figure}", file=sys.stderr)
    return 0


def summary_stem(csv_path: str, gpu_slug: str) -> str:
    """The name the summaries of a measured file take: ``gpu_train_measured_h200_bf16_flash.csv`` →
    ``h200_bf16_flash`` (its GPU and what it varies), any other name → the GPU's slug."""
    stem = Path(csv_path).stem
    prefix = f"gpu_train_measured_{gpu_slug}"
    return gpu_slug + stem[len(prefix):] if stem.startswith(prefix) else gpu_slug


def probe_fit(path: str, device):
    """The probe's fitted constants; the probe must have run on ``device`` (exit 2 otherwise)."""
    from archsim.devices.gpu_lookup import find_gpu, gpu
    from archsim.errors import InputError
    from archsim.training.calibrate import fit_probe, read_probe

    meta, rows = read_probe(path)
    name = meta.get("gpu", "")
    known = find_gpu(name) if name else None
    if known is None or gpu(known).name != device.name:
        raise InputError(f"the probe ran on {name or 'an unnamed GPU'!r}, the cluster has {device.name}", file=path,
                         field="gpu")
    return fit_probe(rows, device)


def measured_row(p: Prediction) -> dict:
    r = p.run
    return {"hidden": r.hidden, "layers": r.layers, "heads": r.heads, "seq": r.seq, "global_batch": r.global_batch,
            "micro_batch": r.micro_batch, "recompute": r.recompute, "measured_ms": r.milliseconds,
            "predicted_ms": p.milliseconds, "error": p.error, "measured_gib": r.peak_memory_gib,
            "predicted_gib": p.peak_memory_gib, "memory_error": p.memory_error,
            "host_bound_ms": p.host_bound_seconds * 1e3}  # not a PER_RUN column: the split, host share, figure read it


def _cell(value) -> str:
    return "" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)


def _mape(rows: list[dict], key: str) -> str:
    errors = [abs(r[key]) for r in rows if r[key] is not None]
    if not errors:
        return "–"
    signed = float(np.mean([r[key] for r in rows if r[key] is not None]))
    return f"{np.mean(errors):.1%} (signed {signed:+.1%}, max {max(errors):.1%}, {len(errors)} runs)"


def _shown(path: str) -> str:
    """A path as the repository sees it (no machine's absolute paths in committed files)."""
    resolved = Path(path).resolve()
    return str(resolved.relative_to(ROOT)) if resolved.is_relative_to(ROOT) else resolved.name


def measured_markdown(rows: list[dict], meta: dict[str, str], gpu_name: str, cluster_path: str, csv_path: str,
                      fit=None, probe_path: str | None = None, implementation: str = "megatron") -> str:
    """The summary: MAPE of time and memory overall, per recompute and per model, then every run; with a
    probe ``fit``, the time MAPE with its constants beside the A100-scaled one."""
    from archsim.training.table_lines import HOST_NOTE_SHARE

    csv_path, cluster_path = _shown(csv_path), _shown(cluster_path)
    probe = fit is not None
    lines = [f"# archsim train vs measured one-GPU iterations: {gpu_name}", "",
             (f"Measured: `{Path(csv_path).name}` ({meta.get('date', 'undated')}, torch {meta.get('torch', '?')}, "
             f"complete: {meta.get('complete', '?')}, {meta.get('points', f'{len(rows)} points')}). "
             f"Predicted: `archsim train` on `{Path(cluster_path).name}` with the A100-fitted kernel constants "
             f"({fitted.A100_KERNELS}) scaled by the catalog's peaks (their held-out MAPE on the A100 runs: 6.6%, "
             "docs/accuracy.md); nothing fitted on these runs. Error = "
             "predicted / measured − 1; MAPE = mean |error|. Memory: archsim's peak per GPU vs "
             "`torch.cuda.max_memory_allocated` (GiB). Regenerate: "
             f"`python benchmarks/bench_vtrain_e2e.py --measured {csv_path} --cluster {cluster_path}"
             + (f" --efficiency-probe {_shown(probe_path or '')}" if probe else "")
             + ("`." if implementation == "megatron" else f" --implementation {implementation}`.")), ""]
    if implementation != "megatron":
        lines += [(f"Op list: `{implementation}` (archsim.training.eager_ops: the kernels plain PyTorch runs — separate "
                   "mask fill, dropout and residual add, two-pass LayerNorm backward, bias-gradient sums, the q/k/v "
                   "gradient concatenation, fp32 cross-entropy passes, the eager optimizer step and gradient "
                   "accumulation) instead of Megatron's fused one."), ""]
    if probe:
        e = fit.efficiency
        lines += [(f"Probe-fitted (`{Path(probe_path or '').name}`, microbenchmarks on this GPU, "
                   "archsim.training.calibrate.fit_probe): "
                   f"gemm {e.gemm:.3f}, memory {e.memory:.3f}, launch_s {e.launch_s * 1e6:.2f} µs "
                   f"({fit.kernels_per_op:.2f} kernels launched per archsim op × "
                   f"{e.launch_s / fit.kernels_per_op * 1e6:.2f} µs per kernel), "
                   f"host_s {e.host_s * 1e6:.2f} µs (RMS relative error of archsim's model on the probe: GEMMs "
                   f"{fit.gemm_rms:.1%} over {fit.rows['gemm']}, memory ops {fit.memory_rms:.1%} over "
                   f"{fit.rows['memory']}). Time MAPE with them in the third column."), ""]
    head = "| runs | time MAPE | time MAPE, probe-fitted | memory MAPE |" if probe else "| runs | time MAPE | memory MAPE |"

    def line(label: str, pick: list[dict]) -> str:
        middle = f" {_mape(pick, 'probe_error')} |" if probe else ""
        return f"| {label} | {_mape(pick, 'error')} |{middle} {_mape(pick, 'memory_error')} |"

    lines += [head, "| --- " * (4 if probe else 3) + "|", line("all", rows)]
    for recompute in sorted({r["recompute"] for r in rows}):
        lines.append(line(f"recompute {recompute}", [r for r in rows if r["recompute"] == recompute]))
    for shape in sorted({(r["hidden"], r["layers"]) for r in rows}):
        lines.append(line(f"h{shape[0]} L{shape[1]}", [r for r in rows if (r["hidden"], r["layers"]) == shape]))
    lines.append(line(f"host-bound (host_bound_seconds > {HOST_NOTE_SHARE:.0%} of predicted)",
                      [r for r in rows if host_bound(r)]))
    lines.append(line("GPU-bound (the others)", [r for r in rows if not host_bound(r)]))
    lines += ["", ("Host-bound: archsim's `host_bound_seconds` (the host issuing ops beyond the GPU's work, at the "
                   "A100-fitted host time per op) over "
                   f"{HOST_NOTE_SHARE:.0%} of the predicted iteration, as `archsim train`'s table notes it"
                   + ("; the probe-fitted column's errors on the same runs." if probe else ".")
                   + " Host share, per run below: that time over the predicted iteration. The command above also writes, "
                   "beside this file, its name with `_error.html` for `.md`: each run's error against its host share, "
                   "coloured by recompute (not committed, as the project's HTML figures are not).")]
    extra = (" probe error |", " --- |") if probe else ("", "")
    lines += ["", ("| model | recompute | B | b | measured ms | predicted ms | error | host share | measured GiB | "
                   f"predicted GiB | memory error |{extra[0]}"), "| --- " * 11 + f"|{extra[1]}"]
    for r in rows:
        memory = (f"{r['measured_gib']:.2f} | {r['predicted_gib']:.2f} | {r['memory_error']:+.1%}"
                  if r["measured_gib"] else f"– | {r['predicted_gib']:.2f} | –")
        tail = f" {r['probe_error']:+.1%} |" if probe else ""
        lines.append(f"| h{r['hidden']} L{r['layers']} | {r['recompute']} | {r['global_batch']} | {r['micro_batch']} | "
                     f"{r['measured_ms']:.1f} | {r['predicted_ms']:.1f} | {r['error']:+.1%} | {host_share(r):.1%} | {memory} |{tail}")
    lines += doubling_markdown(rows)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
