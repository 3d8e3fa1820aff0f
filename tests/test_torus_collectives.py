"""Collectives on a torus of point-to-point links (``[[servers]] torus``): the rings a group spans, the
dimension-ordered algorithm's closed forms on tiny tori counted by hand, the bound a switch of the same per-chip
link bandwidth sets, and the cluster file's key as train and ``archsim.collective`` read it."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import archsim
from archsim.collectives import KINDS, LinkClass, collective_algorithm, collective_seconds
from archsim.errors import InputError
from archsim.torus import torus_rings

ROOT = Path(__file__).resolve().parents[1]
DEVICE = ROOT / "configs" / "devices" / "tpu_v4_like.toml"
L = 50e9  # one link, bytes/s per direction
ALPHA = 1e-6  # one ring step, s


def _torus(rings: tuple[int, ...], alpha: float = ALPHA) -> LinkClass:
    """A group on ``rings``, each over two links of L (ideal: no launch or copy cost)."""
    return LinkClass("torus", L, 1.0, alpha, 0.0, torus=rings)


@pytest.mark.parametrize(("dims", "members", "rings"), [
    ((2, 2), range(4), (2, 2)),            # the whole 2 × 2: both dimensions
    ((4,), range(4), (4,)),                # a ring of 4
    ((2, 2, 2), range(8), (2, 2, 2)),
    ((4, 4, 4), range(4), (4,)),           # consecutive chips fill the first dimension
    ((4, 4, 4), range(16), (4, 4)),
    ((4, 4, 4), range(1, 64, 4), (4, 4)),  # stride 4 from chip 1: x = 1, the whole y and z
    ((4, 4, 4), range(6), (6,)),           # 6 of a 4 × 4 × 4: no whole set of dimensions, one embedded ring
    ((4, 4, 4), range(2), (2,)),           # 2 of a dimension of 4: embedded
    ((4, 4, 4), range(8), (8,)),           # a 4 × 2 block: the second dimension not whole
    ((4, 4, 4), (5,), ()),                 # a lone chip
])
def test_rings_a_group_spans(dims, members, rings):
    assert torus_rings(dims, members) == rings


def test_a_chip_outside_the_torus_is_refused():
    with pytest.raises(InputError, match="torus"):
        torus_rings((2, 2), (0, 4))


S = 1e9


@pytest.mark.parametrize(("kind", "rings", "expected"), [
    # 2 × 2 all-reduce: reduce-scatter on the first pair (S/2 over 2 links: S/(4L)), on the second (S/4: S/(8L)),
    # the all-gathers the same back: 3S/(4L); 4 steps
    ("all-reduce", (2, 2), 3 * S / (4 * L) + 4 * ALPHA),
    # a ring of 4: 2 · 3/4 · S over the two links (one each way, 2L): 3S/(4L); 2 · 3 steps
    ("all-reduce", (4,), 3 * S / (4 * L) + 6 * ALPHA),
    # 2 × 2 × 2: 2 · 7/8 · S over 2L, one step each way per dimension
    ("all-reduce", (2, 2, 2), 7 * S / (8 * L) + 6 * ALPHA),
    ("reduce-scatter", (2, 2, 2), 7 * S / (16 * L) + 3 * ALPHA),
    ("all-gather", (2, 2), 3 * S / (8 * L) + 2 * ALPHA),
    # all-to-all on 2 × 2 × 2: each dimension sends half the buffer to the neighbour over both links, S/(4L)
    ("all-to-all", (2, 2, 2), 3 * S / (4 * L) + 3 * ALPHA),
    # all-to-all on a ring of 4: one way, each chip sends S/4 one hop and S/8 (half the far chip's) two hops:
    # 4 · (S/4 + 2 · S/8) link-bytes over 4 links, S/2 on each at L
    ("all-to-all", (4,), S / (2 * L) + 3 * ALPHA),
    ("p2p", (2, 2), S / L),  # one link
])
def test_closed_forms_on_tiny_tori(kind, rings, expected):
    n = math.prod(rings)
    assert float(collective_seconds(kind, S, n, _torus(rings))) == pytest.approx(expected, rel=1e-12)


def test_a_sub_group_runs_one_embedded_ring():
    """n not the rings' (a caller's sub-group): one ring of n at 2L, 2(n − 1) steps."""
    assert float(collective_seconds("all-reduce", S, 3, _torus((2, 2)))) == pytest.approx(
        2 * 2 / 3 * S / (2 * L) + 4 * ALPHA, rel=1e-12)


SHAPES = [(2, 2), (4,), (3,), (2, 2, 2), (4, 4, 4), (3, 5), (8, 4, 2)]


@pytest.mark.parametrize("dims", SHAPES)
def test_a_torus_never_beats_a_switch_of_its_links(dims):
    """The property: a group on a torus of D dimensions (2D links of L per chip) is never faster than the switched
    model (:func:`collective_seconds` on a LinkClass, ring or tree, whichever is faster) at the chip's whole link
    bandwidth 2D·L, for every kind, group and size, with no step latency — every chip must send at least
    2(n − 1)/n · S for an all-reduce ((n − 1)/n · S for the others; all of S for a send) and can send at most 2D·L,
    which the switch gives it, so a torus can only lose bandwidth. With step latency too for an all-reduce: its
    Σ 2(kᵢ − 1) steps are at least the tree's 2⌈log₂ n⌉, and its wire D times the ring's (a ring when D = 1). (The
    other kinds' dimension-ordered steps, Σ (kᵢ − 1), are fewer than a flat ring's n − 1: no bound there.)"""
    d = sum(k > 1 for k in dims)
    switch = LinkClass("switch", 2 * d * L, 1.0, ALPHA, 0.0)
    switch_wire = LinkClass("switch", 2 * d * L, 1.0, 0.0, 0.0)
    sizes = np.logspace(0, 10, 41)
    volume = math.prod(dims)
    groups = {tuple(range(volume)), tuple(range(min(dims[0], volume))), tuple(range(min(6, volume))),
              tuple(range(0, volume, dims[0]))}
    for members in groups:
        rings = torus_rings(dims, members)
        if not rings:
            continue
        n = len(members)
        for kind in KINDS:
            wire = collective_seconds(kind, sizes, n, _torus(rings, alpha=0.0))
            assert np.all(wire >= collective_seconds(kind, sizes, n, switch_wire) * (1 - 1e-12)), (kind, members)
        assert np.all(collective_seconds("all-reduce", sizes, n, _torus(rings))
                      >= collective_seconds("all-reduce", sizes, n, switch) * (1 - 1e-12)), members


def _cluster(tmp_path: Path, gpus: int, torus: str | None, intra: int = 4800) -> str:
    path = tmp_path / "torus.toml"
    line = f"torus = {torus}\n" if torus is not None else ""
    path.write_text(f'[cluster]\nname = "t"\n\n[[servers]]\ngpus = {gpus}\nintra_server_gbps = {intra}\n'
                    f'device = "{DEVICE.as_posix()}"\n{line}')
    return str(path)


def test_the_cluster_files_torus_prices_train_groups(tmp_path):
    """4 TPU-v4-like chips as a 2 × 2 torus: a link is the chip's 4800 Gbit/s (300 GB/s a direction) over its six
    links, 50 GB/s; the all-reduce of 4 is the 2 × 2 closed form, 3S/(4L) and 4 steps of the device's α (it states
    none: the fitted NVLink step, archsim.links.A100_NVLINK), no launch (its ideal ring)."""
    from archsim.links import A100_NVLINK

    cost = archsim.collective("all-reduce", S, cluster=_cluster(tmp_path, 4, "[2, 2]"), gpus=4)
    assert cost.seconds == pytest.approx(3 * S / (4 * L) + 4 * A100_NVLINK["alpha_s"], rel=1e-9)
    switched = archsim.collective("all-reduce", S, cluster=_cluster(tmp_path, 4, None), gpus=4)
    # the switched ring at 300 GB/s: 2 · 3/4 · S / 300e9 and 6 steps
    assert switched.seconds == pytest.approx(1.5 * S / 300e9 + 6 * A100_NVLINK["alpha_s"], rel=1e-9)


@pytest.mark.parametrize(("gpus", "torus", "says"), [
    (16, "[4, 2]", "holds 8 chips"),
    (16, "[2, 2, 2, 2]", "4 dimensions of more than one chip"),
    (4, '"2x2"', "list of chips per dimension"),
    (4, "[2, 2.0]", "list of chips per dimension"),
    (4, "[4, 0]", "list of chips per dimension"),
])
def test_a_bad_torus_is_refused_in_one_line(tmp_path, gpus, torus, says):
    with pytest.raises(InputError, match="torus") as refused:
        archsim.collective("all-reduce", S, cluster=_cluster(tmp_path, gpus, torus), gpus=2)
    assert says in str(refused.value) and "\n" not in str(refused.value)


def test_plan_reads_the_torus_as_train_does(tmp_path):
    """One cluster model: plan's pair of two chips of a 2 × 2 torus sends on one link (300 GB/s over six, L), as
    train's hop; under --links exact a 4-chip group's all-reduce runs on the class train gives its TP group, the
    2 × 2 closed form. The switched file's pair keeps the whole 300 GB/s."""
    from archsim.links import A100_NVLINK
    from archsim.plan_cluster import read_plan_cluster
    from archsim.training.cluster_file import load_gpu_cluster
    from archsim.training.parallel import Parallelism

    path = _cluster(tmp_path, 4, "[2, 2]")
    paper, _, (_, notes) = read_plan_cluster(path, None)
    assert paper.bandwidth[0, 1] == paper.bandwidth[0, 3] == pytest.approx(L, rel=1e-12)
    assert not any("torus" in line for line in notes)
    exact = read_plan_cluster(path, None, links="exact")[0]
    planned = exact.links.allreduce_link(range(4), exact.bandwidth)
    trained = load_gpu_cluster(path).machine(Parallelism(tp=4)).links.tp
    assert planned == trained and planned.torus == (2, 2)
    assert float(collective_seconds("all-reduce", S, 4, planned)) == pytest.approx(
        3 * S / (4 * L) + 4 * A100_NVLINK["alpha_s"], rel=1e-9)
    assert read_plan_cluster(_cluster(tmp_path, 4, None), None)[0].bandwidth[0, 1] == pytest.approx(300e9)


