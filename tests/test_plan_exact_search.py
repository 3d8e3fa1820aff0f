"""plan --links exact: SPP's search ranks partitions with the price the plan reports (train's all-reduce, not the
paper's A), and an all-reduce over servers is train's (:class:`archsim.collectives.Spanning`: NVLink inside each
server, the group's share of its NICs between)."""

import itertools
from pathlib import Path

import pytest

from archsim.collectives import Spanning, collective_seconds
from archsim.partition import profile_from_costs
from archsim.spp.cluster_document import read_cluster_document
from archsim.spp.plan import spp, stage_plans
from archsim.spp.prm import PRMPlan, plan_value, prm, prm_tables
from archsim.spp.topology import build_topology
from archsim.training.cluster_file import load_gpu_cluster, named_devices
from archsim.training.parallel import Parallelism

CLUSTERS = Path(__file__).resolve().parents[1] / "configs" / "clusters"
ONE_SERVER = {"cluster": {"name": "one"}, "servers": [{"gpus": 4, "intra_server_gbps": 4800, "gpu": "a100-80gb"}]}
MICROBATCHES = 4


def _exact(spec: dict):
    return build_topology(spec, links="exact", devices=named_devices(spec, CLUSTERS, "x.toml"))


def _profile():
    """Three layers of 10, 30 and 10 µs forward (twice that back); the last holds 100 MB of parameters, so
    replicating it pays an all-reduce whose launch, per-step latencies and copy cost the paper's A omits."""
    forward = [1e-5, 3e-5, 1e-5]
    return profile_from_costs(["a", "b", "c"], forward, [0.0] * 3, [2 * f for f in forward],
                              activation_bytes=[1e5, 1e3, 1e5], delta_bytes=[1e5, 1e3, 1e5],
                              weight_bytes=[1e5, 1e3, 1e8])


def _objective(profile, plan: PRMPlan, topology, microbatches: int) -> float:
    """𝒲 of a plan under the exact price, from the plan's own per-micro-batch stage and channel times (what
    the reported plan is scheduled with): max of M·(forward + backward) + all-reduce and M·(both sends)."""
    stages = stage_plans(profile, plan, topology.bandwidth, topology.latency, topology.links)
    terms = [microbatches * (s.forward + s.backward) + s.allreduce for s in stages]
    terms += [microbatches * (s.comm_forward + s.comm_backward) for s in stages[:-1]]
    return max(terms)


def _every_plan(layers: int, order: tuple[int, ...], stages: int):
    """Every partition of ``layers`` into ``stages`` consecutive stages on consecutive blocks of ``order``
    covering all of it (PRM's plans)."""
    for cuts in itertools.combinations(range(1, layers), stages - 1):
        bounds = (0, *cuts, layers)
        for splits in itertools.combinations(range(1, len(order)), stages - 1):
            ends = (0, *splits, len(order))
            yield PRMPlan(0.0, tuple(itertools.pairwise(bounds)), tuple(b - a for a, b in itertools.pairwise(ends)),
                          tuple(order[a:b] for a, b in itertools.pairwise(ends)))


