"""The search's cost and energy objectives by hand sums on a mixed cluster, ranking and the Pareto front
by the objective, and the command line of uneven stages, mixed clusters and the Pareto page."""

from __future__ import annotations

import csv
import json

import pytest

from archsim.cli import main
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.rates import dollars_per_hour, watts
from archsim.training.search import search
from archsim.workload.model_files import load_transformer
from archsim.workload.transformer import TransformerConfig

MIXED = """[cluster]
name = "mixed"
inter_server_gbps = 200
inter_server_link = "per_gpu_pair"

[[servers]]
gpus = 2
intra_server_gbps = 7200
gpu = "h100"

[[servers]]
gpus = 2
intra_server_gbps = 4800
gpu = "a100-40gb"
price_per_gpu_hour = 1.5
gpu_watts = 250
"""
TINY = TransformerConfig("tiny", "gpt", layers=6, hidden=96, heads=6, vocab=500, seq=64, ffn=384, kv_heads=6,
                         tied_embeddings=True, positions=64)


@pytest.fixture
def mixed(tmp_path):
    path = tmp_path / "mixed.toml"
    path.write_text(MIXED)
    return path


def test_prices_and_power_by_hand(mixed):
    cluster = load_gpu_cluster(mixed)
    # H100: AWS p5.48xlarge $98.32 / 8 GPUs, 700 W; the A100 40 GB server's own figures from the file
    assert dollars_per_hour(cluster, 2) == pytest.approx(2 * 98.32 / 8)
    assert dollars_per_hour(cluster, 3) == pytest.approx(2 * 98.32 / 8 + 1.5)
    assert watts(cluster, 4) == pytest.approx(2 * 700 + 2 * 250)


@pytest.mark.parametrize("objective, column", [("cost", "cost_usd"), ("energy", "energy_j")])
def test_rows_rank_by_the_objective_and_the_front_is_time_against_it(mixed, objective, column):
    cluster = load_gpu_cluster(mixed)
    result = search(TINY, cluster, 8, (2, 4), micro_batches=(1, 2), recomputes=("full",), schedules=("1f1b",),
                    sequence_parallel=(False,), top=10**6, objective=objective)
    rows = result.rows
    assert {r["tp"] * r["pp"] * r["dp"] for r in rows} == {2, 4}
    for r in rows:
        gpus = r["tp"] * r["pp"] * r["dp"]
        per_hour = 2 * 98.32 / 8 + (2 * 1.5 if gpus == 4 else 0)
        power = 2 * 700 + (2 * 250 if gpus == 4 else 0)
        assert r["cost_usd"] == pytest.approx(r["iteration_seconds"] / 3600 * per_hour)
        assert r["energy_j"] == pytest.approx(r["iteration_seconds"] * power)
    values = [r[column] for r in rows]
    assert values == sorted(values)
    points = {(r["iteration_seconds"], r[column]) for r in rows}
    dominated = {p for p in points for q in points if q[0] <= p[0] and q[1] <= p[1] and q != p}
    assert sorted({(r["iteration_seconds"], r[column]) for r in result.pareto}) == sorted(points - dominated)


