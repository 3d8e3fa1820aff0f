"""SPP §V-B on archsim's costs: BERT-large on 8 servers × 4 GPUs (configs/clusters/spp_sim.toml).

    .venv/bin/python benchmarks/spp_study.py [--out benchmarks/results/spp_study.csv] [--report reports/spp_study.html]

The paper drives its simulation with per-layer times profiled on a V100, which archsim does not
have; here the 24 encoder layers of BERT-large (sequence 512, micro-batch 6) are costed on a
V100-like systolic array — 256×256 weight-stationary at 1 GHz, 65.5 T MAC/s, about a V100's
tensor-core peak — with 2-byte elements, and each encoder layer is one SPP layer. The study varies
the number of micro-batches (inter-server 32–40 Gbps) and the inter-server bandwidth (M = 32),
and records SPP's makespan, the stage count it picks, and the four baselines', under both
inter-server link models of archsim.spp.topology: one shared link per server pair (a NIC; the
default) and a dedicated link per GPU pair.
"""

from __future__ import annotations

import argparse
import itertools
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
from archsim.spp.profiles import profile_from_network
from archsim.spp.rdo import recursive_device_order
from archsim.spp.topology import INTER_SERVER_LINKS, build_topology
from archsim.workload import load_network

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = {"cluster": {"name": "spp_sim", "seed": 0, "inter_server_gbps": [32, 40]},
           "servers": [{"count": 3, "gpus": 4, "intra_server_gbps": [192, 256]},
                       {"count": 5, "gpus": 4, "intra_server_gbps": [320, 400]}]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "spp_study.csv"))
    parser.add_argument("--report", default=str(ROOT / "reports" / "spp_study.html"))
    parser.add_argument("--links", nargs="+", default=list(INTER_SERVER_LINKS), choices=INTER_SERVER_LINKS,
                        help="inter-server link models to study (default: both)")
    parser.add_argument("--from-csv", default=None, metavar="CSV",
                        help="rebuild the report from a CSV this script wrote, without re-planning")
    args = parser.parse_args(argv)
    if args.from_csv:
        frame = pd.read_csv(args.from_csv)
        args.links = [link for link in INTER_SERVER_LINKS if link in set(frame.inter_server_link)]
        return write_report(frame, args)
    array = ArrayConfig(256, 256, "ws", element_bytes=2, clock_hz=1e9)
    profile = profile_from_network(load_network("bert_large"), array, 6, "exact",
                                      group=lambda name: name.split("_")[0])
    rows = []
    cases = [(m, [32, 40]) for m in (8, 16, 32, 64)] + [(32, bw) for bw in ([8, 10], [16, 20], [64, 80], [128, 160])]
    for link, (microbatches, inter) in itertools.product(args.links, cases):
        spec = {**CLUSTER, "cluster": {**CLUSTER["cluster"], "inter_server_gbps": inter, "inter_server_link": link}}
        topology = build_topology(spec)
        start = time.perf_counter()
        result = spp(profile, topology, microbatches)
        row = {"inter_server_link": link, "microbatches": microbatches, "inter_server_gbps": f"{inter[0]}-{inter[1]}",
               "spp": result.makespan, "spp_stages": len(result.plan.stages),
               "spp_replicas": " ".join(map(str, result.plan.replicas)), "seconds_to_plan": 0.0}
        for method in BASELINES:
            row[method] = float(baseline(method, profile, topology, microbatches).makespan)
        row["seconds_to_plan"] = time.perf_counter() - start
        ordering = recursive_device_order(topology)
        servers = [topology.servers[d] for d in ordering.order]
        row["server_runs_in_order"] = 1 + sum(a != b for a, b in itertools.pairwise(servers))
        row["first_cut"] = f"{len(ordering.cuts[0][0])}|{len(ordering.cuts[0][1])}"
        row["stage_counts"] = " ".join(f"{s}:{w:.6g}:{t:.6g}" for s, w, t in result.by_stage_count)  # |S|:𝒲:T_PE
        rows.append(row)
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    frame = pd.DataFrame(rows)
    atomic_write_text(args.out, frame.to_csv(index=False))
    print(f"wrote {args.out}")
    return write_report(frame, args)


