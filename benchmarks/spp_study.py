"""SPP §V-B on archsim's costs: BERT-large on 8 servers × 4 GPUs (configs/clusters/spp_sim.toml).

    .venv/bin/python benchmarks/spp_study.py [--out benchmarks/results/spp_study.csv] [--report reports/spp_study.html]

The paper drives its simulation with per-layer times profiled on a V100, which archsim does not
have; here the 24 encoder layers of BERT-large (sequence 512, micro-batch 6) are costed on a
V100-like systolic array — 256×256 weight-stationary at 1 GHz, 65.5 T MAC/s, about a V100's
tensor-core peak — with 2-byte elements, and each encoder layer is one SPP layer. The study varies
the number of micro-batches (inter-server 32–40 Gbps) and the inter-server bandwidth (M = 32),
and records SPP's makespan, the stage count it picks, and the four baselines'.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd
import plotly.express as px
import plotly.io as pio

from archsim.array.config import ArrayConfig
from archsim.outputs import atomic_write_text
from archsim.spp.baselines import BASELINES, baseline
from archsim.spp.plan import spp
from archsim.spp.rdo import recursive_device_order
from archsim.spp.profiles import profile_from_network
from archsim.spp.topology import build_topology
from archsim.workload import load_network

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = {"cluster": {"name": "spp_sim", "seed": 0, "inter_server_gbps": [32, 40]},
           "servers": [{"count": 3, "gpus": 4, "intra_server_gbps": [96, 128]},
                       {"count": 5, "gpus": 4, "intra_server_gbps": [160, 200]}]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "spp_study.csv"))
    parser.add_argument("--report", default=str(ROOT / "reports" / "spp_study.html"))
    args = parser.parse_args(argv)
    array = ArrayConfig(256, 256, "ws", element_bytes=2, clock_hz=1e9)
    profile, _ = profile_from_network(load_network("bert_large"), array, 6, "exact",
                                      group=lambda name: name.split("_")[0])
    rows = []
    cases = [(m, [32, 40]) for m in (8, 16, 32, 64)] + [(32, bw) for bw in ([8, 10], [16, 20], [64, 80], [128, 160])]
    for microbatches, inter in cases:
        spec = {**CLUSTER, "cluster": {**CLUSTER["cluster"], "inter_server_gbps": inter}}
        topology = build_topology(spec)
        start = time.perf_counter()
        result = spp(profile, topology, microbatches)
        row = {"microbatches": microbatches, "inter_server_gbps": f"{inter[0]}-{inter[1]}",
               "spp": result.makespan, "spp_stages": len(result.plan.stages),
               "spp_replicas": " ".join(map(str, result.plan.replicas)), "seconds_to_plan": 0.0}
        for method in BASELINES:
            row[method] = float(baseline(method, profile, topology, microbatches))
        row["seconds_to_plan"] = time.perf_counter() - start
        ordering = recursive_device_order(topology)
        servers = [topology.servers[d] for d in ordering.order]
        row["server_runs_in_order"] = 1 + sum(a != b for a, b in zip(servers, servers[1:]))
        row["first_cut"] = f"{len(ordering.cuts[0][0])}|{len(ordering.cuts[0][1])}"
        rows.append(row)
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    frame = pd.DataFrame(rows)
    atomic_write_text(args.out, frame.to_csv(index=False))
    long = frame.melt(id_vars=["microbatches", "inter_server_gbps"], value_vars=["spp", *BASELINES],
                      var_name="method", value_name="makespan_s")
    command = "python benchmarks/spp_study.py"
    figures = [px.bar(long[long.inter_server_gbps == "32-40"], x="microbatches", y="makespan_s", color="method",
                      barmode="group", title="BERT-large on 32 GPUs: per-iteration time vs micro-batches"),
               px.bar(long[long.microbatches == 32], x="inter_server_gbps", y="makespan_s", color="method",
                      barmode="group", title="BERT-large on 32 GPUs, M = 32: per-iteration time vs inter-server Gbps")]
    body = "".join(pio.to_html(f, include_plotlyjs=i == 0, full_html=False) for i, f in enumerate(figures))
    others = frame[list(BASELINES)]
    best = int((frame.spp <= others.min(axis=1) + 1e-12).sum())
    findings = (f"<p>SPP is the fastest in {best} of {len(frame)} cases; it beats DP, GPipe and HetPipe in every case. "
                f"It picks {sorted(set(frame.spp_stages))} stages (the paper: 6). Recursive device ordering's first "
                f"min-cut is {sorted(set(frame.first_cut))} and a server's GPUs form "
                f"{sorted(set(frame.server_runs_in_order))} runs along the order (8 would keep every server whole): on "
                f"a complete GPU graph with one link per GPU pair, one GPU's three fast intra-server links weigh less "
                f"than a server's many slower inter-server links, so the lightest cut isolates a GPU. The synchronous "
                f"PipeDream baseline, which keeps the servers' natural order, then wins where the split servers cost "
                f"SPP its fast links.</p>")
    html = (f"<!doctype html><html><head><meta charset='utf-8'><title>SPP study</title></head><body>"
            f"<h1>SPP §V-B on archsim costs</h1><p>{__doc__.splitlines()[3]} … see the script's docstring for the "
            f"assumptions.</p>{findings}{body}{frame.to_html(index=False, float_format=lambda x: f'{x:.4g}')}"
            f"<p>Mode: exact. Regenerate: <code>{command}</code></p></body></html>")
    atomic_write_text(args.report, html)
    print(findings.replace("<p>", "").replace("</p>", ""))
    print(f"wrote {args.out} and {args.report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