def test_train_takes_a_stage_split_and_plans_one(mixed, tmp_path, capsys):
    model = tmp_path / "tiny.toml"
    model.write_text('[transformer]\nname = "tiny"\nfamily = "gpt"\nlayers = 6\nhidden = 96\nheads = 6\n'
                     'vocab = 500\nseq = 64\n')
    base = ["train", str(model), "--cluster", str(mixed), "--pp", "4", "--global-batch", "8", "--format", "json"]
    assert main([*base, "--stage-layers", "1,2,2,1"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert meta["stage_layers"] == "1,2,2,1"
    assert [r["gpu"] for r in meta["memory_per_rank"]] == ["NVIDIA H100 SXM5 80GB"] * 2 + ["NVIDIA A100 SXM4 40GB"] * 2
    assert main([*base, "--balance", "planned"]) == 0
    planned = json.loads(capsys.readouterr().out)["meta"]
    assert sum(map(int, planned["stage_layers"].split(","))) == 6
    assert main([*base, "--stage-layers", "1,2,2"]) == 2
    assert "stage" in capsys.readouterr().err
    assert main([*base[:4], "--dp", "4", "--global-batch", "8"]) == 2  # a rank on H100 and A100
    assert "different types" in capsys.readouterr().err
    assert main([*base[:4], "--tp", "4", "--global-batch", "8"]) == 2  # 6 heads: the model's refusal comes first
    assert "must divide the heads (6)" in capsys.readouterr().err
    model.write_text(model.read_text().replace("heads = 6", "heads = 8"))  # TP 4 splits 8 heads
    assert main([*base[:4], "--tp", "4", "--global-batch", "8"]) == 2  # TP 4 over an H100 and an A100 server
    assert "different types" in capsys.readouterr().err


def test_search_command_writes_the_pareto_page_and_the_gain(mixed, tmp_path, capsys):
    model = tmp_path / "tiny.toml"
    model.write_text('[transformer]\nname = "tiny"\nfamily = "gpt"\nlayers = 7\nhidden = 96\nheads = 6\n'
                     'vocab = 500\nseq = 64\n')
    page = tmp_path / "front.html"
    assert main(["search", str(model), "--cluster", str(mixed), "--global-batch", "8", "--schedule", "1f1b",
                 "--balance", "planned", "--objective", "energy", "--pareto-html", str(page), "--refine", "0",
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rows"] and all(r["stage_layers"] or r["pp"] == 1 for r in out["rows"])
    assert any(r["pp"] > 1 and 7 % r["pp"] for r in out["rows"])  # PP need not divide the layers when planned
    assert "uneven_gain_max" in out["meta"]
    assert page.stat().st_size > 0 and "Pareto front" in page.read_text()
    assert "energy per iteration (J, GPUs at board power)" in page.read_text()  # catalog GPUs: board power × time


def test_the_pareto_pages_energy_axis_says_how_an_array_devices_joules_were_found(tmp_path, capsys):
    """On array devices ``energy_j`` is the energy model's (not board power × time), yet the page's axis read
    "energy per iteration (J, GPUs at board power)"; it names the energy model there."""
    model = tmp_path / "tiny.toml"
    model.write_text('[transformer]\nname = "tiny"\nfamily = "gpt"\nlayers = 4\nhidden = 96\nheads = 6\n'
                     'vocab = 500\nseq = 64\n')
    page = tmp_path / "front.html"
    assert main(["search", str(model), "--cluster", SLICE, "--gpus", "2", "--global-batch", "4", "--schedule",
                 "1f1b", "--objective", "energy", "--pareto-html", str(page), "--refine", "0"]) == 0
    capsys.readouterr()
    text = page.read_text()
    assert '"title":{"text":"energy per iteration (J, energy model on the ops)"' in text
    assert "board power" not in text


def test_a_gpu_without_a_default_price_asks_for_one():
    """The H200 has a datasheet power (700 W) but no list price in the table: cost needs the file's own."""
    from pathlib import Path

    from archsim.errors import InputError

    cluster = load_gpu_cluster(Path(__file__).resolve().parents[1] / "configs" / "clusters" / "h200_1gpu.toml")
    assert watts(cluster, 1) == 700.0
    with pytest.raises(InputError, match="price_per_gpu_hour"):
        dollars_per_hour(cluster, 1)


def test_a_missing_price_is_refused_before_any_configuration_is_costed(monkeypatch):
    """``search --objective cost`` on a device file's chip (no price) costed every configuration (seconds on
    8 chips, minutes on a large cluster) and only then asked for ``price_per_gpu_hour``; it asks first."""
    from pathlib import Path

    import archsim.training.search as search_module
    from archsim.errors import InputError

    costed = []
    monkeypatch.setattr(search_module, "fit_candidate", lambda *a, **k: costed.append(a) or "out-of-memory")
    cluster = load_gpu_cluster(Path(__file__).resolve().parents[1] / SLICE)
    with pytest.raises(InputError, match="no default figure for TPU v4-like .*set price_per_gpu_hour"):
        search(TINY, cluster, 16, objective="cost")
    assert costed == []
    search(TINY, cluster, 16, gpus=2, objective="energy", micro_batches=(1,), recomputes=("none",),
           sequence_parallel=(False,))  # an array device's energy needs no board power: not refused
    assert costed


SLICE = "configs/clusters/tpu_v4_like_slice.toml"  # 16 TPU-v4-like chips: array devices, 192 W each


@pytest.mark.long
@pytest.mark.parametrize("layout", [["--dp", "16", "--micro-batch", "2"], ["--tp", "2", "--pp", "2", "--dp", "4"],
                                    ["--pp", "4", "--dp", "4", "--recompute", "full"]])
def test_search_energy_on_array_devices_is_trains(tmp_path, capsys, layout):
    """On array devices a search row's energy is the energy model's on the ops, the figure ``archsim train``
    prints for that configuration — not board power × time (192 W × 16 × seconds), which it was."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    model = tmp_path / "tiny.toml"
    model.write_text('[transformer]\nfamily = "gpt"\nlayers = 8\nhidden = 256\nheads = 4\nvocab = 1000\nseq = 128\n')
    assert main(["train", str(model), "--cluster", str(root / SLICE), "--global-batch", "32", *layout,
                 "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert meta["energy_source"].startswith("energy model")
    c = load_transformer(model)
    result = search(c, load_gpu_cluster(root / SLICE), 32, [16], objective="energy", top=100_000,
                    attention=meta["attention"])
    want = tuple(meta[k] for k in ("tp", "pp", "dp", "micro_batch", "recompute", "sequence_parallel"))
    rows = [r for r in result.rows if r["schedule"] == "1f1b"
            and tuple(r[k] for k in ("tp", "pp", "dp", "micro_batch", "recompute", "sequence_parallel")) == want]
    assert rows, want
    for row in rows:  # the energy does not depend on the schedule's timing: every 1F1B row of the layout
        assert row["energy_j"] == pytest.approx(meta["energy_j"], rel=1e-12)
        assert row["energy_j"] != pytest.approx(row["iteration_seconds"] * 16 * 192, rel=1e-3)
    energies = [r["energy_j"] for r in result.rows]
    assert energies == sorted(energies)  # ranked by the objective


def test_no_split_is_null_in_the_meta_as_in_the_rows(mixed, tmp_path, capsys):
    """One GPU: PP is 1, no split applies, so every row's uneven_gain has no value and neither have both meta
    summaries (one convention: JSON null in both, RFC 8259 having no NaN); csv leaves them empty, the table
    prints nan."""
    model = tmp_path / "tiny.toml"
    model.write_text('[transformer]\nname = "tiny"\nfamily = "gpt"\nlayers = 7\nhidden = 96\nheads = 6\n'
                     'vocab = 500\nseq = 64\n')
    argv = ["search", str(model), "--cluster", str(mixed), "--global-batch", "8", "--gpus", "1", "--refine", "0"]
    assert main([*argv, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rows"] and all(r["pp"] == 1 and r["uneven_gain"] is None for r in out["rows"])
    assert out["meta"]["uneven_gain_first_row"] is None and out["meta"]["uneven_gain_max"] is None
    assert main(argv) == 0
    table = capsys.readouterr().out
    assert "# uneven_gain_first_row: nan\n" in table and "# uneven_gain_max: nan\n" in table
    assert main([*argv, "--format", "csv"]) == 0
    header, first = capsys.readouterr().out.splitlines()[:2]
    row = dict(zip(next(csv.reader([header])), next(csv.reader([first]))))
    assert row["uneven_gain_first_row"] == row["uneven_gain_max"] == row["uneven_gain"] == ""
