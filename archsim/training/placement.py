"""Which servers run which pipeline ranks: ``--placement file|planned|I,J,…`` of ``archsim search`` and
``archsim train``.

GPUs are numbered server by server and a pipeline rank takes the next TP × DP of them (Megatron's
order), so an order of the servers fixes each rank's GPU type, links and memory. ``file`` keeps the
cluster file's order; ``I,J,…`` gives one (indices of the file's servers, from 0, ``count``
expanded); ``planned`` tries every distinct order (servers of the same GPU, GPU count, price and power
are interchangeable) and keeps the best for each configuration, together with its stage split when
the layers are planned too. Orders that lay a configuration out alike — every rank on the same
machine and the same servers used — are tried once (:func:`layouts`). A brute force: refused above
:data:`MAX_ORDERS` distinct orders.
"""

from __future__ import annotations

from math import factorial, prod
from typing import TYPE_CHECKING

from archsim.choices.training import PLACEMENTS
from archsim.console import setting
from archsim.errors import InputError
from archsim.value_parsers import comma_items, parse_int

if TYPE_CHECKING:
    from archsim.training.cluster import GpuCluster

MAX_ORDERS = 5040  # distinct server orders --placement planned tries (7 servers all different)


def _kind(cluster, server: int) -> tuple:
    """What makes a server different from another for the model: GPU, GPU count, in-server link, price, power."""
    pick = (lambda values: values[server] if values else None)
    start = cluster.starts[server]
    return (cluster.gpu_at(start).name, cluster.starts[server + 1] - start, pick(cluster.fabrics), pick(cluster.prices),
            pick(cluster.watts))


def order_count(cluster) -> int:
    """How many distinct server orders there are (a multinomial over the servers' kinds)."""
    servers = len(cluster.starts) - 1
    counts: dict[tuple, int] = {}
    for s in range(servers):
        counts[_kind(cluster, s)] = counts.get(_kind(cluster, s), 0) + 1
    return factorial(servers) // prod(factorial(n) for n in counts.values())


def server_orders(cluster) -> list[tuple[int, ...]]:
    """Every distinct order of the servers (file order first), or an input error above :data:`MAX_ORDERS`."""
    count = order_count(cluster)
    if count > MAX_ORDERS:
        raise InputError(f"{setting('placement', 'planned')} tries every distinct server order: this cluster has "
                         f"{count:,} (more than {MAX_ORDERS:,}); give one with {setting('placement', placeholder='I,J,…')} "
                         "or use fewer server kinds",
                         field="placement")
    kinds = [_kind(cluster, s) for s in range(len(cluster.starts) - 1)]
    out: list[tuple[int, ...]] = []

    def extend(prefix: list[int], left: list[int]) -> None:
        if not left:
            out.append(tuple(prefix))
            return
        seen = set()
        for k, server in enumerate(left):
            if kinds[server] not in seen:  # the first unused server of each kind: no duplicate orders
                seen.add(kinds[server])
                extend([*prefix, server], left[:k] + left[k + 1:])

    extend([], list(range(len(kinds))))
    return out


def layouts(cluster: GpuCluster, par, orders) -> tuple[list[tuple[tuple[int, ...], GpuCluster]], str | None]:
    """(order, placed cluster) for each distinct way ``orders`` lay ``par`` out, and the file order's
    reason when none can (:meth:`~archsim.training.cluster.GpuCluster.problem`). Two orders are alike
    when every rank gets the same machine and the GPUs used are the same kinds."""
    seen: set = set()
    out = []
    reason = None
    for order in orders:
        placed = cluster.reordered(order)
        why = placed.problem(par)
        if why is not None:
            reason = reason or why
            continue
        used = sorted((_kind(placed, s), min(placed.starts[s + 1], par.gpus) - placed.starts[s])
                      for s in range(placed.server_of(par.gpus - 1) + 1))
        key = (placed.rank_machines(par), tuple(used))
        if key not in seen:
            seen.add(key)
            out.append((order, placed))
    return out, (None if out else reason)


def parse_placement(text: str, cluster) -> tuple[int, ...] | str:
    """``file`` / ``planned``, or ``I,J,…`` → a server order (each server once)."""
    if text in PLACEMENTS:
        return text
    servers = len(cluster.starts) - 1
    try:
        order = tuple(parse_int(part, low=0) for part in comma_items(text, "placement"))  # ASCII digits, bounded
    except ValueError:
        order = ()
    if sorted(order) != list(range(servers)):
        raise InputError(f"expected file, planned or an order of the {servers} servers such as "
                         f"{','.join(map(str, reversed(range(servers))))}, got {text!r}", field="placement")
    return order


def order_text(order: tuple[int, ...] | None) -> str:
    """A row's ``placement``: the server order, or empty for the file's."""
    return "" if order is None else ",".join(map(str, order))


__all__ = ["MAX_ORDERS", "layouts", "order_count", "order_text", "parse_placement", "server_orders"]
