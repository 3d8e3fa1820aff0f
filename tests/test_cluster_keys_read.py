"""Every key of a cluster file is read by the commands that accept it: ``intra_server_gbps`` prices the
in-server links of ``archsim train`` and ``search`` (docs/formats.md, "Cluster (TOML)")."""

from dataclasses import replace
from pathlib import Path

import pytest

from archsim import api
from archsim.devices.device import catalog_device
from archsim.errors import InputError
from archsim.links import fabric_bytes_per_s
from archsim.spp.cluster_document import read_cluster_document
from archsim.spp.topology import build_topology
from archsim.training.cluster_file import load_gpu_cluster, single_node
from archsim.training.parallel import Parallelism

ROOT = Path(__file__).resolve().parents[1]
CLUSTERS = ROOT / "configs" / "clusters"
GPT = ROOT / "configs" / "transformers" / "gpt_1024h_24l.json"
A100_NODE = (CLUSTERS / "a100_node.toml").read_text()


def _node(tmp_path: Path, gbps: str, gpu: str = "a100-80gb") -> Path:
    """configs/clusters/a100_node.toml with its in-server figure (and GPU) replaced."""
    assert "intra_server_gbps = 4800" in A100_NODE and 'gpu = "a100-80gb"' in A100_NODE
    path = tmp_path / f"node_{gpu}_{''.join(c for c in gbps if c.isdigit() or c == '_')}.toml"
    path.write_text(A100_NODE.replace("intra_server_gbps = 4800", f"intra_server_gbps = {gbps}")
                    .replace('gpu = "a100-80gb"', f'gpu = "{gpu}"'))
    return path


def _seconds(cluster, **par) -> float:
    result, _ = api.train(str(GPT), cluster=cluster, global_batch=16, micro_batch=1, **par)
    return result.iteration_seconds


def test_half_the_fabric_makes_a_tp8_iteration_slower(tmp_path):
    """A PCIe-class box stating half the A100's NVLink (2400 Gb/s) pays more for TP 8's all-reduces:
    the stated figure was once ignored (the same seconds as 4800)."""
    full = _seconds(str(_node(tmp_path, "4800")), tp=8)
    half = _seconds(str(_node(tmp_path, "2400")), tp=8)
    assert half > full
    tp_full = load_gpu_cluster(_node(tmp_path, "4800")).machine(Parallelism(8, 1, 1, 16, 1)).links.tp
    tp_half = load_gpu_cluster(_node(tmp_path, "2400")).machine(Parallelism(8, 1, 1, 16, 1)).links.tp
    assert tp_half.bandwidth == pytest.approx(tp_full.bandwidth / 2, rel=1e-12)


def test_the_stated_figure_is_both_directions():
    """4800 Gb/s (600 GB/s, both directions: the DGX A100 datasheet's figure) is the A100's catalog NVLink of
    300 GB/s per direction; 7200 (900 GB/s) the H100's of 450."""
    assert fabric_bytes_per_s(4800) == 300e9 == catalog_device("a100-80gb").nvlink_bytes_per_s
    assert fabric_bytes_per_s(7200) == 450e9 == catalog_device("h100-80gb-sxm").nvlink_bytes_per_s


SHIPPED = sorted(p.name for p in CLUSTERS.glob("*.toml") if "gpu =" in p.read_text() or "device =" in p.read_text())
# A paper's testbed states the paper's in-server figure, not its board's: the SPP 1080 Ti testbed keeps the 128 Gbps
# PCIe (16 GB/s a direction) the paper states for its other testbed, written both directions together (256, as the
# key is read; the array-priced testbed_1080ti.toml states the same), so both files plan on one figure. Each is
# checked against that statement instead (test_a_paper_testbed_states_the_papers_figure).
PAPER_TESTBEDS = {"testbed_1080ti_gpu.toml": 256.0, "testbed_v100_gpu.toml": 256.0}
BOARD_FIGURE = [n for n in SHIPPED if n not in PAPER_TESTBEDS]


