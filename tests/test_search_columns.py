"""A search row carries what ``archsim train`` prints of its configuration — its GPUs, tokens/s and model
TFLOP/s per GPU, by train's own helper — so rows of several ``--gpus`` counts can be told apart; a sweep
over TP, PP or DP says each point's GPUs too; and a layout larger than the cluster names train's flags."""

from __future__ import annotations

import csv
import io
import json

import pytest

import archsim
from archsim.cli import main
from tests.tiny_search import tiny_files

SMALL = {"global_batch": 8, "top": 50, "schedule": ["1f1b"], "max_micro_batch": 1, "refine": 0,
         "recompute": ["none"], "sequence_parallel": "off", "attention": "standard", "progress": False}
FLAGS = ["--global-batch", "8", "--top", "50", "--schedule", "1f1b", "--max-micro-batch", "1", "--refine", "0",
         "--recompute", "none", "--sequence-parallel", "off", "--attention", "standard"]


@pytest.fixture
def files(tmp_path):
    return tiny_files(tmp_path)


def _cli(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_rows_carry_gpus_tokens_per_second_and_trains_tflops_per_gpu(files):
    model, cluster = files
    found = archsim.search(model, cluster=cluster, gpus=[2, 4], **SMALL)
    assert {row["gpus"] for row in found.rows} == {2, 4}
    for row in found.rows:
        assert row["gpus"] == row["tp"] * row["pp"] * row["dp"]
        # 8 sequences of 128 tokens per iteration
        assert row["tokens_per_second"] == pytest.approx(8 * 128 / row["iteration_seconds"], rel=1e-12)
        _, rates = archsim.train(model, cluster=cluster, tp=row["tp"], pp=row["pp"], dp=row["dp"], global_batch=8,
                                 micro_batch=row["micro_batch"], recompute=row["recompute"],
                                 schedule=row["schedule"], attention="standard")
        assert row["tflops_per_gpu"] == pytest.approx(rates.tflops_per_gpu, rel=1e-9)
        assert row["tokens_per_second"] == pytest.approx(rates.tokens_per_second, rel=1e-9)
        assert row["mfu"] == pytest.approx(rates.mfu, rel=1e-9)


def test_json_and_csv_rows_have_the_columns_and_the_table_shows_gpus_only_for_several_counts(files, capsys):
    model, cluster = files
    new = ("gpus", "tflops_per_gpu", "tokens_per_second")
    code, out, _ = _cli(["search", model, "--cluster", cluster, *FLAGS, "--gpus", "2", "4", "--format", "json"],
                        capsys)
    assert code == 0 and all(k in row for row in json.loads(out)["rows"] for k in new)
    code, out, _ = _cli(["search", model, "--cluster", cluster, *FLAGS, "--gpus", "4", "--format", "csv"], capsys)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and rows and all(row["gpus"] == "4" for row in rows)
    assert all(float(row[k]) > 0 for row in rows for k in new)
    header = lambda text: next(line for line in text.splitlines() if not line.startswith("#")).split()
    code, out, _ = _cli(["search", model, "--cluster", cluster, *FLAGS, "--gpus", "2", "4"], capsys)
    assert code == 0 and {"gpus", "tflops_per_gpu", "tokens_per_second"} <= set(header(out))
    code, out, _ = _cli(["search", model, "--cluster", cluster, *FLAGS, "--gpus", "4"], capsys)
    assert code == 0 and "gpus" not in header(out) and "tokens_per_second" in header(out)


def test_a_sweep_over_dp_gives_each_points_gpus(files, capsys):
    model, cluster = files
    base = ["train", model, "--cluster", cluster, "--tp", "1", "--pp", "1", "--global-batch", "8"]
    code, out, _ = _cli([*base, "--sweep", "dp=1,2,4", "--format", "json"], capsys)
    assert code == 0 and [row["gpus"] for row in json.loads(out)["rows"]] == [1, 2, 4]
    code, out, _ = _cli([*base, "--sweep", "dp=1,2,4"], capsys)
    lines = [line.split() for line in out.splitlines() if not line.startswith("#")]
    assert code == 0 and lines[0][0] == "gpus" and [line[0] for line in lines[1:]] == ["1", "2", "4"]
    code, out, _ = _cli([*base, "--dp", "2", "--sweep", "micro_batch=1,2"], capsys)  # one count: left out
    assert code == 0 and "gpus" not in next(line for line in out.splitlines() if not line.startswith("#")).split()


def test_a_layout_larger_than_the_cluster_names_trains_flags(files, capsys):
    model, cluster = files
    code, out, err = _cli(["train", model, "--cluster", cluster, "--tp", "2", "--pp", "2", "--dp", "2",
                           "--global-batch", "8"], capsys)
    assert code == 2 and out == ""
    assert err.strip() == "archsim: error: --tp × --pp × --dp = 2 × 2 × 2 = 8 GPUs > the cluster's 4"


def test_the_pareto_page_tables_name_each_rows_gpus_and_rates(files, tmp_path, capsys):
    model, cluster = files
    page = tmp_path / "front.html"
    code, _, _ = _cli(["search", model, "--cluster", cluster, *FLAGS, "--gpus", "2", "4", "--pareto-html", str(page)],
                      capsys)
    text = page.read_text()
    assert code == 0 and all(f"<th>{name}</th>" in text for name in ("gpus", "tflops_per_gpu", "tokens_per_second"))


def test_rows_carry_trains_hardware_tflops_per_gpu_which_counts_the_recompute(files):
    """Search rows gave model TFLOP/s per GPU but not the FLOPs the GPUs run (recompute counted, Narayanan et
    al.'s hardware FLOPs), which train and its sweep give."""
    model, cluster = files
    found = archsim.search(model, cluster=cluster, gpus=4, **{**SMALL, "recompute": ["full"]})
    assert found.rows
    for row in found.rows:
        _, rates = archsim.train(model, cluster=cluster, tp=row["tp"], pp=row["pp"], dp=row["dp"], global_batch=8,
                                 micro_batch=row["micro_batch"], recompute="full", schedule=row["schedule"],
                                 attention="standard")
        assert row["hardware_tflops_per_gpu"] == pytest.approx(rates.hardware_tflops_per_gpu, rel=1e-9)
        assert row["hardware_tflops_per_gpu"] > row["tflops_per_gpu"] * 1.2  # full recompute reruns the forward
