"""A cluster-scheduling and heterogeneous-planning researcher on a cluster and a job file of their own: a refused
`plan` prints its error line alone (no note of the run it never made before it), `plan --help` says which
`--dtype` it prices a GPU-named cluster in, and `cluster`'s refusals and per-job times read as the caller wrote
them."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.errors import InputError

# two GPU kinds on servers of different links: 2 × 4 A100s (their NVLink), 2 × 2 V100 PCIe at 256 Gb/s, 100 Gb/s
# between servers. plan prices one layer profile for every GPU, so it plans this on one array per GPU (--array)
HETERO = """[cluster]
name = "mylab"
inter_server_gbps = 100

[[servers]]
count = 2
gpus = 4
gpu = "a100-40gb"

[[servers]]
count = 2
gpus = 2
gpu = "v100-pcie-32gb"
intra_server_gbps = 256
"""


def _cluster(tmp_path) -> str:
    path = tmp_path / "mylab.toml"
    path.write_text(HETERO)
    return str(path)


def test_a_refused_plan_prints_its_error_line_alone(tmp_path, capsys) -> None:
    """docs/cli.md: notes on what a run read follow the run, and a refused run prints its error line alone. The
    note that the servers' GPUs are set aside for `--array` was said as the layers were priced, before `--batch 4`
    (4 samples cannot make 8 micro-batches) was refused: two lines for one error."""
    cluster = _cluster(tmp_path)
    assert main(["plan", "ffnn8", "--cluster", cluster, "--array", "32x32", "--microbatches", "8",
                 "--batch", "4"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("archsim plan: error: argument --batch"), err


def test_a_plan_that_runs_still_says_its_note_after_the_run(tmp_path, capsys) -> None:
    """The note is held, not dropped: a run that succeeds says it on stderr once, after the stdout table."""
    cluster = _cluster(tmp_path)
    assert main(["plan", "ffnn8", "--cluster", cluster, "--array", "32x32", "--microbatches", "2",
                 "--baselines", "none"]) == 0
    captured = capsys.readouterr()
    notes = [line for line in captured.err.splitlines() if "set aside" in line or "as --array asked" in line]
    assert len(notes) == 1 and "a100-40gb, v100-pcie-32gb" in notes[0], captured.err
    assert "# method: spp" in captured.out


def test_a_refused_plan_from_python_warns_nothing_before_its_error(tmp_path) -> None:
    """archsim.plan raises the same refusal with no UserWarning of a run that did not happen."""
    cluster = _cluster(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(InputError, match="does not split into"):
            archsim.plan("ffnn8", cluster=cluster, array="32x32", microbatches=8, batch=4)
    assert [str(w.message) for w in caught] == []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        archsim.plan("ffnn8", cluster=cluster, array="32x32", microbatches=2, baselines="none")
    assert sum("as array asked" in str(w.message) for w in caught) == 1

# five jobs of a user's own: d needs all 8 GPUs of the two 4-GPU machines the researcher has
JOBS = """job_id,num_gpu,submit_time,iterations,model_name,duration,interval
a,4,0,0,resnet50,600,0
b,2,10,0,vgg16,300,0
c,1,20,500,resnet18,0,0
d,8,30,0,googlenet,1200,0
e,2,100,0,ResNet-101,200,0
"""


def _jobs(tmp_path) -> str:
    path = tmp_path / "jobs.csv"
    path.write_text(JOBS)
    return str(path)


def test_a_job_wider_than_the_cluster_names_the_keyword_from_python(tmp_path, capsys) -> None:
    """archsim.cluster_jobs told a caller of Python to "give --gpus 8", a flag the library has no use for; the
    command keeps its flag. The widest job (d, 8 workers) sets the count either way."""
    jobs = _jobs(tmp_path)
    with pytest.raises(InputError, match=r"give gpus=8 or more") as refused:
        archsim.cluster_jobs(trace=jobs, gpus=4)
    assert "--gpus" not in str(refused.value)
    assert main(["cluster", "--trace", jobs, "--gpus", "4"]) == 2
    assert "give --gpus 8 or more" in capsys.readouterr().err


def test_more_gpus_per_machine_than_gpus_is_noted_as_the_caller_wrote_it(tmp_path) -> None:
    """The note that the cluster is one machine named `--gpus-per-machine 16` and `--gpus 8` in Python too."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        archsim.cluster_jobs(trace=_jobs(tmp_path), gpus=8, gpus_per_machine=16)
    texts = [str(w.message) for w in caught if "one machine" in str(w.message)]
    assert texts == [("gpus_per_machine=16 is more than gpus=8: the cluster is one machine of 8 GPUs "
                     "(gpus_per_machine 8 in the output)")], texts


