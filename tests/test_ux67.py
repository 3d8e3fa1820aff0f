"""Consistency of search, train and sweep output: search's meta names the network as train's does, train's
``--precision`` reaches its network and parameter lines, the sweep report says what its configurations are
counted over, and ``--placement planned`` tells servers under different leaves of an oversubscribed fabric apart."""

from __future__ import annotations

import itertools
import json

import pytest
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


# 4. --placement planned tells alike servers under different leaves of an oversubscribed fabric apart

TINY = '[transformer]\nname = "tiny"\nfamily = "gpt"\nlayers = 8\nhidden = 256\nheads = 8\nvocab = 1000\nseq = 256\n'


def _leafy(tmp_path, kinds, over: float = 2, per_leaf: int = 2, gpus: int = 2) -> str:
    """A cluster of one server per entry of ``kinds`` (``gpus`` GPUs each), ``per_leaf`` servers per leaf, uplinks
    ``over``:1 oversubscribed, 100 Gb/s NICs, one per GPU."""
    text = (f'[cluster]\nname = "leafy"\n[network]\nnics_per_server = {gpus}\nnic_gbps = 100\n'
            f'servers_per_leaf = {per_leaf}\noversubscription = {over}\n')
    text += "".join(f'[[servers]]\ncount = 1\ngpus = {gpus}\ngpu = "{kind}"\n' for kind in kinds)
    path = tmp_path / "leafy.toml"
    path.write_text(text)
    return str(path)


def _train_meta(argv: list[str], capsys) -> dict:
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["meta"]


@pytest.mark.parametrize("kinds", [("h100",) * 4,
                                   pytest.param(("h100", "a100-80gb", "h100", "a100-80gb"), marks=pytest.mark.long)])
def test_planned_placement_is_the_best_of_all_24_orders_under_oversubscribed_leaves(tmp_path, capsys, kinds):
    """Failed before: alike servers were interchangeable whatever their leaf, so on four H100 servers the file's order
    was the only one tried (0.07119 s), and on H100, A100 | H100, A100 each GPU's servers in the file's order; both
    missed 0.07118 s. TP 2 · PP 4 · DP 1, a server per rank: in the file's order the tied embedding's all-reduce
    joins servers 0 and 3 across the spine; ``0,2,3,1`` keeps it under leaf 0 (two hops cross instead of one). With
    overlapped pipeline sends, as it was found: under megatron's blocking 1F1B sends the second crossing hop's wait
    costs what the embedding saves, and the file's order ties the best."""
    model = tmp_path / "tiny.toml"
    model.write_text(TINY)
    argv = ["train", str(model), "--cluster", _leafy(tmp_path, kinds), "--tp", "2", "--pp", "4", "--dp", "1",
            "--global-batch", "8", "--p2p", "overlapped"]
    seconds = {order: _train_meta([*argv, "--placement", ",".join(map(str, order))], capsys)["iteration_seconds"]
               for order in itertools.permutations(range(4))}
    planned = _train_meta([*argv, "--placement", "planned"], capsys)
    assert planned["iteration_seconds"] == min(seconds.values()) < seconds[(0, 1, 2, 3)]
    chosen = tuple(int(n) for n in planned["placement"].split(","))
    assert seconds[chosen] == planned["iteration_seconds"]
    assert "embedding" not in planned["inter_server"]["leaves_crossed_by"]


def test_the_orders_counted_by_kind_and_leaf_and_the_file_order_first(tmp_path):
    """By hand: four servers of one kind under two leaves give 4!/(2!·2!) = 6 orders, of two kinds alternating over
    the leaves (each server its own class) 4! = 24, each halved as the two leaves hold alike servers (an order and the
    one that swaps the leaves whole lay groups out alike: 3 and 12); without oversubscription the leaves are no class:
    1 and 4!/(2!·2!) = 6, as before."""
    from archsim.training.cluster_file import load_gpu_cluster
    from archsim.training.placement import order_count, orders_note, server_orders

    for kinds, over, count in ((("h100",) * 4, 2, 3), (("h100", "a100-80gb") * 2, 2, 12), (("h100",) * 4, 1, 1),
                               (("h100", "a100-80gb") * 2, 1, 6)):
        cluster = load_gpu_cluster(_leafy(tmp_path, kinds, over))
        orders = server_orders(cluster)
        assert order_count(cluster) == len(orders) == len(set(orders)) == count
        assert orders[0] == (0, 1, 2, 3) and orders_note(cluster) is None


def test_leaves_that_pass_the_cap_are_tried_by_kind_and_said(tmp_path, capsys):
    """Sixteen alike servers, four per leaf: told apart by leaf 16!/(4!)⁴ = 63,063,000 orders, 2,627,625 once the 4!
    swaps of the four alike leaves are counted once, above the cap of 5,040,
    so the one order of one kind is tried, as before, and one note on stderr says so (it said nothing)."""
    model = tmp_path / "tiny.toml"
    model.write_text(TINY)
    argv = ["train", str(model), "--cluster", _leafy(tmp_path, ("h100",) * 16, per_leaf=4, gpus=1), "--tp", "1",
            "--pp", "2", "--dp", "1", "--global-batch", "8", "--placement", "planned"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    said = [line for line in err.splitlines() if "2,627,625" in line]
    assert len(said) == 1 and "tried 1 server order," in said[0] and "more than 5,040" in said[0], err
    assert main([*argv[:-1], "file"]) == 0
    assert "2,627,625" not in capsys.readouterr().err
    import archsim  # the library says it as a UserWarning, in its keywords
    with pytest.warns(UserWarning) as caught:
        archsim.train(str(model), cluster=argv[3], pp=2, global_batch=8, placement="planned")
    said = [str(w.message) for w in caught if "2,627,625" in str(w.message)]
    assert len(said) == 1 and said[0].startswith("placement='planned' tried 1 server order,")


def test_a_search_too_large_for_its_planned_orders_names_the_placement(tmp_path, capsys):
    """Four H100 and four A100 servers: 8!/(4!·4!) = 70 orders of their kinds, so the default grid (16,128
    configurations) times 70 passes the search's cap; the refusal names ``--placement`` (its flags alone could not tell
    what grew it). (Eight alike servers four per leaf run instead, on their kind's one order: test_planned_leaves.py.)"""
    cluster = tmp_path / "mixed.toml"
    cluster.write_text('[cluster]\nname = "mixed"\ninter_server_gbps = 400\n[[servers]]\ncount = 4\ngpus = 8\ngpu = "h100"\n'
                       '[[servers]]\ncount = 4\ngpus = 8\ngpu = "a100-80gb"\n')
    assert main(["search", MODEL, "--cluster", str(cluster), "--global-batch", "64", "--placement", "planned"]) == 2
    err = capsys.readouterr().err
    assert "1,128,960 configurations" in err and "server orders)" in err and err.rstrip().endswith(
        "or one server order (--placement file or I,J,…) where --placement planned tries 70"), err
