"""The one registry of planners. Every planner reads a profile
(:class:`~archsim.partition.profile.LayerProfile`) and a cluster
(:class:`~archsim.spp.topology.Topology`; ``Topology.flat(P)`` for P processors) and returns the
one plan type (:class:`~archsim.partition.result.Partition`): stages, replicas, devices and
per-stage costs in the profile's unit.

A planner has up to two faces:

* ``partition(profile, cluster, **options)`` — stages and their costs, no schedule: what
  ``archsim pipeline``, sweeps and reports compare (slowest stage = time per iteration);
* ``on_cluster(profile, cluster, microbatches)`` — the plan laid on the cluster's devices and
  scheduled by SPP's PE over its real links, the makespan in the plan: what ``archsim plan``
  compares (SPP and the baselines of its paper).

A new planner is one entry here (and its module under ``archsim/partition/`` or ``archsim/spp/``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from archsim.errors import InputError
from archsim.validate import did_you_mean

if TYPE_CHECKING:  # the planners load when one runs: the registry's names (--method's choices) need none
    from archsim.partition.profile import LayerProfile
    from archsim.partition.result import Partition
    from archsim.spp.topology import Topology


@dataclass(frozen=True)
class Planner:
    """A planner's name (the CLI's ``--method``), one line on what it does, and its faces."""

    name: str
    summary: str
    partition: Callable[..., Partition] | None = None  # (profile, cluster, **options)
    on_cluster: Callable[..., Partition] | None = None  # (profile, cluster, microbatches, **options)
    options: tuple[str, ...] = ()  # the keywords ``partition``'s ``**options`` may hold, so a misspelt one is refused


def _server_link(cluster: Topology) -> float | None:
    """The bandwidth of a one-server cluster's links (a server's devices share its one fabric, in
    cluster files and flat views); None: free links, one device, or several servers."""
    if len(set(cluster.servers)) != 1 or cluster.devices < 2:
        return None
    link = float(cluster.bandwidth[0, 1])
    return None if math.isinf(link) else link


def _pipedream(profile: LayerProfile, cluster: Topology, **options) -> Partition:
    """PipeDream's optimizer on the cluster's levels: one server is its short form at the server's
    link bandwidth (free links: transfers ignored); servers × devices its two levels
    (:meth:`Topology.uniform_levels`)."""
    from archsim.partition.pipedream import pipedream_partition
    from archsim.partition.pipedream_tables import Level

    if len(set(cluster.servers)) == 1:
        return pipedream_partition(profile, cluster.devices, bandwidth=_server_link(cluster), **options)
    hierarchy = tuple(Level(machines, bandwidth) for machines, bandwidth in cluster.uniform_levels())
    return pipedream_partition(profile, hierarchy=hierarchy, **options)


def _layerpipe(profile: LayerProfile, cluster: Topology, **options) -> Partition:
    from archsim.partition.layerpipe import layerpipe_partition

    return layerpipe_partition(profile, cluster.devices, **options)


def _gpipe(profile: LayerProfile, cluster: Topology, **options) -> Partition:
    from archsim.partition.gpipe import gpipe_partition

    return gpipe_partition(profile, cluster.devices, bandwidth=_server_link(cluster), **options)


def _ooo(profile: LayerProfile, cluster: Topology) -> Partition:
    from archsim.partition.ooo_allocation import ooo_partition

    return ooo_partition(profile, cluster.devices)


# SPP and its baselines schedule with the simulator (numba) and order devices with networkx: they
# load when a cluster planner runs, so `archsim pipeline` and sweeps start without them.
def _spp(profile: LayerProfile, cluster: Topology, microbatches: int, **options) -> Partition:
    from archsim.spp.plan import spp

    return spp(profile, cluster, microbatches, **options).partition


def _baseline(method: str) -> Callable[..., Partition]:
    def plan(profile: LayerProfile, cluster: Topology, microbatches: int, config: str = "archsim") -> Partition:
        """``config``: "archsim", or "paper" for the SPP paper's configuration (archsim.spp.baselines)."""
        from archsim.spp.baselines import baseline

        return baseline(method, profile, cluster, microbatches, config)

    return plan


