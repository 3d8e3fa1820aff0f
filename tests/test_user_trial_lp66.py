"""Defects a researcher reproducing LayerPipe with archsim met: each test fails on the code before its fix."""

from __future__ import annotations

import html
import re

import pandas as pd

from archsim.report.headline import headline


def _text(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", markup))


def _dataflow_rows() -> pd.DataFrame:
    """One network, one array and batch, two processor counts, two dataflows: by hand, method a's best speedup
    (5.0) is on the os dataflow at 4 processors, b's (3.0) on ws at 4 processors."""
    speedups = {("ws", 2): {"a": 1.5, "b": 1.4}, ("ws", 4): {"a": 2.0, "b": 3.0},
                ("os", 2): {"a": 1.8, "b": 1.2}, ("os", 4): {"a": 5.0, "b": 2.5}}
    return pd.DataFrame([{"network": "net", "only": "conv", "mode": "paper", "rows": 32, "cols": 32,
                          "dataflow": dataflow, "batch": 16, "processors": procs, "method": method,
                          "speedup": value}
                         for (dataflow, procs), by in speedups.items() for method, value in by.items()])


def test_headline_best_at_names_the_dataflow_when_the_sweep_varies_it() -> None:
    """'best at 32x32, batch 16, 4 processors' named two configurations (ws and os) of different speedups."""
    page = _text(headline(_dataflow_rows()))
    assert "32x32 os, batch 16, 4 processors" in page
    assert "32x32 ws, batch 16, 4 processors" in page
    assert "per configuration (array, dataflow, batch, processor count" in page


def test_headline_best_at_stays_short_for_one_dataflow() -> None:
    one = _dataflow_rows().query("dataflow == 'ws'")
    page = _text(headline(one))
    assert "32x32, batch 16, 4 processors" in page and " ws," not in page
    assert "per configuration (array, batch, processor count)" in page


def test_report_on_a_header_only_results_csv_is_one_line_not_a_traceback(tmp_path, capsys) -> None:
    """A results.csv holding its header alone (rows deleted by hand) raised IndexError deep in the page."""
    from archsim.cli import main
    from archsim.sweep.results import RESULT_COLUMNS

    folder = tmp_path / "res"
    folder.mkdir()
    (folder / "results.csv").write_text(",".join(RESULT_COLUMNS) + "\n", encoding="utf-8")
    assert main(["report", str(folder), "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "results.csv, line 2: no result rows" in err[0] and "archsim sweep" in err[0]
    assert not (tmp_path / "r.html").exists()


def test_skipped_pipedream_counts_are_written_as_a_range_not_one_by_one() -> None:
    """A sweep of 1…1000 processors with PipeDream on a 13-layer-group network noted 987 numbers in one line."""
    from archsim.sweep.pipedream_points import skipped_line

    processors = list(range(1, 1001))
    record = {"networks": ["vgg16"], "processors": processors, "methods": ["pipedream"], "arrays": [[32, 32]],
              "batches": [16], "skipped_points": [{"network": "vgg16", "processors": p, "method": "pipedream",
                                                   "layer_groups": 13} for p in range(14, 1001)]}
    line = skipped_line(record)
    assert line is not None and "so it takes 1–13 processors, not 14–1000;" in line
    assert "skipped 987 of 1,000 " in line and len(line) < 400


def test_pipedream_only_refusal_writes_runs_as_ranges_and_keeps_short_lists() -> None:
    import pytest

    from archsim.errors import InputError
    from archsim.sweep.pipedream_points import check_left

    with pytest.raises(InputError, match=r"not 20–30, 40 processors, and no point"):
        check_left({"vgg16": 13}, [*range(20, 31), 40], ["pipedream"])
    with pytest.raises(InputError, match=r"not 20, 21 processors, and no point"):
        check_left({"vgg16": 13}, [20, 21], ["pipedream"])


def test_one_processor_is_written_singular_in_the_headline_and_the_gantt_heading(tmp_path) -> None:
    """'best at 32x32, batch 4, 1 processors' and 'LayerPipe schedule on 1 processors' on a sweep of P = 1."""
    from archsim.cli import main

    spec = tmp_path / "one.toml"
    spec.write_text('[sweep]\nname = "one"\nnetworks = ["layerpipe_sample"]\narrays = ["32x32"]\nbatches = [4]\n'
                    'processors = [1]\nmethods = ["layerpipe", "gpipe"]\n', encoding="utf-8")
    page = tmp_path / "one.html"
    assert main(["sweep", str(spec), "--out", str(tmp_path / "res"), "--quiet", "--report", str(page)]) == 0
    text = _text(page.read_text(encoding="utf-8"))
    assert "1 processors" not in text
    assert "32x32, batch 4, 1 processor " in text and "LayerPipe schedule on 1 processor," in text


def test_headline_says_how_many_configurations_a_skipped_method_ran() -> None:
    """PipeDream skipped above its layer groups: its median was over 13 of 1000 configurations, the leader's over
    all 1000, side by side with nothing saying so. By hand: b ran 2 of the 3 configurations below."""
    frame = pd.DataFrame([{"network": "net", "only": "conv", "mode": "exact", "rows": 32, "cols": 32,
                           "dataflow": "ws", "batch": 16, "processors": p, "method": m, "speedup": v}
                          for p, m, v in [(2, "a", 2.0), (2, "b", 1.0), (4, "a", 3.0), (4, "b", 1.5), (8, "a", 4.0)]])
    page = _text(headline(frame))
    assert "of the 3, b ran 2 (" in page
    full = _text(headline(frame[frame.processors < 8]))
    assert " ran " not in full


def test_layerpipe_vs_pipedream_table_keeps_the_counts_pipedream_skipped(tmp_path) -> None:
    """summary.csv gives LayerPipe's row at 5 processors on a 4-layer-group network, with its improvement (≤P)
    over PipeDream's best at 1–4; the report's table dropped the row. Expected from results.csv by brute force:
    each configuration's best speedup at ≤ P, averaged, and the ratio of the two."""
    from archsim.cli import main
    from archsim.report.sweep_report import table_iv

    spec = tmp_path / "skip.toml"
    spec.write_text('[sweep]\nname = "skip"\nnetworks = ["layerpipe_sample"]\narrays = ["32x32"]\nbatches = [4, 8]\n'
                    'processors = [3, 4, 5]\nmethods = ["layerpipe", "pipedream"]\n', encoding="utf-8")
    out = tmp_path / "res"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    results = pd.read_csv(out / "results.csv")
    assert set(results[results.method == "pipedream"].processors) == {3, 4}
    best = {m: results[results.method == m].groupby("batch").speedup.max().mean() for m in ("layerpipe", "pipedream")}
    table = table_iv(pd.read_csv(out / "summary.csv"), "layerpipe_sample").set_index("processors")
    assert list(table.index) == [3, 4, 5]
    row = table.loc[5]
    assert pd.isna(row["PipeDream"]) and pd.isna(row["improvement %"])
    assert abs(row["PipeDream (≤P)"] - best["pipedream"]) < 1e-9
    assert abs(row["improvement (≤P) %"] - (best["layerpipe"] / best["pipedream"] - 1) * 100) < 1e-9


def test_headline_of_all_ties_names_no_winner() -> None:
    """Every configuration tied (one layer: nothing to pipeline): the page said 'a is fastest in 0 of 2
    configurations, 2 tied', a bold winner that won nothing."""
    frame = pd.DataFrame([{"network": "net", "only": "conv", "mode": "exact", "rows": 32, "cols": 32,
                           "dataflow": "ws", "batch": 16, "processors": p, "method": m, "speedup": 1.0}
                          for p in (2, 3) for m in ("a", "b")])
    page = _text(headline(frame))
    assert "fastest in 0" not in page
    assert "no method is fastest in any configuration: all 2 per method are tied" in page


def test_regenerate_commands_quote_paths_with_spaces(tmp_path, monkeypatch) -> None:
    """A network file, spec and folders whose names hold a space gave 'archsim cost /x/my net.csv …': pasted
    into a shell, two words. Each command, split as a shell splits it, names the paths whole."""
    import shlex
    import shutil
    from pathlib import Path

    from archsim.cli import main

    monkeypatch.chdir(tmp_path)
    layers = Path(__file__).resolve().parent.parent / "layers" / "layerpipe_sample.csv"
    shutil.copy(layers, tmp_path / "my net.csv")
    (tmp_path / "sp ace.toml").write_text('[sweep]\nname = "sp"\nnetworks = ["my net.csv"]\narrays = ["32x32"]\n'
                                          'batches = [4]\nprocessors = [2]\nmethods = ["layerpipe", "gpipe"]\n',
                                          encoding="utf-8")
    assert main(["sweep", "sp ace.toml", "--out", "r sp", "--quiet", "--report", "r sp.html"]) == 0
    page = (tmp_path / "r sp.html").read_text(encoding="utf-8")
    commands = {html.unescape(c) for c in re.findall(r"Regenerate: <code>(.*?)</code>", page)}
    words = [shlex.split(c) for part in commands for c in part.split(" && ")]
    assert ["archsim", "report", "r sp", "--out", "r sp.html"] in words
    assert ["archsim", "sweep", "sp ace.toml", "--out", "r sp"] in words
    named = {w[2] for w in words if w[1] in ("cost", "pipeline")}
    assert named == {str(tmp_path / "my net.csv")}


def test_bppsa_seq_len_zero_is_told_the_range_that_runs(capsys) -> None:
    """--seq-len 0 said 'a positive integer in 1…', and 1 was then refused as 'at least 2': both now name 2."""
    import pytest

    import archsim
    from archsim.cli import main
    from archsim.errors import InputError

    for value in ("0", "-3"):
        assert main(["bppsa", "rnn", "--seq-len", value, "--processors", "64"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--seq-len: T must be at least 2" in err[0] and f"got '{value}'" in err[0]
    with pytest.raises(InputError, match="must be at least 2"):
        archsim.bppsa_rnn(seq_len=0, processors=[64])


def test_headline_says_the_dataflow_where_the_lead_is_largest() -> None:
    """By hand on _dataflow_rows: a ÷ b is 1.5/1.4, 2.0/3.0 on ws (median 0.869) and 1.8/1.2, 5.0/2.5 on os
    (median 1.75): the lead is largest with the os dataflow."""
    page = _text(headline(_dataflow_rows()))
    assert "with the os dataflow (median 1.75×)" in page
