"""Followups 27, each test failing on the code before its fix: the sweep report's speed-up plot averaged rows of
two modes (or layer selections) into one line per method and over axes its title did not name; `bppsa
pruned-vgg11 --sparsity 0` built Jacobians for minutes and gigabytes with no limit; `cluster` with one policy drew
a bar of one simulation that sat at 0/1."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from archsim.cli import main

# 1. the sweep report's speed-up plot: a line per method and mode/only, a title naming every axis averaged

SWEEP = """[sweep]
name = "{name}"
networks = ["layerpipe_sample"]
arrays = [{arrays}]
dataflows = ["ws"]
batches = [4, 8]
processors = [2, 3]
methods = ["layerpipe", "pipedream"]
mode = "{mode}"
{extra}
"""


def _sweep(tmp_path: Path, name: str, mode: str, arrays: str = '"16x16"', extra: str = "") -> pd.DataFrame:
    spec = tmp_path / f"{name}.toml"
    spec.write_text(SWEEP.format(name=name, mode=mode, arrays=arrays, extra=extra))
    assert main(["sweep", str(spec), "--out", str(tmp_path / name), "--quiet"]) == 0
    return pd.read_csv(tmp_path / name / "results.csv")


def _figure(tmp_path: Path, results: pd.DataFrame):
    """The report's speed-up figure of these rows, after `archsim report` accepted them as one results folder."""
    from archsim.report.sweep_report import speedup_figure
    from archsim.sweep.summary import summarize

    folder = tmp_path / "joined"
    folder.mkdir(exist_ok=True)
    results.to_csv(folder / "results.csv", index=False)
    assert main(["report", str(folder), "--out", str(tmp_path / "report.html")]) == 0
    return speedup_figure(summarize(results), "layerpipe_sample", results)


def _assert_traces(figure, expected: dict[str, list[float]]) -> None:
    """The figure's lines are ``expected``'s, by legend entry, at processors 2 and 3."""
    assert sorted(trace.name for trace in figure.data) == sorted(expected)
    for trace in figure.data:
        assert list(trace.x) == [2, 3] and [float(y) for y in trace.y] == pytest.approx(expected[trace.name])


def test_two_modes_are_two_lines_per_method(tmp_path):
    """Failed before: one line per method, its means taken over the paper and exact rows together (4 rows each)."""
    results = pd.concat([_sweep(tmp_path, "paper", "paper"), _sweep(tmp_path, "exact", "exact")], ignore_index=True)
    figure = _figure(tmp_path, results)
    means = results.groupby(["method", "mode", "processors"])["speedup"].mean()
    expected = {f"{method}, {mode} mode": [means[method, mode, p] for p in (2, 3)]
                for method in ("layerpipe", "pipedream") for mode in ("exact", "paper")}
    _assert_traces(figure, expected)
    assert means["layerpipe", "paper", 3] != pytest.approx(means["layerpipe", "exact", 3])  # the modes differ
    # one array, two batches: the means are over the batches alone
    assert figure.layout.title.text == "layerpipe_sample: speedup over one processor (mean over batches; bars: min–max)"
    lows = results.groupby(["method", "mode", "processors"])["speedup"].min()
    trace = next(t for t in figure.data if t.name == "pipedream, exact mode")
    assert [float(y - e) for y, e in zip(trace.y, trace.error_y.arrayminus, strict=True)] == pytest.approx(
        [lows["pipedream", "exact", p] for p in (2, 3)])


def test_two_layer_selections_are_two_lines_per_method(tmp_path):
    """Failed before: the conv-only rows and the all-layer rows were averaged into one line per method."""
    results = pd.concat([_sweep(tmp_path, "all", "exact"), _sweep(tmp_path, "conv", "exact", extra='only = ["conv"]')],
                        ignore_index=True)
    assert set(results["only"]) == {"all", "conv"}
    means = results.groupby(["method", "only", "processors"])["speedup"].mean()
    expected = {f"{method}, {'all layers' if only == 'all' else 'conv layers'}": [means[method, only, p] for p in (2, 3)]
                for method in ("layerpipe", "pipedream") for only in ("all", "conv")}
    _assert_traces(_figure(tmp_path, results), expected)


