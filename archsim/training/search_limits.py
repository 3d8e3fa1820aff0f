"""The search's caps, checked before any work: the candidates a grid enumerates
(:func:`check_search_size`) and the planner's table cells under ``--balance planned``
(:func:`check_planning_work`), each refused with the flags that size it."""

from __future__ import annotations

from archsim.console import setting
from archsim.errors import InputError
from archsim.training.placement import MAX_ORDERS, order_count
from archsim.training.search_fit import planner_refuses
from archsim.training.search_space import MAX_CANDIDATES, Candidate, candidate_count, check_distinct, rejection
from archsim.workload.transformer import TransformerConfig


def check_search_size(cluster, counts, micro_batches, recomputes, schedules, chunks, sequence_parallel,
                      placement: str = "file", cps=(1,), cp_comms=("p2p",), eps=(1,), etps=(None,)) -> None:
    """Refuse, before any candidate is built, a grid above :data:`MAX_CANDIDATES` (× the server orders a
    planned placement tries), naming the flags that size it."""
    size = candidate_count(counts, micro_batches, recomputes, schedules, chunks, sequence_parallel, cps, cp_comms, eps,
                           etps)
    orders = min(order_count(cluster), MAX_ORDERS + 1) if placement == "planned" else 1
    size *= orders
    if size > MAX_CANDIDATES:
        sizes = {"max-micro-batch": len(micro_batches), "gpus": len(counts), "chunks": len(chunks),
                 "schedule": len(schedules), "cp": len(cps) * len(cp_comms), "ep": len(eps), "etp": len(etps),
                 "placement": orders}
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
                   **{"cp-comm": cp_comms})


# The planner's work a search may do under --balance planned, in table cells (PP × (layers + 3)² per split
# planned), a cell of a table beyond the CPU's cache counted 12 times: measured 3.4 ns a cell for the 1T GPT
# (131² cells a row; its documented search plans 10,854 splits, 4.8·10⁹ cells, in 16 s) and 17 to 43 ns for
# 512 and 4,096 layers (1.1·10⁹ cells of 516² a row in 19 s). About 20 s at the limit.
MAX_PLANNING_CELLS = 6_000_000_000
CACHED_ROW_CELLS = 20_000


def check_planning_work(c: TransformerConfig, cluster, global_batch: int, grid: list[Candidate],
                        placement: str = "file",
                        hint: str | None = None) -> None:
    """Refuse, before any split is planned, a ``--balance planned`` search whose splits (one per candidate
    that passes the rules and has several stages, × the server orders a planned placement tries) fill more
    than :data:`MAX_PLANNING_CELLS` weighted cells."""
    row = (c.layers + 3) ** 2
    weight = 1 if row <= CACHED_ROW_CELLS else 12
    stages = sum(k.pp for k in grid if k.plannable and rejection(c, k, global_batch, cluster.gpus_per_server, True) is None
                 and not planner_refuses(c, k.parallelism(global_batch)))  # those take a fixed split, unplanned
    cells = stages * row * weight * (min(order_count(cluster), MAX_ORDERS + 1) if placement == "planned" else 1)
    if cells > MAX_PLANNING_CELLS:  # hint None: the search's grid, named as the caller spells its settings
        hint = hint or f"a smaller grid ({', '.join(map(setting, ('gpus', 'max-micro-batch', 'schedule', 'chunks')))})"
        raise InputError(f"{setting('balance', 'planned')} would plan splits filling about {cells:,} table cells "
                         f"({c.layers:,} layers), above {MAX_PLANNING_CELLS:,} (about 20 s); use "
                         f"{setting('balance', 'even')}, or {hint}", field="balance")


__all__ = ["MAX_PLANNING_CELLS", "check_planning_work", "check_search_size"]
