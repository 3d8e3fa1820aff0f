"""``archsim train MODEL --runs RUNS.csv``: many runs in one process, checked against measured iterations."""

import csv
import json
from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.training.runs import read_runs
from archsim.training.runs_predict import row_config
from archsim.workload.model_files import load_transformer

ROOT = Path(__file__).resolve().parents[1]
VTRAIN = ROOT / "tests" / "data" / "e2e" / "vtrain_single_node_shown.csv"
MODEL = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")
CLUSTER = str(ROOT / "configs" / "clusters" / "a100_node.toml")


def _vtrain_rows(count: int) -> list[list[str]]:
    """The first ``count`` runs of vTrain's CSV, read with the csv module (not archsim's reader)."""
    with VTRAIN.open() as f:
        return [row for _, row in zip(range(count), list(csv.reader(f))[1:])]


def _cli(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_vtrain_csv_as_released_is_predicted_in_order_within_the_measured_error(tmp_path, capsys):
    sample = tmp_path / "runs.csv"
    head = VTRAIN.read_text().splitlines()[:61]
    sample.write_text("\n".join(head) + "\n")
    code, out, err = _cli(["train", MODEL, "--cluster", CLUSTER, "--runs", str(sample), "--attention", "standard",
                           "--format", "json"], capsys)
    # one note, on the one run of fewer micro-batches than stages: line 17, 8 ÷ (4 × 1) = 2 for PP 4 (hand count)
    assert code == 0 and err.count("\n") == 1 and err.startswith("archsim train: note: 1 of the 60 rows (line 17): 2 ")
    assert "for pipeline parallelism 4:" in err and "a larger global batch or a smaller micro batch" in err
    rows = json.loads(out)["rows"]
    expected = _vtrain_rows(60)
    assert len(rows) == 60
    for row, raw in zip(rows, expected):
        gpus, batch, micro, hidden, _, layers, _, tp, dp, pp, ms = raw
        assert (row["gpus"], row["global_batch"], row["micro_batch"], row["tp"], row["dp"], row["pp"]) == tuple(
            int(x) for x in (gpus, batch, micro, tp, dp, pp))
        assert row["model"].endswith(f"-h{hidden}-l{layers}")
        assert row["measured_seconds"] == pytest.approx(float(ms) / 1e3)
        assert row["error"] == pytest.approx(row["predicted_seconds"] / row["measured_seconds"] - 1)
    errors = [abs(r["error"]) for r in rows]
    # the measured iterations: archsim's whole-file MAPE is 6.6% (docs/accuracy.md); none off by 30%
    assert sum(errors) / len(errors) < 0.10 and max(errors) < 0.30


def test_archsim_layout_agrees_with_the_vtrain_layout_on_the_same_runs(tmp_path, capsys):
    """The same measured runs written in archsim's columns (model fixed by MODEL) predict the same."""
    picked = [r for r in _vtrain_rows(200) if (r[3], r[5]) == ("1024", "24")][:12]
    assert len(picked) == 12
    vtrain = tmp_path / "vtrain.csv"
    vtrain.write_text(VTRAIN.read_text().splitlines()[0] + "\n" + "\n".join(",".join(r) for r in picked) + "\n")
    ours = tmp_path / "ours.csv"
    ours.write_text("gpus,tp,pp,dp,micro_batch,global_batch,recompute,sequence_parallel,interleave,measured_seconds\n"
                    + "".join(f"{r[0]},{r[7]},{r[9]},{r[8]},{r[2]},{r[1]},full,false,1,{float(r[10]) / 1e3}\n"
                              for r in picked))
    got = []
    for path in (vtrain, ours):
        code, out, _ = _cli(["train", MODEL, "--cluster", CLUSTER, "--runs", str(path), "--format", "json"], capsys)
        assert code == 0
        got.append(json.loads(out)["rows"])
    assert [r["predicted_seconds"] for r in got[0]] == pytest.approx([r["predicted_seconds"] for r in got[1]])
    assert [r["error"] for r in got[0]] == pytest.approx([r["error"] for r in got[1]])


def test_without_measured_times_the_error_is_empty_and_one_row_matches_archsim_train(tmp_path, capsys):
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch,global_batch\n2,2,2,2,16\n")
    code, out, _ = _cli(["train", MODEL, "--cluster", CLUSTER, "--runs", str(runs), "--format", "json"], capsys)
    row = json.loads(out)["rows"][0]
    assert code == 0 and row["measured_seconds"] is None and row["error"] is None
    code, out, _ = _cli(["train", MODEL, "--cluster", CLUSTER, "--tp", "2", "--pp", "2", "--dp", "2",
                         "--micro-batch", "2", "--global-batch", "16", "--format", "json"], capsys)
    assert row["predicted_seconds"] == pytest.approx(json.loads(out)["meta"]["iteration_seconds"])


@pytest.mark.parametrize(("body", "where"), [
    ("2,1,1,x,8", "line 3, field 'micro_batch'"),
    ("2,1,1,1,8,3", "line 3, field 'gpus'"),
    ("3,1,1,1,8", "line 3, field 'tp'"),
    ("4,2,2,1,8", "line 3, field 'gpus'"),  # 16 GPUs on an 8-GPU cluster
    ("2,1,1,1,8,2,sometimes", "line 3, field 'recompute'"),
    ("2,1,1,1,8,2,full,-1", "line 3, field 'measured_seconds'"),
])
def test_a_bad_row_is_one_line_naming_its_line_and_field_and_nothing_on_stdout(tmp_path, capsys, body, where):
    runs = tmp_path / "runs.csv"
    columns = "tp,pp,dp,micro_batch,global_batch,gpus,recompute,measured_seconds"
    body += "," * (columns.count(",") - body.count(","))  # its omitted cells empty: a short row is refused first
    runs.write_text(f"{columns}\n2,2,2,2,16,8,full,0.2\n{body}\n")
    code, out, err = _cli(["train", MODEL, "--cluster", CLUSTER, "--runs", str(runs)], capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and where in err and "runs.csv" in err


def test_unknown_or_missing_columns_are_refused(tmp_path):
    from archsim.errors import InputError

    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch\n1,1,1,1\n")
    with pytest.raises(InputError, match="missing column"):
        read_runs(runs)
    runs.write_text("tp,pp,dp,micro_batch,global_batch,speed\n1,1,1,1,1,3\n")
    with pytest.raises(InputError, match="unknown column"):
        read_runs(runs)


def test_a_vtrain_row_replaces_the_models_shape_as_the_shipped_config_of_that_shape_has_it():
    row = next(r for r in read_runs(VTRAIN) if r.shape == (2048, 16, 20, 1024))
    shipped = load_transformer(ROOT / "configs" / "transformers" / "gpt_2048h_20l.json")
    got = row_config(load_transformer(MODEL), row)
    for key in ("layers", "hidden", "heads", "vocab", "seq", "ffn", "kv_heads", "tied_embeddings", "positions"):
        assert getattr(got, key) == getattr(shipped, key), key


@pytest.mark.parametrize("flag", [["--tp", "4"], ["--pp", "2"], ["--global-batch", "64"], ["--recompute", "none"],
                                  ["--interleave", "2"], ["--sweep", "tp=1,2"], ["--balance", "planned"],
                                  ["--placement", "planned"], ["--stage-layers", "12,12"], ["--gantt", "g.html"]])
def test_flags_a_runs_file_sets_per_row_are_refused_not_ignored(tmp_path, capsys, flag):
    """`--runs` read each row's parallelism and silently dropped these flags (a `--tp 4` or a
    `--sweep` beside it changed nothing): one line naming the flag, exit 2."""
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch,global_batch\n2,2,2,2,16\n")
    code, out, err = _cli(["train", MODEL, "--cluster", CLUSTER, "--runs", str(runs), *flag], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and flag[0] in err


def test_runs_take_the_schedule_and_say_it_and_the_gradient_accumulation(tmp_path, capsys):
    """`--schedule gpipe` was ignored by `--runs` (every row ran 1F1B) and the meta named neither the
    schedule nor the gradient accumulation; each row now runs as `train` runs it with the same flags."""
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch,global_batch\n1,4,2,1,16\n")
    flags = ["--schedule", "gpipe", "--grad-accumulation", "unfused"]
    code, out, _ = _cli(["train", MODEL, "--cluster", CLUSTER, "--runs", str(runs), *flags, "--format", "json"],
                        capsys)
    got = json.loads(out)
    assert code == 0 and (got["meta"]["schedule"], got["meta"]["grad_accumulation"]) == ("gpipe", "unfused")
    code, out, _ = _cli(["train", MODEL, "--cluster", CLUSTER, "--pp", "4", "--dp", "2", "--global-batch", "16",
                         *flags, "--format", "json"], capsys)
    assert got["rows"][0]["predicted_seconds"] == pytest.approx(json.loads(out)["meta"]["iteration_seconds"])
    code, out, _ = _cli(["train", MODEL, "--cluster", CLUSTER, "--pp", "4", "--dp", "2", "--global-batch", "16",
                         "--format", "json"], capsys)
    assert got["rows"][0]["predicted_seconds"] != pytest.approx(json.loads(out)["meta"]["iteration_seconds"])


@pytest.mark.parametrize("header", ["tp,pp,dp,micro_batch,global_batch\n", VTRAIN.read_text().splitlines()[0] + "\n"])
def test_a_runs_file_with_no_rows_is_one_line(tmp_path, capsys, header):
    """A header and no rows printed pandas' "Empty DataFrame / Columns: [] / Index: []" under a meta
    with mape None, exit 0; it is refused like an empty NeuSight file."""
    runs = tmp_path / "runs.csv"
    runs.write_text(header + "\n")
    code, out, err = _cli(["train", MODEL, "--cluster", CLUSTER, "--runs", str(runs)], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "no runs" in err
    assert "runs.csv, line 1" in err


def test_a_mixed_clusters_sweep_and_runs_name_every_gpu_as_search_does(tmp_path, capsys):
    """On a cluster of H100 and A100 servers a `--sweep`'s and a `--runs`' meta named only the first
    server's GPU (`gpu: NVIDIA H100 SXM5 80GB`) though their points may run on the A100s; they name
    every GPU type, as `search` does."""
    mixed = str(ROOT / "configs" / "clusters" / "mixed_counts_h100_a100.toml")
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch,global_batch\n1,1,8,1,8\n")
    both = "NVIDIA A100 SXM4 40GB, NVIDIA H100 SXM5 80GB"
    for extra in (["--global-batch", "8", "--sweep", "dp=1,2"], ["--runs", str(runs)],
                  ["--global-batch", "8", "--max-micro-batch", "1", "--schedule", "1f1b", "--refine", "0"]):
        command = "search" if "--refine" in extra else "train"
        code, out, _ = _cli([command, MODEL, "--cluster", mixed, *extra, "--format", "json"], capsys)
        assert code == 0 and json.loads(out)["meta"]["gpu"] == both, extra


def _head(rows: int, scale: float, path: Path) -> str:
    """The shipped runs file's first ``rows`` runs, measured_seconds multiplied by ``scale``."""
    lines = (ROOT / "configs" / "runs" / "vtrain_h1024_l24.csv").read_text().splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("gpus,"))
    body = []
    for line in lines[header + 1:header + 1 + rows]:
        *cells, measured = line.split(",")
        body.append(",".join([*cells, repr(float(measured) * scale)]))
    path.write_text("\n".join([lines[header], *body]) + "\n")
    return str(path)


def test_measured_seconds_given_in_milliseconds_get_one_note_and_unchanged_numbers(tmp_path, capsys):
    """vTrain's runs with measured_seconds written in ms (× 1000): every error read −99.9% and nothing said
    why. One stderr note now; the rows' numbers stay as computed. The same runs in seconds, and a file where
    one run is in seconds, get no note (the rule: every measured run over 100× its prediction)."""
    ms = _head(3, 1e3, tmp_path / "ms.csv")
    code, out, err = _cli(["train", MODEL, "--cluster", CLUSTER, "--runs", ms, "--format", "json"], capsys)
    assert code == 0
    notes = [line for line in err.splitlines() if "milliseconds" in line]
    assert len(notes) == 1 and notes[0].startswith("archsim train: note: measured_seconds look like milliseconds: ")
    rows = json.loads(out)["rows"]
    for row in rows:
        assert row["error"] == pytest.approx(row["predicted_seconds"] / row["measured_seconds"] - 1)
        assert row["error"] < -0.99
    with pytest.warns(UserWarning, match="^measured_seconds look like milliseconds: "):
        library = archsim.train_runs(MODEL, runs=ms, cluster=CLUSTER)
    assert [r["error"] for r in library] == pytest.approx([r["error"] for r in rows])
    seconds = _head(3, 1.0, tmp_path / "s.csv")
    code, _, err = _cli(["train", MODEL, "--cluster", CLUSTER, "--runs", seconds], capsys)
    assert code == 0 and "milliseconds" not in err
    mixed = tmp_path / "mixed.csv"
    lines = Path(ms).read_text().splitlines()
    mixed.write_text("\n".join([*lines[:-1], Path(seconds).read_text().splitlines()[-1]]) + "\n")
    code, _, err = _cli(["train", MODEL, "--cluster", CLUSTER, "--runs", str(mixed)], capsys)
    assert code == 0 and "milliseconds" not in err