@pytest.mark.parametrize("name", BOARD_FIGURE)
def test_shipped_clusters_state_their_devices_own_link(name):
    """Every shipped cluster's stated in-server figure is its device's own NVLink (or link) figure, so
    reading it moves no shipped prediction: each rank's machine equals the one priced with the device's
    figure (the route taken before the key was read)."""
    cluster = load_gpu_cluster(CLUSTERS / name)
    devices = cluster.servers or (cluster.gpu,)
    assert len(cluster.fabrics) == len(devices)
    for fabric, device in zip(cluster.fabrics, devices, strict=True):
        assert fabric == device.nvlink_bytes_per_s
    catalog = replace(cluster, fabrics=())
    per_server = cluster.gpus_per_server
    for tp in sorted({1, 2, per_server}):
        if cluster.gpus % tp:
            continue
        par = Parallelism(tp, 1, cluster.gpus // tp, cluster.gpus // tp, 1)
        if cluster.problem(par) is None:
            assert cluster.rank_machines(par) == catalog.rank_machines(par)


def test_a100_node_predicts_the_catalog_nodes_seconds():
    """``archsim train`` on the shipped a100_node.toml equals the one-server catalog A100 node (no cluster
    file: the catalog NVLink path)."""
    shipped = _seconds(str(CLUSTERS / "a100_node.toml"), tp=8)
    assert shipped == _seconds(single_node("a100-80gb", 8), tp=8)


def test_a_dgx1_v100s_rings_take_the_stated_figure(tmp_path):
    """On a DGX-1 of V100s (no NVSwitch) a group's bandwidth is its NVLink rings × one link's share of
    the stated figure: 2400 Gb/s is the catalog's six links of 25 GB/s; 1200 halves every ring."""
    par = Parallelism(8, 1, 1, 16, 1)
    stated = load_gpu_cluster(_node(tmp_path, "2400", "v100-32gb")).machine(par).links.tp
    halved = load_gpu_cluster(_node(tmp_path, "1200", "v100-32gb")).machine(par).links.tp
    catalog = single_node("v100-32gb", 8).machine(par).links.tp
    assert stated == catalog
    assert halved.bandwidth == pytest.approx(catalog.bandwidth / 2, rel=1e-12)


def test_a_pcie_cards_stated_figure_is_its_fabric(tmp_path):
    """A board without NVLink talks over its server's fabric as stated (here 512 Gb/s: PCIe 4.0 ×16,
    32 GB/s per direction), not the catalog's PCIe figure whatever the file says."""
    par = Parallelism(4, 1, 1, 16, 1)
    link = load_gpu_cluster(_node(tmp_path, "256", "a100-80gb-pcie")).machine(par).links.tp
    assert link.name == "pcie" and link.bandwidth == 16e9


def test_a_range_is_refused_by_train(tmp_path):
    """plan draws a [low, high] in-server range; an iteration needs one figure (as inter_server_gbps)."""
    with pytest.raises(InputError) as err:
        load_gpu_cluster(_node(tmp_path, "[2400, 4800]"))
    assert err.value.where.field == "servers[1].intra_server_gbps"


def test_servers_of_different_fabrics_are_costed_rank_by_rank(tmp_path):
    """Two A100 servers, the second stating half the NVLink: each pipeline rank's TP group is priced at
    its own server's figure (the cluster counts as heterogeneous, as servers of two GPU types do)."""
    text = A100_NODE + A100_NODE[A100_NODE.index("[[servers]]"):].replace(
        "intra_server_gbps = 4800", "intra_server_gbps = 2400")
    path = tmp_path / "two.toml"
    path.write_text(text)
    cluster = load_gpu_cluster(path)
    assert cluster.heterogeneous
    first, second = cluster.rank_machines(Parallelism(8, 2, 1, 16, 1))
    assert second.links.tp.bandwidth == pytest.approx(first.links.tp.bandwidth / 2, rel=1e-12)


def _cli(capsys, *argv) -> str:
    from archsim.cli import main

    assert main(list(argv)) == 0
    return capsys.readouterr().err


def test_network_superseded_keys_are_noted_once(tmp_path, capsys):
    """With a [network] table train prices the NICs from it: an inter_server_gbps saying otherwise is
    noted on stderr once; the shipped SuperPOD file, whose keys agree with its table, gets no note."""
    shipped = CLUSTERS / "dgx_a100_superpod.toml"
    argv = ("train", str(GPT), "--tp", "8", "--global-batch", "16", "--format", "json")
    assert _cli(capsys, *argv[:2], "--cluster", str(shipped), *argv[2:]).splitlines() == [  # the layout's only
        ("archsim train: note: this layout uses 8 of the cluster's 1120 GPUs (tp 8 × pp 1 × dp 1); set "
        "--tp/--pp/--dp, or archsim search to choose")]
    other = tmp_path / "superpod.toml"
    other.write_text(shipped.read_text().replace("inter_server_gbps = 200", "inter_server_gbps = 400"))
    err = _cli(capsys, *argv[:2], "--cluster", str(other), *argv[2:])
    assert err.count("note: inter_server_gbps = 400 is not read: [network] gives the NICs") == 1


def test_plan_notes_the_keys_only_train_and_search_read(tmp_path, capsys):
    """plan reads a cluster's links only (its [network] table among them): the servers' price and watts are noted
    on stderr, once each; a file without them gets no such note."""
    plain = tmp_path / "plain.toml"
    plain.write_text('[cluster]\ninter_server_gbps = 100\n[[servers]]\ncount = 2\ngpus = 2\nintra_server_gbps = 128\n')
    argv = ("plan", "layerpipe_sample", "--microbatches", "4", "--format", "json", "--cluster")
    assert "is not read by plan" not in _cli(capsys, *argv, str(plain))
    full = tmp_path / "full.toml"
    full.write_text(plain.read_text() + "price_per_gpu_hour = 2.0\ngpu_watts = 300\n"
                    "[network]\nnics_per_server = 2\nnic_gbps = 100\n")
    err = _cli(capsys, *argv, str(full))
    for key in ("[[servers]] price_per_gpu_hour", "[[servers]] gpu_watts"):
        assert err.count(f"note: {key} is not read by plan") == 1, key
    assert "[network]" not in err


@pytest.mark.long
def test_train_notes_a_servers_price_once(tmp_path, capsys):
    """A server's price_per_gpu_hour prices search's cost objective only: train says so on stderr once
    (after its run, so a refused run still writes one error line); search reads it and says nothing."""
    priced = tmp_path / "priced.toml"
    priced.write_text(A100_NODE + "price_per_gpu_hour = 2.0\n")
    err = _cli(capsys, "train", str(GPT), "--cluster", str(priced), "--tp", "8", "--global-batch", "16",
               "--format", "json")
    assert err.count("note: price_per_gpu_hour is not read by train") == 1
    assert "price_per_gpu_hour" not in _cli(capsys, "search", str(GPT), "--cluster", str(priced), "--global-batch",
                                            "16", "--gpus", "8", "--top", "1", "--format", "json")


# the files whose pair matrices fit a test: Llama 3's 16,384 GPUs would draw two 2 GiB arrays per file
PAIRS_PRICED = [n for n in BOARD_FIGURE if "device =" not in (CLUSTERS / n).read_text()
                and n != "llama3_h100_2048_servers.toml"]


@pytest.mark.parametrize("name", PAIRS_PRICED)
def test_a_catalog_gpus_server_may_omit_the_figure(tmp_path, name):
    """Beside gpu = NAME the in-server figure defaults to the board's NVLink: every shipped GPU cluster with
    its intra_server_gbps lines removed plans on the same bandwidths and trains on the same machines."""
    import re

    stated = CLUSTERS / name
    bare = tmp_path / name
    bare.write_text(re.sub(r"(?m)^intra_server_gbps = .*\n", "", stated.read_text()))
    assert "intra_server_gbps" not in bare.read_text()
    one, other = load_gpu_cluster(bare), load_gpu_cluster(stated)
    def links(path):  # the bandwidth matrix build_topology draws (plan's; the files above, up to 4096 GPUs)
        return build_topology(read_cluster_document(path), file=str(path), max_devices=4096,
                              network_links=True).bandwidth

    assert (links(bare) == links(stated)).all()
    assert one.fabrics == other.fabrics
    tp = one.gpus_per_server
    par = Parallelism(tp, 1, one.gpus // tp, one.gpus // tp, 1)
    if one.problem(par) is None:
        assert one.rank_machines(par) == other.rank_machines(par)


def test_a_server_naming_no_chip_must_state_the_figure(tmp_path):
    """A server naming neither a catalog GPU nor a device file has no link of its own to default to: refused,
    naming the key (a device file's server takes the file's [links] intra_gbps: test_device_link_default.py)."""
    path = tmp_path / "chips.toml"
    path.write_text('[cluster]\nname = "x"\n[[servers]]\ngpus = 2\n')
    with pytest.raises(InputError) as err:
        load_gpu_cluster(path)
    assert err.value.where.field == "intra_server_gbps"


@pytest.mark.parametrize("name", sorted(PAPER_TESTBEDS))
def test_a_paper_testbed_states_the_papers_figure(name):
    """A paper testbed's in-server figure is the paper's (Gbit/s), on both of its files, and train reads it as
    every figure is read (both directions together: 256 Gbit/s is the paper's 128 Gbps, 16 GB/s, per direction)."""
    import tomllib

    stated = tomllib.loads((CLUSTERS / name).read_text())["servers"][0]["intra_server_gbps"]
    array_priced = tomllib.loads((CLUSTERS / name.replace("_gpu", "")).read_text())["servers"][0]["intra_server_gbps"]
    assert stated == array_priced == PAPER_TESTBEDS[name]
    assert load_gpu_cluster(CLUSTERS / name).fabrics[0] == PAPER_TESTBEDS[name] * 1e9 / 8 / 2 == 16e9