def test_the_shipped_torus_slices_dp_allreduce(tmp_path):
    """configs/clusters/tpu_v4_like_torus.toml: DP 64 over the whole 4 × 4 × 4 runs its three rings, so its
    all-reduce of S is 2 · 63/64 · S over 2 links of 50 GB/s and 2 · 3 · 3 = 18 steps (the switched slice, the
    same file without the key: the tree's 2 · S / 300 GB/s and 12 steps, faster)."""
    from archsim.links import A100_NVLINK

    shipped = str(ROOT / "configs" / "clusters" / "tpu_v4_like_torus.toml")
    cost = archsim.collective("all-reduce", S, cluster=shipped, gpus=64)
    assert cost.seconds == pytest.approx(2 * 63 / 64 * S / (2 * L) + 18 * A100_NVLINK["alpha_s"], rel=1e-9)
    switched = archsim.collective("all-reduce", S, cluster=_cluster(tmp_path, 64, None), gpus=64)
    assert switched.seconds == pytest.approx(2 * S / 300e9 + 12 * A100_NVLINK["alpha_s"], rel=1e-9)


def test_a_torus_of_unnamed_chips_is_refused(tmp_path):
    """A torus's link is its chip's fabric over the chip's links: a table naming no chip has none to divide."""
    from archsim.plan_cluster import read_plan_cluster

    path = tmp_path / "bare.toml"
    path.write_text("[cluster]\n[[servers]]\ngpus = 4\nintra_server_gbps = 128\ntorus = [2, 2]\n")
    with pytest.raises(InputError, match="name a gpu or device"):
        read_plan_cluster(str(path), None)


