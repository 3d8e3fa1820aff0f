"""``archsim.collective``: what one NCCL collective of a size costs on a cluster file's GPUs, priced on the links
``archsim train`` gives a group of that shape there (:meth:`archsim.training.cluster.GpuCluster.machine`; the
collectives themselves: :func:`archsim.collectives.collective_seconds`). Nothing here computes a time of its own.
Re-exported by :mod:`archsim.api`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from archsim.api_keywords import check_choice, gpu_cluster, positive_int, speaks_keywords
from archsim.choices.collectives import GROUP_KINDS  # the kinds' one home, the command's choices
from archsim.collective_run import CollectiveCost, price_collective
from archsim.console import library_note

if TYPE_CHECKING:
    from archsim.api_types import Cluster
    from archsim.count_types import Count, Number


def _bytes(value: object) -> float:
    """``nbytes``: a whole number of bytes above 0 (an int, an integral float such as 1e9, or its text, ``1GiB`` or
    nccl-tests' ``1G`` too)."""
    from archsim.collective_units import parse_nbytes
    from archsim.errors import InputError

    try:
        return parse_nbytes(value)
    except ValueError as exc:
        raise InputError(str(exc), field="nbytes") from None


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
    are warned as ``archsim.train`` warns them. Returns a :class:`CollectiveCost` (seconds; GB/s = 10⁹ bytes/s;
    :func:`archsim.collective_run.price_collective`'s, which ``archsim collective`` runs per size)."""
    from archsim.errors import InputError

    check_choice(kind, GROUP_KINDS, "kind")
    size = _bytes(nbytes)
    loaded = gpu_cluster(cluster)
    if loaded.gpus < 2:
        raise InputError("the cluster has one GPU: no collective to price", field="cluster")
    n = positive_int(gpus, "gpus", low=2, high=loaded.gpus, what="a GPU count (one GPU has no collective)")
    wanted = None if per_server is None else positive_int(per_server, "per_server")
    cost = price_collective(kind, size, loaded, n, wanted)
    for line in (*loaded.warnings, *loaded.unread):
        library_note(line, stacklevel=3)
    return cost


__all__ = ["collective"]
