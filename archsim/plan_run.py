"""``archsim plan``'s run, once for the command and :func:`archsim.plan`: pipeline planning over a cluster — SPP,
PipeDream's optimizer, and SPP's baselines. The run reads its settings from ``args``, an object whose attributes
are the command's flags (``argparse.Namespace`` from the command, a ``SimpleNamespace`` from the library), already
of the flags' types; the layers are loaded and the array built by the caller's ``loader`` and ``array_of`` (the
command's flags, or the library's keywords), and a note is said through ``speak(kind, text)``. :func:`run_plan`
returns the rows and meta the command prints, the timeline, and the cluster file's lines said after the run.
Seconds throughout (layer costs priced at a clock, or measured)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from archsim.console import Speak, say
from archsim.plan_cluster import read_plan_cluster
from archsim.plan_flags import check_flags
from archsim.plan_profile import layer_profile
from archsim.plan_result import PlanRun
from archsim.progress import Phases
from archsim.rows import python_scalar
from archsim.units import GIB

if TYPE_CHECKING:
    from archsim.array.config import ArrayConfig
    from archsim.workload.layer import Network


def run_plan(args: Any, *, loader: Callable[[Any], Network], array_of: Callable[[Any], ArrayConfig],
             speak: Speak = say, drawn: bool = False, phases: Phases | None = None) -> PlanRun:
    """One ``archsim plan`` run on ``args`` (the flags' values; ``mode`` None: not given): the flags checked
    (:func:`check_flags`), the cluster read, the layers priced (:func:`layer_profile`), then planned. ``drawn``:
    the caller will write the timeline (PipeDream's plan is then simulated, not only timed); ``phases``: the
    progress phases of PipeDream's optimizer (default none)."""
    check_flags(args)
    topology, seed, (warnings, notes) = read_plan_cluster(args.cluster, args.seed, args.links)
    profile, priced_on, device_memory = layer_profile(args, loader=loader, array_of=array_of, speak=speak)
    from archsim.validate import check_job_size

    check_job_size(args.microbatches * 2 * len(profile.names), args.max_ops)  # F and B blocks per stage ≤ per layer
    if args.method == "pipedream":
        from archsim.plan_pipedream import run_pipedream

        done = run_pipedream(args, profile, topology, priced_on, device_memory, drawn=drawn, phases=phases)
    else:
        from archsim.plan_spp import run_spp

        memory = ((device_memory, f"the {priced_on['priced_on']}", GIB, "GiB") if device_memory is not None
                  else None if topology.gpu_memory_bytes is None
                  else (topology.gpu_memory_bytes, "the cluster file's gpu_memory_gb", 1e9, "GB"))
        done = run_spp(args, topology, profile, priced_on, speak, memory)
    return replace(done, rows=plain_numbers(done.rows), meta=plain_numbers(with_seed(done.meta, seed)),
                   warnings=tuple(warnings), notes=tuple(notes))


def plain_numbers(value: Any) -> Any:
    """``value`` (a plan's rows or meta: dicts, lists, tuples and scalars) with every numpy scalar Python's own, each
    the same value (numpy's float64 from the planners' arithmetic, int64 from their arrays, a bool from a
    comparison: :func:`~archsim.rows.python_scalar`, the one rule), so that :func:`archsim.plan`'s ``.meta`` and rows
    hold one kind of number, as their JSON does."""
    if isinstance(value, dict):
        return {key: plain_numbers(item) for key, item in value.items()}
    if isinstance(value, list) or type(value) is tuple:
        return type(value)(plain_numbers(item) for item in value)
    return python_scalar(value)


def with_seed(meta: dict, seed: int | None) -> dict:
    """``meta`` with ``seed`` (the one the cluster's bandwidth ranges were drawn with) after ``cluster``; unchanged
    where nothing was drawn (a file of figures: no seed changes its plan)."""
    if seed is None:
        return meta
    keys = list(meta)
    at = keys.index("cluster") + 1 if "cluster" in keys else len(keys)
    return {**dict(list(meta.items())[:at]), "seed": seed, **dict(list(meta.items())[at:])}


__all__ = ["plain_numbers", "run_plan", "with_seed"]
