"""The library's main jobs as keyword-only functions that take names, paths or objects.

Each function resolves its inputs (a shipped network name or CSV path, an array shape such as
``"32x32"`` or a SCALE-Sim ``.cfg`` path, a sweep spec path) and calls the one implementation
the CLI uses too; nothing here computes a number of its own. Cycles are array clock cycles,
sizes bytes. Re-exported by :mod:`archsim` (``archsim.cost(...)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from archsim.array.config import ArrayConfig, parse_array_shape, read_scalesim_cfg
from archsim.workload.layer import Network


def load_network(source: str | Path | Network, *, only: str | Sequence[str] | None = None,
                 geometry: str = "archsim") -> Network:
    """A network from a shipped name (``"vgg16"``), a topology CSV path, or a :class:`Network` as is;
    ``only`` keeps those layer kinds (``["conv"]``); ``geometry="scalesim"`` sizes outputs as SCALE-Sim."""
    from archsim.workload import load_network as _load

    network = source if isinstance(source, Network) else _load(source, geometry=geometry)
    kinds = [only] if isinstance(only, str) else list(only or ())
    return network.only(*kinds) if kinds else network


def array_config(array: str | Path | ArrayConfig = "32x32", *, dataflow: str | None = None,
                 element_bytes: int | None = None) -> ArrayConfig:
    """An :class:`ArrayConfig` from ``"ROWSxCOLS"``, a SCALE-Sim ``.cfg`` path, or a config as is.

    ``dataflow`` (ws, os, is) overrides the file's or the default ws; ``element_bytes`` the default 1."""
    from dataclasses import replace

    if isinstance(array, ArrayConfig):
        config = array
    elif str(array).endswith(".cfg"):
        config = read_scalesim_cfg(array)
    else:
        rows, cols = parse_array_shape(str(array))
        config = ArrayConfig(rows=rows, cols=cols)
    changes: dict[str, Any] = {}  # ArrayConfig's fields, checked by it
    if dataflow is not None:
        changes["dataflow"] = dataflow
    if element_bytes is not None:
        changes["element_bytes"] = element_bytes
    if changes:
        config = replace(config, **changes)
    if config.dataflow not in ("ws", "os", "is"):
        from archsim.errors import InputError

        raise InputError(f"unknown dataflow {config.dataflow!r}; choose ws, os or is", field="dataflow")
    return config


def cost(network: str | Path | Network, *, array: str | Path | ArrayConfig = "32x32", batch: int = 32,
         mode: str = "exact", engine: str = "analytic") -> pd.DataFrame:
    """Per-layer F/G/D cycles, utilizations and bytes — the table ``archsim cost`` prints.

    ``mode``: ``paper`` (LayerPipe's simplifications) or ``exact``; ``engine``: ``analytic``
    (compute cycles) or ``cycle`` (memory-aware: adds stall cycles and DRAM bytes)."""
    from archsim.array.costing import cost_network
    from archsim.lowering import check_mode

    return cost_network(load_network(network), array_config(array), batch, check_mode(mode), engine)


def profile(network: str | Path | Network, *, array: str | Path | ArrayConfig = "32x32", batch: int = 32,
            mode: str = "exact", engine: str = "analytic"):
    """The per-layer cost profile every partitioner and schedule works on (:class:`LayerProfile`)."""
    from archsim.lowering import check_mode
    from archsim.partition import build_profile

    return build_profile(load_network(network), array_config(array), batch, check_mode(mode), engine)


def pipeline(profile, *, processors: int, method: str = "layerpipe", **options):
    """Partition a profile over ``processors`` (``layerpipe``, ``pipedream`` or ``gpipe``), as
    ``archsim pipeline`` does; ``options`` go to the partitioner (LayerPipe: ``alpha``, ``axes``).
    The :class:`Partition`'s ``max_stage_cost`` is the steady-state time per iteration in its ``unit``."""
    from archsim.planners import partition

    return partition(profile, processors, method, **options)


def simulate(plan, profile, *, microbatches: int, schedule: str | None = None):
    """Run ``plan`` for ``microbatches`` micro-batches in the event simulator; returns the validated
    :class:`Timeline` (``.makespan`` in cycles, ``.utilization()``, ``.to_frame()``). ``schedule``:
    ``gpipe``, ``1f1b`` or ``layerpipe`` (default: the plan's method's own)."""
    from archsim.policies.pipeline import simulate_partition

    return simulate_partition(plan, profile, microbatches, schedule).timeline


def run_sweep(spec, *, out: str | Path | None = None, workers: int = 1, dask: str | None = None,
              progress: bool = False) -> pd.DataFrame:
    """Run a sweep spec (a TOML path or a :class:`SweepSpec`) into ``out`` (default
    ``results/<spec name>``), computing only configurations not cached there; returns the results."""
    from archsim.sweep import SweepSpec, load_spec
    from archsim.sweep import run_sweep as _run

    spec = spec if isinstance(spec, SweepSpec) else load_spec(spec)
    return _run(spec, out if out is not None else Path("results") / spec.name, workers=workers, dask=dask,
                progress=progress)


def write_report(results: str | Path, *, out: str | Path) -> Path:
    """Write the self-contained HTML report of a sweep's results folder to ``out``; returns its path."""
    from archsim.commands.sweep import _spec_command
    from archsim.commands.sweep import write_report as _write

    folder = Path(results)
    folder = folder.parent if folder.suffix == ".csv" else folder
    return _write(folder, out, spec_command=_spec_command(folder))
