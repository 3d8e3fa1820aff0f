"""The library's main jobs as keyword-only functions that take names, paths or objects.

Each function resolves its inputs (a shipped network name or CSV path, an array shape such as
``"32x32"`` or a SCALE-Sim ``.cfg`` path, a sweep spec path) and calls the one implementation
the CLI uses too; nothing here computes a number of its own. Cycles are array clock cycles,
sizes bytes. Re-exported by :mod:`archsim` (``archsim.cost(...)``). The training jobs (``train``,
``train_runs``) live in :mod:`archsim.api_training` (``search`` in :mod:`archsim.api_search`, ``train_sweep`` in :mod:`archsim.api_train_sweep`), ``schedule`` in :mod:`archsim.api_schedule` and
``gemm``, ``sparse`` and ``iteration_energy`` in :mod:`archsim.api_array`, ``plan`` in :mod:`archsim.api_plan`, ``validate_gpu`` in :mod:`archsim.api_validation`, ``cluster_jobs`` in :mod:`archsim.api_cluster`, ``collective`` in :mod:`archsim.api_collectives`, ``bppsa_rnn``, ``bppsa_pruned_vgg11`` and ``bppsa_network`` in :mod:`archsim.api_bppsa` and the inputs
(``load_network``, ``array_config``) in :mod:`archsim.api_inputs`, re-exported here; every job checks its keywords with :mod:`archsim.api_keywords`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archsim.api_array import gemm, iteration_energy, sparse
from archsim.api_bppsa import bppsa_network, bppsa_pruned_vgg11, bppsa_rnn
from archsim.api_cluster import cluster_jobs
from archsim.api_collectives import collective
from archsim.api_inputs import (
    array_and_notes,
    array_config,
    build_array,
    cfg_as_config,
    job_array,
    load_network,
    unread_keys_notes,
    warn_file_batch,
)
from archsim.api_keywords import (
    check_choice,
    check_keywords,
    check_path,
    check_switch,
    check_text,
    positive_float,
    positive_int,
    speaks_keywords,
)
from archsim.api_plan import PlanResult, plan
from archsim.api_schedule import ScheduleResult, schedule
from archsim.api_search import search
from archsim.api_sweep import run_sweep, sweep_cache, write_report
from archsim.api_train_sweep import SweepResult, train_sweep
from archsim.api_training import train, train_runs
from archsim.api_validation import validate_gpu
from archsim.array.config import ArrayConfig
from archsim.choices.devices import ENGINES
from archsim.collective_run import CollectiveCost
from archsim.errors import InputError
from archsim.workload.layer import Network

if TYPE_CHECKING:  # the result types are loaded with the jobs that return them
    import pandas as pd

    from archsim.cost_json import CostResult
    from archsim.count_types import Count, Counts, Number
    from archsim.dfg.of_plan import PlanDFG
    from archsim.partition import LayerProfile, Partition
    from archsim.sim.timeline import Timeline
    from archsim.spp.topology import Topology


@speaks_keywords
def cost(network: str | Path | Network, *, array: str | int | Path | ArrayConfig | None = None, batch: Count = 32,
         mode: str = "exact", engine: str = "analytic", dataflow: str | None = None, dtype: str | None = None,
         element_bytes: Count | None = None, config: str | Path | None = None, bandwidth: Count | None = None,
         sram_kb: Counts | None = None, clock_ghz: Number | None = None, energy: bool = False,
         energy_table: str | Path | None = None, geometry: str = "archsim", only: str | Sequence[str] | None = None,
         shapes: str = "auto", unsupported: str = "error", input_shape: str | None = None,
         dim: Mapping[str, int] | Sequence[tuple[str, int] | str] | str | None = None) -> CostResult:
    """Per-layer F/G/D cycles, utilizations and bytes — the table ``archsim cost`` prints, less its
    TOTAL row — with ``archsim cost``'s flags as keywords of the same names. Returns a
    :class:`~archsim.cost_json.CostResult`: the table (``.table``, a DataFrame, whose columns and methods
    answer on the result too) and ``to_dict()``, the document ``archsim cost --format json`` prints.

    ``mode``: ``paper`` (LayerPipe's simplifications) or ``exact``; ``engine``: ``analytic``
    (compute cycles) or ``cycle`` (memory-aware: adds stall cycles and DRAM bytes, under ``bandwidth``
    and ``sram_kb``); ``dtype``: the element type as ``--dtype`` (``int8``, 1-byte words as SCALE-Sim counts
    them, unless ``element_bytes`` or an ``ArrayConfig`` says otherwise; ``fp16``, ``bf16``, ``fp32``); the
    array keywords as :func:`array_config`; a clock (``clock_ghz`` or the .cfg's)
    adds ``X_seconds`` after every ``X_cycles``; ``energy=True`` adds each layer's F/G/D energy (pJ)
    priced by ``energy_table`` (a name or TOML; default the .cfg's, else horowitz45), which prices the meta's areas
    (``pe_array_mm2``, ``sram_mm2``, ``area_mm2``) with or without ``energy``; the network keywords as
    :func:`load_network`."""
    from archsim.array.costing import cost_frame
    from archsim.console import library_note
    from archsim.cost_json import CostResult, cost_document
    from archsim.lowering import check_mode
    from archsim.seconds import add_seconds

    check_choice(engine, ENGINES, "engine")
    check_switch(energy, "energy")  # a switch: energy="no" from a user's file is true
    batch = positive_int(batch, "batch")
    # a .cfg's (or TOML's) [energy] table prices as --config's does
    chosen, config, dtype, notes = job_array(array, config, dataflow=dataflow, dtype=dtype, element_bytes=element_bytes,
                                             bandwidth=bandwidth, sram_kb=sram_kb, clock_ghz=clock_ghz, engine=engine)
    layers = load_network(network, only=only, geometry=geometry, shapes=shapes, unsupported=unsupported,
                          input_shape=input_shape, dim=dim)
    warn_file_batch(layers, batch)
    for note in notes:  # what archsim cost prints on stderr
        library_note(note, stacklevel=3)
    rows, document, after = cost_document(layers, chosen, batch=batch, mode=check_mode(mode), engine=engine,
                                          geometry=geometry, dtype=dtype, energy=energy, energy_table=energy_table,
                                          config=config)
    for note in after:  # what archsim cost notes after its table
        library_note(note, stacklevel=3)
    return CostResult(add_seconds(cost_frame(rows, engine), chosen.clock_hz), document)


@speaks_keywords
def profile(network: str | Path | Network, *, array: str | int | Path | ArrayConfig | None = None, batch: Count = 32,
            mode: str = "exact", engine: str = "analytic", dataflow: str | None = None, dtype: str | None = None,
            element_bytes: Count | None = None, config: str | Path | None = None, bandwidth: Count | None = None,
            sram_kb: Counts | None = None, clock_ghz: Number | None = None, geometry: str = "archsim",
            only: str | Sequence[str] | None = None, shapes: str = "auto", unsupported: str = "error",
            input_shape: str | None = None,
            dim: Mapping[str, int] | Sequence[tuple[str, int] | str] | str | None = None) -> LayerProfile:
    """The per-layer cost profile every partitioner and schedule works on (:class:`LayerProfile`), as
    ``archsim pipeline`` and ``schedule`` build it, in cycles; ``dtype`` or ``element_bytes`` as :func:`array_config`
    (they size the activation, δ and weight bytes the partitioners move); ``config``, and ``engine="cycle"``'s
    ``bandwidth`` and ``sram_kb``, as ``archsim pipeline``'s flags (SRAM sizes without the cycle engine change no
    cycle: a UserWarning says so, as the command does on stderr). ``clock_ghz`` prices it in seconds at
    that clock instead, as ``archsim plan --clock-ghz`` does, for :func:`archsim.planners.plan_on_cluster` on a
    cluster file (links in bytes per second; a profile in cycles is refused there). The network keywords
    (``only="conv"``, …) as :func:`load_network`."""
    from archsim.array.device_sections import is_device_toml
    from archsim.array.options import check_bandwidth_engine, sram_unused_warning
    from archsim.console import library_note
    from archsim.device_toml import device_toml_dtype
    from archsim.lowering import check_mode
    from archsim.partition import build_profile
    from archsim.spp.profiles import profile_from_network

    check_choice(engine, ENGINES, "engine")
    batch = positive_int(batch, "batch")  # "32" as --batch reads it; 2.5 or True refused as cost refuses them
    array, config = cfg_as_config(array, config)  # a .cfg or device TOML given as array is config, as cost's
    toml_notes: list[str] = []  # a device TOML's, read as cost reads it (array_and_notes: its notes its own)
    dtype = device_toml_dtype(config, dtype, element_bytes)  # a device TOML's default: train's, as cost's
    if is_device_toml(config):
        chosen, toml_notes = array_and_notes(array, config, dataflow=dataflow, dtype=dtype, element_bytes=element_bytes,
                                             bandwidth=bandwidth, sram_kb=sram_kb, clock_ghz=clock_ghz, engine=engine)
    else:
        chosen = build_array(array, config=config, dataflow=dataflow, dtype=dtype, element_bytes=element_bytes,
                             bandwidth=bandwidth, sram_kb=sram_kb, clock_ghz=clock_ghz, rated=True, fp8=True)
        file = cfg_as_config(array, config)[1]
        if file is not None and engine == "cycle" and bandwidth is None:  # the file's hbm_gbps, as cost reads it
            from archsim.array.device_rate import with_device_bandwidth
            from archsim.array.options import element_width

            width = element_width(dtype, None if element_bytes is None else positive_int(element_bytes, "element-bytes"))
            chosen, rate = with_device_bandwidth(chosen, file, width or 1)
            toml_notes = [*unread_keys_notes(file, rates_read=True), *([rate] if rate else [])]
    check_bandwidth_engine(bandwidth, engine)  # after the value's own check, as argparse's comes first
    unused = sram_unused_warning(sram_kb, engine, "a profile's analytic layer cycles")
    if unused:
        library_note(unused, stacklevel=3)
    layers = load_network(network, only=only, geometry=geometry, shapes=shapes, unsupported=unsupported,
                          input_shape=input_shape, dim=dim)
    warn_file_batch(layers, batch)
    for note in toml_notes or unread_keys_notes(cfg_as_config(array, config)[1], rates_read=True):  # as archsim pipeline says them
        library_note(note, stacklevel=3)
    if clock_ghz is not None:
        check_choice(engine, ("analytic",), "engine")  # archsim plan prices the analytic cycles
        return profile_from_network(layers, chosen, batch, check_mode(mode))
    return build_profile(layers, chosen, batch, check_mode(mode), engine)


@speaks_keywords
def pipeline(profile: LayerProfile, *, processors: Count | Topology, method: str = "layerpipe", **options) -> Partition:
    """Partition a profile over ``processors`` (a count, or a :class:`~archsim.spp.topology.Topology`) with
    ``method`` (``layerpipe``, ``pipedream``, ``gpipe`` or ``ooo``), as ``archsim pipeline`` does; ``options`` go
    to the partitioner (LayerPipe: ``alpha``, ``borrow`` and ``split_axes``, its flags; PipeDream: ``replication`` and
    ``use_fewer_machines``; GPipe: ``balance``: :data:`PIPELINE_KEYWORDS`), an unknown one refused in one line naming
    the nearest of those and listing them (the partitioners' internal parameters, :attr:`~archsim.planners.Planner.options`,
    are taken but not listed). ``bandwidth`` is refused: ``archsim pipeline
    --bandwidth`` is the cycle engine's DRAM words per cycle, priced into the profile (:func:`profile`), and the
    stages' link is ``link_bandwidth``, :func:`simulate`'s (a plan made for a link between the processors: ``processors``
    a :meth:`Topology.flat(P, bytes_per_unit) <archsim.spp.topology.Topology.flat>`).
    The :class:`Partition`'s ``max_stage_cost`` is the steady-state time per iteration in its ``unit``;
    a plan of fewer stages than ``processors`` warns (UserWarning) the note the command prints, and so does Algorithm 1's plan
    slower than its plan on fewer processors (:func:`~archsim.planners.fewer_processors_note`), and a speedup above
    ``processors`` (:func:`~archsim.partition.superlinear.superlinear_note`)."""
    from archsim.console import library_note
    from archsim.planners import PLANNERS, fewer_processors_note, idle_processors_note, partition
    from archsim.spp.topology import Topology

    _check_is(profile, "profile", "a LayerProfile: archsim.profile(network, ...)'s")
    check_text(method, "method", "a method name (str)")  # a list is no registry key: one line, not a TypeError
    planner = PLANNERS.get(method)  # an unknown method is partition's to refuse, as --method's
    if planner is not None and planner.partition is not None:
        flags = ("split_axes",) if "axes" in planner.options else ()  # --split-axes, the partitioner's axes
        check_keywords(options, (*planner.options, *flags), f"pipeline with method={method!r}",
                       shown=PIPELINE_KEYWORDS.get(method, ()))
        options = _layerpipe_flags(options)
    if not isinstance(processors, Topology):  # a count, read as --processors reads it ("3" too), 1 … 4096
        from archsim.validate import MAX_PROCESSORS

        processors = positive_int(processors, "processors", high=MAX_PROCESSORS, what="a processor count")
    plan = partition(profile, processors, method, **options)
    idle = idle_processors_note(plan, processors.devices if isinstance(processors, Topology) else processors)
    if idle:
        library_note(idle, stacklevel=3)
    fewer = fewer_processors_note(profile, plan, processors, **options)  # None on a Topology
    if fewer:
        library_note(fewer, stacklevel=3)
    from archsim.partition.superlinear import superlinear_note

    above = superlinear_note(profile, plan, processors)  # None on a Topology
    if above:
        library_note(above, stacklevel=3)
    return plan


# Each partitioner's keywords a user gives archsim.pipeline, those an unknown keyword's line lists: LayerPipe's are
# archsim pipeline's --alpha, --borrow and --split-axes; PipeDream's optimizer switches (archsim plan's
# --use-fewer-machines; replication False is its --straight-pipeline) and GPipe's balance have no pipeline flag but are
# settings, not parts. The partitioners' other parameters (LayerPipe's axes, coster, search, max_rounds; PipeDream's
# options object) are still taken, for code that calls them so, but are no flag's and not listed.
PIPELINE_KEYWORDS: dict[str, tuple[str, ...]] = {"layerpipe": ("alpha", "borrow", "split_axes"),
                                                 "pipedream": ("replication", "use_fewer_machines"),
                                                 "gpipe": ("balance",)}


def _layerpipe_flags(options: dict[str, Any]) -> dict[str, Any]:
    """``split_axes`` (``--split-axes``' name) as the partitioner's ``axes``, and an ``alpha`` given as text
    (``"1.05"``: a widget's or a CSV's) read as ``--alpha`` reads it."""
    from archsim.choices.partitions import MAX_ALPHA
    from archsim.value_parsers import parse_float

    options = dict(options)
    if "split_axes" in options:
        if "axes" in options:
            raise InputError("give split_axes or axes, not both: they name one setting", field="split_axes")
        options["axes"] = options.pop("split_axes")
    if isinstance(options.get("alpha"), str):
        try:
            options["alpha"] = parse_float(options["alpha"], low=1.0, high=MAX_ALPHA, low_open=True,
                                           what="a relaxation factor")
        except ValueError as exc:
            raise InputError(str(exc), field="alpha") from None
    return options


@speaks_keywords
def simulate(plan: Partition, profile: LayerProfile, *, microbatches: Count, schedule: str | None = None,
             max_ops: Count | None = None, link_bandwidth: Number | None = None) -> Timeline:
    """Run ``plan`` for ``microbatches`` micro-batches in the event simulator; returns the validated
    :class:`Timeline` (``.makespan`` in the plan's unit, cycles or seconds; ``.utilization()``, ``.to_frame()``).
    ``schedule``: ``gpipe``, ``1f1b`` or ``layerpipe`` (default: the plan's method's own), archsim's earlier
    variants ``gpipe-newest-first`` and ``1f1b-window``, or ``1f1b-delta-before-g`` (docs/concepts.md).
    ``max_ops`` (None: ``--max-ops``' default, 10⁶): a larger job (micro-batches × the plan's ops) is refused
    before anything is built, as ``archsim pipeline --microbatches`` refuses it. A plan made from another profile
    (another network, or the same one on another array: its unit or a layer's forward cost differs) is refused.
    ``link_bandwidth`` (``--link-bandwidth``): bytes per profile unit (cycles) of the link each stage-to-stage hop
    crosses, an activation or gradient of b bytes taking b / link_bandwidth (None: free hops, the command's default;
    :mod:`archsim.policies.hop_link`)."""
    from archsim.policies.pipeline import simulate_partition
    from archsim.validate import DEFAULT_MAX_OPS, check_job_size

    _check_is(plan, "plan", "a Partition: archsim.pipeline(profile, ...)'s")
    _check_is(profile, "profile", "a LayerProfile: archsim.profile(network, ...)'s")
    microbatches = positive_int(microbatches, "microbatches")
    _check_plan_of(plan, profile)
    limit = DEFAULT_MAX_OPS if max_ops is None else positive_int(max_ops, "max_ops")
    check_job_size(microbatches * sum(len(stage.ops) for stage in plan.stages), limit, "max_ops")
    link = None if link_bandwidth is None else positive_float(link_bandwidth, "link_bandwidth")
    return simulate_partition(plan, profile, microbatches, schedule, link).timeline


@speaks_keywords
def pipeline_dfg(plan: Partition, profile: LayerProfile, *, out: str | Path | None = None) -> PlanDFG:
    """LayerPipe's pipelined, retimed training DFG of a ``layerpipe`` plan over the profile it was made from, as
    ``archsim pipeline --dfg`` writes it: a :class:`~archsim.dfg.of_plan.PlanDFG` (``.pipelined``: the
    derivation's nodes, edge delays before and after retiming, each layer's retiming and delayed gradients;
    ``.bound``: the iteration bound per slot and its critical loop; costs in the plan's unit). ``out``: also
    write it there (Graphviz DOT for a ``.dot`` name, else the JSON document), through the CLI's one writer."""
    from archsim.dfg.document import dfg_text
    from archsim.dfg.of_plan import plan_dfg
    from archsim.output_files import write_output

    _check_is(plan, "plan", "a Partition: archsim.pipeline(profile, ...)'s")
    _check_is(profile, "profile", "a LayerProfile: archsim.profile(network, ...)'s")
    if plan.method != "layerpipe":
        raise InputError(f"pipeline_dfg derives LayerPipe's pipeline: give it a plan of method='layerpipe', "
                         f"not {plan.method!r}", field="plan")
    _check_plan_of(plan, profile)
    result = plan_dfg(plan, profile)
    if out is not None:
        check_path(out, "out", "a file path (str or Path)")
        meta = {"method": plan.method, "processors": len(plan.stages)}
        write_output(out, dfg_text(result, out, meta, f"{plan.method}: pipelined and retimed training DFG"))
    return result


@speaks_keywords
def pipeline_memory(plan: Partition, profile: LayerProfile, *, microbatches: Count, schedule: str | None = None,
                    optimizer: str = "sgd", capacity_gb: Number | None = None,
                    max_ops: Count | None = None, link_bandwidth: Number | None = None) -> pd.DataFrame:
    """The bytes each processor holds while ``plan`` trains ``microbatches`` micro-batches, as ``archsim pipeline
    --microbatches M --memory`` states them: one row per processor (weights × the versions the simulated
    ``schedule`` keeps, gradients, ``optimizer`` state: ``sgd`` none, ``momentum`` 1×, ``adam`` 2× the weights,
    the peak of stashed activations, ``peak_memory_bytes``), from :func:`archsim.footprint.partition_footprint`.
    ``schedule``, ``max_ops`` and ``link_bandwidth`` as :func:`simulate`'s; ``capacity_gb`` (GB = 10⁹ bytes, ``--capacity-gb``): a
    processor over it warns (UserWarning) the line the command prints, and the frame still comes back."""
    from archsim.choices.partitions import OPTIMIZER_STATES
    from archsim.console import library_note, setting
    from archsim.fits import memory_warning
    from archsim.footprint import footprint_frame, partition_footprint
    from archsim.policies.pipeline import simulate_partition
    from archsim.sim.validate import assert_valid
    from archsim.validate import DEFAULT_MAX_OPS, check_job_size
    from archsim.value_parsers import parse_float

    _check_is(plan, "plan", "a Partition: archsim.pipeline(profile, ...)'s")
    _check_is(profile, "profile", "a LayerProfile: archsim.profile(network, ...)'s")
    microbatches = positive_int(microbatches, "microbatches")
    check_choice(optimizer, tuple(OPTIMIZER_STATES), "optimizer")
    capacity = None
    if capacity_gb is not None:  # --capacity-gb's range, read as the flag reads it ("16" too)
        try:
            capacity = parse_float(capacity_gb, low=0.0, high=1e9, low_open=True, what="a positive number of GB") * 1e9
        except ValueError as exc:
            raise InputError(str(exc), field="capacity-gb") from None
    _check_plan_of(plan, profile)
    limit = DEFAULT_MAX_OPS if max_ops is None else positive_int(max_ops, "max_ops")
    check_job_size(microbatches * sum(len(stage.ops) for stage in plan.stages), limit, "max_ops")
    link = None if link_bandwidth is None else positive_float(link_bandwidth, "link_bandwidth")
    run = simulate_partition(plan, profile, microbatches, schedule, link)
    assert_valid(run.timeline.problem, run.timeline)
    memory = partition_footprint(plan, profile, run.timeline, run.schedule, optimizer)
    if capacity is not None:
        line = memory_warning([(f"processor {m.processor}", f"memory ({setting('capacity-gb')})", m.peak_bytes,
                                capacity) for m in memory], "processors")
        if line:
            library_note(line, stacklevel=3)
    return footprint_frame(memory)


def _check_is(value: object, field: str, what: str) -> None:
    """Refuse a value of another type where a profile or a plan goes (a network name, as ``archsim pipeline``
    takes), in one line saying what goes there, not an AttributeError from inside."""
    from archsim.partition import LayerProfile, Partition

    wanted = {"plan": Partition, "profile": LayerProfile}[field]
    if not isinstance(value, wanted):
        raise InputError(f"expected {what}, got {type(value).__name__} {value!r:.60}", field=field)


def _check_plan_of(plan, profile) -> None:
    """Refuse a plan made from another profile (another network, or the same one on another array): what the plan
    records of its profile, its unit and each layer's forward op (name and cost, never split), must be the
    profile's. Why: a mismatch ran, timing one array's stages with another's ops, without a word."""
    import numpy as np

    forward = [(op.layer, op.cost) for stage in plan.stages for op in stage.ops if op.kind == "F"]
    names = tuple(name for name, _ in forward)
    if plan.unit != profile.unit:
        why = f"the plan is in {plan.unit}, the profile in {profile.unit}"
    elif names != tuple(profile.names):
        why = (f"the plan's {len(names)} layers are not the profile's {len(profile.names)}"
               + (" (their names differ)" if len(names) == len(profile.names) else ""))
    else:
        costs = np.array([cost for _, cost in forward], dtype=float)
        differ = np.flatnonzero(~np.isclose(costs, np.asarray(profile.forward, dtype=float), rtol=1e-9, atol=0.0))
        if not len(differ):
            return
        i = int(differ[0])
        why = (f"layer {names[i]}'s forward costs {costs[i]:,.6g} {plan.unit} in the plan and "
               f"{float(profile.forward[i]):,.6g} in the profile (another array?)")
    raise InputError(f"plan and profile disagree: {why}; pass the profile the plan was made from", field="plan")


# the jobs archsim re-exports (archsim/__init__.py), the training ones from api_training.py (search from
# api_search.py, train_sweep from api_train_sweep.py), the sweeps' from api_sweep.py,
# gemm, sparse and iteration_energy from api_array.py, plan from api_plan.py, the inputs from api_inputs.py
__all__ = ["CollectiveCost", "PlanResult", "ScheduleResult", "SweepResult", "array_config", "bppsa_network", "bppsa_pruned_vgg11", "bppsa_rnn", "cluster_jobs", "collective", "cost", "gemm", "iteration_energy", "load_network",
           "pipeline", "pipeline_dfg", "pipeline_memory", "plan", "profile", "run_sweep", "schedule", "search", "simulate", "sparse", "sweep_cache",
           "train", "train_runs", "train_sweep", "validate_gpu", "write_report"]
