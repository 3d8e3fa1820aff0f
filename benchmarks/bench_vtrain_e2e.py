"""archsim train against the 1,008 measured single-node A100 iterations (vTrain's released runs).

    python benchmarks/bench_vtrain_e2e.py            # report with the stored constants
    python benchmarks/bench_vtrain_e2e.py --refit    # refit the kernel efficiencies (16-layer runs) and
                                                     # the NVLink constants (2/4/8-GPU tables), print them

Reports the mean absolute percentage error (MAPE) on the held-out runs (the 12-, 20- and 24-layer
models: nothing was fitted on them), on the fit runs and on all, labelled; per parallelism; the
worst 5% with their breakdown; where the time goes; how far the closed form used for fitting is from
the event simulator. Writes reports/vtrain_e2e.html (predicted vs measured, coloured by parallelism)
and benchmarks/results/vtrain_e2e.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from archsim.devices.gpu_cost import Efficiency  # noqa: E402
from archsim.training import fitted  # noqa: E402
from archsim.training.cluster import single_node  # noqa: E402
from archsim.training.calibrate import fast_seconds, fit_kernels  # noqa: E402
from archsim.training.measured import MeasuredRun, read_measured  # noqa: E402
from archsim.training.run import train  # noqa: E402

DATA = ROOT / "tests" / "data" / "e2e"


def closed_form(run: MeasuredRun, machine) -> float:
    return fast_seconds(run, machine)


def refit(runs: list[MeasuredRun]) -> Efficiency:
    efficiency, loss = fit_kernels(runs)
    print(f"fit on {sum(fitted.is_fit_run(r.layers) for r in runs)} runs: MAPE {loss:.4f}, {efficiency}")
    return efficiency


def group(run: MeasuredRun) -> str:
    return f"TP{run.tp} DP{run.dp} PP{run.pp}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--refit", action="store_true")
    parser.add_argument("--html", default=str(ROOT / "reports" / "vtrain_e2e.html"))
    parser.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "vtrain_e2e.json"))
    args = parser.parse_args(argv)
    runs = read_measured(Path(args.data) / "vtrain_single_node_shown.csv")
    if args.refit:
        from archsim.collectives import LinkClass
        from archsim.training.nccl_fit import fit_link, read_nccl_tables
        from archsim.devices.catalog import gpu

        tables = read_nccl_tables(Path(args.data) / "nccl_allreduce", "a100")
        link = fit_link([tables[n] for n in fitted.NCCL_FIT_GPUS],
                        LinkClass("nvlink", gpu("a100-80gb").nvlink_bytes_per_s, 0.7, 5e-6, 20e-6))
        print("A100 NVLink fit on", fitted.NCCL_FIT_GPUS, "GPUs:", link)
        from archsim.training.nvlink_rings import ring_count

        v100 = gpu("v100-32gb")
        tables = read_nccl_tables(Path(args.data) / "nccl_allreduce", "v100")
        link = fit_link([tables[n] for n in fitted.NCCL_FIT_GPUS],
                        LinkClass("nvlink", v100.nvlink_link_bytes_per_s, 0.7, 5e-6, 20e-6),
                        bandwidth_of=lambda n: ring_count(tuple(range(n))) * v100.nvlink_link_bytes_per_s)
        print("V100 NVLink-ring fit on", fitted.NCCL_FIT_GPUS, "GPUs:", link)
        refit(runs)
        return 0
    cluster = single_node()
    rows = []
    for run in runs:
        machine = cluster.machine(run.parallelism())
        result = train(run.config(), run.parallelism(), machine)
        rows.append({"run": run, "predicted_ms": result.iteration_seconds * 1e3,
                     "closed_ms": closed_form(run, machine) * 1e3, "breakdown": result.breakdown,
                     "peak_memory_gib": result.peak_memory_gib})
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
               "runs_not_fitting_80gb": int(sum(r["peak_memory_gib"] > 80 for r in rows))}
    print(json.dumps(summary, indent=1))
    groups = sorted({group(r["run"]) for r in rows})
    per_group = {g: float(ape[held & np.array([group(r["run"]) == g for r in rows])].mean()) for g in groups}
    print("held-out MAPE by parallelism:")
    for g, v in per_group.items():
        print(f"  {g:16s} {v:.3f}")
    for b in sorted({r["run"].micro_batch for r in rows}):
        pick = held & np.array([r["run"].micro_batch == b for r in rows])
        print(f"  micro-batch {b}: held-out MAPE {ape[pick].mean():.3f} (signed {(predicted / measured - 1)[pick].mean():+.3f})")
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
    Path(args.json).write_text(json.dumps(summary, indent=1))
    _plot(rows, held, Path(args.html), summary)
    return 0


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


if __name__ == "__main__":
    sys.exit(main())
