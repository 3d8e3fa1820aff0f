"""Sweeping ``archsim train`` over axes: ``--sweep micro_batch=1,2,4 --sweep tp=1,2`` → one row per point.

A point whose settings are invalid (a batch that does not split, TP not dividing the heads, more GPUs
than the cluster) is kept as a row with its reason, not dropped: the row says why it cannot run."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import asdict, fields, replace

from archsim.choices.training import (
    ATTENTIONS,
    CP_COMMS,
    DP_OVERLAPS,
    FP8_RECIPES,
    FSDP_GRAD_SYNCS,
    FSDP_RESHARDS,
    GRAD_ACCUMULATIONS,
    P2P_MODES,
    RECOMPUTE,
)
from archsim.errors import InputError
from archsim.training.energy import cluster_iteration_energy
from archsim.training.moe_ops import with_load_imbalance
from archsim.training.parallel import Parallelism, check_tp_split, schedule_name
from archsim.training.throughput import Throughput, mean_peak, throughput
from archsim.validate import check_job_size, did_you_mean, shown
from archsim.value_parsers import comma_items, not_a_choice, parse_boolean, parse_int, parse_ratio, parse_seq


def _count(text: str) -> int:
    return parse_int(text, what="a positive integer")


def _one_of(choices: tuple[str, ...]) -> Callable[[str], str]:
    """An axis whose values are the words of one flag's vocabulary."""
    def parse(text: str) -> str:
        if text not in choices:
            raise ValueError(not_a_choice(text, choices))
        return text
    return parse


def _schedule(text: str) -> str:
    from archsim.policies.stage_orders import ORDERS, TORCH_SCHEDULES

    if text not in ORDERS and text not in TORCH_SCHEDULES:
        raise ValueError(f"unknown schedule {shown(text)}{did_you_mean(text, ORDERS)}; choose one of {', '.join(ORDERS)}")
    return text


def _fp8(text: str) -> str | None:
    """--fp8's recipes, or ``none``: the flag not given (a point without fp8)."""
    if text == "none":
        return None
    return _one_of((*FP8_RECIPES, "none"))(text)


# dp=fill: each point's DP is the cluster's GPUs ÷ (TP · CP · PP), so every point uses the whole cluster (a point where
# that does not divide is skipped and counted: :func:`filled`, :func:`fill_skipped_note`)
FILL = "fill"

# Each axis's values are checked as the flag it sweeps checks them (a bad value is refused, never a row).
AXES: dict[str, Callable[[str], object]] = {
    "tp": _count, "pp": _count, "dp": _count, "global_batch": _count, "micro_batch": _count, "interleave": _count,
    "recompute": _one_of(RECOMPUTE), "schedule": _schedule, "sequence_parallel": parse_boolean,
    "attention": _one_of(ATTENTIONS), "dp_overlap": _one_of(DP_OVERLAPS),
    "grad_accumulation": _one_of(GRAD_ACCUMULATIONS), "p2p": _one_of(P2P_MODES), "distributed_optimizer": parse_boolean,
    "fsdp": parse_boolean, "fsdp_reshard": _one_of(FSDP_RESHARDS), "fsdp_grad_sync": _one_of(FSDP_GRAD_SYNCS),
    "cp": _count, "cp_comm": _one_of(CP_COMMS), "ep": _count, "etp": _count, "fp8": _fp8, "fp8_param_gather": parse_boolean, "moe_load_imbalance": parse_ratio,
    "seq": parse_seq}
# axes that set the model's training (TransformerConfig), not Parallelism: each point's config is MODEL's with the
# value, as the flag sets it (seq: --seq's load_transformer, a field replaced and checked against a learned position
# table; the imbalance: with_load_imbalance)
MODEL_AXES = ("moe_load_imbalance", "seq")


def _layout(settings: dict) -> dict:
    """A point's settings Parallelism takes: :data:`MODEL_AXES` left out, and sequence parallelism at TP 1 off, as
    ``archsim train`` runs it (:func:`~archsim.training.layout_notes.sequence_parallel_run`)."""
    from archsim.training.layout_notes import sequence_parallel_run

    layout = {key: value for key, value in settings.items() if key not in MODEL_AXES}
    if "sequence_parallel" in layout:
        layout["sequence_parallel"], _ = sequence_parallel_run(layout["tp"], layout["sequence_parallel"])
    return layout