def test_plan_help_states_the_dtype_a_gpu_cluster_is_priced_in(capsys) -> None:
    """`plan --help` said int8 was --dtype's default, the array's; on a cluster whose servers name a GPU plan prices
    fp16 (docs/formats.md, which device prices plan's layers), as its output's priced_on_model says. The help now
    states both, and the run is the reference for the device's."""
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "default on an array; fp16 on the device a cluster's servers name" in text
    cluster = Path(__file__).resolve().parents[1] / "configs" / "clusters" / "h100_1gpu.toml"
    assert main(["plan", "ffnn8", "--cluster", str(cluster), "--microbatches", "1", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["meta"]["priced_on_model"].endswith(", fp16")


@pytest.mark.parametrize("policy", ["jigsaw", "gandiva", "tiresias"])
def test_a_job_submitted_at_zero_starts_at_zero_not_minus_zero(tmp_path, policy) -> None:
    """Job a, submitted at 0 s on an idle cluster, starts at once: its start_s printed as -0.000000 (the interval
    boundary was ceil(0/60 − 10⁻⁹) × 60, a negative zero)."""
    import math

    from archsim.cluster import JobCluster, SimConfig, load_tiresias_csv, simulate_trace

    result = simulate_trace(load_tiresias_csv(_jobs(tmp_path)), JobCluster.uniform(8, 4), policy,
                            SimConfig(interval_s=60))
    start = float(result.jobs.set_index("job_id").loc["a", "start_s"])
    assert start == 0 and math.copysign(1.0, start) == 1.0 and str(start) == "0.0"


def test_comparing_policies_on_a_trace_file_prints_no_column_of_nan(tmp_path, capsys) -> None:
    """A trace file is one run per policy: the table printed every spread (`makespan_seconds_std`, …) as a column of
    nan. The table keeps the figures and drops a spread no run has; csv still writes every column, empty there."""
    jobs = _jobs(tmp_path)
    assert main(["cluster", "--trace", jobs, "--gpus", "8", "--gpus-per-machine", "4", "--policy", "all"]) == 0
    table = capsys.readouterr().out
    header = next(line for line in table.splitlines() if not line.startswith("#")).split()
    assert "nan" not in table.split() and not any(name.endswith("_std") for name in header), table
    assert {"makespan_seconds_mean", "jct_mean_seconds_mean", "jigsaw_gain_makespan_pct_mean"} <= set(header)
    assert main(["cluster", "--trace", jobs, "--gpus", "8", "--gpus-per-machine", "4", "--policy", "all",
                 "--format", "csv"]) == 0
    columns = next(line for line in capsys.readouterr().out.splitlines() if not line.startswith("#")).split(",")
    assert "makespan_seconds_std" in columns


def test_comparing_policies_over_seeds_still_prints_their_spread(capsys) -> None:
    """Over two seeds the spread is a figure: the table keeps it."""
    assert main(["cluster", "--compare", "--seeds", "2", "--jobs", "12", "--gpus", "16"]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if not line.startswith("#")).split()
    assert "makespan_seconds_std" in header and "jct_mean_seconds_std" in header


# the SPB paper's Table 2 (V100, batch 128): forward + backward ms per iteration, the catalog's full iteration
RESNET18_S, RESNET101_S = (9.19 + 21.49) / 1000, (60.51 + 135.14) / 1000


def test_job_times_give_each_jobs_start_end_and_jct(tmp_path, capsys) -> None:
    """A researcher scheduling a job file of their own could read only the run's summary (makespan, mean JCT): which
    job waited, and for how long, was not printed anywhere. `--job-times` writes a row per job and policy. Checked by
    hand under Tiresias: at 60 s (the first boundary after c's and b's arrival) a holds 4 of the 8 GPUs, b takes 2
    and c 1 — c runs its 500 iterations of Table 2's ResNet-18 at once; e (200 s of ResNet-101 → 1,022 whole
    iterations) arrives at 100 s and runs from the 120 s boundary on the 2 GPUs b and c left; d, 8 workers, waits
    for a to end."""
    import csv

    out = tmp_path / "times.csv"
    assert main(["cluster", "--trace", _jobs(tmp_path), "--gpus", "8", "--gpus-per-machine", "4", "--policy", "all",
                 "--job-times", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().err
    rows = list(csv.DictReader(out.open()))
    assert [row["policy"] for row in rows] == ["jigsaw"] * 5 + ["gandiva"] * 5 + ["tiresias"] * 5
    assert [row["job_id"] for row in rows[:5]] == ["a", "b", "c", "d", "e"] and {row["seed"] for row in rows} == {""}
    tiresias = {row["job_id"]: row for row in rows if row["policy"] == "tiresias"}
    c, e, d, a = tiresias["c"], tiresias["e"], tiresias["d"], tiresias["a"]
    assert (c["model_name"], int(c["num_gpu"]), int(c["iterations"])) == ("resnet18", 1, 500)
    assert float(c["start_seconds"]) == 60.0
    assert float(c["end_seconds"]) == pytest.approx(60 + 500 * RESNET18_S, rel=1e-9)
    assert float(c["jct_seconds"]) == pytest.approx(40 + 500 * RESNET18_S, rel=1e-9)
    assert int(e["iterations"]) == round(200 / RESNET101_S) == 1022
    assert float(e["start_seconds"]) == 120.0
    assert float(e["end_seconds"]) == pytest.approx(120 + 1022 * RESNET101_S, rel=1e-9)
    assert float(d["start_seconds"]) == pytest.approx(float(a["end_seconds"]), rel=1e-12)
    assert all(int(row["migrations"]) == 0 for row in rows if row["policy"] != "jigsaw")  # gangs never move
    for row in rows:  # JCT is end − submit, and no job ends before it starts
        assert float(row["jct_seconds"]) == pytest.approx(float(row["end_seconds"]) - float(row["submit_seconds"]))
        assert float(row["submit_seconds"]) <= float(row["start_seconds"]) <= float(row["end_seconds"])


def test_job_times_mean_is_the_summarys_mean_jct(tmp_path) -> None:
    """The per-job rows are the jobs the summary averages: their JCTs' mean is its jct_mean_seconds, per policy,
    through the library's keyword as well; the synthetic trace's rows name their seed."""
    import csv

    out = tmp_path / "times.csv"
    summary = archsim.cluster_jobs(compare=True, seeds=2, jobs=12, gpus=16, job_times=out)
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 3 * 2 * 12 and {row["seed"] for row in rows} == {"0", "1"}
    for policy, mean in zip(summary.table["policy"], summary.table["jct_mean_seconds_mean"], strict=True):
        per_seed = [[float(r["jct_seconds"]) for r in rows if r["policy"] == policy and r["seed"] == seed]
                    for seed in ("0", "1")]
        assert sum(sum(jcts) / len(jcts) for jcts in per_seed) / 2 == pytest.approx(mean, rel=1e-12)


@pytest.mark.parametrize("where", ["folder", "trace", "report"])
def test_job_times_refused_before_any_work(tmp_path, capsys, where) -> None:
    """A folder, the trace itself, or the report's own file: one line, exit 2, nothing written."""
    jobs = _jobs(tmp_path)
    target = {"folder": str(tmp_path), "trace": jobs, "report": str(tmp_path / "both.csv")}[where]
    extra = ["--report", target] if where == "report" else []
    assert main(["cluster", "--trace", jobs, "--gpus", "8", "--job-times", target, *extra]) == 2
    err = capsys.readouterr().err.splitlines()
    why = {"folder": "a folder", "trace": "names this run's input", "report": "named by two output flags"}[where]
    assert len(err) == 1 and err[0].startswith("archsim cluster: error:") and why in err[0], err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["jobs.csv"]
    assert (tmp_path / "jobs.csv").read_text() == JOBS


# three servers of different in-server links, listed fast, slow, fast: 4 GPUs on NVLink (2,400 Gb/s), 2 on a PCIe
# bus (64 Gb/s), 4 on NVLink, 30 Gb/s between servers
LINKS = """[cluster]
name = "mixedlinks"
inter_server_gbps = 30

[[servers]]
gpus = 4
intra_server_gbps = 2400

[[servers]]
gpus = 2
intra_server_gbps = 64

[[servers]]
gpus = 4
intra_server_gbps = 2400
"""


def test_a_plan_says_which_server_each_gpu_is_on(tmp_path, capsys) -> None:
    """RDO reorders the GPUs (device_order) and a stage lists its GPUs, but nothing said which GPUs were the slow
    server's: `servers` lists each server's GPUs in the file's order, here 4, 2 and 4 of them."""
    cluster = tmp_path / "links.toml"
    cluster.write_text(LINKS)
    assert main(["plan", "ffnn8", "--cluster", str(cluster), "--microbatches", "4", "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert meta["servers"] == "g0-g3; g4-g5; g6-g9"
    assert sorted(meta["device_order"].split(), key=lambda g: int(g[1:])) == [f"g{n}" for n in range(10)]


def test_server_gpus_names_a_lone_gpu_alone() -> None:
    from archsim.plan_spp import server_gpus

    assert server_gpus((0, 1, 1, 2)) == "g0; g1-g2; g3"


@pytest.mark.parametrize(("gpu", "figure", "fabric"), [("v100-pcie-32gb", 16, "PCIe"), ("h100-80gb-sxm", 450, "NVLink")])
def test_an_in_server_figure_in_gb_per_s_names_the_cards_own_link(tmp_path, capsys, gpu, figure, fabric) -> None:
    """intra_server_gbps = 16 on V100 PCIe servers (its PCIe 3.0 ×16 bus, 16 GB/s a direction, written as GB/s) was
    warned as "the V100 PCIe's NVLink": the card has none. An H100's 450 (GB/s a direction) is its NVLink."""
    cluster = tmp_path / "c.toml"
    cluster.write_text(f'[cluster]\ninter_server_gbps = 100\n\n[[servers]]\ncount = 2\ngpus = 2\ngpu = "{gpu}"\n'
                       f"intra_server_gbps = {figure}\n")
    assert main(["plan", "ffnn8", "--cluster", str(cluster), "--microbatches", "2", "--dtype", "fp32",
                 "--baselines", "none"]) == 0
    warning = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(warning) == 1 and f"'s {fabric} in GB/s per direction" in warning[0], warning
    assert ("NVLink" in warning[0]) == (fabric == "NVLink")


def test_an_spp_plans_repr_shows_its_makespan(capsys) -> None:
    """docs/api.md's plan_on_cluster example printed as `Partition(…, max_stage_cost=0.00451 seconds)`: the slowest
    stage's time, not the 17.45 ms iteration `archsim plan` prints for the same plan. Its repr now states the
    makespan beside it, equal to the command's."""
    from archsim.planners import plan_on_cluster
    from archsim.spp.topology import load_topology_file

    cluster = Path(__file__).resolve().parents[1] / "configs" / "clusters" / "testbed_1080ti.toml"
    seconds = archsim.profile("vgg16", only="conv", array="128x128", batch=4, clock_ghz=1.0)
    plan = plan_on_cluster(seconds, load_topology_file(cluster), "spp", 8)
    assert main(["plan", "vgg16", "--only", "conv", "--array", "128x128", "--cluster", str(cluster),
                 "--microbatches", "8", "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)["meta"]["makespan_seconds"]
    assert f"makespan={printed:g} seconds)" in repr(plan), repr(plan)
    assert "makespan" not in repr(archsim.pipeline(seconds, processors=2, method="pipedream"))  # no schedule: none


def test_a_refused_schedule_prints_its_error_line_alone(capsys) -> None:
    """`schedule --config` on a device file of 8 arrays notes that each op runs on one of them; with 12 processors
    for 8 layers the run is refused, and the note came first: two lines for one error (docs/cli.md: a refused run
    prints its error line alone). The library raised it after a UserWarning the same way."""
    device = str(Path(__file__).resolve().parents[1] / "configs" / "devices" / "tpu_v4_like.toml")
    assert main(["schedule", "ffnn8", "--policy", "1f1b", "--processors", "12", "--microbatches", "4",
                 "--config", device]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("archsim schedule: error: argument --processors"), err
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(InputError, match="at most 8 processors"):
            archsim.schedule("ffnn8", policy="1f1b", processors=12, microbatches=4, config=device)
    assert [str(w.message) for w in caught] == []
    assert main(["schedule", "ffnn8", "--policy", "1f1b", "--microbatches", "4", "--config", device]) == 0
    assert "is a device of 8 arrays" in capsys.readouterr().err  # held, not dropped, when the run succeeds


def test_equal_runs_keeps_a_key_that_comes_back_a_run_of_its_own() -> None:
    """Runs are of consecutive keys only: a server index (or a layer's block) met again later starts a new run."""
    from archsim.spp.profiles import equal_runs

    assert equal_runs(["a", "a", "b", "a"]) == [[0, 1], [2], [3]]
    assert equal_runs((7,)) == [[0]]
    assert equal_runs(()) == []
