"""One NCCL collective priced on a cluster file's GPUs, for ``archsim collective`` and :func:`archsim.collective` alike: the
group laid out as ``archsim train`` lays out a TP or DP group of that shape, priced on the links train gives it
(:meth:`archsim.training.cluster.GpuCluster.machine`; the collectives themselves: :func:`archsim.collectives.
collective_seconds`). Nothing here computes a time of its own. Seconds; GB/s = 10⁹ bytes/s.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class CollectiveCost:
    """One collective: ``kind`` of ``nbytes`` (nccl-tests' size: an all-reduce's or all-to-all's buffer on each GPU,
    an all-gather's gathered output, a reduce-scatter's input) over ``gpus`` GPUs, ``per_server`` of them in each
    of ``servers`` servers; ``seconds``; ``algorithm_gbytes_per_s`` = nbytes / seconds and ``bus_gbytes_per_s``
    (nccl-tests' busBw: :func:`~archsim.collective_units.bus_bandwidth_factor` times it), GB/s = 10⁹ bytes/s;
    ``crosses_leaves``: the group spans leaf switches of an oversubscribed fabric (its traffic out of a leaf through
    their uplinks, :meth:`archsim.network.ServerNetwork.uplinks`: whether that slows it depends on its kind);
    ``nccl_algorithm``: the algorithm ``seconds`` is priced on, NCCL's choice by size
    (:func:`~archsim.collectives.collective_algorithm`: an all-reduce's ``ring``, ``tree`` or ``nvls``, ``ring`` for
    an all-gather or a reduce-scatter, ``pairwise`` for an all-to-all)."""

    kind: str
    nbytes: float
    gpus: int
    per_server: int
    servers: int
    seconds: float
    algorithm_gbytes_per_s: float
    bus_gbytes_per_s: float
    crosses_leaves: bool
    nccl_algorithm: str

    def to_dict(self) -> dict:
        return asdict(self)


def _layout(cluster, gpus: int, per_server: int | None):
    """The layout whose group is ``gpus`` GPUs, ``per_server`` in each server, and which of its groups that is:
    TP's (consecutive GPUs: inside one server, or filling whole servers) where ``per_server`` is None or TP's own
    count there, else DP's of one GPU in every ``server GPUs / per_server`` (TP that stride, filling each server)."""
    from archsim.console import setting
    from archsim.errors import InputError
    from archsim.training.parallel import Parallelism

    size = cluster.starts[1]  # the first server's GPUs (a mixed cluster: train refuses what does not lay out)
    consecutive = min(gpus, size)
    if per_server is None or per_server == consecutive:
        if gpus > size and gpus % size:
            raise InputError(f"a group of {gpus} GPUs in a row over servers of {size} holds part of a server: give a "
                             f"multiple of {size}, or {setting('per-server')}", field="gpus")
        return Parallelism(tp=gpus), "tp", consecutive
    if per_server > size or size % per_server:
        raise InputError(f"{setting('per-server', per_server)} GPUs of a group in each server must divide the "
                         f"server's {size} GPUs", field="per_server")
    if gpus % per_server:
        raise InputError(f"a group of {gpus} GPUs holds {setting('per-server', per_server)} in each of its servers: "
                         f"{per_server} must divide {gpus}", field="per_server")
    servers, have = gpus // per_server, len(cluster.starts) - 1  # at least 2: per_server = gpus is TP's, above
    if servers > have:
        raise InputError(f"a group of {gpus} GPUs with {setting('per-server', per_server)} in each server spans {servers} "
                         f"servers, the cluster has {have}", field="per_server")
    return Parallelism(tp=size // per_server, dp=gpus, global_batch=gpus), "dp", per_server


def price_collective(kind: str, size: float, loaded, n: int, wanted: int | None) -> CollectiveCost:
    """One ``kind`` collective of ``size`` bytes over ``n`` GPUs of the cluster ``loaded`` (a
    :class:`~archsim.training.cluster.GpuCluster`), ``wanted`` of them in each server (None: in a row, as a TP
    group lies): :func:`archsim.collective`'s figures, the settings already read (``kind`` one of the four)."""
    from archsim.collective_units import bus_bandwidth_factor
    from archsim.collectives import collective_algorithm, collective_seconds
    from archsim.errors import InputError
    from archsim.training.group_links import crosses_leaves, file_servers

    if loaded.gpus < 2:
        raise InputError("the cluster has one GPU: no collective to price", field="cluster")
    if not 2 <= n <= loaded.gpus:
        raise InputError(f"expected a GPU count (one GPU has no collective) in 2…{loaded.gpus}, got {n}", field="gpus")
    par, role, held = _layout(loaded, n, wanted)
    try:
        loaded.laid_out(par)  # train's refusal of a group it would not run (servers of different sizes or GPU types)
    except InputError as refused:
        raise InputError(f"archsim train would not run this group: {refused.message}", field="gpus") from None
    machine = loaded.machine(par)
    link = machine.links.tp if role == "tp" else machine.links.dp
    seconds = float(collective_seconds(kind, size, n, link))
    members = range(n) if role == "tp" else range(0, par.tp * n, par.tp)  # the group of GPU 0
    servers = file_servers(loaded, members)
    leaves = crosses_leaves(loaded, members)  # train's rule for a rank's groups
    algorithm = size / seconds / 1e9
    return CollectiveCost(kind, size, n, held, len(servers), seconds, algorithm,
                          bus_bandwidth_factor(kind, n) * algorithm, leaves, collective_algorithm(kind, size, n, link))


__all__ = ["CollectiveCost", "price_collective"]
