"""Scaling of archsim's layers above the per-layer cost: time and memory vs ops, processors, layers
and configurations, with the fitted exponents, and the page that plots them — in one run.

    .venv/bin/python benchmarks/bench_scaling.py [--quick] [--only sim,procs,layerpipe,pipedream,pipedream_procs,spp,sweep]
    .venv/bin/python benchmarks/bench_scaling.py --page-only     # redraw the page from the CSVs

Studies (each point in a fresh child process, so its peak memory is its own):

* ``sim``: the published 1F1B order on 8 stages (unequal F, B, W; per-hop latency and bytes over
  links) from 10³ to 10⁶ ops: the order, the problem built as columns and checked
  (``order_problem``), the simulation, the validation; the reference engine (the original
  pure-Python engine, tests/sim_reference.py) on the same problems up to 10⁵ ops, for the ratio.
* ``procs``: the test ring problem (tests/test_sim_scale.py), 10⁵ ops on 2 to 1,000 processors.
* ``layerpipe``: Algorithm 1 (``layerpipe_partition``, 8 processors) on conv chains of 10³ to 10⁵
  layers whose widths cycle 32/64/128 (so δ splits happen).
* ``pipedream``: PipeDream's optimizer (one level of 16 processors, free links) on random chains of
  10³ to 2·10⁴ layers (the state limit): the antichain states, the straight pipeline (what
  ``pipedream_partition`` and the sweep run) and stage replication; the first-written states and
  kernel (tests/pipedream_reference.py) on the same chains up to 10⁴ layers (replication to
  2·10³), for the ratio, with equal answers asserted.
* ``pipedream_procs``: the same optimizer on a 10⁴-layer chain over 2 to 64 processors.
* ``spp``: ``prm_tables`` for 48 layers on 4 to 32 GPUs (random profile and bandwidths, the tests'
  generators); the numpy version it replaced (tests/spp_prm_reference.py) up to 16 GPUs.
* ``sweep``: the default sweep's spec cut to 33…1,320 configurations (1 worker, cold).

The compiled kernels are loaded before the clock starts (their one-time compilation is not
scaling). Times are CPU seconds of the child (``time.process_time``; the development machine is shared, so
wall time is also recorded but CPU time is what the exponents use) and peak RSS in MB. Exponents are
least-squares slopes of log(time) on log(size) (memory: of the peak above the RSS after imports). Writes benchmarks/results/scaling.csv,
benchmarks/results/scaling_exponents.csv and reports/scaling.html.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
STUDIES = ("sim", "procs", "layerpipe", "pipedream", "pipedream_procs", "spp", "sweep")

# --- what one child process measures (run as: bench_scaling.py --child STUDY SIZE) ----------------

CHILD_PRELUDE = """
import gc, json, resource, sys, time
sys.path.insert(0, {tests!r})
gc.set_threshold(100_000, 50, 100)  # as the CLI does
def clock():
    return time.process_time(), time.perf_counter()
def since(t):
    return time.process_time() - t[0], time.perf_counter() - t[1]
def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out = {{}}
def warm_up():  # load the simulator's compiled kernels (numba's cache) before anything is timed
    from archsim.sim import Dep, Op, Problem, Processor, simulate, validate_timeline
    tiny = Problem((Processor("p"),), (), (Op("a", "p", 1.0), Op("b", "p", 1.0)), (Dep("a", "b"),))
    validate_timeline(tiny, simulate(tiny))
"""

CHILD = {
    "sim": """
