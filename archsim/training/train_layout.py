"""One iteration laid out as ``archsim train``'s flags say: the server order (``--placement``), the stage
split (``--balance``) and each pipeline rank's machine (``--implementation``), within ``--max-ops``.

One implementation for the command and ``archsim.train``: the same orders tried, the same split planned,
the same refusals.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from archsim.console import setting
from archsim.errors import InputError
from archsim.training.cluster import LAYOUT_ERRORS, GpuCluster
from archsim.training.machine import Machine
from archsim.training.parallel import Parallelism, check_tp_split, layers_per_stage
from archsim.training.placement import capped_order_count, layouts, parse_placement, server_orders
from archsim.training.run import TrainResult, train
from archsim.training.stage_split import planned_split, refuse_planned_fp32, stage_layer_counts
from archsim.validate import check_job_size


@dataclass(frozen=True)
class Layout:
    """Where an iteration runs: ``cluster`` in the server order used, ``par`` with the split it runs
    (the planned one under ``--balance planned``), ``placement`` the order given or chosen (a tuple of
    the file's server indices) or ``"file"``, and each pipeline rank's machine. ``result``: ``par``'s iteration
    on ``machines`` where laying it out simulated it already (``--balance planned`` timing both splits), so the
    caller runs it again only where it is None."""

    cluster: GpuCluster
    par: Parallelism
    placement: tuple[int, ...] | str
    machines: tuple[Machine, ...]
    result: TrainResult | None = None


def _fitting_dp(par: Parallelism, gpus: int) -> str:
    """What to change where ``par`` asks for more than the cluster's ``gpus``: the largest DP that fits beside its TP,
    CP and PP (the degree a layout most often oversizes), or, where those alone exceed the cluster, which to lower."""
    rest = par.tp * par.cp * par.pp
    cp = (f" × {setting('cp')}", f" × {par.cp}") if par.cp > 1 else ("", "")
    if rest > gpus:
        return (f"{setting('tp')}{cp[0]} × {setting('pp')} = {rest} alone is more: lower {setting('tp')} or "
                f"{setting('pp')}")
    fit = gpus // rest
    return f"{setting('dp', fit)} fits ({par.tp}{cp[1]} × {par.pp} × {fit} = {rest * fit} GPUs)"


def lay_out(config, cluster: GpuCluster, par: Parallelism, *, placement: str = "file", balance: str = "even",
            implementation: str = "megatron", max_ops: int | None = None) -> Layout:
    """``par`` laid out on ``cluster``: ``placement`` ``file``, ``planned`` (the fastest distinct server
    order that fits memory; ties keep the earlier) or ``I,J,…``; ``balance`` ``even`` or ``planned``
    (without ``par.stage_layers``); ``max_ops``: refuse a planned placement whose iterations add up to
    more schedule actions (None: no limit; the one iteration's own check is the caller's, before the
    cluster is built)."""
    if implementation != "megatron" and par.cp > 1:  # plain PyTorch runs one GPU: said before CP's own refusal,
        from archsim.training.eager_ops import check_one_gpu  # which told it to give --attention flash, "the default"

        check_one_gpu(par)  # (pytorch-eager's is standard, and no attention runs it at CP 2)
    if par.gpus > cluster.gpus:  # named by train's flags (the cluster's own check says TP × PP × DP, field gpus)
        tp, pp, dp, cp = (setting(name) for name in ("tp", "pp", "dp", "cp"))  # --tp, or tp from Python
        with_cp = (f" × {cp}", f" × {par.cp}") if par.cp > 1 else ("", "")
        raise InputError(f"{tp}{with_cp[0]} × {pp} × {dp} = {par.tp}{with_cp[1]} × {par.pp} × {par.dp} = {par.gpus} "
                         f"GPUs > the cluster's {cluster.gpus}: {_fitting_dp(par, cluster.gpus)}")
    check_tp_split(config, par.tp)  # the model's refusal before the cluster's (a TP group across servers)
    order = parse_placement(placement, cluster)
    if isinstance(order, tuple):
        cluster = cluster.reordered(order)
    if order == "planned":  # one iteration (and one planned split) per distinct server order
        orders = capped_order_count(cluster)
        if max_ops is not None:
            check_job_size(par.schedule_actions * orders, max_ops)
        if balance == "planned" and par.stage_layers is None and par.pp > 1:
            from archsim.training.search_limits import check_planning_work
            from archsim.training.search_space import Candidate

            one = Candidate(par.tp, par.pp, par.dp, par.micro_batch, par.recompute, par.schedule, par.interleave,
                            par.sequence_parallel)
            check_planning_work(config, cluster, par.global_batch, [one] * orders,
                                hint=f"{setting('stage-layers')}, or one server order "
                                     f"({setting('placement', 'file')} or I,J,…)")
        cluster, par, order = _best_placement(config, cluster, par, balance)
    machines = tuple(replace(m, implementation=implementation)  # a TP group may span whole servers
                     for m in cluster.laid_out(par))  # (the command warns), as search allows
    par, result = split(config, par, machines, balance)
    return Layout(cluster, par, order, machines, result)


def split(config, par: Parallelism, machines, balance: str) -> tuple[Parallelism, TrainResult | None]:
    """``par`` with the planner's stage split under ``--balance planned`` (its own split kept), or with
    the even split written out where that runs, fits each GPU and the event simulator times it faster
    (:func:`faster`); with the split's iteration where :func:`faster` simulated it (else None)."""
    if balance != "planned" or par.stage_layers is not None or par.pp == 1:
        return par, None
    refuse_planned_fp32(machines[0].dtype)
    planned = planned_split(config, par, machines, [m.capacity for m in machines])
    if planned is None:
        raise InputError("no split of the layers over the pipeline stages fits the GPUs' memory (or fewer layers "
                         "than model chunks)", field="balance")
    return faster(config, replace(par, stage_layers=stage_layer_counts(planned)), machines)


def faster(config, planned: Parallelism, machines) -> tuple[Parallelism, TrainResult | None]:
    """``planned``, or its even split (Megatron's counts, written out) where PP × chunks divides the layers,
    every rank fits its GPU and the event simulator times it faster: ``--balance planned`` never runs a
    split slower than the even one (ties keep the planner's). With the chosen split's simulated iteration
    where both were timed (None where neither or only the even one was), so it is not simulated again."""
    stages = planned.pp * planned.chunks
    if config.layers % stages:
        return planned, None
    even = replace(planned, stage_layers=layers_per_stage(config.layers, stages))  # the search's even split too
    if even.stage_layers == planned.stage_layers:
        return planned, None
    ran = train(config, even, machines[0], machines)
    if any(m.total > mc.capacity for m, mc in zip(ran.memory, machines)):
        return planned, None
    own = train(config, planned, machines[0], machines)
    return (even, ran) if ran.iteration_seconds < own.iteration_seconds else (planned, own)


def _best_placement(config, cluster: GpuCluster, par: Parallelism, balance: str):
    """The fastest of the distinct server orders (:mod:`archsim.training.placement`) that fit memory:
    (placed cluster, parallelism with its split, order); ties keep the earlier order (the file's first)."""
    options, reason = layouts(cluster, par, server_orders(cluster))
    if not options:
        raise InputError(f"no server order lays this out: {LAYOUT_ERRORS[reason or 'stage-mixes-gpu-types']}",
                         field="placement")
    from archsim.progress import progress

    best = None
    bar = progress(len(options), "train --placement planned", "order", delay=2.0)  # on a terminal after 2 s
    for order, placed in options:
        bar.update(1)
        machines = placed.rank_machines(par)
        assert machines is not None  # layouts() kept only orders that lay it out
        try:
            trial, result = split(config, par, machines, balance)
        except InputError:
            continue
        result = result or train(config, trial, machines[0], machines)
        fits = all(m.total <= mc.capacity for m, mc in zip(result.memory, machines))
        key = (not fits, result.iteration_seconds)
        if best is None or key < best[0]:
            best = (key, placed, trial, order)
    bar.close()
    if best is None:
        raise InputError("no split of the layers over the pipeline stages fits the GPUs' memory in any server order",
                         field="balance")
    return best[1], best[2], best[3]