def test_the_search_ranks_plans_with_the_price_it_reports():
    """Brute force over every plan of each stage count, priced exactly: SPP's table value of each stage count is
    the least, and the plan it returns is priced at it. Ranked by the paper's A (bytes at η·B alone), the
    two-stage search put the 100 MB layer on two replicas (0.633 ms); exactly, three before it and that layer
    alone cost 0.423 ms."""
    profile, topology = _profile(), _exact(ONE_SERVER)
    result = spp(profile, topology, MICROBATCHES)
    for count, value, _ in result.by_stage_count:
        brute = min(_objective(profile, plan, topology, MICROBATCHES)
                    for plan in _every_plan(len(profile), result.order, count))
        assert value == pytest.approx(brute, rel=1e-9)
    two = next(value for count, value, _ in result.by_stage_count if count == 2)
    # By hand (docs/architecture.md, plan --links exact; SPP's channel c = M·d / (r′·r·b)): the server's
    # 4800 Gbit/s both ways is B = 300e9 B/s a direction, priced at η = 0.998 with α₀ = 52.7 µs a send and
    # γ = 1.8 ps/B (archsim.links.A100_NVLINK). a and b on three GPUs, c alone: each micro-batch sends b's
    # 1 kB activation and c's 100 kB δ across the cut, the three senders' pairs at once through c's GPU's one
    # link in (PairLinks.channel_bandwidth): 4·101e3 / (η·B) = 1.35 µs (the paper's split, 4·101e3 / (3·1·η·B),
    # gave each pair the whole link) plus 4·2 sends·α₀ = 421.6 µs. The stages stay below it: 4·(40 + 80 µs)/3 = 160 µs plus the ring all-reduce of a's and
    # b's 101 kB on 3 GPUs (α₀ + 2·2 steps·3.15 µs + (4/3)·101e3/(η·B) + γ·101e3 = 65.9 µs); c 4·30 µs.
    eta_b, launch, step, copy = 0.998 * 4800e9 / 8 / 2, 52.7e-6, 3.15e-6, 1.8e-12
    channel = MICROBATCHES * (1e3 + 1e5) / eta_b + MICROBATCHES * 2 * launch
    allreduce = launch + 2 * 2 * step + (4 / 3) * 101e3 / eta_b + copy * 101e3
    assert max(MICROBATCHES * 1.2e-4 / 3 + allreduce, MICROBATCHES * 3e-5) < channel
    assert channel == pytest.approx(4.229493653974616e-4, rel=1e-9)
    assert two == pytest.approx(channel, rel=1e-12)
    chosen = _objective(profile, result.plan, topology, MICROBATCHES)
    assert chosen == pytest.approx(result.plan.value, rel=1e-9)


def test_the_tables_and_the_recurrence_agree_under_exact_links():
    """The numba tables and the brute-force recurrence (:func:`prm`) rank with the same exact price; the paper's
    model (no link classes) keeps its own."""
    profile = _profile()
    for spec in (ONE_SERVER, TWO_SERVERS_PER_GPU):
        topology = _exact(spec)
        order = tuple(range(topology.devices))
        for count, plan in enumerate(prm_tables(profile, order, topology.bandwidth, MICROBATCHES, 3,
                                                topology.latency, topology.links), start=1):
            brute = prm(profile, order, topology.bandwidth, MICROBATCHES, count, topology.latency, topology.links)
            assert plan.value == pytest.approx(brute.value, rel=1e-12)
            assert plan.value == pytest.approx(plan_value(profile, MICROBATCHES, plan.stages, plan.devices,
                                                          topology.bandwidth, topology.latency, topology.links),
                                               rel=1e-12)


def test_paper_links_keep_the_papers_search_value():
    """The default model's tables are the paper's recurrence, A = 2(k − 1)·Σα / (k·min b): one stage on all four
    GPUs is M·Σ(p^f + p^b)/4 + 2·3·Σα / (4·300 GB/s)."""
    profile = _profile()
    topology = build_topology(ONE_SERVER)
    one = prm_tables(profile, (0, 1, 2, 3), topology.bandwidth, MICROBATCHES, 1)[0]
    work = MICROBATCHES * 3 * (1e-5 + 3e-5 + 1e-5) / 4
    assert one.value == pytest.approx(work + 2 * 3 * (1e5 + 1e3 + 1e8) / (4 * 300e9), rel=1e-12)


# two servers of two A100s (NVSwitch, 300 GB/s a direction), a 200 Gbit/s (25 GB/s) NIC for each GPU
TWO_SERVERS_PER_GPU = {"cluster": {"name": "two", "inter_server_gbps": 200, "inter_server_link": "per_gpu_pair"},
                       "servers": [{"count": 2, "gpus": 2, "intra_server_gbps": 4800, "gpu": "a100-80gb"}]}