warm_up()
from archsim.policies.stage_orders import published_order
from archsim.policies.stage_profile import StageProfile
from archsim.policies.stage_run import order_problem
from archsim.sim import simulate, validate_timeline
out["base_mb"] = peak_mb()
m = max(1, {size} // 16)  # the published 1F1B order on 8 stages: F and B per stage and micro-batch
profile = StageProfile((3.0,) * 8, (2.0,) * 8, (1.0,) * 8, 0.5, (4,) * 8, (), (8,) * 8, 16.0)
t = clock(); order = published_order("1f1b", 8, m); out["order"] = since(t)
t = clock(); problem = order_problem(order, profile); out["build_and_check"] = since(t)
out["ops"] = len(problem.arrays.ids)
t = clock(); timeline = simulate(problem); out["simulate"] = since(t)
t = clock(); errors = validate_timeline(problem, timeline); out["validate"] = since(t)
assert errors == []
out["peak_mb"] = peak_mb()
if {size} <= 100_000:
    import sim_reference
    t = clock(); expected = sim_reference.simulate(problem); out["reference_simulate"] = since(t)
    assert tuple(timeline.slots) == expected.slots and tuple(timeline.transfers) == expected.transfers
""",
    "procs": """
warm_up()
from test_sim_scale import ring_problem
from archsim.sim import simulate, validate_timeline
out["base_mb"] = peak_mb()
t = clock(); problem = ring_problem(100_000, {size}, 1); out["build_and_check"] = since(t)
out["ops"] = len(problem.ops)
t = clock(); timeline = simulate(problem); out["simulate"] = since(t)
t = clock(); assert validate_timeline(problem, timeline) == []; out["validate"] = since(t)
out["peak_mb"] = peak_mb()
""",
    "layerpipe": """
from archsim.array.config import ArrayConfig
from archsim.partition import build_profile, layerpipe_partition
from archsim.workload import Layer, Network
out["base_mb"] = peak_mb()
widths = (32, 64, 128)
layers = tuple(Layer(name=f"c{{i}}", kind="conv", ifmap_h=14, ifmap_w=14, filter_h=3, filter_w=3,
                     channels=widths[(i - 1) % 3] if i else 3, filters=widths[i % 3], stride=1, padding=1,
                     inputs=(f"c{{i - 1}}",) if i else ("input",)) for i in range({size}))
t = clock(); profile = build_profile(Network("chain", layers), ArrayConfig(32, 32, "ws"), 8, "paper")
out["build_profile"] = since(t)
t = clock(); plan = layerpipe_partition(profile, 8); out["layerpipe_partition"] = since(t)
out["stages"] = len(plan.stages)
out["peak_mb"] = peak_mb()
""",
    "pipedream": """
import numpy as np
from archsim.partition import profile_from_costs
from archsim.partition.antichain import antichain_states
from archsim.partition.pipedream import Level, PipeDreamOptions, pipedream_partition, pipedream_plan
from archsim.partition.pipedream_kernel import warm_up
warm_up()
out["base_mb"] = peak_mb()
n, rng = {size}, np.random.default_rng(0)
profile = profile_from_costs([f"l{{k}}" for k in range(n)], rng.uniform(1, 2, n), rng.uniform(1, 2, n),
                             rng.uniform(1, 2, n), rng.integers(1, 100, n), None, rng.integers(1, 100, n))
t = clock(); antichain_states(profile); out["antichain_states"] = since(t)
t = clock(); pipedream_partition(profile, 16); out["plan_straight"] = since(t)
t = clock(); pipedream_partition(profile, 16, replication=True); out["plan_replication"] = since(t)
out["peak_mb"] = peak_mb()
if n <= 10_000:
    from tests.pipedream_reference import reference_tables  # the name pytest caches its kernel under
    for name, straight in (("straight", True), ("replication", False)):
        if straight or n <= 2_000:
            options = PipeDreamOptions(straight_pipeline=straight)
            t = clock(); _, tables = reference_tables(profile, [Level(16, float("inf"))], options)
            out["reference_states_and_plan_" + name] = since(t)
            plan = pipedream_plan(profile, [Level(16, float("inf"))], options)
            assert plan.by_machines == tuple(float(v) for v in tables[0].value[0, n - 1, :]), name
""",
    "pipedream_procs": """
import numpy as np
from archsim.partition import profile_from_costs
from archsim.partition.antichain import antichain_states
from archsim.partition.pipedream import pipedream_partition
from archsim.partition.pipedream_kernel import warm_up
warm_up()
n, rng = 10_000, np.random.default_rng(0)
profile = profile_from_costs([f"l{{k}}" for k in range(n)], rng.uniform(1, 2, n), rng.uniform(1, 2, n),
                             rng.uniform(1, 2, n), rng.integers(1, 100, n), None, rng.integers(1, 100, n))
antichain_states(profile)
out["base_mb"] = peak_mb()
t = clock(); pipedream_partition(profile, {size}); out["plan_straight"] = since(t)
t = clock(); pipedream_partition(profile, {size}, replication=True); out["plan_replication"] = since(t)
out["peak_mb"] = peak_mb()
""",
    "spp": """
from test_spp import random_profile, random_topology
from archsim.spp.prm import prm_tables
prm_tables(random_profile(0, 3), [0, 1, 2], random_topology(1, 3).bandwidth, 4, 3)  # load the kernel
out["base_mb"] = peak_mb()
profile, bandwidth = random_profile(1, 48), random_topology(2, {size}).bandwidth
t = clock(); plans = prm_tables(profile, list(range({size})), bandwidth, 8, min(48, {size}))
out["prm_tables"] = since(t)
if {size} <= 16:
    from spp_prm_reference import prm_tables as reference
    t = clock(); expected = reference(profile, list(range({size})), bandwidth, 8, min(48, {size}))
    out["reference_prm_tables"] = since(t)
    assert plans == expected
out["peak_mb"] = peak_mb()
""",
    "sweep": """
import dataclasses, tempfile
from archsim.sweep import load_spec, run_sweep
spec = load_spec({spec!r})
out["base_mb"] = peak_mb()
cuts = {{33: dict(networks=("vgg16",), arrays=((32, 32),), batches=(16,)),
         132: dict(networks=("vgg16",), arrays=((32, 32), (64, 64)), batches=(16, 32)),
         330: dict(networks=("vgg16", "resnet50"), arrays=((32, 32),)),
         1320: dict()}}
spec = dataclasses.replace(spec, **cuts[{size}])
with tempfile.TemporaryDirectory() as folder:
    t = clock(); frame = run_sweep(spec, folder, workers=1, progress=False); out["run_sweep"] = since(t)
out["configurations"] = len(frame)
out["peak_mb"] = peak_mb()
""",
}

SIZES = {"sim": [1_000, 10_000, 100_000, 1_000_000], "procs": [2, 8, 32, 128, 1000],
         "layerpipe": [1_000, 3_000, 10_000, 30_000, 100_000], "pipedream": [1_000, 2_000, 5_000, 10_000, 20_000],
         "pipedream_procs": [2, 4, 8, 16, 32, 64], "spp": [4, 8, 16, 32], "sweep": [33, 132, 330, 1320]}
QUICK = {"sim": [1_000, 10_000, 100_000], "procs": [2, 32, 1000], "layerpipe": [1_000, 10_000],
         "pipedream": [1_000, 5_000], "pipedream_procs": [4, 16],
         "spp": [4, 8, 16], "sweep": [33, 132]}
AXIS = {"sim": "ops", "procs": "processors", "layerpipe": "layers", "pipedream": "layers",
        "pipedream_procs": "processors", "spp": "GPUs", "sweep": "configurations"}


def child(study: str, size: int) -> dict:
    code = CHILD_PRELUDE.format(tests=str(ROOT / "tests")) + CHILD[study].format(
        size=size, spec=str(ROOT / "configs" / "sweeps" / "layerpipe_paper.toml")) + "\nprint(json.dumps(out))\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False)
    if done.returncode:
        raise SystemExit(f"{study} at {size} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(studies, sizes) -> pd.DataFrame:
    rows = []
    for study in studies:
        for size in sizes[study]:
            result = child(study, size)
            print(study, size, json.dumps(result), flush=True)
            for phase, value in result.items():
                if isinstance(value, list):
                    rows.append({"study": study, "axis": AXIS[study], "size": size, "phase": phase,
                                 "cpu_s": value[0], "wall_s": value[1], "peak_mb": result["peak_mb"],
                                 "base_mb": result["base_mb"]})
    return pd.DataFrame(rows)


def exponents(frame: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (study, phase), group in frame.groupby(["study", "phase"], sort=False):
        group = group[group.cpu_s > 0]
        if len(group) < 2:
            continue
        slope = np.polyfit(np.log(group["size"]), np.log(group.cpu_s), 1)[0]
        grown = (group.peak_mb - group.base_mb).clip(lower=1.0)  # above the interpreter and its imports
        memory = np.polyfit(np.log(group["size"]), np.log(grown), 1)[0]
        rows.append({"study": study, "axis": group.axis.iloc[0], "phase": phase, "from": int(group["size"].min()),
                     "to": int(group["size"].max()), "time_exponent": round(float(slope), 3),
                     "peak_memory_exponent": round(float(memory), 3)})
    return pd.DataFrame(rows)


def write_page(frame: pd.DataFrame, fitted: pd.DataFrame) -> Path:
    import plotly.graph_objects as go

    from archsim.report.page import write_page as write

    sections = []
    for study in frame.study.unique():
        data = frame[frame.study == study]
        fig = go.Figure()
        for phase, group in data.groupby("phase", sort=False):
            fig.add_scatter(x=group["size"], y=group.cpu_s, mode="lines+markers", name=phase)
        fig.update_layout(xaxis_type="log", yaxis_type="log", xaxis_title=data.axis.iloc[0],
                          yaxis_title="CPU seconds", title=f"{study}: time")
        memory = data.drop_duplicates("size")
        fig_memory = go.Figure(go.Scatter(x=memory["size"], y=memory.peak_mb, mode="lines+markers"))
        fig_memory.update_layout(xaxis_type="log", yaxis_type="log", xaxis_title=data.axis.iloc[0],
                                 yaxis_title="peak RSS (MB)", title=f"{study}: memory")
        caption = f"{study}: {CHILD_DOCS[study]} Exponents: " + ", ".join(
            f"{r.phase} {r.time_exponent}" for r in fitted[fitted.study == study].itertuples()) + "."
        sections += [(fig, caption), (fig_memory, "Peak resident memory of the child process (imports included).")]
    sections.append((fitted, ("Least-squares slopes of log(CPU time) and of log(peak RSS − RSS after imports) "
                              "on log(size).")))
    return write(ROOT / "reports" / "scaling.html", "archsim scaling", sections)


CHILD_DOCS = {
    "sim": "the published 1F1B order on 8 stages, with links, 10³ to 10⁶ ops; the reference engine up to 10⁵.",
    "procs": "the ring problem of tests/test_sim_scale.py, 10⁵ ops on 2 to 1,000 processors.",
    "layerpipe": "Algorithm 1 on 8 processors over conv chains of 10³ to 10⁵ layers.",
    "pipedream": "PipeDream's optimizer on 16 processors over chains of 10³ to 2·10⁴ layers; the first-written "
                 "states and kernel up to 10⁴ (replication: 2·10³).",
    "pipedream_procs": "PipeDream's optimizer on a 10⁴-layer chain over 2 to 64 processors.",
    "spp": "prm_tables for 48 layers on 4 to 32 GPUs; the replaced numpy version up to 16.",
    "sweep": "the default sweep cut to 33 to 1,320 configurations, one worker, cold.",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    parser.add_argument("--only", default=",".join(STUDIES), help="comma-separated studies")
    parser.add_argument("--page-only", action="store_true", help="redraw reports/scaling.html from the CSVs")
    args = parser.parse_args(argv)
    from archsim.outputs import atomic_write_text

    if args.page_only:
        frame = pd.read_csv(RESULTS / "scaling.csv")
    else:
        studies = [s for s in args.only.split(",") if s]
        unknown = set(studies) - set(STUDIES)
        if unknown:
            parser.error(f"unknown studies {sorted(unknown)}; choose from {', '.join(STUDIES)}")
        frame = measure(studies, QUICK if args.quick else SIZES)
        old = RESULTS / "scaling.csv"
        if old.exists() and set(studies) != set(STUDIES):  # keep the other studies' rows
            kept = pd.read_csv(old)
            frame = pd.concat([kept[~kept.study.isin(studies)], frame], ignore_index=True)
        atomic_write_text(old, frame.to_csv(index=False))
    fitted = exponents(frame)
    atomic_write_text(RESULTS / "scaling_exponents.csv", fitted.to_csv(index=False))
    print(fitted.to_string(index=False))
    print(f"page: {write_page(frame, fitted)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
