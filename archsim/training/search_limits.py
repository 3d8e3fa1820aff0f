"""The search's caps, checked before any work: the candidates a grid enumerates
(:func:`check_search_size`) and the planner's table cells under ``--balance planned``
(:func:`check_planning_work`), each refused with the flags that size it."""

from __future__ import annotations

from dataclasses import dataclass

from archsim.console import setting
from archsim.errors import InputError
from archsim.training.placement import MAX_ORDERS, capped_order_count, kinds_kept_note, leaf_order_counts
from archsim.training.search_fit import planner_refuses
from archsim.training.search_flags import check_distinct
from archsim.training.search_space import MAX_CANDIDATES, Candidate, candidate_count, rejection
from archsim.workload.transformer import TransformerConfig


@dataclass(frozen=True)
class PlannedOrders:
    """The server orders a search's ``--placement planned`` may try: ``most`` (:data:`MAX_ORDERS`, or fewer where the
    grid times the leaves' orders would pass :data:`MAX_CANDIDATES`: :func:`archsim.training.placement.server_classes`),
    and the ``note`` that says each kind's servers kept the file's order for that (None where they did not)."""

    most: int = MAX_ORDERS
    note: str | None = None


def _sizes(counts, micro_batches, schedules, chunks, cps, cp_comms, eps, etps) -> dict[str, int]:
    """How much each flag grows a grid (the values it takes), in the order a refusal names them (a TP or PP pinned
    only shrinks it)."""
    return {"max-micro-batch": len(micro_batches), "gpus": len(counts), "chunks": len(chunks),
            "schedule": len(schedules), "cp": len(cps) * len(cp_comms), "ep": len(eps), "etp": len(etps)}


def check_search_size(cluster, counts, micro_batches, recomputes, schedules, chunks, sequence_parallel,
                      placement: str = "file", cps=(1,), cp_comms=("p2p",), eps=(1,), etps=(None,), tps=None,
                      pps=None) -> PlannedOrders:
    """Refuse, before any candidate is built, a grid above :data:`MAX_CANDIDATES` (× the server orders a
    planned placement tries), naming the flags that size it. Where telling apart the leaves of an oversubscribed fabric
    would pass it and the kinds' orders would not, those are tried (as before the leaves were told apart, so a search
    that ran still runs), said by the result's note."""
    base = candidate_count(counts, micro_batches, recomputes, schedules, chunks, sequence_parallel, cps, cp_comms, eps,
                           etps, tps, pps)
    sizes = _sizes(counts, micro_batches, schedules, chunks, cps, cp_comms, eps, etps)
    planned = PlannedOrders()
    if placement == "planned":
        tried, apart = leaf_order_counts(cluster)
        if tried < apart <= MAX_ORDERS and base * apart > MAX_CANDIDATES >= base * tried:
            planned = PlannedOrders(tried, _grid_note(tried, apart, base, sizes))
    orders = capped_order_count(cluster, planned.most) if placement == "planned" else 1
    size = base * orders
    if size > MAX_CANDIDATES:
        sizes["placement"] = orders
        field = max(sizes, key=sizes.__getitem__)  # the flag that grows it most (ties: the first named)
        fewer = ", ".join(setting(flag) for flag in ("gpus", "schedule", "chunks", "cp", "cp-comm", "ep"))
        raise InputError(f"this search would enumerate {size:,} configurations (GPU counts × TP·PP·DP × micro-batches "
                         f"× recompute × schedules and chunks × sequence parallelism × CP and its exchanges × EP × ETP"
                         f"{' × server orders' if placement == 'planned' else ''}), above the limit of "
                         f"{MAX_CANDIDATES:,}; lower {setting('max-micro-batch')}, or give fewer {fewer} or "
                         f"{setting('etp')}"
                         + (f", or one server order ({setting('placement', 'file')} or I,J,…) where "
                            f"{setting('placement', 'planned')} tries {orders:,}" if orders > 1 else ""), field=field)
    check_distinct(gpus=counts, recompute=recomputes, schedule=schedules, chunks=chunks, cp=cps, ep=eps,
                   tp=tps or (), pp=pps or (), **{"cp-comm": cp_comms})
    return planned


def _grid_note(tried: int, apart: int, base: int, sizes: dict[str, int]) -> str:
    """The note of a search that tried the ``tried`` orders of the servers' kinds because the ``apart`` orders of their
    kinds and leaves times its grid of ``base`` configurations passed :data:`MAX_CANDIDATES`, naming the flag that grows
    the grid most (``sizes``: :func:`_sizes`) to narrow it by."""
    flag = max(sizes, key=sizes.__getitem__)  # ties: the first named
    narrow = "" if sizes[flag] < 2 else \
        f" (lower {setting(flag)})" if flag == "max-micro-batch" else f" (give fewer {setting(flag)})"
    return kinds_kept_note(tried, f"{apart:,}", f", the search's {base:,} configurations × {apart:,} = "
                           f"{base * apart:,}, above its limit of {MAX_CANDIDATES:,}",
                           f"narrow the search to {MAX_CANDIDATES // apart:,} configurations or fewer{narrow} or ")


# The planner's work a search may do under --balance planned, in table cells (PP × (layers + 3)² per split
# planned), a cell of a table beyond the CPU's cache counted 12 times: measured 3.4 ns a cell for the 1T GPT
# (131² cells a row; its documented search plans 10,854 splits, 4.8·10⁹ cells, in 16 s) and 17 to 43 ns for
# 512 and 4,096 layers (1.1·10⁹ cells of 516² a row in 19 s). About 20 s at the limit.
MAX_PLANNING_CELLS = 6_000_000_000
CACHED_ROW_CELLS = 20_000


def check_planning_work(c: TransformerConfig, cluster, global_batch: int, grid: list[Candidate],
                        orders: int = 1, hint: str | None = None) -> None:
    """Refuse, before any split is planned, a ``--balance planned`` search whose splits (one per candidate
    that passes the rules and has several stages, × ``orders``: the server orders a planned placement tries) fill
    more than :data:`MAX_PLANNING_CELLS` weighted cells."""
    row = (c.layers + 3) ** 2
    weight = 1 if row <= CACHED_ROW_CELLS else 12
    stages = sum(k.pp for k in grid if k.plannable and rejection(c, k, global_batch, cluster.gpus_per_server, True) is None
                 and not planner_refuses(c, k.parallelism(global_batch)))  # those take a fixed split, unplanned
    cells = stages * row * weight * orders
    if cells > MAX_PLANNING_CELLS:  # hint None: the search's grid, named as the caller spells its settings
        hint = hint or f"a smaller grid ({', '.join(map(setting, ('gpus', 'max-micro-batch', 'schedule', 'chunks')))})"
        raise InputError(f"{setting('balance', 'planned')} would plan splits filling about {cells:,} table cells "
                         f"({c.layers:,} layers), above {MAX_PLANNING_CELLS:,} (about 20 s); use "
                         f"{setting('balance', 'even')}, or {hint}", field="balance")


__all__ = ["MAX_PLANNING_CELLS", "PlannedOrders", "check_planning_work", "check_search_size"]
