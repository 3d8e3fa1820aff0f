"""How much the planned (uneven) stage split gains over Megatron's even split, as archsim models it.

    .venv/bin/python benchmarks/bench_uneven.py

* ``gpt3_175b``: GPT-3 175B (configs/transformers/gpt3_175b.toml) on 1,024 A100 80 GB (128 DGX A100
  servers, 200 Gb/s InfiniBand per GPU), global batch 1,536, 1F1B and GPipe, micro-batches 1–8, every
  recompute mode, sequence parallelism on and off: the search with ``--balance even`` and with
  ``--balance planned`` (closed forms, ``--refine 0``), their first rows, and the first even row's gain.
* ``measured_16_layers``: every vTrain single-node run (../shared/e2e) of a 16-layer model with PP > 1,
  timed by archsim with the even split and with the planned one (same TP, PP, DP, micro-batch, full
  recompute, 1F1B): the gain 1 − planned / even per run, and its mean and largest. No uneven run was
  measured: these are archsim's predictions, not measurements.
* ``chunked_gpt3_1.3b``: GPT-3 1.3B (configs/transformers/gpt3_1.3b.toml) on one DGX A100
  (configs/clusters/a100_node.toml), global batch 64, with several model chunks per rank — interleaved
  1F1B and interleaved ZB with V = 2, ZB-V, DualPipeV — at PP 4 × DP 2 and PP 2 × DP 4, micro-batch 2,
  no and full recomputation: archsim train's time (event simulator) of the even split and of
  ``--balance planned``'s per-chunk split, and the gain.
* ``chunked_tiny_event_gap``: tiny GPTs (9 layers, hidden 1,024, sequence 1,024, vocabulary 5,000 or
  64,000) at PP 2–3 with 4·PP micro-batches: the planned per-chunk split's event-simulated time
  against the fastest of every composition of the layers into the chunks (the planner is exact for
  the closed forms, tests/test_stage_split_chunks.py; this is how far it is in the event simulator).

Writes benchmarks/results/uneven_gain.json.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from dgx_a100 import dgx_a100

from archsim.json_text import dumps
from archsim.outputs import atomic_write_text
from archsim.training.cluster_file import load_gpu_cluster, single_node
from archsim.training.measured import read_measured
from archsim.training.parallel import Parallelism
from archsim.training.run import train
from archsim.training.search import search
from archsim.training.stage_split import planned_split, stage_layer_counts
from archsim.workload.model_files import load_transformer

KEYS = ("tp", "pp", "dp", "micro_batch", "recompute", "schedule", "sequence_parallel", "stage_layers",
        "iteration_seconds", "peak_memory_gib", "uneven_gain")


def gpt3() -> dict:
    model = load_transformer(ROOT / "configs" / "transformers" / "gpt3_175b.toml")
    out = {}
    cluster = dgx_a100(128)
    for balance in ("even", "planned"):
        start = time.process_time()
        result = search(model, cluster, 1536, micro_batches=range(1, 9), schedules=("1f1b", "gpipe"),
                        top=5, refine=0, balance=balance)
        out[balance] = {"cpu_s": time.process_time() - start, "costed": result.costed,
                        "rows": [{k: r[k] for k in KEYS} for r in result.rows]}
        print(balance, json.dumps(out[balance]["rows"][0]), flush=True)
    even, planned = out["even"]["rows"][0], out["planned"]["rows"][0]
    out["first_row_gain"] = even["uneven_gain"]
    out["planned_best_over_even_best"] = 1 - planned["iteration_seconds"] / even["iteration_seconds"]
    return out


def measured_16_layers() -> dict:
    runs = [r for r in read_measured(ROOT.parent / "shared" / "e2e" / "vtrain_single_node_shown.csv")
            if r.layers == 16 and r.pp > 1]
    cluster = single_node("a100-80gb", 8)
    rows = []
    for run in runs:
        c, par = run.config(), run.parallelism()
        machine = cluster.machine(par)
        plan = planned_split(c, par, [machine] * par.pp, [cluster.gpu.memory_bytes] * par.pp)
        assert plan is not None
        split = stage_layer_counts(plan)
        even = train(c, par, machine).iteration_seconds
        planned = train(c, replace(par, stage_layers=split), machine).iteration_seconds
        rows.append({"hidden": run.hidden, "gpus": par.gpus, "tp": par.tp, "pp": par.pp, "dp": par.dp,
                     "global_batch": par.global_batch, "micro_batch": par.micro_batch,
                     "split": ",".join(map(str, split)), "even_s": even, "planned_s": planned,
                     "measured_even_s": run.milliseconds / 1e3, "gain": 1 - planned / even})
    gains = [r["gain"] for r in rows]
    return {"runs": rows, "mean_gain": sum(gains) / len(gains), "max_gain": max(gains), "count": len(rows)}


def chunked() -> dict:
    model = load_transformer(ROOT / "configs" / "transformers" / "gpt3_1.3b.toml")
    cluster = load_gpu_cluster(ROOT / "configs" / "clusters" / "a100_node.toml")
    rows = []
    for schedule, v in (("1f1b", 2), ("interleaved-zb", 2), ("zb-v", 1), ("dualpipev", 1)):
        for pp, recompute in ((4, "none"), (4, "full"), (2, "none"), (2, "full")):
            par = Parallelism(1, pp, 8 // pp, 64, 2, recompute, False, v, schedule)
            machine = cluster.machine(par)
            split = stage_layer_counts(planned_split(model, par, [machine] * pp, [cluster.gpu.memory_bytes] * pp))
            even = train(model, par, machine)
            planned = train(model, replace(par, stage_layers=split), machine)
            rows.append({"schedule": par.schedule_name, "interleave": v, "pp": pp, "dp": 8 // pp,
                         "recompute": recompute, "split": ",".join(map(str, split)),
                         "even_s": even.iteration_seconds, "planned_s": planned.iteration_seconds,
                         "even_peak_gib": even.peak_memory_gib, "planned_peak_gib": planned.peak_memory_gib,
                         "gain": 1 - planned.iteration_seconds / even.iteration_seconds})
            print(json.dumps(rows[-1]), flush=True)
    return {"runs": rows}


def tiny_event_gap() -> dict:
    import itertools

    from archsim.workload.transformer import TransformerConfig

    rows = []
    for schedule, p, v in (("interleaved-1f1b", 2, 2), ("zb-v", 2, 1), ("dualpipev", 2, 1), ("zb-v", 3, 1)):
        for vocab, recompute in itertools.product((5000, 64000), ("none", "full")):
            c = TransformerConfig("tiny", "gpt", layers=9, hidden=1024, heads=16, vocab=vocab, seq=1024, ffn=4096,
                                  kv_heads=16, tied_embeddings=True, positions=1024)
            par = Parallelism(1, p, 1, 4 * p, 1, recompute, False, v, schedule)
            machine = single_node().machine(par)
            split = stage_layer_counts(planned_split(c, par, [machine] * p, [float("inf")] * p))
            times = {}
            for cuts in itertools.combinations(range(1, 9), p * par.chunks - 1):
                counts = tuple(b - a for a, b in itertools.pairwise((0, *cuts, 9)))
                times[counts] = train(c, replace(par, stage_layers=counts), machine).iteration_seconds
            best = min(times, key=times.__getitem__)
            rows.append({"schedule": schedule, "pp": p, "vocab": vocab, "recompute": recompute,
                         "planned": ",".join(map(str, split)), "fastest": ",".join(map(str, best)),
                         "gap": times[split] / times[best] - 1})
            print(json.dumps(rows[-1]), flush=True)
    worst = {s: max(r["gap"] for r in rows if r["schedule"] == s) for s in sorted({r["schedule"] for r in rows})}
    return {"runs": rows, "largest_gap": worst}


def main() -> None:
    result = {"gpt3_175b_1024_a100": gpt3(), "measured_16_layers": measured_16_layers(),
              "chunked_gpt3_1.3b": chunked(), "chunked_tiny_event_gap": tiny_event_gap()}
    m = result["measured_16_layers"]
    print(f"16-layer measured runs with PP > 1: {m['count']}, mean gain {m['mean_gain']:.2%}, "
          f"largest {m['max_gain']:.2%}")
    g = result["gpt3_175b_1024_a100"]
    print(f"GPT-3 175B on 1,024 A100s: first even row's gain {g['first_row_gain']:.2%}; planned best vs even best "
          f"{g['planned_best_over_even_best']:.2%}")
    atomic_write_text(ROOT / "benchmarks" / "results" / "uneven_gain.json", dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
