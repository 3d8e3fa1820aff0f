"""A cluster-scheduling researcher's trial of ``archsim cluster`` on a trace of their own (SPB + Jigsaw)."""

import pytest

from archsim.cli import main
from archsim.cluster.trace import COLUMNS

HEADER = ",".join(COLUMNS) + "\n"


def run(argv, capsys):
    code = main(["cluster", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_job_wider_than_the_cluster_is_named_with_its_trace_line(tmp_path, capsys):
    """The row is the file's third line (header, one job, then the 16-worker one). Failed before: the error named
    the file and the job but no line, where a negative submit_time was told its line."""
    trace = tmp_path / "mine.csv"
    trace.write_text(HEADER + "a,2,0,10,resnet18,0,0\nb,16,5,10,resnet18,0,0\n", encoding="utf-8")
    code, out, err = run(["--trace", str(trace), "--gpus", "12"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"{trace}, line 3, field 'job b num_gpu': job needs 16 devices; the cluster has 12: give --gpus 16" in err


def test_a_model_larger_than_a_device_names_its_line_and_the_memory_that_holds_the_trace(tmp_path, capsys):
    """By hand from Table 2's backward-pass memory (10⁹ bytes): resnet101 needs 9.79 GB = 9.118 GiB, refused first on
    8 GiB devices (line 2); the trace's largest, resnet152, needs 12.81 GB = 11.930 GiB, so the memory that holds
    every row, to the hundredth above, is 11.94 GiB. Failed before: no line, and no figure to give."""
    trace = tmp_path / "mine.csv"
    trace.write_text(HEADER + "a,1,0,10,resnet101,0,0\nb,1,5,10,resnet152,0,0\n", encoding="utf-8")
    code, out, err = run(["--trace", str(trace), "--gpus", "4", "--device-memory-gb", "8"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"{trace}, line 2, field 'job a model_name'" in err and err.rstrip().endswith(
        "give --device-memory-gb 11.94 or more"), err
    assert 11.93 * 2**30 < 12.81e9 <= 11.94 * 2**30  # the hundredth above, by hand
    assert run(["--trace", str(trace), "--gpus", "4", "--device-memory-gb", "11.94", "--format", "csv"], capsys)[0] == 0
    assert run(["--trace", str(trace), "--gpus", "4", "--device-memory-gb", "11.93"], capsys)[0] == 2


@pytest.mark.parametrize("policy, spb, heading", [
    ("jigsaw-nospb", "none (jigsaw-nospb runs full backprop on every worker)", "Jigsaw without SPB"),
    ("gandiva", "none (gandiva runs full backprop on every worker)", "Gandiva-like gang scheduling"),
    ("jigsaw", "jigsaw (every worker's share of backprop, §2)", "Jigsaw + SPB"),
    ("all", "jigsaw only (baselines run full backprop, §4.2)", "Jigsaw + SPB vs gang baselines"),
])
def test_the_meta_and_page_say_which_policies_run_spb(policy, spb, heading, tmp_path, capsys):
    """Only Jigsaw runs SPB (§4.2: the baselines run standard jobs; jigsaw-nospb is the ablation with full backprop on
    every worker). Failed before: every run's meta said "jigsaw only (baselines …)" and every page was headed
    "Jigsaw + SPB vs gang baselines" and said "Jigsaw with SPB", the ablation's and a lone baseline's too."""
    import json

    trace, page = tmp_path / "two.csv", tmp_path / "page.html"
    trace.write_text(HEADER + "a,2,0,100,resnet50,0,0\nb,1,5,100,resnet18,0,0\n", encoding="utf-8")
    code, out, _ = run(["--trace", str(trace), "--gpus", "4", "--policy", policy, "--format", "json",
                        "--report", str(page)], capsys)
    assert code == 0 and json.loads(out)["meta"]["spb"] == spb
    text = page.read_text(encoding="utf-8")
    assert f"<h1>Cluster scheduling: {heading}</h1>" in text
    assert ("Jigsaw with SPB" in text) == (policy == "all") and ("No policy here runs SPB" in text) == (spb[:4] == "none")


def bar_values(page: str, name: str) -> list[float]:
    """The y values of the page's bar trace ``name`` (plotly stores them as base64 float64)."""
    import base64
    import re

    import numpy as np

    found = re.search(r'\{"name":"' + re.escape(name) + r'","x":\[[^\]]*\],"y":\{"dtype":"f8","bdata":"([^"]*)"\}', page)
    assert found, f"no bar {name!r} on the page"
    return np.frombuffer(base64.b64decode(found.group(1)), dtype="<f8").tolist()


def test_a_trace_files_page_shows_makespan_and_mean_jct_as_fig_4a(tmp_path, capsys):
    """By hand (Tiresias gangs on 4 GPUs): j0 (2 GPUs, 100 iterations of 1 s) runs 0–100 s; j1 (4 GPUs, arriving at
    30 s, 50 iterations of 1 s) waits for j0's GPUs and runs 100–150 s: makespan 150 s, JCTs 100 and 120 s, mean 110.
    Failed before: a page of one run per policy (any trace file) had no makespan figure, the paper's Fig. 4(a)."""
    trace, page = tmp_path / "two.csv", tmp_path / "page.html"
    trace.write_text(HEADER + "j0,2,0,100,vgg16,100,0\nj1,4,30,50,resnet50,50,0\n", encoding="utf-8")
    code, _, _ = run(["--trace", str(trace), "--gpus", "4", "--gpus-per-machine", "2", "--policy", "tiresias",
                      "--report", str(page)], capsys)
    text = page.read_text(encoding="utf-8")
    assert code == 0 and "Makespan and mean JCT per policy (one run)" in text
    assert bar_values(text, "makespan") == pytest.approx([150]) and bar_values(text, "mean JCT") == pytest.approx([110])
