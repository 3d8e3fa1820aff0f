"""``archsim.collective``: what one NCCL collective of a size costs on a cluster file's GPUs, priced on the links
``archsim train`` gives a group of that shape there (:meth:`archsim.training.cluster.GpuCluster.machine`; the
collectives themselves: :func:`archsim.collectives.collective_seconds`). Nothing here computes a time of its own.
Re-exported by :mod:`archsim.api`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from archsim.api_keywords import check_choice, gpu_cluster, positive_int, speaks_keywords
from archsim.console import library_note

if TYPE_CHECKING:
    from archsim.api_types import Cluster, Count, Number

GROUP_KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")


@dataclass(frozen=True)
class CollectiveCost:
    """One collective: ``kind`` of ``nbytes`` (nccl-tests' size: an all-reduce's or all-to-all's buffer on each GPU,
    an all-gather's gathered output, a reduce-scatter's input) over ``gpus`` GPUs, ``per_server`` of them in each
    of ``servers`` servers; ``seconds``; ``algorithm_gbytes_per_s`` = nbytes / seconds and ``bus_gbytes_per_s``
    (nccl-tests' busBw: :func:`~archsim.collectives.bus_bandwidth_factor` times it), GB/s = 10⁹ bytes/s;
    ``crosses_leaves``: the group spans leaf switches of an oversubscribed fabric (its traffic out of a leaf through
    their uplinks, :meth:`archsim.network.Network.uplinks`: whether that slows it depends on its kind)."""

    kind: str
    nbytes: float
    gpus: int
    per_server: int
    servers: int
    seconds: float
    algorithm_gbytes_per_s: float
    bus_gbytes_per_s: float
    crosses_leaves: bool

    def to_dict(self) -> dict:
        return asdict(self)


def _bytes(value: object) -> float:
    """``nbytes``: a finite number of bytes above 0 (an int, a float such as 1e9, or its text)."""
    from archsim.errors import InputError
    from archsim.value_parsers import parse_float

    try:
        return parse_float(value, low=0.0, high=2.0**53, low_open=True, what="a number of bytes")
    except ValueError as exc:
        raise InputError(str(exc), field="nbytes") from None


def _layout(cluster, gpus: int, per_server: int | None):
    """The layout whose group is ``gpus`` GPUs, ``per_server`` in each server, and which of its groups that is:
    TP's (consecutive GPUs: inside one server, or filling whole servers) where ``per_server`` is None or TP's own
    count there, else DP's of one GPU in every ``server GPUs / per_server`` (TP that stride, filling each server)."""
    from archsim.errors import InputError
    from archsim.training.parallel import Parallelism

    size = cluster.starts[1]  # the first server's GPUs (a mixed cluster: train refuses what does not lay out)
    consecutive = min(gpus, size)
    if per_server is None or per_server == consecutive:
        if gpus > size and gpus % size:
            raise InputError(f"a group of {gpus} GPUs in a row over servers of {size} holds part of a server: give a "
                             f"multiple of {size}, or per_server", field="gpus")
        return Parallelism(tp=gpus), "tp", consecutive
    if per_server > size or size % per_server:
        raise InputError(f"per_server = {per_server} GPUs of a group in each server must divide the server's {size} "
                         f"GPUs", field="per_server")
    if gpus % per_server:
        raise InputError(f"a group of {gpus} GPUs holds per_server = {per_server} in each of its servers: "
                         f"{per_server} must divide {gpus}", field="per_server")
    servers, have = gpus // per_server, len(cluster.starts) - 1  # at least 2: per_server = gpus is TP's, above
    if servers > have:
        raise InputError(f"a group of {gpus} GPUs with per_server = {per_server} in each server spans {servers} "
                         f"servers, the cluster has {have}", field="per_server")
    return Parallelism(tp=size // per_server, dp=gpus, global_batch=gpus), "dp", per_server


@speaks_keywords
def collective(kind: str, nbytes: Number, *, cluster: Cluster, gpus: Count,
               per_server: Count | None = None) -> CollectiveCost:
    """What one ``kind`` collective (``all-reduce``, ``all-gather``, ``reduce-scatter``, ``all-to-all``) of
    ``nbytes`` costs over ``gpus`` GPUs of ``cluster`` (a cluster TOML's path or a loaded
    :class:`~archsim.training.cluster.GpuCluster`), priced on the links ``archsim train`` gives such a group:
    ``per_server`` None, GPUs in a row as a TP group lies (inside one server, or filling whole servers); a count
    below a server's GPUs that divides them, a DP-like group of that many GPUs in each of ``gpus / per_server``
    servers (1: one GPU per server, every rail at once, DP's group when TP fills a server). As in a training run,
    every group of that shape runs at once: GPUs that share a NIC share it. Notes and warnings on the cluster file
    are warned as ``archsim.train`` warns them. Returns a :class:`CollectiveCost` (seconds; GB/s = 10⁹ bytes/s)."""
    from archsim.collectives import bus_bandwidth_factor, collective_seconds
    from archsim.errors import InputError
    from archsim.training.group_links import crosses_leaves, file_servers

    check_choice(kind, GROUP_KINDS, "kind")
    size = _bytes(nbytes)
    loaded = gpu_cluster(cluster)
    if loaded.gpus < 2:
        raise InputError("the cluster has one GPU: no collective to price", field="cluster")
    n = positive_int(gpus, "gpus", low=2, high=loaded.gpus, what="a GPU count (one GPU has no collective)")
    wanted = None if per_server is None else positive_int(per_server, "per_server")
    par, role, held = _layout(loaded, n, wanted)
    try:
        loaded.laid_out(par)  # train's refusal of a group it would not run (servers of different sizes or GPU types)
    except InputError as refused:
        raise InputError(f"archsim train would not run this group: {refused.message}", field="gpus") from None
    for line in (*loaded.warnings, *loaded.unread):
        library_note(line, stacklevel=3)
    machine = loaded.machine(par)
    link = machine.links.tp if role == "tp" else machine.links.dp
    seconds = float(collective_seconds(kind, size, n, link))
    members = range(n) if role == "tp" else range(0, par.tp * n, par.tp)  # the group of GPU 0
    servers = file_servers(loaded, members)
    leaves = crosses_leaves(loaded, members)  # train's rule for a rank's groups
    algorithm = size / seconds / 1e9
    return CollectiveCost(kind, size, n, held, len(servers), seconds, algorithm,
                          bus_bandwidth_factor(kind, n) * algorithm, leaves)


__all__ = ["GROUP_KINDS", "CollectiveCost", "collective"]