def test_trains_meta_names_the_torus(tmp_path):
    """train's intra_server says the torus and its link (300 GB/s over six: 50), and says nothing of one elsewhere."""
    from archsim.training.cluster_file import load_gpu_cluster
    from archsim.training.parallel import Parallelism
    from archsim.training.table_lines import network_lines
    from archsim.training.train_json import network_meta

    par = Parallelism(tp=4)
    cluster = load_gpu_cluster(_cluster(tmp_path, 4, "[2, 2]"))
    meta = network_meta(cluster, par, cluster.laid_out(par))
    assert meta["intra_server"]["torus"] == [2, 2] and meta["intra_server"]["link_gb_per_s"] == pytest.approx(50)
    assert network_lines(meta)["intra_server"].endswith("torus 2 × 2 of 50 GB/s links")
    plain = load_gpu_cluster(_cluster(tmp_path, 4, None))
    assert "torus" not in network_meta(plain, par, plain.laid_out(par))["intra_server"]


@pytest.mark.parametrize("kind", ["all-reduce", "all-gather", "reduce-scatter", "all-to-all"])
@pytest.mark.parametrize("nbytes", [1e3, 1e9])
def test_the_algorithm_named_on_a_torus_is_its_rings(kind, nbytes):
    """torus_seconds prices only rings on a torus, so the named algorithm is ``torus-ring`` at every size (a 1 kB
    all-reduce was once named ``tree``, the switched model's choice, which the torus never runs); a send stays ``p2p``."""
    link = _torus((4, 4))
    assert collective_algorithm(kind, nbytes, 16, link) == "torus-ring"
    assert collective_algorithm("p2p", nbytes, 16, link) == "p2p"
    assert collective_algorithm(kind, nbytes, 1, link) == "none"
