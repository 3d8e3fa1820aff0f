"""The library's main jobs as keyword-only functions that take names, paths or objects.

Each function resolves its inputs (a shipped network name or CSV path, an array shape such as
``"32x32"`` or a SCALE-Sim ``.cfg`` path, a sweep spec path) and calls the one implementation
the CLI uses too; nothing here computes a number of its own. Cycles are array clock cycles,
sizes bytes. Re-exported by :mod:`archsim` (``archsim.cost(...)``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from archsim.array.config import ArrayConfig
from archsim.choices.devices import ENGINES
from archsim.choices.networks import GEOMETRIES, SHAPE_CHECKS, UNSUPPORTED
from archsim.workload.layer import Network

if TYPE_CHECKING:  # the result type is loaded with the cost it returns
    from archsim.cost_json import CostResult


def load_network(source: str | Path | Network, *, only: str | Sequence[str] | None = None,
                 geometry: str = "archsim", shapes: str = "auto", unsupported: str = "error",
                 input_shape: str | None = None,
                 dim: Mapping[str, int] | Sequence[tuple[str, int]] | None = None) -> Network:
    """A network from a shipped name (``"vgg16"``), a topology CSV, ONNX, transformer config or PyTorch
    file path, or a :class:`Network` as is; the other names are the network flags': ``only`` keeps those
    layer kinds (``"conv,fc"`` or ``["conv"]``); ``geometry="scalesim"`` sizes outputs as SCALE-Sim;
    ``shapes``, ``unsupported``, ``input_shape`` and ``dim`` (``{"seq": 128}``) as ``--shapes``, ``--unsupported``,
    ``--input-shape`` and ``--dim``."""
    from archsim.workload import load_network as _load
    from archsim.workload.shipped import dims_of

    _check_choice(shapes, SHAPE_CHECKS, "shapes")
    _check_choice(unsupported, UNSUPPORTED, "unsupported")
    _check_choice(geometry, GEOMETRIES, "geometry")
    network = source if isinstance(source, Network) else _load(
        source, geometry=geometry, unsupported=unsupported, dims=dims_of(dim or {}), shapes=shapes,
        input_shape=input_shape)
    parts = only.split(",") if isinstance(only, str) else list(only or ())
    kinds = [kind.strip() for kind in parts if kind.strip()]
    return network.only(*kinds) if kinds else network


def array_config(array: str | Path | ArrayConfig | None = None, *, config: str | Path | None = None,
                 dataflow: str | None = None, dtype: str | None = None, element_bytes: int | None = None,
                 bandwidth: int | None = None, sram_kb: str | int | Sequence[int] | None = None,
                 clock_ghz: float | None = None) -> ArrayConfig:
    """An :class:`ArrayConfig` as the array flags build it (:func:`archsim.array.options.array_from_options`):
    ``array`` ``"ROWSxCOLS"`` (default 32x32, or ``config``'s shape), a SCALE-Sim ``.cfg`` path (as
    ``config``) or a config as is; ``config``, ``dataflow`` (ws, os, is), ``dtype`` (int8, fp16, bf16, fp32)
    or ``element_bytes`` (default 1, or an ``ArrayConfig``'s own; both given must agree), ``bandwidth`` (DRAM
    words/cycle), ``sram_kb`` (KiB, one or ifmap,filter,ofmap) and ``clock_ghz`` as ``--config``,
    ``--dataflow``, ``--dtype``, ``--element-bytes``, ``--bandwidth``, ``--sram-kb`` and ``--clock-ghz``."""
    from dataclasses import replace

    from archsim.array.options import array_from_options, element_width, with_clock, with_memory
    from archsim.choices.devices import ARRAY_DTYPES

    if dtype is not None:
        _check_choice(dtype, ARRAY_DTYPES, "dtype")
    element_bytes = element_width(dtype, element_bytes)

    if isinstance(array, ArrayConfig):
        if config is not None:
            from archsim.errors import InputError

            raise InputError("give an ArrayConfig or a .cfg file, not both", field="config")
        changes: dict[str, Any] = {}  # ArrayConfig's fields, checked by it
        if dataflow is not None:
            changes["dataflow"] = dataflow
        if element_bytes is not None:
            changes["element_bytes"] = element_bytes
        return with_clock(with_memory(replace(array, **changes), bandwidth, sram_kb), clock_ghz)
    array, config = _cfg_as_config(array, config)
    return array_from_options(None if array is None else str(array), config, dataflow,
                              1 if element_bytes is None else element_bytes, bandwidth, sram_kb, clock_ghz)


def _cfg_as_config(array, config):
    """(array, config) with a ``.cfg`` path given as ``array`` moved to ``config``, where ``--config`` takes it
    (the array it describes, and the ``[energy]`` table it names)."""
    if array is not None and not isinstance(array, ArrayConfig) and str(array).endswith(".cfg") and config is None:
        return None, array
    return array, config


def cost(network: str | Path | Network, *, array: str | Path | ArrayConfig | None = None, batch: int = 32,
         mode: str = "exact", engine: str = "analytic", dataflow: str | None = None, dtype: str | None = None,
         element_bytes: int | None = None, config: str | Path | None = None, bandwidth: int | None = None,
         sram_kb: str | int | Sequence[int] | None = None, clock_ghz: float | None = None, energy: bool = False,
         energy_table: str | Path | None = None, geometry: str = "archsim", only: str | Sequence[str] | None = None,
         shapes: str = "auto", unsupported: str = "error", input_shape: str | None = None,
         dim: Mapping[str, int] | Sequence[tuple[str, int]] | None = None) -> CostResult:
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
    priced by ``energy_table`` (a name or TOML; default the .cfg's, else horowitz45); the network
    keywords as :func:`load_network`."""
    import warnings

    from archsim.array.costing import cost_frame
    from archsim.array.device_sections import device_arrays_note, device_dtype_note
    from archsim.array.options import check_bandwidth_engine
    from archsim.cost_json import CostResult, cost_document
    from archsim.lowering import check_mode
    from archsim.seconds import add_seconds

    _check_choice(engine, ENGINES, "engine")
    batch = _positive_int(batch, "batch")
    array, config = _cfg_as_config(array, config)  # a .cfg's [energy] table prices as --config's does
    chosen = array_config(array, config=config, dataflow=dataflow, dtype=dtype, element_bytes=element_bytes,
                          bandwidth=bandwidth, sram_kb=sram_kb, clock_ghz=clock_ghz)
    check_bandwidth_engine(bandwidth, engine)  # after the value's own check, as argparse's comes first
    layers = load_network(network, only=only, geometry=geometry, shapes=shapes, unsupported=unsupported,
                          input_shape=input_shape, dim=dim)
    notes = [] if config is None else [device_arrays_note(config),
                                       None if dtype or element_bytes else device_dtype_note(config)]
    for note in notes:  # the notes archsim cost prints on stderr: one of a device's arrays, at int8
        if note:
            warnings.warn(note, UserWarning, stacklevel=2)
    rows, document = cost_document(layers, chosen, batch=batch, mode=check_mode(mode), engine=engine,
                                   geometry=geometry, dtype=dtype, energy=energy, energy_table=energy_table,
                                   config=config)
    return CostResult(add_seconds(cost_frame(rows, engine), chosen.clock_hz), document)