def test_the_title_names_the_sram_sizes_its_means_average_over(tmp_path):
    """Failed before: a design sweep over two SRAM sizes and two arrays was titled "mean over arrays and batches",
    its means of 2 arrays × 2 batches × 2 SRAM sizes = 8 rows."""
    results = _sweep(tmp_path, "sram", "exact", arrays='"16x16", "32x16"', extra="sram_kb = [32, 256]")
    figure = _figure(tmp_path, results)
    assert set(results.groupby(["method", "processors"]).size()) == {8}
    means = results.groupby(["method", "processors"])["speedup"].mean()
    _assert_traces(figure, {m: [means[m, p] for p in (2, 3)] for m in ("layerpipe", "pipedream")})
    assert figure.layout.title.text == ("layerpipe_sample: speedup over one processor (mean over arrays, batches and "
                                        "SRAM sizes; bars: min–max)")
    one = results[(results.batch == 4) & (results.rows == 16) & (results.sram_kb == 32)]
    title = _figure(tmp_path, one).layout.title.text  # each point one row: nothing is averaged
    assert title == "layerpipe_sample: speedup over one processor (one configuration per point)"


# 2. `archsim bppsa pruned-vgg11` refuses, before any Jacobian, a study estimated above --max-mflops


def _scan_flops(sparsity: float, depth: int | None, divisor: int) -> int:
    """The scan work a run counts: BPPSA's work FLOPs over all its steps."""
    from archsim.bppsa.vgg import critical_path, vgg_flops

    frame = vgg_flops(sparsity=sparsity, up_levels=depth, width_divisor=divisor)
    return int(critical_path(frame).set_index("method").work_flops["bppsa"])


@pytest.mark.parametrize(("divisor", "sparsities"), [(16, (0.97, 0.9, 0.7, 0.3, 0.0)), (8, (0.97, 0.9, 0.7, 0.3)),
                                                     (4, (0.97, 0.9))])
def test_the_estimate_follows_the_measured_growth_of_the_depth_2_scan(divisor, sparsities):
    """Depth 2 (the default) multiplies pruned convolutions: the counted work grows ~8× per width doubling and
    as the square of the unpruned fraction; the estimate, from the flags alone, is within 50% of the count and
    so is its growth from one sparsity to the next."""
    from archsim.bppsa.vgg import scan_work_estimate

    counted = [_scan_flops(s, 2, divisor) for s in sparsities]
    estimated = [scan_work_estimate(s, divisor, [2]) for s in sparsities]
    for s, count, estimate in zip(sparsities, counted, estimated, strict=True):
        assert 1 / 1.5 < estimate / count < 1.5, (divisor, s, count, estimate)
    for i in range(1, len(sparsities)):
        assert 1 / 1.5 < (estimated[i] / estimated[i - 1]) / (counted[i] / counted[i - 1]) < 1.5


@pytest.mark.parametrize("depth", [0, 1, 3, None])
def test_the_estimate_bounds_the_other_depths(depth):
    """Depths 0–1 and ≥ 3 are estimated unpruned: at or above the counted work (within 2% at width divisor 16,
    where the unpruned work is measured at divisor 8 and scaled)."""
    from archsim.bppsa.vgg import scan_work_estimate

    for sparsity in (0.97, 0.5, 0.0):
        assert scan_work_estimate(sparsity, 16, [depth]) >= 0.98 * _scan_flops(sparsity, depth, 16)