PLANNERS: dict[str, Planner] = {planner.name: planner for planner in (
    Planner("layerpipe", "LayerPipe's Algorithm 1: balanced stages, δ borrowed and split by operational parallelism "
                         "(on a cluster: its stages on consecutive devices, δ whole, SPP's synchronous PE schedule)",
            partition=_layerpipe, options=("alpha", "axes", "borrow", "coster", "max_rounds", "search"),
            on_cluster=_baseline("layerpipe")),
    Planner("pipedream", "PipeDream's optimizer over the cluster's levels (one server: one level; on a cluster: "
                         "its plan on consecutive GPUs, SPP's synchronous PE schedule)",
            partition=_pipedream, options=("options", "replication", "use_fewer_machines"),
            on_cluster=_baseline("pipedream")),
    Planner("gpipe", "GPipe: consecutive layers per device (pipeline: equal layer counts; on a cluster: balanced "
                     "compute, GPipe's fill-drain order)",
            partition=_gpipe, options=("balance",),
            on_cluster=_baseline("gpipe")),
    Planner("ooo", "the out-of-order backprop paper's allocation: ⌈L/P⌉ consecutive layers per device (3/3/3/1)",
            partition=_ooo),
    Planner("spp", "SPP: RDO device order, PRM partition/replication/mapping, PE schedule", on_cluster=_spp),
    Planner("dp", "data parallel: every device the whole model, one ring all-reduce", on_cluster=_baseline("dp")),
    Planner("pipedream-prm", "the SPP paper's synchronous PipeDream: PRM over devices in order, PE schedule",
            on_cluster=_baseline("pipedream-prm")),
    Planner("hetpipe", "HetPipe: one pipeline per server, then a ring all-reduce across servers",
            on_cluster=_baseline("hetpipe")),
)}

PARTITIONERS: tuple[str, ...] = tuple(name for name, planner in PLANNERS.items() if planner.partition)
CLUSTER_PLANNERS: tuple[str, ...] = tuple(name for name, planner in PLANNERS.items() if planner.on_cluster)


def partition(profile: LayerProfile, processors: int | Topology, method: str, *, bandwidth: float | None = None,
              **options) -> Partition:
    """Plan ``profile`` on a cluster, or on ``processors`` identical devices joined at ``bandwidth``
    (bytes per time unit; None: free links), by the partitioner named ``method`` (the CLI's
    ``--method``); ``options`` go to it (LayerPipe: ``alpha``, ``axes``, ``coster``)."""
    from archsim.spp.topology import Topology

    planner = PLANNERS.get(method)
    if planner is None or planner.partition is None:
        raise InputError(f"unknown method {method!r}{did_you_mean(str(method), PARTITIONERS)}; choose one of "
                         f"{', '.join(PARTITIONERS)}", field="method")
    if isinstance(processors, Topology):
        check_units(profile, processors)
        if bandwidth is not None:
            raise InputError("a cluster has its own links: give bandwidth only with a processor count",
                             field="bandwidth")
        cluster = processors
    else:
        cluster = Topology.flat(processors, bandwidth)
    return planner.partition(profile, cluster, **options)



def idle_processors_note(plan: Partition, processors: int) -> str | None:
    """The line ``archsim pipeline`` (on stderr) and :func:`archsim.pipeline` (a UserWarning) say when ``plan``
    has fewer stages than ``processors``: a gpipe plan of fewer layers, Algorithm 1 with nothing left to
    borrow. Why: the output's stage count alone was easy to miss beside the processors asked for."""
    return idle_line(f"{plan.method}'s plan", len(plan.stages), processors)


# Fewer counts whose Algorithm 1 plans :func:`fewer_processors_note` compares: all of 1 … 63 took 0.31 s on resnet101
# and 0.33 s on bert_large (one core, 2026-12-03), about one pipeline run; every count below 512 took 2.2 s on
# resnet101 and 2.9 s on bert_large (2026-12-05) against the plan's own few ms, so above this count the plan is
# compared with the counts up to it alone (a note said then is as true; a slowdown against a count in between is
# not looked for).
FEWER_CHECK_MAX = 64


