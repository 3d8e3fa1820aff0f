"""archsim search: its speed on the 1T-parameter GPT and its growth with the GPUs, and its choices
against vTrain's measured single-node runs — in one run.

    .venv/bin/python benchmarks/bench_search.py [--quick] [--skip-acceptance]

* ``speed``: the 1T GPT (configs/transformers/gpt_1t.toml: 128 layers, hidden 25,600, 160 heads,
  seq 2,048) on 24 to 384 DGX A100 servers (192 to 3,072 GPUs; 200 Gb/s InfiniBand per GPU), global
  batch 3,072, every factorization, micro-batches 1–8, every recompute mode and schedule (interleaved
  with 2 and 4 chunks), sequence parallelism on and off; closed forms only (``--refine 0``) and
  then with the best 20 re-timed (the command's default) in the event simulator; the same for
  GPT-3 175B (configs/transformers/gpt3_175b.toml, global batch 1,536), which fits every cluster
  size, so its growth is the search's own. CPU seconds of one process
  (``time.process_time``: the machine is shared), the scaling exponent of time in GPUs
  (least-squares slope of log time on log GPUs), and the target: 3,072 GPUs in under 60 s.
* ``acceptance``: :func:`archsim.training.search_acceptance.group_outcomes` — per (model, GPUs,
  global batch) group, is archsim's first choice within 5% of the measured best, and is the
  measured best in its top 3 — on all groups, on the 16-layer models the kernels were fitted on and
  on the 12/20/24-layer ones held out, with every miss listed.

Writes benchmarks/results/search_speed.csv and benchmarks/results/search_acceptance.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from dgx_a100 import dgx_a100

from archsim.choices.schedules import TRAINING_SCHEDULES as SCHEDULES
from archsim.json_text import dumps
from archsim.outputs import atomic_write_text
from archsim.training.search import search
from archsim.workload.model_files import load_transformer


def speed(servers_list: list[int], name: str = "gpt_1t", batch: int = 3072) -> list[dict]:
    model = load_transformer(ROOT / "configs" / "transformers" / f"{name}.toml")
    rows = []
    for servers in servers_list:
        cluster = dgx_a100(servers)
        for refine in (0, 20):
            start = time.process_time()
            wall = time.perf_counter()
            result = search(model, cluster, batch, micro_batches=range(1, 9), schedules=SCHEDULES, chunks=(2, 4),
                            top=10, refine=refine)
            best = result.rows[0] if result.rows else {}
            rows.append({"model": name, "gpus": servers * 8, "refine": refine, "cpu_s": time.process_time() - start,
                         "wall_s": time.perf_counter() - wall, "enumerated": result.enumerated,
                         "costed": result.costed, "best": {k: best.get(k) for k in (
                             "tp", "pp", "dp", "micro_batch", "recompute", "schedule", "interleave",
                             "sequence_parallel", "iteration_seconds", "peak_memory_gib", "mfu", "timing")}})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def exponent(rows: list[dict], model: str, refine: int) -> float:
    pts = [(r["gpus"], r["cpu_s"]) for r in rows if r["refine"] == refine and r["model"] == model]
    x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(x, y, 1)[0])


def acceptance() -> dict:
    from archsim.training.measured import read_measured
    from archsim.training.search_acceptance import fractions, group_outcomes

    outcomes = group_outcomes(read_measured(ROOT / "tests" / "data" / "e2e" / "vtrain_single_node_shown.csv"))
    misses = [{"hidden": o.hidden, "layers": o.layers, "gpus": o.gpus, "global_batch": o.global_batch,
               "configurations": o.configurations, "measured_best": o.measured_best, "archsim_top3": o.ranked[:3],
               "first_over_best": round(o.first_over_best, 4), "best_in_top3": o.best_in_top3}
              for o in outcomes if not (o.first_within_5pct and o.best_in_top3)]
    return {"all": fractions(outcomes), "held_out": fractions([o for o in outcomes if o.held_out]),
            "fit": fractions([o for o in outcomes if not o.held_out]), "misses": misses}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="24 to 96 servers only")
    parser.add_argument("--skip-acceptance", action="store_true")
    args = parser.parse_args()
    results = ROOT / "benchmarks" / "results"
    servers = [24, 48, 96] if args.quick else [24, 48, 96, 192, 384]
    rows = speed(servers) + speed(servers, "gpt3_175b", 1536)
    keys = list(rows[0]["best"])
    lines = [",".join(["model", "gpus", "refine", "cpu_s", "wall_s", "enumerated", "costed", *keys])]
    for r in rows:
        head = [r["model"], r["gpus"], r["refine"], f"{r['cpu_s']:.3f}", f"{r['wall_s']:.3f}", r["enumerated"],
                r["costed"]]
        lines.append(",".join(map(str, [*head, *("" if r["best"][k] is None else r["best"][k] for k in keys)])))
    for model in ("gpt_1t", "gpt3_175b"):
        for refine in (0, 20):
            lines.append(f"# exponent (cpu_s ~ gpus^k), {model}, refine {refine}: {exponent(rows, model, refine):.3f}")
    atomic_write_text(results / "search_speed.csv", "\n".join(lines) + "\n")
    print("\n".join(lines[-4:]))
    largest = max((r for r in rows if r["model"] == "gpt_1t"), key=lambda r: (r["gpus"], r["refine"]))
    print(f"largest: {largest['gpus']} GPUs, refine {largest['refine']}: {largest['cpu_s']:.2f} CPU s "
          f"({'under' if largest['cpu_s'] < 60 else 'OVER'} 60 s)")
    if not args.skip_acceptance:
        report = acceptance()
        atomic_write_text(results / "search_acceptance.json", dumps(report, indent=1) + "\n")
        for part in ("all", "held_out", "fit"):
            print(part, report[part])
        for m in report["misses"]:
            print("miss", m)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
