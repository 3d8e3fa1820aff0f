"""``cost``, ``energy`` and ``cluster`` compute their sums with numpy and plain Python (no pandas import,
issue #27); their numbers must stay the floats pandas' arithmetic gave. Each test recomputes them with
pandas — the library's DataFrames, summed, grouped and described the way the commands did before —
and asks for exact equality."""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import replace

import pandas as pd
import pytest

from archsim.api import array_config
from archsim.array.costing import cost_network
from archsim.cli import main
from archsim.cluster.catalog import paper_catalog
from archsim.cluster.jobs import JobCluster, SimConfig, build_jobs
from archsim.cluster.metrics import summarize
from archsim.cluster.simulate import simulate
from archsim.cluster.trace import synthetic_trace
from archsim.energy import access_energies, layer_energy, load_table, op_energy
from archsim.energy.model import COUNTS, ENERGY_COLUMNS, iteration_energy_rows
from archsim.lowering import lower_network
from archsim.workload import load_network


def _json_rows(argv: list[str]) -> list[dict]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*argv, "--format", "json"]) == 0
    return json.loads(out.getvalue())["rows"]


def _pandas_cost_table(network: str, array, batch: int, energy: bool) -> pd.DataFrame:
    """The cost table with its TOTAL row, summed by pandas."""
    table = cost_network(load_network(network), array, batch)
    if energy:
        lowered = lower_network(load_network(network), batch, "exact", array.element_bytes)
        table = pd.concat([table, layer_energy(lowered, array, access_energies(array, load_table())).drop(
            columns="layer")], axis=1)
    totals = {c: table[c].sum() for c in table.columns if c.endswith(("_cycles", "_bytes", "_pj"))}
    total = pd.DataFrame([{"layer": "TOTAL", "type": "", **totals}])
    for kind in ("F", "G", "D"):
        cycles = table[f"{kind}_cycles"]
        total[f"{kind}_utilization"] = (table[f"{kind}_utilization"] * cycles).sum() / cycles.sum() \
            if cycles.sum() else 0.0
    return pd.concat([table, total[table.columns]], ignore_index=True)


@pytest.mark.parametrize("network, options, energy", [
    ("layerpipe_sample", [], False), ("vgg16", ["--batch", "8"], True),
    ("resnet50", ["--array", "16x16", "--dataflow", "os", "--batch", "4"], False),
    ("bert_large", ["--batch", "2", "--dataflow", "is"], True),
])
def test_cost_rows_and_total_equal_pandas_sums(network, options, energy):
    rows = _json_rows(["cost", network, *options, *(["--energy"] if energy else [])])
    array = array_config(options[options.index("--array") + 1] if "--array" in options else "32x32")
    if "--dataflow" in options:
        array = replace(array, dataflow=options[options.index("--dataflow") + 1])
    batch = int(options[options.index("--batch") + 1]) if "--batch" in options else 32
    expected = [{k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()}
                for row in _pandas_cost_table(network, array, batch, energy).to_dict(orient="records")]
    assert rows == expected


def _pandas_iteration_energy(network: str, array, batch: int, microbatches: int, energies) -> list[dict]:
    """By op kind and TOTAL with pandas' group sums (Kahan-compensated) and column sums."""
    lowered = lower_network(load_network(network), batch // microbatches, "exact", array.element_bytes)
    per_op = op_energy([op for item in lowered for op in item.ops], array, energies)
    numeric = ["cycles", *COUNTS, *ENERGY_COLUMNS]
    per_op[numeric] = per_op[numeric] * microbatches
    by_kind = per_op.groupby(per_op["op"].str[0], sort=False)[numeric].sum()
    by_kind.loc["TOTAL"] = by_kind.sum()
    return [{k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()}
            for row in by_kind.reset_index(names="op").to_dict(orient="records")]


@pytest.mark.parametrize("network, shape, dataflow, batch, microbatches, leaky", [
    ("layerpipe_sample", "32x32", "ws", 32, 1, False), ("vgg16", "16x8", "os", 32, 4, True),
    ("resnet50", "128x128", "is", 6, 3, True), ("bert_large", "32x32", "ws", 4, 2, False),
])
def test_iteration_energy_equals_pandas_group_sums(network, shape, dataflow, batch, microbatches, leaky):
    array = replace(array_config(shape), dataflow=dataflow, clock_hz=1.25e9)
    energies = access_energies(array, load_table())
    if leaky:  # leakage: a part proportional to cycles, so every column has non-integral floats
        energies = replace(energies, pe_leakage_mw=0.0123, sram_leakage_mw_per_kib=0.00071)
    got = iteration_energy_rows(load_network(network), array, batch, "exact", "analytic", energies, microbatches)
    assert got == _pandas_iteration_energy(network, array, batch, microbatches, energies)


@pytest.mark.parametrize("policy", ["jigsaw", "gandiva", "tiresias"])
@pytest.mark.parametrize("jobs, seed", [(1, 0), (8, 0), (13, 2), (40, 1)])
def test_cluster_summary_equals_pandas_statistics(policy, jobs, seed):
    catalog = paper_catalog()
    cluster = JobCluster.uniform(45, 3, 16 * 2**30)  # the command's default cluster
    result = simulate(build_jobs(synthetic_trace(jobs, seed, catalog=catalog), catalog, cluster), cluster, policy,
                      SimConfig(interval_s=60.0, gamma_s_per_byte=0.8e-9, unit_s=10.0, max_pack=2))
    frame = result.jobs  # the DataFrame, built on request
    assert isinstance(frame, pd.DataFrame)
    summary = summarize(result)
    assert summary["makespan_seconds"] == float(frame.end_s.max())
    assert summary["jct_mean_seconds"] == float(frame.jct_s.mean())
    assert summary["jct_median_seconds"] == float(frame.jct_s.median())
    assert summary["jct_p95_seconds"] == float(frame.jct_s.quantile(0.95))
    assert summary["migrations_per_iteration"] == float(frame.migrations.sum() / frame.iterations.sum())
