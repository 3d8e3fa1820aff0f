"""Which servers run which pipeline ranks: ``--placement file|planned|I,J,…`` of ``archsim search`` and
``archsim train``.

GPUs are numbered server by server and a pipeline rank takes the next TP × DP of them (Megatron's
order), so an order of the servers fixes each rank's GPU type, links and memory. ``file`` keeps the
cluster file's order; ``I,J,…`` gives one (indices of the file's servers, from 0, ``count``
expanded); ``planned`` tries every distinct order (servers of the same GPU, GPU count, price and power
are interchangeable, and under an oversubscribed fabric only within their leaf: :func:`server_classes`) and keeps
the best for each configuration, together with its stage split when the layers are planned too. Orders that lay a
configuration out alike — every rank on the same machine and the same servers used — are tried once
(:func:`layouts`), and so are orders that only swap whole leaves of alike servers, left out before any is laid out
(:func:`server_orders`). A brute force: refused above :data:`MAX_ORDERS` distinct orders of the servers' kinds; where
telling leaves apart passes it (or, in a search, passes the configurations' cap with the grid), the kinds' orders are
tried and a note says so (:func:`orders_note`).
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


def _leaf(cluster, server: int) -> int | None:
    """The leaf of the server at ``server`` where the fabric's uplinks are oversubscribed (a group over two leaves
    runs slower through their uplinks: :meth:`~archsim.network.ServerNetwork.uplinks`), else None. Leaves hold the file's
    servers (:meth:`~archsim.training.cluster.GpuCluster.file_server`), which an order moves, not rewires."""
    return None if cluster.network is None else cluster.network.leaf(cluster.file_server(server))


def _multinomial(classes: list) -> int:
    """How many distinct orders of items of these ``classes`` there are (items of one class interchangeable)."""
    counts: dict = {}
    for c in classes:
        counts[c] = counts.get(c, 0) + 1
    return factorial(len(classes)) // prod(factorial(n) for n in counts.values())


def _alike_leaves(classes: list[tuple]) -> dict:
    """Each leaf of ``classes`` ((kind, leaf) pairs; leaf None: not told apart) → the leaf before it (lower index) that
    holds the same kinds of servers, or None for the first of those. Two such leaves have alike servers and alike links
    (the fabric asks only whether a group's servers share a leaf), so orders that swap them whole price the same."""
    held: dict = {}
    for kind, leaf in classes:
        if leaf is not None:
            held.setdefault(leaf, []).append(kind)
    last: dict = {}
    before: dict = {}
    for leaf in sorted(held):
        key = tuple(sorted(held[leaf], key=repr))  # the leaf's kinds, whatever their servers' order
        before[leaf] = last.get(key)
        last[key] = leaf
    return before


def _distinct_orders(classes: list[tuple]) -> int:
    """How many orders of ``classes`` differ other than by swapping alike leaves whole (:func:`_alike_leaves`): the
    multinomial over the classes, over k! for each k alike leaves (every leaf appears in an order, so each swap gives
    another order of the classes and each order has k! swapped twins)."""
    runs: dict = {}  # the first leaf of each set of alike ones → how many
    for leaf, before in _alike_leaves(classes).items():
        runs[leaf] = 1 if before is None else runs.pop(before) + 1
    return _multinomial(classes) // prod(factorial(n) for n in runs.values())


def _kinds_and_leaves(cluster) -> tuple[list[tuple], list[tuple]]:
    """Each server's kind (:func:`_kind`) with no leaf (None), and its kind with its leaf (:func:`_leaf`)."""
    kinds = [_kind(cluster, s) for s in range(len(cluster.starts) - 1)]
    return [(kind, None) for kind in kinds], [(kind, _leaf(cluster, s)) for s, kind in enumerate(kinds)]


def server_classes(cluster, most: int = MAX_ORDERS) -> list[tuple]:
    """Each server's class, servers of one class interchangeable in an order: (its kind, its leaf) under an
    oversubscribed fabric (two alike servers under different leaves lay groups and hops over the spine differently),
    unless telling the leaves apart gives more than ``most`` orders (:func:`_distinct_orders`; the search's grid may
    allow fewer than :data:`MAX_ORDERS`): then (its kind, None), each kind's servers in the file's order
    (:func:`orders_note` says so)."""
    kinds, leaves = _kinds_and_leaves(cluster)
    return leaves if _distinct_orders(leaves) <= most else kinds


def order_count(cluster, most: int = MAX_ORDERS) -> int:
    """How many distinct server orders ``planned`` tries (:func:`server_classes`, alike leaves swapped whole counted
    once: :func:`_distinct_orders`)."""
    return _distinct_orders(server_classes(cluster, most))


def capped_order_count(cluster, most: int = MAX_ORDERS) -> int:
    """The server orders a size cap multiplies a planned placement's work by: :func:`order_count`, at most one past
    :data:`MAX_ORDERS` (more are refused by :func:`server_orders` whatever the count, so a huge multinomial never
    reaches a product)."""
    return min(order_count(cluster, most), MAX_ORDERS + 1)


def leaf_order_counts(cluster) -> tuple[int, int]:
    """(the distinct orders of the servers' kinds, of their kinds and leaves): the orders ``planned`` tries without
    and with telling leaves apart (:func:`_distinct_orders`)."""
    kinds, leaves = _kinds_and_leaves(cluster)
    return _distinct_orders(kinds), _distinct_orders(leaves)


def orders_note(cluster) -> str | None:
    """The line saying ``planned`` tried each kind's servers in the file's order where telling their leaves apart
    would give more than :data:`MAX_ORDERS` orders; None where it told them apart (or nothing to tell). The search's
    own note, where its grid times the leaves' orders passes its cap: :func:`archsim.training.search_limits.check_search_size`."""
    tried, apart = leaf_order_counts(cluster)
    if apart <= MAX_ORDERS or tried > MAX_ORDERS:  # all tried, or refused (server_orders)
        return None
    many = f"{apart:,}" if apart < 10**12 else f"about 10^{len(str(apart)) - 1}"  # 2,048 servers: 4,000 digits
    return kinds_kept_note(tried, many, f" (more than {MAX_ORDERS:,})")


def kinds_kept_note(tried: int, apart: str, why: str, remedy: str = "") -> str:
    """The one wording of a ``planned`` placement that tried the ``tried`` orders of the servers' kinds, each kind's
    servers in the file's order, because telling the leaves apart gives ``apart`` orders (the count as written), too
    many by ``why``; ``remedy``, what else narrows it, comes before the order to give. Said by :func:`orders_note`
    (above :data:`MAX_ORDERS`) and by a search whose grid times them passes its cap
    (:func:`archsim.training.search_limits.check_search_size`)."""
    return (f"{setting('placement', 'planned')} tried {tried:,} server order{'s' * (tried != 1)}, each kind's servers "
            f"kept in the file's order: telling apart the leaves of the oversubscribed fabric would give "
            f"{apart} orders{why}; {remedy}give an order with {setting('placement', placeholder='I,J,…')} to place "
            "servers across leaves")


def server_orders(cluster, most: int = MAX_ORDERS) -> list[tuple[int, ...]]:
    """Every distinct order of the servers (file order first) by :func:`server_classes`, one of each set that differ
    only by swapping alike leaves whole (their leaves first met in the file's order: :func:`_alike_leaves`), or an
    input error above :data:`MAX_ORDERS`. Those twins are left out here, before any is laid out."""
    count = order_count(cluster, most)
    if count > MAX_ORDERS:
        raise InputError(f"{setting('placement', 'planned')} tries every distinct server order: this cluster has "
                         f"{count:,} (more than {MAX_ORDERS:,}); give one with {setting('placement', placeholder='I,J,…')} "
                         "or use fewer server kinds",
                         field="placement")
    classes = server_classes(cluster, most)
    before = _alike_leaves(classes)
    out: list[tuple[int, ...]] = []

    def extend(prefix: list[int], left: list[int], met: frozenset) -> None:
        if not left:
            out.append(tuple(prefix))
            return
        seen = set()
        for k, server in enumerate(left):
            leaf = classes[server][1]
            if classes[server] in seen or (leaf not in met and before.get(leaf) not in met | {None}):
                continue  # a duplicate, or a leaf met before an alike one of lower index: a swapped twin
            seen.add(classes[server])  # the first unused server of each class: no duplicate orders
            extend([*prefix, server], left[:k] + left[k + 1:], met | {leaf})

    extend([], list(range(len(classes))), frozenset())
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


__all__ = ["MAX_ORDERS", "capped_order_count", "kinds_kept_note", "layouts", "leaf_order_counts", "order_count",
           "order_text", "orders_note", "parse_placement", "server_classes", "server_orders"]
