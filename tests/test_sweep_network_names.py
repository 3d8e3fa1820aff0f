"""Two networks of a sweep spec with one file stem (``a/net.csv`` beside ``b/net.csv``, ``my.csv`` beside
``my.onnx``, a ``vgg16.csv`` beside the shipped ``vgg16``) both run: results.csv names their rows by the stem and
tells them apart by ``network_path`` (tests/test_robustness_caches.py), and summary.csv, the report and the
skipped points' line name each by its display name, its stem where unique in the sweep, else the shortest path
suffix that tells it apart. Before, summary.csv averaged the two as one ``net`` (``configs`` doubled), the report
drew one series and the skip note merged them."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from archsim.cli import main
from archsim.sweep import load_spec
from archsim.sweep.network_names import display_names, labelled
from archsim.sweep.pipedream_points import skipped_line

HEADER = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
TWO = HEADER + "c1, 8, 8, 3, 3, 3, 4, 1,\nc2, 6, 6, 3, 3, 4, 8, 1,\n"  # 2 layers: PipeDream takes 1–2 processors
THREE = HEADER + "c1, 8, 8, 3, 3, 3, 16, 1,\nc2, 6, 6, 3, 3, 16, 8, 1,\nc3, 4, 4, 3, 3, 8, 8, 1,\n"


def spec(tmp_path, networks: str, processors: str = "[2]"):
    (tmp_path / "spec.toml").write_text(f'[sweep]\nname = "n"\nnetworks = {networks}\narrays = ["16x16"]\n'
                                        f'batches = [4, 8]\nprocessors = {processors}\n'
                                        'methods = ["layerpipe", "pipedream"]\n')
    return tmp_path / "spec.toml"


@pytest.mark.parametrize("networks, names", [
    (["/s/a/net.csv", "/s/b/net.csv"], ["a/net", "b/net"]),  # the folder tells them apart
    (["/s/my.csv", "/s/my.onnx"], ["my.csv", "my.onnx"]),  # one folder: the extension does
    (["vgg16", "/s/vgg16.csv"], ["vgg16", "vgg16.csv"]),  # a shipped name beside a file
    (["/s/a/my.csv", "/s/b/my.csv", "/s/a/my.onnx"], ["a/my.csv", "b/my.csv", "a/my.onnx"]),
    (["/s/net.csv", "/s/a/net.csv", "vgg16"], ["s/net", "a/net", "vgg16"]),  # vgg16 unique: its stem
    (["/s/cnn.csv", "/s/cnn2.csv", "vgg16"], ["cnn", "cnn2", "vgg16"]),  # no shared stem: the stems, as ever
])
def test_display_names_are_the_stem_where_unique_else_the_shortest_telling_suffix(networks, names):
    assert list(display_names(networks).values()) == names


def test_a_sweep_without_a_shared_stem_is_not_relabelled():
    rows = pd.DataFrame({"network": ["cnn", "vgg16"], "network_path": ["/s/cnn.csv", "vgg16"]})
    assert labelled(rows) is rows  # the same frame: summary.csv and the report as before


def test_two_networks_of_one_stem_get_a_summary_row_a_report_section_and_a_skip_note_each(tmp_path):
    """a/net (2 layers) and b/net (3 layers) on one array, batches 4 and 8, 2 and 3 processors, LayerPipe and
    PipeDream: by hand, each (network, processors, method) point averages 1 array × 2 batches = 2 configurations,
    except PipeDream on a/net at 3 processors (more than its 2 layer groups): skipped, no row."""
    for name, text in (("a", TWO), ("b", THREE)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "net.csv").write_text(text)
    out, page = tmp_path / "out", tmp_path / "r.html"
    assert main(["sweep", str(spec(tmp_path, '["a/net.csv", "b/net.csv"]', "[2, 3]")), "--out", str(out),
                 "--report", str(page), "--quiet"]) == 0
    summary = pd.read_csv(out / "summary.csv")
    configs = {(r.network, r.processors, r.method): r.configs for r in summary.itertuples()}
    assert configs == {("a/net", 2, "layerpipe"): 2, ("a/net", 2, "pipedream"): 2, ("a/net", 3, "layerpipe"): 2,
                       ("b/net", 2, "layerpipe"): 2, ("b/net", 2, "pipedream"): 2, ("b/net", 3, "layerpipe"): 2,
                       ("b/net", 3, "pipedream"): 2}
    results = pd.read_csv(out / "results.csv")
    assert set(results.network) == {"net"}  # results.csv's column stays the stem (docs/formats.md)
    for name in ("a", "b"):  # each row's mean is its own network's rows', never both files'
        own = results[results.network_path == str((tmp_path / name / "net.csv").resolve())]
        for (p, method), part in own.groupby(["processors", "method"]):
            assert configs[(f"{name}/net", p, method)] == len(part)
            row = summary[(summary.network == f"{name}/net") & (summary.processors == p) & (summary.method == method)]
            assert row.speedup.iloc[0] == pytest.approx(part.speedup.mean())
    html = page.read_text()
    headings = re.findall(r"<h2[^>]*>([^<]*)", html)
    for name in ("a/net", "b/net"):
        assert f"{name}: speedup vs processors" in headings
        assert any(h.startswith(f"{name}: per-layer F/G/D cycles") for h in headings)
    assert not any(h.startswith("net:") for h in headings)
    assert "a/net has 2 layer groups, so it takes 1–2 processors, not 3" in html


def test_the_skip_note_names_each_network_of_one_stem_apart():
    """Both networks skip PipeDream at 3 processors (2 and 1 layer groups): one clause each, not one ``net``."""
    record = {"networks": ["/s/a/net.csv", "/s/b/net.csv"], "processors": [2, 3], "methods": ["pipedream"],
              "arrays": ["16x16"], "batches": [4],
              "skipped_points": [{"network": "/s/a/net.csv", "processors": 3, "method": "pipedream", "layer_groups": 2},
                                 {"network": "/s/b/net.csv", "processors": 2, "method": "pipedream", "layer_groups": 1},
                                 {"network": "/s/b/net.csv", "processors": 3, "method": "pipedream", "layer_groups": 1}]}
    line = skipped_line(record)
    assert line is not None
    assert "a/net has 2 layer groups, so it takes 1–2 processors, not 3" in line
    assert "b/net has 1 layer group, so it takes 1 processor, not 2, 3" in line


@pytest.mark.parametrize("networks, files", [
    ('["cnn.csv", "sub/cnn.csv"]', {"cnn.csv": TWO, "sub/cnn.csv": THREE}),
    ('["vgg16", "vgg16.csv"]', {"vgg16.csv": TWO}),
    ('["cnn.csv", "cnn2.csv", "vgg16"]', {"cnn.csv": TWO, "cnn2.csv": THREE}),
])
def test_networks_of_one_stem_load(tmp_path, networks, files):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    assert len(load_spec(spec(tmp_path, networks)).networks) == len(files) + ("vgg16" in networks)


def test_a_csv_and_an_onnx_file_of_one_stem_get_a_summary_row_each(tmp_path):
    """my.csv (3 layers) and my.onnx (tests/data/onnx/small_cnn.onnx) in one folder: only the extension tells
    them apart. By hand: 1 array × 2 batches = 2 configurations per (network, processors, method) point."""
    from pathlib import Path

    (tmp_path / "my.csv").write_text(THREE)
    (tmp_path / "my.onnx").write_bytes((Path(__file__).parent / "data" / "onnx" / "small_cnn.onnx").read_bytes())
    out = tmp_path / "out"
    assert main(["sweep", str(spec(tmp_path, '["my.csv", "my.onnx"]')), "--out", str(out), "--quiet"]) == 0
    summary = pd.read_csv(out / "summary.csv")
    assert sorted(zip(summary.network, summary.method, summary.configs)) == [
        ("my.csv", "layerpipe", 2), ("my.csv", "pipedream", 2), ("my.onnx", "layerpipe", 2), ("my.onnx", "pipedream", 2)]
