"""``archsim schedule``'s data-parallel policies on a network: one device's iteration window over ``--processors``
workers, each layer's gradient sync priced on the hop link's rate, and ``dp-reverse-k``'s k (given, or found by the
paper's search, its path kept as meta)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING

from archsim.console import field_name
from archsim.errors import InputError
from archsim.policies.hop_link import DEFAULT_SYNC_BYTES_PER_CYCLE

if TYPE_CHECKING:
    from archsim.partition.profile import LayerProfile


def data_parallel_window(args: SimpleNamespace, costs: LayerProfile, network, phase, element_bytes: int | None,
                         link: float = DEFAULT_SYNC_BYTES_PER_CYCLE):
    """One device's iteration window under data parallelism over ``--processors`` workers (the
    search for k simulates candidate windows), the chosen k, and the meta of the search (``k_search``: each k
    it timed and its makespan, so its path and the makespan's shape in k are seen); ``element_bytes`` (the array's
    width, None with --unit-costs) sizes each layer's gradient sync in bytes, over a link of ``link`` bytes per cycle."""
    from archsim.policies import data_parallel as dp

    layers = len(costs)
    if args.unit_costs:  # one worker has no peer to synchronize with, as SyncModel prices it below
        sync = [args.comm_units if args.processors > 1 else 0.0] * layers
    else:
        model = dp.SyncModel(workers=args.processors, bandwidth=link, kind=args.sync)
        sync = [model.time(layer.weight_elements * (element_bytes or 1)) for layer in network.layers]
    f, d, g = list(costs.forward), list(costs.delta), list(costs.weight_grad)

    tried: dict[int, float] = {}  # the search's windows, each k once

    def evaluate(k: int) -> float:
        if k not in tried:
            tried[k] = dp.window_time(f, d, g, sync, dp.reverse_first_k_order(layers, k))
        return tried[k]

    k = 0
    phase("build")
    if args.policy == "dp-reverse-k":
        if args.k == "auto":
            k = dp.search_k(evaluate, layers)
        else:
            try:
                k = int(args.k)
            except ValueError:
                raise InputError(f"expected an integer or 'auto', got {args.k!r}", field=field_name("reverse-k")) from None
            if not 0 <= k <= layers:
                raise InputError(f"layers to reverse must be within 0..{layers}, got {k}", field=field_name("reverse-k"))
    order, prioritized = dp.policy_order(args.policy, layers, k)
    searched = {"k_search": ", ".join(f"{k}:{tried[k]:.10g}" for k in sorted(tried))} if tried else {}
    return (dp.dp_problem(f, d, g, sync, order, prioritized=prioritized, names=costs.names), {"reversed_layers": k},
            searched)


__all__ = ["data_parallel_window"]