def sequence_parallel_points_note(base: dict, axes: list[tuple[str, tuple]], gpus: int) -> str:
    """:func:`~archsim.training.layout_notes.sequence_parallel_run`'s note once for a sweep, with how many of its
    points ask for sequence parallelism at TP 1 (run without it) and their layouts (three, then how many more);
    '' when none does."""
    from archsim.training.layout_notes import sequence_parallel_run

    everything = list(points(base, axes, gpus))
    off = [s for s in everything if s.get("sequence_parallel") is True and s.get("tp") == 1]
    if not off:
        return ""
    named = list(dict.fromkeys(f"tp 1 × pp {s['pp']} × dp {s['dp']}" for s in off))
    more = f" and {len(named) - 3} more" if len(named) > 3 else ""
    return (f"{len(off)} of the sweep's {len(everything)} points ({', '.join(named[:3])}{more}): "
            f"{sequence_parallel_run(1, True)[1]}")


def parse_axis(text: str) -> tuple[str, tuple]:
    """``KEY=V1,V2,…`` → (key, values); KEY one of :data:`AXES` (dashes allowed), each value valid for
    the flag KEY names (an empty value, a repeated one, or one its flag refuses is an InputError)."""
    key, sep, values = text.partition("=")
    key = key.strip().replace("-", "_")
    if sep and key in AXES and not values.strip():  # a known axis with nothing to sweep: not told its KEY is unknown
        raise InputError(f"{key}: no values after {shown(text)}: give at least one, {key}=V1,V2,…", field="sweep")
    if not sep or key not in AXES:
        hint = did_you_mean(key, AXES) if key not in AXES else ""  # micro_bacth: the axis it resembles
        raise InputError(f"expected KEY=V1,V2,… with KEY one of {', '.join(AXES)}, got {shown(text)}{hint}",
                         field="sweep")
    try:
        items = comma_items(values, "sweep")
    except InputError as exc:
        raise InputError(f"{key}: {exc.message}", field="sweep") from None
    if key == "dp" and FILL in items:  # each point's DP from its TP, CP and PP: no count beside it
        if len(items) > 1:
            raise InputError(f"dp: {FILL} stands alone, each point's DP filling the cluster: give dp={FILL}, or "
                             "counts dp=1,2,…", field="sweep")
        return key, (FILL,)
    try:
        parsed = tuple(AXES[key](v) for v in items)
    except ValueError as exc:
        if key == "dp":  # dp=FILL, dp=filll: the word dp takes beside its counts, named
            raise InputError(f"dp: {exc} (or dp={FILL} alone: each point's DP filling the cluster)",
                             field="sweep") from None
        if FILL in items:  # tp=fill: only dp fills
            raise InputError(f"{key}: {FILL} is dp's alone (dp={FILL}); {exc}", field="sweep") from None
        raise InputError(f"{key}: {exc}", field="sweep") from None
    if len(set(parsed)) != len(parsed):
        raise InputError(f"{key} repeats a value in {shown(values)}", field="sweep")
    return key, parsed


def points(base: dict, axes: list[tuple[str, tuple]], gpus: int | None = None):
    """Every combination of the axes' values over ``base`` (Parallelism's keyword arguments, and
    :data:`MODEL_AXES`); an axis given twice is refused (the later would overwrite the earlier in every point).
    ``gpus``: the cluster's, for ``dp=fill`` (:func:`filled`: a point it does not divide is left out)."""
    names = [name for name, _ in axes]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise InputError(f"{', '.join(twice)} swept twice: give each axis once, with all its values (KEY=V1,V2,…)",
                         field="sweep")
    for combo in itertools.product(*(values for _, values in axes)):
        settings = {**base, **dict(zip(names, combo))}
        if settings.get("dp") != FILL:
            yield settings
            continue
        if gpus is None:
            raise ValueError("dp=fill needs the cluster's GPU count")
        point = filled(settings, gpus)
        if point is not None:
            yield point


