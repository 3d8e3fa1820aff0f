"""A search row carries what ``archsim train`` prints of its configuration — its GPUs, tokens/s and model
TFLOP/s per GPU, by train's own helper — so rows of several ``--gpus`` counts can be told apart; a sweep
over TP, PP or DP says each point's GPUs too; and a layout larger than the cluster names train's flags."""

from __future__ import annotations

import csv
import io
import json
from html.parser import HTMLParser

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
    assert err.strip() == ("archsim train: error: --tp × --pp × --dp = 2 × 2 × 2 = 8 GPUs > the cluster's 4: --dp 1 fits "
                           "(2 × 2 × 1 = 4 GPUs)")


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


class _Tables(HTMLParser):
    """A page's tables as lists of rows of cell texts (header row first)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None:
            self.tables[-1][-1].append("".join(self.cell).strip())
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


def test_the_pareto_page_shows_each_rows_hardware_tflops_per_gpu_with_its_units(files, tmp_path, capsys):
    """The page's tables and hover gave model TFLOP/s per GPU but not the hardware figure (recompute counted)
    that the rows and the text table carry."""
    from archsim.report.search_front import front_figure

    model, cluster = files
    page = tmp_path / "front.html"
    flags = [flag if flag != "none" else "full" for flag in FLAGS]  # full recompute: hardware > model FLOPs
    code, out, _ = _cli(["search", model, "--cluster", cluster, *flags, "--gpus", "4", "--format", "json",
                         "--pareto-html", str(page)], capsys)
    rows = json.loads(out)["rows"]
    assert code == 0 and rows
    parser = _Tables()
    parser.feed(page.read_text())
    front_table, ranked_table = parser.tables
    for table, expected in ((ranked_table, rows), (front_table, json.loads(out)["meta"]["pareto"])):
        header, cells = table[0], table[1:]
        assert len(cells) == len(expected)
        for cell_row, row in zip(cells, expected):
            shown = dict(zip(header, cell_row))
            assert shown["hardware_tflops_per_gpu"] == f"{row['hardware_tflops_per_gpu']:.4g}"
            assert shown["tflops_per_gpu"] == f"{row['tflops_per_gpu']:.4g}" != shown["hardware_tflops_per_gpu"]
    assert page.read_text().count("hardware_tflops_per_gpu: TFLOP/s per GPU") == 2  # each table's units line
    fig = front_figure(json.loads(out)["meta"]["pareto"], rows, "time")
    ranked = next(trace for trace in fig.data if trace.name == "ranked rows")
    assert [list(point)[2] for point in ranked.customdata] == [row["hardware_tflops_per_gpu"] for row in rows]
    assert "%{customdata[2]:.4g} hardware TFLOP/s per GPU" in ranked.hovertemplate
