"""Traces: the Tiresias CSV loader (errors name file, line, field), the §4.2 synthetic generator, the CLI."""

import json
from pathlib import Path

import numpy as np
import pytest

from archsim.cli import Parser
from archsim.cluster.catalog import paper_catalog
from archsim.cluster.jobs import JobCluster, build_jobs
from archsim.cluster.trace import COLUMNS, load_tiresias_csv, parse_tiresias_csv, synthetic_trace, trace_to_csv
from archsim.commands.cluster import COMMAND
from archsim.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "configs" / "traces" / "sample_tiresias.csv"
HEADER = ",".join(COLUMNS) + "\n"


def test_sample_trace_loads_and_builds():
    trace = load_tiresias_csv(SAMPLE)
    assert len(trace) == 40 and all(j.iterations > 0 for j in trace)
    jobs = build_jobs(trace, paper_catalog(), JobCluster.uniform(45))
    assert all(len(j.spb_task_s) == j.workers and max(j.spb_task_s) == pytest.approx(j.full_task_s) for j in jobs)


@pytest.mark.parametrize("row, line, field", [
    ("1,two,0,10,resnet50,0,0", 2, "num_gpu"),
    ("1,0,0,10,resnet50,0,0", 2, "num_gpu"),
    ("1,2,-5,10,resnet50,0,0", 2, "submit_time"),
    ("1,2,0,1.5,resnet50,0,0", 2, "iterations"),
    ("1,2,0,10,alexnet,0,0", 2, "model_name"),
    ("1,2,0,0,resnet50,0,0", 2, "duration"),
])
def test_loader_errors_name_file_line_field(tmp_path, row, line, field):
    path = tmp_path / "t.csv"
    path.write_text(HEADER + row + "\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_tiresias_csv(path)
    assert (err.value.where.file, err.value.where.line, err.value.where.field) == (str(path), line, field)


@pytest.mark.parametrize("name, hint", [
    ("ResNt-50", " (did you mean 'resnet50'?)"),  # one letter dropped, case and dash as written
    ("vgg16x", " (did you mean 'vgg16'?)"),
    ("bert", ""),  # like none of Table 2's nine: no guess
])
def test_an_unknown_model_names_the_nearest_known_one(name, hint):
    """As a misspelt flag, key or choice is told: the nearest of Table 2's names, then all nine."""
    with pytest.raises(InputError) as err:
        parse_tiresias_csv(HEADER + f"1,2,0,10,{name},0,0\n", source="t.csv")
    assert str(err.value) == (f"t.csv, line 2, field 'model_name': unknown model {name!r}{hint}; known: googlenet, "
                              "resnet101, resnet152, resnet18, resnet34, resnet50, vgg11, vgg16, vgg19")


def test_loader_header_and_row_errors():
    with pytest.raises(InputError, match="field 'gpus'"):
        parse_tiresias_csv("job_id,gpus,submit_time,iterations,model_name,duration,interval\n")
    with pytest.raises(InputError, match="missing column.*|field 'interval'"):
        parse_tiresias_csv("job_id,num_gpu,submit_time,iterations,model_name,duration\n1,1,0,1,vgg16,0\n")
    with pytest.raises(InputError, match="line 3, field 'job_id'"):
        parse_tiresias_csv(HEADER + "a,1,0,5,vgg16,0,0\na,1,0,5,vgg16,0,0\n")
    with pytest.raises(InputError, match="line 2: expected 7 fields"):
        parse_tiresias_csv(HEADER + "a,1,0\n")
    with pytest.raises(InputError, match="trace file not found"):
        load_tiresias_csv("no/such/trace.csv")


def test_duration_and_iterations_set_the_iteration_time():
    trace = parse_tiresias_csv(HEADER + "a,2,0,100,resnet50,50,0\nb,1,5,0,vgg16,39.28,0\n")
    a, b = build_jobs(trace, paper_catalog(), JobCluster.uniform(4))
    assert a.full_task_s == pytest.approx(0.5) and a.iterations == 100  # 50 s / 100 iterations
    assert b.iterations == round(39.28 / ((5.68 + 13.96) / 1e3))  # derived from the Table 2 iteration time


def test_synthetic_trace_matches_the_paper_mix():
    trace = synthetic_trace(500, 3)
    submit = np.array([j.submit_s for j in trace])
    assert submit[0] == 0 and np.all(np.diff(submit) >= 0)
    assert np.diff(submit).mean() == pytest.approx(30, rel=0.15)  # exponential, mean 30 s
    workers = np.array([j.workers for j in trace])
    for size, share in ((1, .5), (2, .1), (4, .2), (8, .15), (16, .05)):
        assert abs((workers == size).mean() - share) < 0.06
    assert trace == synthetic_trace(500, 3) and trace != synthetic_trace(500, 4)
    assert parse_tiresias_csv(trace_to_csv(trace)) == tuple(sorted(trace, key=lambda j: j.submit_s))


def run_cli(argv, capsys):
    parser = Parser(prog="archsim cluster")
    COMMAND.add_arguments(parser)
    code = COMMAND.run(parser.parse_args(argv))
    return code, *capsys.readouterr()


def test_cli_compare_json_and_report(tmp_path, capsys):
    report = tmp_path / "cluster.html"
    code, out, _ = run_cli(["--trace", str(SAMPLE), "--gpus", "16", "--gpus-per-machine", "4", "--policy", "all",
                              "--format", "json", "--report", str(report)], capsys)
    assert code == 0
    doc = json.loads(out)
    assert [row["policy"] for row in doc["rows"]] == ["jigsaw", "gandiva", "tiresias"]
    assert all(row["makespan_seconds_mean"] > 0 for row in doc["rows"])
    # Gang baselines run every job exactly its trace duration on num_gpu devices, so their utilization is
    # Σ num_gpu·duration / (16 GPUs × makespan), and the makespan is at least that work over 16 GPUs and
    # at least the latest submit + duration; Jigsaw's gain is 100·(baseline − jigsaw)/baseline.
    jobs = parse_tiresias_csv(SAMPLE.read_text(encoding="utf-8"))
    work = sum(job.workers * job.duration_s for job in jobs)
    rows = {row["policy"]: row for row in doc["rows"]}
    for name in ("gandiva", "tiresias"):
        makespan = rows[name]["makespan_seconds_mean"]
        assert rows[name]["runs"] == 1 and rows[name]["utilization_mean"] == pytest.approx(work / (16 * makespan))
        assert makespan >= max(work / 16, max(job.submit_s + job.duration_s for job in jobs)) - 1e-6
        gain = 100 * (makespan - rows["jigsaw"]["makespan_seconds_mean"]) / makespan
        assert rows[name]["jigsaw_gain_makespan_pct_mean"] == pytest.approx(gain)
    page = report.read_text(encoding="utf-8")
    assert "plotly" in page and page.count("archsim cluster --trace") >= 4  # each caption has the command
    assert "CDF of job completion time" in page


def test_compare_spells_seconds_alike_in_every_column_and_in_the_report(tmp_path, capsys):
    # makespan_seconds_mean sat beside makespan_s_min in the JSON, and the page's table said makespan_s_mean
    report = tmp_path / "cluster.html"
    code, out, _ = run_cli(["--trace", str(SAMPLE), "--policy", "all", "--format", "json", "--report", str(report)],
                           capsys)
    assert code == 0
    columns = set(json.loads(out)["rows"][0])
    assert {"makespan_seconds_min", "makespan_seconds_max", "jct_p95_seconds_max"} <= columns
    assert not [c for c in columns if "_s_" in c or c.endswith("_s")]
    page = report.read_text(encoding="utf-8")
    # the page's columns name each metric as the CSV does, less the statistic (mean ± std in one cell)
    assert "<th>makespan_seconds</th>" in page and "makespan_s_" not in page


def test_a_tie_in_makespan_prints_a_gain_of_zero(capsys):
    # On 45 GPUs the sample trace barely queues: under all three policies the job that ends last starts at
    # its admission (the next 60 s boundary) and runs its trace duration undelayed, so every makespan is
    # max(admit + duration). Jigsaw sums its blocks in another order and lands 7e-13 s off, and the gain
    # printed −4.441e-14.
    code, out, _ = run_cli(["--trace", str(SAMPLE), "--policy", "all", "--format", "json"], capsys)
    assert code == 0
    jobs = parse_tiresias_csv(SAMPLE.read_text(encoding="utf-8"))
    last = max(np.ceil(job.submit_s / 60 - 1e-9) * 60 + job.duration_s for job in jobs)
    rows = {row["policy"]: row for row in json.loads(out)["rows"]}
    for name in ("jigsaw", "gandiva", "tiresias"):
        assert rows[name]["makespan_seconds_mean"] == pytest.approx(last, rel=1e-12)
        assert rows[name]["jigsaw_gain_makespan_pct_mean"] == 0.0
    code, out, _ = run_cli(["--trace", str(SAMPLE), "--policy", "all"], capsys)
    header, *table = [line.split() for line in out.splitlines() if not line.startswith("#")]
    column = header.index("jigsaw_gain_makespan_pct_mean")
    assert [row[column] for row in table] == ["0", "0", "0"]


def test_cli_single_policy_table(capsys):
    code, out, _ = run_cli(["--jobs", "30", "--gpus", "20", "--policy", "tiresias"], capsys)
    header, values = [line.split() for line in out.splitlines() if not line.startswith("#")]
    row = dict(zip(header, values))
    assert code == 0 and row["policy"] == "tiresias" and row["jobs"] == "30"
    # The synthetic trace (seed 0): Tiresias gangs each job on its num_gpu GPUs for its trace duration, so
    # utilization is Σ num_gpu·duration / (20 GPUs × makespan) (table: 4 significant digits), and the
    # makespan is at least that work over 20 GPUs and the latest submit + duration.
    jobs = synthetic_trace(30, 0)
    work, makespan = sum(job.workers * job.duration_s for job in jobs), float(row["makespan_seconds"])
    assert float(row["utilization"]) == pytest.approx(work / (20 * makespan), abs=1e-4)  # both rounded
    assert makespan >= max(work / 20, max(job.submit_s + job.duration_s for job in jobs)) - 0.5


def test_cli_tiresias_on_two_jobs_by_hand(tmp_path, capsys):
    """A trace with iterations and duration both set fixes each iteration time (duration / iterations).
    On 4 GPUs: j0 (2 GPUs) runs 0–100 s; j1 (4 GPUs, arrives at 30 s) must wait for j0's 2 GPUs, so
    the gang scheduler runs it 100–150 s. Makespan 150 s; JCTs 100 and 120 s (mean and median 110,
    p95 by linear interpolation 100 + 0.95·20 = 119); busy GPU-seconds 2·100 + 4·50 = 400 of 4·150."""
    trace = tmp_path / "two.csv"
    trace.write_text(",".join(COLUMNS) + "\nj0,2,0,100,vgg16,100,0\nj1,4,30,50,resnet50,50,0\n", encoding="utf-8")
    code, out, _ = run_cli(["--trace", str(trace), "--gpus", "4", "--gpus-per-machine", "2", "--policy", "tiresias",
                            "--format", "json"], capsys)
    row = json.loads(out)["rows"][0]
    assert code == 0 and row["jobs"] == 2 and row["migrations_per_iteration"] == 0
    assert (row["makespan_seconds"], row["jct_mean_seconds"], row["jct_median_seconds"]) == pytest.approx((150, 110, 110))
    assert row["jct_p95_seconds"] == pytest.approx(119) and row["utilization"] == pytest.approx(400 / 600)


def test_cli_bad_trace_is_an_input_error(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text(HEADER + "a,64,0,5,vgg16,0,0\n", encoding="utf-8")
    with pytest.raises(InputError, match="needs 64 devices"):
        run_cli(["--trace", str(bad), "--gpus", "45"], capsys)


@pytest.mark.parametrize("memory", ["0", "-1", "nan", "inf", "-0"])
def test_a_device_memory_that_is_not_positive_is_refused_as_the_flags_are_parsed(memory, tmp_path, capsys):
    """argparse's one line, before the trace is read (the trace named here does not exist)."""
    from archsim.cli import main

    assert main(["cluster", "--trace", str(tmp_path / "absent.csv"), f"--device-memory-gb={memory}"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("archsim cluster: error: argument --device-memory-gb: expected a "), err
    assert "positive number" in err and repr(memory) in err


def test_device_memory_gb_is_gib_as_its_help_and_the_cli_page_say(tmp_path, capsys):
    """--device-memory-gb is GiB (2³⁰ bytes), unlike a cluster file's gpu_memory_gb (10⁹ bytes). By hand: resnet152
    needs 12.81 GB (the catalog's Table 2, 10⁹ bytes) = 11.93 GiB; 12 GiB is 12.88 × 10⁹ bytes and holds it, 11.9 GiB
    (12.78 × 10⁹) does not (read as GB, 12 would not hold it either). Failed before: the help said GiB without the
    bytes, the CLI page not at all, beside a cluster file's GB."""
    from archsim.cli import main

    trace = tmp_path / "one.csv"
    trace.write_text(HEADER + "1,1,0,10,resnet152,0,0\n")
    assert main(["cluster", "--trace", str(trace), "--gpus", "3", "--device-memory-gb", "12", "--format", "json"]) == 0
    capsys.readouterr()
    assert main(["cluster", "--trace", str(trace), "--gpus", "3", "--device-memory-gb", "11.9"]) == 2
    assert "model resnet152 needs" in capsys.readouterr().err
    parser = Parser(prog="archsim cluster")
    COMMAND.add_arguments(parser)
    flag = next(a for a in parser._actions if "--device-memory-gb" in a.option_strings)
    assert "GiB, 2^30 bytes" in flag.help and "10^9" in flag.help
    page = " ".join((ROOT / "docs" / "cli.md").read_text(encoding="utf-8").split())
    assert ("`cluster --device-memory-gb` (and `archsim.cluster_jobs`' `device_memory_gb`) is each device's memory "
            "in GiB, 2³⁰ bytes") in page