def fewer_processors_note(profile: LayerProfile, plan: Partition, processors: int | Topology, **options) -> str | None:
    """The line ``archsim pipeline`` (on stderr) and :func:`archsim.pipeline` (a UserWarning) say when LayerPipe's
    Algorithm 1 on ``processors`` is slower than its plan on fewer, which the same run could have chosen: it fills
    every processor it is given, and where one layer's δ dominates a plan of more processors can pace slower (the
    sample network in paper mode: speedup 2.405 on 4, 2.997 on 3). The fewest processors of the best speedup are
    named. ``options``: the partitioner's, as the plan was made; None for other methods or a cluster. Above
    :data:`FEWER_CHECK_MAX` processors only the counts up to it are compared (the others' plans would no longer be
    cheap); the note then says so."""
    if plan.method != "layerpipe" or not isinstance(processors, int) or not 1 < processors:
        return None
    from archsim.partition.coster import DeltaCoster
    from archsim.progress import progress

    counts = range(1, min(processors, FEWER_CHECK_MAX + 1))
    coster = options.get("coster") or DeltaCoster.of(profile)
    stepped = coster is not None and coster.engine == "cycle"  # seconds a plan (its δ splits stepped): drawn at once
    costs = []
    with progress(len(counts), "layerpipe on fewer processors", "plan", delay=0.0 if stepped else 1.0) as bar:
        for count in counts:  # the analytic engine's plans take ms each: a bar only past a second
            costs.append(partition(profile, count, "layerpipe", **options).max_stage_cost)
            bar.update()
    best = min(costs)  # index() below: the fewest processors that reach it
    if not plan.max_stage_cost > best * (1 + 1e-12):  # float sums' last bits are no slowdown
        return None
    from archsim.console import setting

    fewer, single = costs.index(best) + 1, float(profile.total.sum())
    return (f"layerpipe's plan on {processors} processors is slower than on {fewer} (speedup "
            f"{plan.speedup(single):.4g} against {single / best:.4g}): Algorithm 1 uses every processor it is given, "
            f"and its plan need not gain from more; {setting('processors', fewer)} runs faster"
            f"{f' (counts up to {FEWER_CHECK_MAX} compared)' if processors > FEWER_CHECK_MAX + 1 else ''}")


def idle_line(who: str, used: int, processors: int) -> str | None:
    """``WHO uses USED of the P processors; P − USED stay idle`` (``1 stays idle``), or None when every processor is
    used: the one wording of :func:`idle_processors_note` and of ``schedule``'s out-of-order allocations."""
    idle = processors - used
    if idle <= 0:
        return None
    return f"{who} uses {used} of the {processors} processors; {idle} {'stays' if idle == 1 else 'stay'} idle"


def partitions(profile: LayerProfile, processors: Sequence[int], method: str, **options) -> list[Partition]:
    """:func:`partition` for each processor count, in order; PipeDream's optimizer solves its
    table once for them all (:func:`~archsim.partition.pipedream.pipedream_partitions`)."""
    if method == "pipedream":
        from archsim.partition.pipedream import pipedream_partitions

        return pipedream_partitions(profile, processors, **options)
    return [partition(profile, count, method, **options) for count in processors]


def plan_on_cluster(profile: LayerProfile, cluster: Topology, method: str, microbatches: int,
                    **options) -> Partition:
    """The plan of ``method`` on ``cluster``'s devices, scheduled over its links: ``.makespan``."""
    planner = PLANNERS.get(method)
    if planner is None or planner.on_cluster is None:
        raise InputError(f"unknown method {method!r}{did_you_mean(str(method), CLUSTER_PLANNERS)}; choose one of "
                         f"{', '.join(CLUSTER_PLANNERS)}", field="method")
    from archsim.spp.topology import Topology

    if not isinstance(cluster, Topology):
        raise InputError(f"expected a Topology (archsim.spp.topology.load_topology_file(PATH), or "
                         f"Topology.flat({cluster!r}) for processors on one server), got {type(cluster).__name__}",
                         field="cluster")
    from archsim.value_parsers import parse_int, whole_number

    try:  # refused as the micro-batch count, not later as "at least one stage and one micro-batch" of 'stages'
        count = parse_int(whole_number(microbatches), what="a positive integer")
    except ValueError as exc:
        raise InputError(str(exc), field="microbatches") from None
    check_units(profile, cluster)
    return planner.on_cluster(profile, cluster, count, **options)


def check_units(profile: LayerProfile, cluster: Topology) -> None:
    """Refuse a profile whose time unit is not the cluster's links' (a profile in cycles on a cluster file's
    bytes per second). Why: the plan added compute cycles to transfer seconds and called the sum cycles."""
    if cluster.unit is not None and profile.unit != cluster.unit:
        raise InputError(f"the profile's costs are in {profile.unit} but the cluster's links are in bytes per "
                         f"{cluster.unit.rstrip('s')}: price the layers in {cluster.unit} (archsim.profile with "
                         f"clock_ghz, as archsim plan's --clock-ghz)", field="profile")


__all__ = ["CLUSTER_PLANNERS", "PARTITIONERS", "PLANNERS", "Planner", "check_units", "fewer_processors_note", "idle_line", "idle_processors_note", "partition", "partitions",
           "plan_on_cluster"]