def profile(network: str | Path | Network, *, array: str | Path | ArrayConfig | None = None, batch: int = 32,
            mode: str = "exact", engine: str = "analytic", dataflow: str | None = None, dtype: str | None = None,
            element_bytes: int | None = None):
    """The per-layer cost profile every partitioner and schedule works on (:class:`LayerProfile`), as
    ``archsim pipeline`` and ``schedule`` build it; ``dtype`` or ``element_bytes`` as :func:`array_config`
    (they size the activation, δ and weight bytes the partitioners move)."""
    from archsim.lowering import check_mode
    from archsim.partition import build_profile

    config = array_config(array, dataflow=dataflow, dtype=dtype, element_bytes=element_bytes)
    return build_profile(load_network(network), config, batch, check_mode(mode), engine)


def _positive_int(value: object, field: str, *, low: int = 1) -> int:
    """A keyword whose flag takes an integer in ``low`` … 2³¹ − 1 (1: ``positive_int_flag``; 0: ``--refine``'s
    ``int_flag``): refused with the flag's message, or the integer (``"2"`` read as ``--top 2`` reads it)."""
    from archsim.errors import InputError
    from archsim.validate import INT32_MAX, parse_int

    what = "a positive integer" if low == 1 else "a non-negative integer"
    try:
        return parse_int(value, low=low, high=INT32_MAX, what=what)
    except ValueError as exc:
        raise InputError(str(exc), field=field) from None


