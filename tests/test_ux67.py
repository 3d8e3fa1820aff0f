"""Consistency of search, train and sweep output: search's meta names the network as train's does, train's
``--precision`` reaches its network and parameter lines, the sweep report says what its configurations are
counted over, and ``--placement planned`` tells servers under different leaves of an oversubscribed fabric apart."""

from __future__ import annotations

import json

from test_docs import ROOT

from archsim.cli import main

MODEL = str(ROOT / "configs" / "transformers" / "gpt3_1.3b.toml")
TWO_H100 = str(ROOT / "configs" / "clusters" / "h100_2_servers.toml")  # 2 servers × 8 H100, 8 NICs × 400 Gb/s each
SMALL_SEARCH = ["--global-batch", "64", "--refine", "0", "--top", "1", "--schedule", "1f1b", "--max-micro-batch", "1",
                "--recompute", "none", "--sequence-parallel", "off"]


# 1. search's meta names the network its first row runs on, in train's keys and train's lines


def test_the_search_meta_names_the_network_as_train_does(capsys):
    """Failed before: search's meta had no ``intra_server`` or ``inter_server`` (train's meta has both). By hand: the
    file's servers run NVLink at 7200 Gb/s = 900 GB/s both ways, 450 per direction; each has 8 NICs of 400 Gb/s for
    its 8 GPUs, 50 GB/s per GPU. The first row runs as its ``command`` does in train, whose meta names the same."""
    assert main(["search", MODEL, "--cluster", TWO_H100, *SMALL_SEARCH, "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    meta, row = document["meta"], document["rows"][0]
    assert meta["intra_server"] == {"link": "nvlink", "gb_per_s_per_gpu": 450.0, "nvls": False}
    inter = meta["inter_server"]
    assert (inter["nics_per_server"], inter["nic_gbps"], inter["gpus_per_nic"], inter["gb_per_s_per_gpu"]) == \
        (8, 400.0, 1, 50.0)
    spans = row["tp"] * row["dp"] > 8 or row["pp"] > 1  # 16 GPUs: some group or hop crosses the two servers
    assert spans and inter["crossed_by"]
    assert main([*row["command"].split()[1:], "--format", "json"]) == 0
    trained = json.loads(capsys.readouterr().out)["meta"]
    assert (meta["intra_server"], meta["inter_server"]) == (trained["intra_server"], trained["inter_server"])
    # the table names the network in the lines train's table prints
    assert main(["search", MODEL, "--cluster", TWO_H100, *SMALL_SEARCH]) == 0
    table = capsys.readouterr().out
    assert main(row["command"].split()[1:]) == 0
    train_table = capsys.readouterr().out
    for key in ("intra_server", "inter_server"):
        line = next(x for x in train_table.splitlines() if x.startswith(f"# {key}: "))
        assert line in table.splitlines()
    assert "# intra_server: 450 GB/s per direction per GPU (nvlink), NVLS off\n" in table


# 2. train's --precision reaches the network's and the parameter count's lines, as the table's other lines

ODD_LINKS = """[cluster]
name = "odd_links"
inter_server_gbps = 333
inter_server_link = "per_gpu_pair"

[[servers]]
count = 2
gpus = 8
intra_server_gbps = 7000
gpu = "h100-80gb-sxm"
"""


def _meta_lines(text: str) -> dict[str, str]:
    return dict(line[2:].split(": ", 1) for line in text.splitlines() if line.startswith("# ") and ": " in line)


def test_train_precision_reaches_the_network_and_parameter_lines(tmp_path, capsys):
    """Failed before: ``--precision`` left the network's figures at 4 digits and the parameter count at 3. By hand:
    7000 Gb/s both ways is 437.5 GB/s per direction; a 333 Gb/s NIC per GPU 41.625 GB/s; GPT-3 1.3B's
    1,315,723,264 parameters 1.315723264 B."""
    cluster = tmp_path / "odd.toml"
    cluster.write_text(ODD_LINKS)
    argv = ["train", MODEL, "--cluster", str(cluster), "--tp", "8", "--pp", "2", "--dp", "1", "--global-batch", "8"]
    expected = {None: ("437.5", "41.62", "333", "1.32 B"), "6": ("437.5", "41.625", "333", "1.31572 B"),
                "3": ("438", "41.6", "333", "1.32 B")}
    for precision, (intra, share, nic, parameters) in expected.items():
        assert main([*argv, *(["--precision", precision] if precision else [])]) == 0
        lines = _meta_lines(capsys.readouterr().out)
        assert lines["intra_server"] == f"{intra} GB/s per direction per GPU (nvlink), NVLS off"
        assert lines["inter_server"].startswith(f"8 NICs × {nic} Gb/s per server, 1 GPU per NIC: {share} GB/s "), \
            lines["inter_server"]
        assert lines["parameters"] == f"{parameters} (1,315,723,264)"
    assert main([*argv, "--precision", "6", "--format", "csv"]) == 0  # csv: its own line, the table's digits not
    header, first = capsys.readouterr().out.splitlines()[:2]
    import csv
    row = dict(zip(next(csv.reader([header])), next(csv.reader([first])), strict=True))
    assert row["intra_server"].startswith("437.5 GB/s") and "41.62 GB/s" in row["inter_server"]


def test_search_precision_reaches_the_same_lines(tmp_path, capsys):
    """The search's table prints train's two network lines and its parameter count: the same digits rule."""
    cluster = tmp_path / "odd.toml"
    cluster.write_text(ODD_LINKS)
    assert main(["search", MODEL, "--cluster", str(cluster), *SMALL_SEARCH, "--precision", "6"]) == 0
    lines = _meta_lines(capsys.readouterr().out)
    assert lines["intra_server"].startswith("437.5 GB/s") and lines["parameters"] == "1.31572 B (1,315,723,264)"
    assert "41.625 GB/s" in lines["inter_server"]


# 3. the sweep report says what its configurations are counted over: each method's run in the intro, the
# configurations the methods share in each network's headline


def test_the_sweep_report_says_what_each_count_of_configurations_counts():
    """Failed before: the intro said "12 configurations" (rows: each method's run counted) and the headline "fastest in
    2 of 2 configurations" (each counted once for all methods), the same word for two counts. By hand: 2 networks ×
    2 processor counts × 3 methods = 12 rows; per network and method 2 configurations, a fastest in both."""
    import html
    import re

    import pandas as pd

    from archsim.report.headline import headline
    from archsim.report.sweep_report import model_intro

    results = pd.DataFrame([{"network": net, "only": "all", "mode": "exact", "rows": 32, "cols": 32, "dataflow": "ws",
                             "batch": 8, "processors": p, "method": m, "speedup": speed}
                            for net in ("n1", "n2") for p in (2, 3)
                            for m, speed in (("a", 3.0), ("b", 2.0), ("c", 1.0))])
    def text(markup: str) -> str:
        return " ".join(html.unescape(re.sub(r"<[^>]+>", "", markup)).split())

    intro = text(model_intro(results, "out/results.csv", None))
    assert intro.startswith("12 configurations over 2 networks and 3 methods from out/results.csv: n1, n2; a, b, c.")
    shown = text(headline(results))
    assert shown.count("a is fastest in 2 of 2 configurations per method") == 2  # one block per network
    one = text(model_intro(results[(results.network == "n1") & (results.method == "a")], "r.csv", None))
    assert one.startswith("2 configurations over 1 network and 1 method from r.csv: n1; a.")