def filled(settings: dict, gpus: int) -> dict | None:
    """``settings`` (a ``dp=fill`` point) with DP = ``gpus`` ÷ (TP · CP · PP), its layout then using the whole
    cluster; None where TP · CP · PP does not divide ``gpus`` (more GPUs than the cluster's among them)."""
    group = settings["tp"] * settings.get("cp", 1) * settings["pp"]
    return None if gpus % group else {**settings, "dp": gpus // group}


def fill_skipped_note(base: dict, axes: list[tuple[str, tuple]], gpus: int) -> str:
    """The line counting the points ``dp=fill`` leaves out (TP · CP · PP not dividing the cluster's ``gpus``) and
    naming their layouts (three, then how many more); '' when none is, or no axis is ``dp=fill``."""
    if ("dp", (FILL,)) not in axes:
        return ""
    everything = list(points({**base, "dp": 1}, [axis for axis in axes if axis[0] != "dp"]))
    left = [(s["tp"], s.get("cp", 1), s["pp"]) for s in everything if filled(s, gpus) is None]
    if not left:
        return ""
    cp = any(c > 1 for _, c, _ in left)
    named = list(dict.fromkeys(f"tp {tp}{f' × cp {c}' if cp else ''} × pp {pp}" for tp, c, pp in left))
    more = f" and {len(named) - 3} more" if len(named) > 3 else ""
    return (f"dp={FILL} skipped {len(left)} of the sweep's {len(everything)} points: TP × {'CP × ' if cp else ''}PP "
            f"does not divide the cluster's {gpus} GPUs ({', '.join(named[:3])}{more})")


RATES = tuple(field.name for field in fields(Throughput))  # mfu, TFLOP/s per GPU, tokens/s


MAX_POINTS = 500  # grid points one --sweep may have: each is a whole iteration (about 20 ms for a small one)


def check_sweep_size(base: dict, axes: list[tuple[str, tuple]], max_ops: int, gpus: int) -> None:
    """Refuse, before any point runs, a grid of more than :data:`MAX_POINTS` points or whose points'
    schedules add up to more than ``max_ops`` actions (:attr:`Parallelism.schedule_actions`); ``gpus``: the
    cluster's, which ``dp=fill`` fills (a grid of which it leaves no point is refused)."""
    count = 1
    for _, values in axes:
        count *= len(values)
    if count > MAX_POINTS:
        raise InputError(f"this sweep has {count:,} points ({' × '.join(str(len(v)) for _, v in axes)}), above the "
                         f"limit of {MAX_POINTS:,}; sweep fewer values", field="sweep")
    if not any(True for _ in points(base, axes, gpus)):
        raise InputError(f"dp={FILL}: no point's TP × CP × PP divides the cluster's {gpus} GPUs", field="sweep")
    total = 0
    for settings in points(base, axes, gpus):
        try:
            total += Parallelism(**_layout(settings)).schedule_actions
        except InputError:  # the point becomes a row with its reason, and simulates nothing
            continue
    check_job_size(total, max_ops)


def sweep(config, cluster, base: dict, axes: list[tuple[str, tuple]]) -> list[dict]:
    """One row per point: its GPUs (TP × PP × DP), its settings, iteration seconds and the part of them that is the
    host issuing ops (``host_bound_seconds``, as ``archsim train``'s meta), its compute and recompute by what they are
    (``compute_split_seconds``, train's meta's object), MFU, TFLOP/s per GPU and tokens/s
    (:mod:`archsim.training.throughput`), peak memory and the fullest rank's GPU's memory (GiB) and whether it fits,
    the iteration's energy (J, as ``archsim train`` prices it: :func:`~archsim.training.energy.cluster_iteration_energy`), or the
    reason it cannot run; ``energy_source``, ``tp_span``, ``cp_span`` and ``fit`` last, for the meta (how ``energy_j`` was
    found) and the warnings (a TP group, or an all-to-all CP group, across servers, a rank over its memory, as
    ``archsim train`` warns of them)."""
    from archsim.progress import progress
    from archsim.training.run import train

    rows = []
    grid = list(points(base, axes, cluster.gpus))  # dp=fill's points: those whose DP fills the cluster
    with progress(len(grid), "train --sweep", "point", delay=2.0) as bar:  # drawn on a terminal after 2 s
        for settings in grid:
            rows.append(_point(config, cluster, settings, train))
            bar.update(1)
    return _parts_everywhere(rows)


def _parts(energy: dict) -> dict:
    """A point's ``energy_breakdown_j`` (train's meta's: ``energy_j`` by part, J) where its energy has one (array
    devices alone), else nothing."""
    parts = energy.get("energy_breakdown_j")
    return {"energy_breakdown_j": dict(parts)} if parts else {}


def _parts_everywhere(rows: list[dict]) -> list[dict]:
    """``rows`` with ``energy_breakdown_j`` right after ``energy_j`` on every row (None where a point did not run)
    when any point has it, so a table or CSV whose first point failed keeps the column in its place."""
    if not any("energy_breakdown_j" in row for row in rows):
        return rows
    out = []
    for row in rows:
        placed: dict = {}
        for key, value in row.items():
            if key != "energy_breakdown_j":
                placed[key] = value
            if key == "energy_j":
                placed["energy_breakdown_j"] = row.get("energy_breakdown_j")
        out.append(placed)
    return out


def _point(config, cluster, settings: dict, train) -> dict:
    """One point's row (its GPUs, TP × PP × DP, its settings and result, or why it cannot run); ``tp_span``,
    ``cp_span`` and ``fit`` last, for the command's warnings (:func:`~archsim.fits.tp_span_warning`: a TP group across
    servers, :func:`~archsim.fits.cp_span_warning`: an all-to-all CP group across servers,
    :func:`~archsim.fits.rank_memory_warning`: a rank over its GPU's memory; or None), and ``short``
    (:func:`~archsim.training.layout_notes.few_microbatches_note`, or None)."""
    from archsim.fits import cp_span_warning, rank_memory_warning, tp_span_warning
    from archsim.training.layout_notes import few_microbatches_note

    row = {"gpus": settings["tp"] * settings.get("cp", 1) * settings["pp"] * settings["dp"], **settings}
    if "fp8" in row:  # a point without it names it as the axis does
        row["fp8"] = row["fp8"] or "none"
    # the order asked for, on a row that runs or not: 1f1b with interleave > 1 is interleaved-1f1b
    row["schedule"] = schedule_name(settings.get("schedule", Parallelism.schedule),
                                    settings.get("interleave", Parallelism.interleave))
    try:
        par = Parallelism(**_layout(settings))
        if "seq" in settings:  # a model axis: the point's sequence (a learned position table's length refuses more)
            config = replace(config, seq=settings["seq"])
        if "moe_load_imbalance" in settings:  # a model axis: the point's config (refused on a dense model)
            config = with_load_imbalance(config, settings["moe_load_imbalance"])
        row["schedule"] = par.schedule_name  # what ran: a torch class name's order, a V schedule's two chunks
        if "interleave" in row:
            row["interleave"] = par.chunks
        row["sequence_parallel"] = par.sequence_parallel  # what ran: off at TP 1, as train runs it
        if par.gpus <= cluster.gpus:  # the model's refusal before the cluster's (a TP group across servers), as
            check_tp_split(config, par.tp)  # train's lay_out orders them: TP 3 of 40 heads is the heads' to refuse
        machines = cluster.laid_out(par)  # each pipeline rank's GPU (mixed clusters); refused as train does
        result = train(config, par, machines[0], machines)
        fits = all(m.total <= mc.capacity for m, mc in zip(result.memory, machines))
        rates = throughput(config, par.global_batch, par.recompute, result.iteration_seconds, par.gpus,
                           mean_peak(machines), par.attention)
        energy = cluster_iteration_energy(config, par, cluster, result.iteration_seconds, memory=result.memory)
        row.update(iteration_seconds=result.iteration_seconds, host_bound_seconds=result.host_bound_seconds,
                   compute_split_seconds=dict(result.compute_split_seconds),  # train's meta's (run.compute_split)
                   **asdict(rates), peak_memory_gib=result.peak_memory_gib,
                   memory_capacity_gib=result.memory_capacity_gib, fits_memory=fits, energy_j=energy["energy_j"],
                   **_parts(energy), error="", energy_source=energy["energy_source"], tp_span=tp_span_warning(cluster, par),
                   cp_span=cp_span_warning(cluster, par), fit=rank_memory_warning(result, machines),
                   short=few_microbatches_note(par) or None)
    except InputError as exc:
        row.update(iteration_seconds=None, host_bound_seconds=None, compute_split_seconds=None, **dict.fromkeys(RATES), peak_memory_gib=None, memory_capacity_gib=None,
                   fits_memory=None, energy_j=None, error=exc.message, energy_source=None, tp_span=None,
                   cp_span=None, fit=None, short=None)
    return row


__all__ = ["AXES", "FILL", "MAX_POINTS", "MODEL_AXES", "RATES", "check_sweep_size", "fill_skipped_note", "filled",
           "parse_axis", "points", "sequence_parallel_points_note", "sweep"]