WEIGHTS = 40e6
TWO_BY_TWO = ('[cluster]\nname = "two"\ninter_server_gbps = 200\ninter_server_link = "{link}"\n'
              '[[servers]]\ncount = 2\ngpus = 2\nintra_server_gbps = 4800\ngpu = "a100-80gb"\n')


def test_an_allreduce_over_two_servers_is_trains_spanning_group():
    """A stage on all four GPUs of two servers: n = 4, k = 2 a server, m = 2 servers. NCCL's ring (Spanning) pays
    the launch α₀ = 52.7 µs, 2(n − m) = 4 NVLink steps of 3.15 µs and 2(m − 1) = 2 NIC steps of 6.3 µs, and the
    slower of NVLink's part, γS + (k − 1)/k · 2(n − 1)/n · S / (0.998 · 300 GB/s) = 0.1722 ms, and the network's,
    2(n − 1)/n · S / (0.96 · 50 GB/s) = 1.25 ms, at the group's two NICs of 25 GB/s — 1.3279 ms in all (the tree is
    1.738 ms). The slowest pair's class (one NIC, 6 NIC steps, γS) priced it at 2.6625 ms before."""
    topology = _exact(TWO_SERVERS_PER_GPU)
    plan = PRMPlan(0.0, ((0, 1),), (4,), ((0, 1, 2, 3),))
    (stage,) = stage_plans(profile_from_costs(["a"], [1e-3], [0.0], [2e-3], activation_bytes=[1], delta_bytes=[1],
                                              weight_bytes=[WEIGHTS]), plan, topology.bandwidth, topology.latency,
                           topology.links)
    nvlink = 1.80e-12 * WEIGHTS + 0.5 * 2 * 3 / 4 * WEIGHTS / (0.998 * 300e9)
    network = 2 * 3 / 4 * WEIGHTS / (0.96 * 2 * 25e9)
    hand = 52.7e-6 + 4 * 3.15e-6 + 2 * 6.3e-6 + max(nvlink, network)
    assert stage.allreduce == pytest.approx(hand, rel=1e-12)
    assert hand == pytest.approx(1.3279e-3, rel=1e-12)
    link = topology.links.allreduce_link((0, 1, 2, 3), topology.bandwidth)
    assert isinstance(link, Spanning) and link.per_server == 2


RAILS = ('[cluster]\nname = "rails"\n[network]\nnics_per_server = 2\nnic_gbps = 200\ngpus_per_nic = 2\n'
         '[[servers]]\ncount = 2\ngpus = 4\nintra_server_gbps = 4800\ngpu = "a100-80gb"\n')


@pytest.mark.parametrize("text, tp, devices", [
    (TWO_BY_TWO.format(link="shared"), 1, (0, 1, 2, 3)),
    (TWO_BY_TWO.format(link="per_gpu_pair"), 1, (0, 1, 2, 3)),
    (RAILS, 1, tuple(range(8))),  # each server's two NICs, two GPUs on each: all four GPUs' shares
    (RAILS, 2, (0, 2, 4, 6)),  # two GPUs a server, one on each NIC: a GPU's share of each
])
def test_a_spanning_stage_costs_what_trains_data_parallel_group_costs(tmp_path, text, tp, devices):
    """The cluster as train reads it: its DP group over the same GPUs (TP innermost) all-reduces the same bytes in
    the same seconds — on a shared server NIC (each GPU its half), on a NIC per GPU, and on a [network] table's
    rails."""
    path = tmp_path / "cluster.toml"
    path.write_text(text)
    dp = load_gpu_cluster(path).machine(Parallelism(tp, 1, len(devices), len(devices), 1)).links.dp
    assert isinstance(dp, Spanning)
    train = float(collective_seconds("all-reduce", WEIGHTS, len(devices), dp))
    spec = read_cluster_document(path)
    topology = build_topology(spec, links="exact", devices=named_devices(spec, tmp_path, str(path)))
    plan = PRMPlan(0.0, ((0, 1),), (len(devices),), (devices,))
    profile = profile_from_costs(["a"], [1e-3], [0.0], [2e-3], activation_bytes=[1], delta_bytes=[1],
                                 weight_bytes=[WEIGHTS])
    (stage,) = stage_plans(profile, plan, topology.bandwidth, topology.latency, topology.links)
    assert stage.allreduce == pytest.approx(train, rel=1e-12)