def _check_choice(value: object, choices: tuple[str, ...], field: str) -> None:
    """A keyword whose flag takes one of ``choices``: refused as the flag's ``choices`` refuse it."""
    if value not in choices:
        from archsim.errors import InputError

        raise InputError(f"expected one of {', '.join(choices)}, got {value!r}", field=field)


def train(model, *, cluster, global_batch: int, tp: int = 1, pp: int = 1, dp: int = 1, micro_batch: int = 1,
          seq: int | None = None, recompute: str = "full", sequence_parallel: bool = False, interleave: int = 1,
          schedule: str = "1f1b", stage_layers: str | Sequence[int] | None = None, attention: str = "flash",
          dp_overlap: str = "none", dtype: str | None = None, implementation: str = "megatron",
          grad_accumulation: str | None = None, balance: str = "even", placement: str = "file",
          max_ops: int | None = None):
    """One training iteration of a transformer on a GPU cluster, as ``archsim train`` runs it. ``model``:
    a config path, a shipped config's name (``"gpt3_1.3b"``: :func:`~archsim.workload.model_files.transformer_path`)
    or a :class:`~archsim.workload.transformer.TransformerConfig`; ``cluster``: a cluster TOML path or a
    :class:`~archsim.training.cluster.GpuCluster`; the other names are ``train``'s flags
    (``dtype`` None: ``--dtype``'s default fp16 for a path, a cluster object's own; ``grad_accumulation``
    None: the implementation's own, fused for megatron, unfused for pytorch-eager; ``stage_layers`` as
    ``"6,6,6,6"`` or a sequence; ``balance``, ``placement`` and ``max_ops`` (None: ``--max-ops``' default)
    as their flags, :func:`archsim.training.train_layout.lay_out`). Returns the
    :class:`~archsim.training.run.TrainResult` (``iteration_seconds``, ``memory``, ``breakdown`` in
    seconds; ``energy_j`` and ``energy_source``, priced as ``archsim train`` prices them:
    :func:`archsim.training.energy.priced`) and its :class:`~archsim.training.throughput.Throughput`
    (MFU, TFLOP/s per GPU, tokens/s); ``result.to_dict()`` is the document ``archsim train --format json``
    prints. A TP group across servers and a rank whose memory does not fit its GPU (``result.fits``) are
    each a :class:`UserWarning`, the line ``archsim train`` prints on stderr, as is a NIC speed outside
    every NIC sold (a unit slipped: :func:`archsim.network.nic_speed_warning`); so is its note when ``dtype``
    is None, ``cluster`` a path (fp16) and the config's ``torch_dtype`` names another dtype, and each of the
    cluster file's notes (a key train does not read, or GPUs the layout leaves idle:
    :func:`archsim.training.cluster_file.cluster_notes`)."""
    from dataclasses import replace

    from archsim.choices.training import BALANCES, IMPLEMENTATIONS
    from archsim.fits import rank_memory_warning, tp_span_warning
    from archsim.training.cluster import GpuCluster
    from archsim.training.cluster_file import cluster_notes
    from archsim.training.energy import priced
    from archsim.training.parallel import Parallelism
    from archsim.training.run import train as _train
    from archsim.training.stage_split import parse_stage_layers
    from archsim.training.throughput import mean_peak, throughput
    from archsim.training.train_json import train_document
    from archsim.training.train_layout import lay_out
    from archsim.validate import DEFAULT_MAX_OPS, check_job_size
    from archsim.workload.model_files import config_dtype_note

    _check_choice(implementation, IMPLEMENTATIONS, "implementation")
    _check_choice(balance, BALANCES, "balance")
    config = _transformer(model, seq)
    split = parse_stage_layers(stage_layers) if isinstance(stage_layers, str) else \
        None if stage_layers is None else [_positive_int(n, "stage_layers") for n in stage_layers]
    par = Parallelism(tp, pp, dp, global_batch, micro_batch, recompute, sequence_parallel, interleave, schedule,
                      tuple(split) if split else None, attention, dp_overlap, grad_accumulation)
    limit = DEFAULT_MAX_OPS if max_ops is None else _positive_int(max_ops, "max_ops")
    check_job_size(par.schedule_actions, limit)  # before the cluster's matrices are built
    laid = lay_out(config, _gpu_cluster(cluster, dtype), par, placement=placement, balance=balance,
                   implementation=implementation, max_ops=limit)
    machines = laid.machines
    result = priced(_train(config, laid.par, machines[0], machines), config, laid.par, laid.cluster, implementation)
    result = replace(result, document=train_document(result, config, laid, implementation))
    dtype_note = "" if dtype is not None or isinstance(cluster, GpuCluster) else \
        config_dtype_note(config, laid.cluster.dtype, "dtype=")
    for warning in (*laid.cluster.warnings,
                    tp_span_warning(laid.cluster, laid.par),
                    rank_memory_warning(result, machines), _seq_note(model, config, seq), dtype_note,
                    *cluster_notes(laid.cluster, "train", laid.par)):
        if warning:  # the lines archsim train prints on stderr
            import warnings

            warnings.warn(warning, UserWarning, stacklevel=2)
    return result, throughput(config, global_batch, recompute, result.iteration_seconds, laid.par.gpus,
                              mean_peak(machines), attention)