WHY = ("<p><b>Why.</b> With a shared link per server pair, cutting one server off is the lightest cut while "
       "the inter-server links are slow, so RDO keeps the eight servers whole, one block each; at 128–160 Gbps a "
       "GPU's intra-server links become the lighter cut again. The synchronous-PipeDream baseline runs the same "
       "PRM on the GPUs' natural (server-major) order and picks its stage count by 𝒲 alone; where RDO also keeps "
       "servers whole the two plans coincide and SPP gains only from choosing the stage count by PE's simulated "
       "makespan — hence the ties. With one dedicated link per GPU pair RDO isolates single GPUs, splits servers, "
       "and loses up to ~25% to that baseline. The paper's SPP picks 6 stages for BERT-large on its V100 profile; "
       "here the 24 encoder layers cost the same, so one stage of three layers per server (8 stages, 4 replicas "
       "each, every AllReduce inside a server) is what PRM finds best — a consequence of the uniform per-layer "
       "costs of archsim's array model, not of the algorithm.</p>")


def write_report(frame: pd.DataFrame, args: argparse.Namespace) -> int:
    """The study page: findings computed from ``frame``, the explanation, figures and the table."""
    long = frame.melt(id_vars=["inter_server_link", "microbatches", "inter_server_gbps"],
                      value_vars=["spp", *BASELINES], var_name="method", value_name="makespan_s")
    command = "python benchmarks/spp_study.py"
    figures = []
    for link in args.links:
        part = long[long.inter_server_link == link]
        figures += [px.bar(part[part.inter_server_gbps == "32-40"], x="microbatches", y="makespan_s", color="method",
                           barmode="group", log_y=True,
                           title=f"BERT-large on 32 GPUs ({link} inter-server links): iteration time vs micro-batches"),
                    px.bar(part[part.microbatches == 32], x="inter_server_gbps", y="makespan_s", color="method",
                           barmode="group", log_y=True,
                           title=f"BERT-large on 32 GPUs ({link}), M = 32: iteration time vs inter-server Gbps")]
    figures += [_stage_count_figure(frame[frame.inter_server_link == link], link) for link in args.links]
    body = "".join(pio.to_html(f, include_plotlyjs=i == 0, full_html=False) for i, f in enumerate(figures))
    findings = "".join(_findings(frame[frame.inter_server_link == link], link) for link in args.links) + WHY
    html = (f"<!doctype html><html><head><meta charset='utf-8'><title>SPP study</title></head><body>"
            f"<h1>SPP §V-B on archsim costs</h1><p>{__doc__.splitlines()[3]} … see the script's docstring for the "
            f"assumptions.</p>{findings}{body}{frame.to_html(index=False, float_format=lambda x: f'{x:.4g}')}"
            f"<p>Mode: exact. Regenerate: <code>{command}</code></p></body></html>")
    atomic_write_text(args.report, html)
    print(findings.replace("<p>", "").replace("</p>", ""))
    print(f"wrote {args.report}")
    return 0


def _stage_count_figure(frame: pd.DataFrame, link: str):
    """The paper's Fig. 10: 𝒲_PRM and PE's makespan against the stage count (M = 32, 32–40 Gbps)."""
    row = frame[(frame.microbatches == 32) & (frame.inter_server_gbps == "32-40")].iloc[0]
    points = [tuple(float(x) for x in item.split(":")) for item in row.stage_counts.split()]
    table = pd.DataFrame(points, columns=["stages", "W_PRM_s", "makespan_s"]).melt(
        id_vars="stages", var_name="quantity", value_name="seconds")
    return px.line(table, x="stages", y="seconds", color="quantity", markers=True, log_y=True,
                   title=f"{link}: 𝒲_PRM and PE makespan vs stage count (BERT-large, M = 32, 32–40 Gbps; "
                         f"SPP picks {int(row.spp_stages)})")


def _findings(frame: pd.DataFrame, link: str) -> str:
    """One paragraph of what the study found under one inter-server link model, computed from the rows."""
    others = frame[list(BASELINES)]
    best = int((frame.spp <= others.min(axis=1) * (1 + 1e-3)).sum())
    margin = (others.min(axis=1) / frame.spp - 1) * 100
    runner_up = others.idxmin(axis=1)
    return (f"<p><b>{link}</b>: SPP is the fastest (or within 0.1% of the fastest) in {best} of {len(frame)} cases (margin over the best "
            f"baseline {margin.min():+.1f}% … {margin.max():+.1f}%; best baseline: "
            f"{', '.join(sorted(set(runner_up)))}). It picks {sorted(set(frame.spp_stages))} stages (the paper: 6). "
            f"Recursive device ordering's first min-cut is {sorted(set(frame.first_cut))}; a server's GPUs form "
            f"{sorted(set(frame.server_runs_in_order))} runs along the order (8 keeps every server whole).</p>")


if __name__ == "__main__":
    sys.exit(main())