def test_a_study_above_the_limit_is_refused_before_any_jacobian(monkeypatch, capsys):
    """Failed before: `--sparsity 0` started building Jacobians (unfinished after 2 minutes at 5 GB)."""
    from archsim.bppsa import vgg
    from archsim.bppsa.vgg import scan_work_estimate
    from archsim.choices.bppsa import DEFAULT_MAX_SCAN_MFLOPS

    def built(*_args, **_kwargs):
        raise AssertionError("a Jacobian was built")

    monkeypatch.setattr(vgg, "scan_input", built)
    assert main(["bppsa", "pruned-vgg11", "--sparsity", "0"]) == 2
    expected = -(-scan_work_estimate(0.0, 1, [2, 0, 1]) // 10**6)  # the default --compare-levels 0,1,2
    assert capsys.readouterr().err.strip() == (
        f"archsim bppsa pruned-vgg11: error: argument --max-mflops: this job counts about {expected:,} M FLOPs in its "
        "scans (estimated from --sparsity, --width-divisor and the up-sweep depths), above the limit of "
        f"{DEFAULT_MAX_SCAN_MFLOPS:,}; give --max-mflops {expected} to run it anyway")
    # the shipped defaults and docs/papers/bppsa.md's runs (0.9 and 0.7 with --compare-levels 2) stay under it
    for sparsity, depths in ((0.97, [2, 0, 1]), (0.9, [2, 0]), (0.7, [2, 0])):
        assert scan_work_estimate(sparsity, 1, depths) < DEFAULT_MAX_SCAN_MFLOPS * 10**6
    # the limit lifted, the run goes on to build its Jacobians
    with pytest.raises(AssertionError, match="a Jacobian was built"):
        main(["bppsa", "pruned-vgg11", "--sparsity", "0", "--max-mflops", str(expected)])


# 3. `archsim cluster`'s bar counts jobs finished, so one long simulation moves it


class _Bar:
    """A drawn bar's calls, recorded (a real bar draws only on a terminal)."""

    def __init__(self, total: int) -> None:
        self.total, self.updates = total, []

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def update(self, n: float = 1) -> None:
        self.updates.append(n)


def test_polled_advances_the_bar_while_the_work_runs():
    """The bar gains what the counter gained, in steps taken while the work runs, and ends at its total;
    the work's result and errors come back to the caller."""
    import time

    import numpy as np

    from archsim.progress import polled, progress

    counter, bar = np.zeros(1, np.int64), _Bar(5)

    def work() -> str:
        for _ in range(5):
            time.sleep(0.05)
            counter[0] += 1
        return "done"

    assert polled(work, counter, bar, every_s=0.01) == "done"
    assert sum(bar.updates) == 5 and len(bar.updates) >= 3  # several steps, not one at the end

    def fails() -> None:
        raise ValueError("inside")

    with pytest.raises(ValueError, match="inside"):
        polled(fails, counter, bar)
    with progress(1, "x", "y", enabled=False) as none:  # no bar drawn: a plain call, no thread
        assert polled(lambda: 7, counter, none) == 7


@pytest.mark.parametrize("policy", ["jigsaw", "jigsaw-nospb", "gandiva", "tiresias"])
def test_every_policy_counts_each_job_once_as_it_finishes(policy):
    """The counter the bar reads ends at the number of jobs, and counting leaves the result as it was."""
    import numpy as np

    from archsim.cluster.catalog import paper_catalog
    from archsim.cluster.jobs import JobCluster, SimConfig, build_jobs
    from archsim.cluster.simulate import simulate
    from archsim.cluster.trace import synthetic_trace

    catalog = paper_catalog()
    cluster = JobCluster.uniform(32, 4, 16 * 2**30)
    jobs = build_jobs(synthetic_trace(12, 3, catalog=catalog), catalog, cluster)
    config = SimConfig(unit_s=0.0)
    finished = np.zeros(1, np.int64)
    counted = simulate(jobs, cluster, policy, config, finished)
    assert int(finished[0]) == len(jobs) == 12
    plain = simulate(jobs, cluster, policy, config)
    assert counted.jobs.equals(plain.jobs) and counted.makespan_s == plain.makespan_s


def test_one_policys_bar_counts_jobs_not_one_simulation(monkeypatch):
    """Failed before: `archsim cluster --policy jigsaw` drew a bar of 1 simulation, at 0/1 until the end."""
    from archsim import cluster_run as command  # the command's run, where the bar is drawn

    bars: list[_Bar] = []

    def recorded(total: int, desc: str, unit: str, **_options) -> _Bar:
        bars.append(_Bar(total))
        bars[-1].unit = unit
        return bars[-1]

    monkeypatch.setattr(command, "progress", recorded)
    assert main(["cluster", "--policy", "jigsaw", "--jobs", "20", "--gpus", "32", "--unit-seconds", "0",
                 "--format", "json"]) == 0
    assert [(bar.total, bar.unit, sum(bar.updates)) for bar in bars] == [(20, "job", 20)]