def train_runs(model, *, runs: str | Path, cluster, seq: int | None = None, attention: str = "flash",
               dp_overlap: str = "none", grad_accumulation: str | None = None, schedule: str = "1f1b",
               dtype: str | None = None, max_ops: int | None = None) -> list[dict]:
    """Every row of a runs file predicted as ``archsim train MODEL --runs RUNS.csv`` predicts it: one dict a
    row, in the file's order (``predicted_seconds``, ``peak_memory_gib``, ``energy_j`` and ``energy_source``,
    ``measured_seconds`` and ``error`` = predicted / measured − 1), each row run with the command's flags
    kept here as keywords of the same names and defaults (``attention`` flash: vTrain's measured runs
    need ``"standard"``; ``model``, ``cluster``, ``dtype``, ``seq`` and ``max_ops`` as :func:`train`'s).
    A bad row raises :class:`~archsim.errors.InputError` naming its line and field before any row runs;
    measured times that look like milliseconds are a :class:`UserWarning`, the note the command prints, as is
    a link speed whose unit slipped (:attr:`GpuCluster.warnings <archsim.training.cluster.GpuCluster>`) and each
    of the cluster file's notes (:func:`archsim.training.cluster_file.cluster_notes`)."""
    from archsim.choices.training import ATTENTIONS, DP_OVERLAPS, GRAD_ACCUMULATIONS, SCHEDULES
    from archsim.training.cluster_file import cluster_notes
    from archsim.training.runs import milliseconds_note, predict_runs, runs_to_run
    from archsim.validate import DEFAULT_MAX_OPS

    _check_choice(attention, ATTENTIONS, "attention")  # the flags' choices, before any file is read
    _check_choice(dp_overlap, DP_OVERLAPS, "dp_overlap")
    if grad_accumulation is not None:
        _check_choice(grad_accumulation, GRAD_ACCUMULATIONS, "grad_accumulation")
    _check_choice(schedule, SCHEDULES, "schedule")
    config, on = _transformer(model, seq), _gpu_cluster(cluster, dtype)
    rows = runs_to_run(runs, attention=attention, dp_overlap=dp_overlap, grad_accumulation=grad_accumulation,
                       schedule=schedule, max_ops=DEFAULT_MAX_OPS if max_ops is None else _positive_int(max_ops, "max_ops"),
                       seq_given=seq is not None)
    import warnings

    out = predict_runs(config, on, rows, file=runs,  # the lines archsim train --runs prints on stderr
                       warn=lambda line, text: warnings.warn(f"line {line}: {text}", UserWarning, stacklevel=4))
    for note in (*on.warnings, *cluster_notes(on, "train"), milliseconds_note(out)):  # as the command's, in order
        if note:
            warnings.warn(note, UserWarning, stacklevel=2)
    return out