def test_a_group_with_one_gpu_in_each_server_takes_that_gpus_share():
    """GPUs 1 and 2 (one in each server) on a shared 25 GB/s server NIC: each GPU's half of it, 12.5 GB/s; no
    NVLink step (k = 1), the lone GPU's NVLink class beside it."""
    spec = {**TWO_SERVERS_PER_GPU, "cluster": {"name": "two", "inter_server_gbps": 200}}
    topology = _exact(spec)
    link = topology.links.allreduce_link((1, 2), topology.bandwidth)
    assert isinstance(link, Spanning) and link.per_server == 1
    assert link.inter.bandwidth == pytest.approx(25e9 / 2, rel=1e-12)
    seconds = float(collective_seconds("all-reduce", WEIGHTS, 2, link))
    ring = 52.7e-6 + 2 * 6.3e-6 + max(1.80e-12 * WEIGHTS, WEIGHTS / (0.96 * 12.5e9))
    assert seconds == pytest.approx(ring, rel=1e-12)


TPU = (Path(__file__).resolve().parents[1] / "configs" / "devices" / "tpu_v4_like.toml").read_text()


def _chip(folder: Path, name: str, latency_us: float) -> None:
    """The TPU-like chip stating a NIC step of ``latency_us`` (µs), not the fitted 6.3."""
    text = TPU.replace("intra_gbps = 300", f"intra_gbps = 300\ninter_node_latency_us = {latency_us}")
    (folder / name).write_text(text.replace('name = "TPU v4-like"', f'name = "{name}"'))


@pytest.mark.parametrize("latencies", [(50, 50), (50, 20), (20, 50), (20, 20, 50)])
def test_a_spanning_stage_pays_the_devices_own_nic_latency_as_train_does(tmp_path, latencies):
    """Servers of two chips whose device files state their NIC step (50 or 20 µs, against the fitted 6.3): the
    DP group's all-reduce over all their chips, as train prices it (each NIC step at the slowest server's stated
    latency, 50 µs), is the exact plan's one-stage all-reduce. The plan priced every NIC step at 6.3 µs before."""
    tables = ""
    for server, latency in enumerate(latencies):
        _chip(tmp_path, f"chip{server}.toml", latency)
        tables += f'[[servers]]\ngpus = 2\nintra_server_gbps = 4800\ndevice = "chip{server}.toml"\n'
    path = tmp_path / "cluster.toml"
    path.write_text(f'[cluster]\nname = "two"\ninter_server_gbps = 200\n{tables}')
    gpus = 2 * len(latencies)
    dp = load_gpu_cluster(path).machine(Parallelism(1, 1, gpus, gpus, 1)).links.dp
    assert isinstance(dp, Spanning) and dp.inter.alpha_s == pytest.approx(50e-6, rel=1e-12)
    train = float(collective_seconds("all-reduce", WEIGHTS, gpus, dp))
    spec = read_cluster_document(path)
    topology = build_topology(spec, links="exact", devices=named_devices(spec, tmp_path, str(path)))
    profile = profile_from_costs(["a"], [1e-3], [0.0], [2e-3], activation_bytes=[1], delta_bytes=[1],
                                 weight_bytes=[WEIGHTS])
    (stage,) = stage_plans(profile, PRMPlan(0.0, ((0, 1),), (gpus,), (tuple(range(gpus)),)), topology.bandwidth,
                           topology.latency, topology.links)
    assert stage.allreduce == pytest.approx(train, rel=1e-12)
