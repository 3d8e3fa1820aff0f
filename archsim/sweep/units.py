"""A sweep unit's rows: every (processors, method) plan of one configuration, or a device sweep's point; and the
PipeDream points a network is too short for, found before any unit is computed. Cycles throughout."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from archsim.choices.partitions import BORROW_PAPER
from archsim.errors import InputError
from archsim.partition import build_profile
from archsim.partition.pipedream import layer_groups
from archsim.planners import partitions
from archsim.sweep.device_points import point_rows
from archsim.sweep.device_spec import DevicePoint
from archsim.sweep.networks import spec_key_error, unit_lowering, unit_network
from archsim.sweep.pipedream_points import check_left, skipped_points
from archsim.sweep.results import ARRAY_COLUMN, borrow_cell, layerpipe_settings
from archsim.sweep.spec import Unit, method_runs


def compute_unit(unit: Unit | DevicePoint) -> list[dict[str, object]]:
    """All (processors, method) results of one configuration (a device sweep's point: its one row).
    Pure: safe on any worker."""
    if isinstance(unit, DevicePoint):
        return point_rows(unit)
    network = unit_network(unit.network, unit.network_sha256, unit.only)

    def base_row(processors: int, method: str, plan, single: float, cycles: float,
                 borrow: str | None = None) -> dict[str, object]:
        return {
            "network": Path(unit.network).stem, "only": "+".join(unit.only) or "all", "rows": unit.rows,
            "cols": unit.cols, "dataflow": unit.dataflow, "batch": unit.batch, "mode": unit.mode,
            "processors": processors, "method": method, **layerpipe_settings(method, unit.alpha, unit.split_axes),
            **borrow_cell(unit.borrow, borrow),
            "stages": len(plan.stages),
            "single_processor_cycles": single, "iteration_cycles": cycles,
            "speedup": single / cycles, "mandatory_comm_bytes": plan.mandatory_bytes,
            "additional_comm_bytes": plan.additional_bytes, "network_path": unit.network,
            "network_sha256": unit.network_sha256,
            **({ARRAY_COLUMN: unit.array_file.path} if unit.array_file is not None else {}),
        }

    if unit.design is not None:
        from archsim.sweep.design import design_rows

        return design_rows(unit, network, base_row)
    array = unit.array
    profile = build_profile(network, array, unit.batch, unit.mode, unit.engine,
                            lowered=unit_lowering(unit.network, unit.network_sha256, unit.only, unit.batch,
                                                  unit.mode, array.element_bytes))
    single = float(profile.total.sum())
    runs = method_runs(unit.methods, unit.borrow)
    groups = layer_groups(profile) if "pipedream" in unit.methods else 0  # more processors: skipped (pipedream_points)
    counts = {m: tuple(p for p in unit.processors if m != "pipedream" or p <= groups) for m in unit.methods}
    plans = {(m, b): dict(zip(counts[m], partitions(profile, counts[m], m, **run_options(unit, m, b)) if counts[m]
                              else [], strict=True)) for m, b in runs}
    return [base_row(processors, method, plan, single, plan.max_stage_cost, borrow) for processors in unit.processors
            for method, borrow in runs if (plan := plans[method, borrow].get(processors)) is not None]


def run_options(unit: Unit, method: str, borrow: str | None) -> dict[str, Any]:
    """The partitioner's keywords of one of ``unit``'s runs (:func:`~archsim.sweep.spec.method_runs`): LayerPipe's
    alpha, δ split axes and ``borrow``; none for another method."""
    if method != "layerpipe":
        return {}
    return {"alpha": unit.alpha, "axes": unit.split_axes, "borrow": borrow or BORROW_PAPER}


def check_processor_counts(units: Iterable[Unit | DevicePoint], source: str | None) -> list[dict[str, object]]:
    """The points PipeDream's straight pipeline cannot take (more processors than a network has layer groups),
    skipped and recorded (:mod:`.pipedream_points`), found before any unit is computed; a spec none of whose points
    is left is refused, naming the network. The layer groups depend on the graph alone, so one profile per network
    (layer kinds kept: the spec's) decides, costed by the analytic model (never the cycle engine)."""
    plain = [unit for unit in units if isinstance(unit, Unit)]
    groups: dict[str, int] = {}
    for unit in plain:
        if "pipedream" in unit.methods and unit.network not in groups:
            lowered = unit_lowering(unit.network, unit.network_sha256, unit.only, unit.batch, unit.mode,
                                    unit.array.element_bytes)
            groups[unit.network] = layer_groups(build_profile(unit_network(unit.network, unit.network_sha256,
                                                unit.only), unit.array, unit.batch, unit.mode, "analytic", lowered=lowered))
    if not plain:
        return []
    try:
        check_left(groups, plain[0].processors, plain[0].methods)
    except InputError as exc:
        raise spec_key_error(exc.message, source, "processors") from None
    return skipped_points(groups, plain[0].processors)


__all__ = ["check_processor_counts", "compute_unit", "run_options"]