def search(model, *, cluster, global_batch: int, gpus: int | Sequence[int] | None = None, seq: int | None = None,
           objective: str = "time", balance: str = "even", placement: str = "file", top: int = 10,
           recompute: str | Sequence[str] = ("none", "selective", "full"), schedule: str | Sequence[str] | None = None,
           chunks: int | Sequence[int] | None = None, max_micro_batch: int = 8, sequence_parallel: str = "both",
           refine: int | None = None, attention: str = "flash", dp_overlap: str = "none",
           max_ops: int | None = None, grad_accumulation: str = "fused", dtype: str | None = None,
           progress: bool | None = None, model_file: str | Path | None = None,
           cluster_file: str | Path | None = None):
    """Rank TP × PP × DP × micro-batch × recompute × schedule for ``model`` on ``cluster`` as
    ``archsim search`` does, with its flags' names and defaults (``schedule`` None: every schedule;
    ``refine`` None: 2 × ``top``; ``chunks`` None: 2 and 4, refused given without a schedule that takes it;
    ``max_ops``: ``--max-ops``, None: its default; one value where the flag takes several, ``schedule="1f1b"``,
    is a list of one; ``dtype`` None: ``--dtype``'s default fp16 for a path, a cluster object's own;
    ``progress``: ``archsim search``'s progress bars on stderr, True always, False never, None only when
    stderr is a terminal, as the CLI draws them). Returns the :class:`~archsim.training.search_result.SearchResult`: ``rows``
    (best first: the configuration, ``iteration_seconds``, ``peak_memory_gib``, ``mfu``, …),
    ``rejected`` (reason → count) and the Pareto front; ``to_dict()`` is the document ``archsim search
    --format json`` prints (each row's ``command`` naming ``model`` and ``cluster``, or ``MODEL.json`` and
    ``CLUSTER.toml`` where they are objects; ``model_file`` and ``cluster_file``, where given, are the
    paths named instead: the files objects were loaded from, as ``archsim search`` names its own). A link speed
    whose unit slipped, a rotary config's default sequence and each of the cluster file's notes
    (:func:`archsim.training.cluster_file.cluster_notes`) are a :class:`UserWarning`, the lines ``archsim
    search`` prints on stderr."""
    from dataclasses import replace

    from archsim.choices.training import (
        BALANCES,
        DP_OVERLAPS,
        GRAD_ACCUMULATIONS,
        MAX_REFINE_ACTIONS,
        OBJECTIVES,
        PLACEMENTS,
        SCHEDULES,
    )
    from archsim.errors import InputError
    from archsim.progress import shown
    from archsim.training.cluster_file import cluster_notes
    from archsim.training.search import search as _search
    from archsim.training.search_space import chunk_counts
    from archsim.training.train_json import search_document

    # the checks archsim search's parser makes, in its flags' order, before any file is read
    counts = [] if gpus is None else [_positive_int(n, "gpus") for n in _listed(gpus)]
    _check_choice(objective, OBJECTIVES, "objective")
    _check_choice(balance, BALANCES, "balance")
    _check_choice(placement, PLACEMENTS, "placement")
    top = _positive_int(top, "top")
    schedules = _listed(schedule or SCHEDULES)
    for name in schedules:
        _check_choice(name, SCHEDULES, "schedule")
    chunk_given = None if chunks is None else [_positive_int(v, "chunks") for v in _listed(chunks)]
    max_micro_batch = _positive_int(max_micro_batch, "max_micro_batch")
    refine = 2 * top if refine is None else _positive_int(refine, "refine", low=0)
    max_ops = MAX_REFINE_ACTIONS if max_ops is None else _positive_int(max_ops, "max_ops")
    if dp_overlap not in DP_OVERLAPS:
        raise InputError(f"expected one of {', '.join(DP_OVERLAPS)}, got {dp_overlap!r}", field="dp-overlap")
    if grad_accumulation not in GRAD_ACCUMULATIONS:
        raise InputError(f"expected one of {', '.join(GRAD_ACCUMULATIONS)}, got {grad_accumulation!r}",
                         field="grad-accumulation")
    chunk_list = chunk_counts(schedules, chunk_given)  # before the files are read
    config, on = _transformer(model, seq), _gpu_cluster(cluster, dtype)
    if counts and max(counts) > on.gpus:
        raise InputError(f"{max(counts)} GPUs asked for, the cluster has {on.gpus}", field="gpus")
    modes = {"both": (False, True), "on": (True,), "off": (False,)}
    if sequence_parallel not in modes:
        raise InputError(f"expected both, on or off, got {sequence_parallel!r}", field="sequence-parallel")
    if progress is not None and not isinstance(progress, bool):
        raise InputError(f"expected True, False or None, got {progress!r}", field="progress")
    for name, field in ((model_file, "model_file"), (cluster_file, "cluster_file")):
        if name is not None:
            _check_path(name, field, "a path (a str or Path) or None")
    with shown(progress):
        result = _search(config, on, global_batch, counts or None, micro_batches=range(1, max_micro_batch + 1),
                       recomputes=_listed(recompute), schedules=schedules, chunks=chunk_list,
                       sequence_parallel=modes[sequence_parallel], top=top,
                       refine=refine, balance=balance, objective=objective, placement=placement,
                       attention=attention, dp_overlap=dp_overlap, grad_accumulation=grad_accumulation,
                       max_actions=max_ops)
    for note in (*on.warnings, _seq_note(model, config, seq), *cluster_notes(on, "search")):
        if note:  # the lines archsim search prints on stderr: a link's unit that slipped, the sequence's default,
            # what the cluster file states that search does not read
            import warnings

            warnings.warn(note, UserWarning, stacklevel=2)
    return replace(result, document=search_document(
        result, config, on, model=_named(model_file, model, "MODEL.json"),
        cluster_file=_named(cluster_file, cluster, "CLUSTER.toml"), global_batch=global_batch, gpus=counts or None,
        seq=seq, objective=objective, balance=balance, placement=placement))


def _seq_note(model, config, seq: int | None) -> str:
    """``train``'s and ``search``'s note on a rotary config's default sequence (its longest context), for a
    model given as a path; '' for a config object, whose sequence the caller set."""
    from archsim.workload.model_files import default_seq_note

    return default_seq_note(config, model, seq, "seq=N") if isinstance(model, (str, Path)) else ""


def _named(given: str | Path | None, value: object, placeholder: str) -> str:
    """The path a search row's ``archsim train`` line names: ``given``, else ``value`` where it is a
    path, else ``placeholder`` (an object loaded in Python has no path to name)."""
    if given is not None:
        return str(given)
    return str(value) if isinstance(value, (str, Path)) else placeholder


def _listed(value) -> tuple:
    """A flag's values as a tuple: one value (a name, a count) as a tuple of one, not its characters."""
    return (value,) if isinstance(value, (str, int)) else tuple(value)


def _transformer(model, seq: int | None):
    """A config path or shipped name loaded, or a config as is; ``seq`` overrides its sequence length (``--seq``)."""
    from dataclasses import replace

    from archsim.workload.model_files import load_transformer
    from archsim.workload.transformer import TransformerConfig

    if isinstance(model, TransformerConfig):
        return model if seq is None else replace(model, seq=seq)
    _check_path(model, "model", "a transformer config path or a TransformerConfig")
    return load_transformer(model, seq=seq)


def _check_path(value: object, field: str, what: str) -> None:
    """A keyword that takes a file: a str or Path, else refused in one line (not a TypeError from open)."""
    if not isinstance(value, (str, Path)):
        from archsim.errors import InputError

        raise InputError(f"expected {what}, got {type(value).__name__}", field=field)


def _gpu_cluster(cluster, dtype: str | None = None):
    """A cluster TOML loaded to train in ``dtype`` (None: fp16), or a cluster as is (``dtype`` replacing its own)."""
    from dataclasses import replace

    from archsim.choices.devices import DTYPES
    from archsim.errors import InputError
    from archsim.training.cluster import GpuCluster
    from archsim.training.cluster_file import load_gpu_cluster

    if not isinstance(cluster, GpuCluster):
        _check_path(cluster, "cluster", "a cluster TOML path or a GpuCluster")
        return load_gpu_cluster(cluster, dtype or "fp16")
    if dtype is not None and dtype not in DTYPES:
        raise InputError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPES)}", field="dtype")
    return cluster if dtype is None else replace(cluster, dtype=dtype)


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
    """Run a sweep spec (a TOML path, a :class:`SweepSpec` or a device sweep's
    :class:`~archsim.sweep.device_spec.DeviceSweepSpec`) into ``out`` (default ``results/<spec name>``),
    computing only configurations not cached there; returns the results. A device sweep warns (UserWarning)
    the lines ``archsim sweep`` prints on stderr: each ``array_sides`` side leaving PEs unused, each
    implausible device figure."""
    from archsim.sweep import SweepSpec, load_spec
    from archsim.sweep import run_sweep as _run
    from archsim.sweep.device_spec import DeviceSweepSpec

    spec = spec if isinstance(spec, (SweepSpec, DeviceSweepSpec)) else load_spec(spec)
    frame = _run(spec, out if out is not None else Path("results") / spec.name, workers=workers, dask=dask,
                 progress=progress)
    if isinstance(spec, DeviceSweepSpec):  # the lines archsim sweep prints on stderr: unused PEs, a slipped unit
        import warnings

        from archsim.sweep.device_points import spec_warnings

        for line in spec_warnings(spec):
            warnings.warn(line, UserWarning, stacklevel=2)
    return frame


def write_report(results: str | Path, *, out: str | Path, spec=None) -> Path:
    """Write the self-contained HTML report of a sweep's results folder to ``out``; returns its path.
    Network files are read only inside the folder, or those of ``spec`` (a TOML path or a
    :class:`SweepSpec` you ran): without it, a network file elsewhere leaves out the per-layer
    and Gantt sections (docs/security.md)."""
    from archsim.sweep import SweepSpec, load_spec
    from archsim.sweep.device_spec import DeviceSweepSpec
    from archsim.sweep.report import spec_command
    from archsim.sweep.report import write_report as _write

    folder = Path(results)
    folder = folder.parent if folder.suffix == ".csv" else folder
    own = () if spec is None else (spec if isinstance(spec, (SweepSpec, DeviceSweepSpec)) else load_spec(spec)).networks
    return _write(folder, out, spec_command=spec_command(folder), own_networks=own)
