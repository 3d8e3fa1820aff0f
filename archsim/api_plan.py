"""The face's cluster-planning job: ``archsim.plan``, ``archsim plan``'s flags as keywords of the same names, run by
the command's own :func:`archsim.plan_run.run_plan`; nothing here computes a number of its own. Seconds throughout.
Re-exported by :mod:`archsim.api`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

from archsim.api_inputs import build_array, cfg_as_config, load_network, unread_keys_notes
from archsim.api_keywords import check_choice, check_path, check_switch, positive_int, speaks_keywords, user_stacklevel
from archsim.api_keywords import clock_ghz as checked_clock_ghz
from archsim.console import library_note, said_after
from archsim.table_result import TableResult
from archsim.workload.layer import Network

if TYPE_CHECKING:
    from archsim.array.config import ArrayConfig
    from archsim.count_types import Count, Number
    from archsim.sim.timeline import Timeline


@dataclass(frozen=True, eq=False, repr=False)  # TableResult's one-line repr, not the generated one
class PlanResult(TableResult):
    """What :func:`archsim.plan` returns: ``table``, the rows ``archsim plan`` prints (SPP's stages; PipeDream's
    stages; a baseline's one row of makespans), ``meta`` and ``to_dict()``, its ``--format json`` document
    (``makespan_seconds``, ``stage_counts`` and ``baselines_seconds`` as numbers, …), ``to_frame()``, its
    ``--format csv`` rows (those two as one line of text each), and ``timeline``: SPP's simulated iteration (the one
    ``--gantt`` draws; None for PipeDream's plan and a baseline, which the command times without one)."""

    timeline: Timeline | None = field(default=None, repr=False)

    def _headline(self) -> str:
        """The method and the makespan the command prints: SPP's, PipeDream's simulated one, a baseline's row."""
        meta = self.document["meta"]
        row = self.document["rows"][0] if self.document["rows"] else {}
        method = meta.get("method", row.get("method", ""))
        seconds = meta.get("makespan_seconds", meta.get("simulated_makespan_seconds", row.get("makespan_seconds")))
        return f", {method}" + ("" if seconds is None else f" makespan {seconds:.4g} s")


def _warn(kind: str, text: str) -> None:
    """A note or warning the command prints on stderr, as a UserWarning at the caller's line, whether said from
    inside :func:`~archsim.plan_run.run_plan` or after it (a fixed stacklevel fits one depth only)."""
    if text:
        library_note(text, stacklevel=user_stacklevel())


@speaks_keywords
def plan(network: str | Path | Network, *, cluster: str | Path, microbatches: Count, method: str = "spp",
         baselines: str | None = None, seed: Count | None = None, links: str = "paper", replication: str = "paper",
         objective: str = "paper", max_stages: Count | None = None, activation_compression_ratio: Number | None = None,
         memory_constraint: bool = False, straight_pipeline: bool = False, use_fewer_machines: bool = False,
         array: str | int | Path | ArrayConfig | None = None, dataflow: str | None = None,
         config: str | Path | None = None, dtype: str | None = None, element_bytes: Count | None = None,
         micro_batch: Count | None = None, batch: Count | None = None, mode: str | None = None, clock_ghz: Number | None = None,
         only: str | Sequence[str] | None = None, shapes: str = "auto", unsupported: str = "error",
         input_shape: str | None = None, dim: Mapping[str, int] | Sequence[tuple[str, int] | str] | str | None = None,
         max_ops: Count | None = None, max_search_steps: Count | None = None) -> PlanResult:
    """Plan ``network`` (a network name or path, or a :class:`Network`, as :func:`load_network`, or a PipeDream
    ``graph.txt`` of measured layers) over ``cluster`` (a cluster TOML) for ``microbatches`` micro-batches, as ``archsim plan`` does, with its
    flags' names and defaults: ``method`` spp (default), pipedream (PipeDream's optimizer, with
    ``activation_compression_ratio``, ``memory_constraint``, ``straight_pipeline`` and ``use_fewer_machines``) or a
    baseline (dp, gpipe, pipedream-prm, hetpipe), or layerpipe (Algorithm 1 laid on the cluster, its makespan as a
    baseline's); ``baselines`` archsim, paper or none; ``links`` paper or exact;
    ``replication`` paper or exact (how SPP's replicas of a stage share a micro-batch's samples);
    ``objective`` paper or exact (SPP keeps each stage count's best plan by 𝒲, or the one PE runs fastest);
    the layers priced on the servers' device where they name one, else on an array (the array keywords as
    :func:`array_config`, at ``clock_ghz``, default 1) at ``micro_batch`` samples (or ``batch`` split over
    ``microbatches``) in ``mode``; ``max_ops`` and ``max_search_steps`` as their flags (None: their defaults; ``baselines`` and
    ``max_search_steps`` are refused beside ``method`` pipedream, which runs neither).
    Returns a :class:`PlanResult` (``.table``, ``.meta``, ``to_dict()``: the command's JSON; ``.timeline``). The
    notes and warnings the command prints on stderr (the cluster file's, the servers' devices set aside) warn
    (UserWarning)."""
    from archsim.choices.devices import FP8_ARRAY_DTYPES
    from archsim.modes import MODES
    from archsim.plan_flags import BASELINE_CONFIGS, LINK_MODELS, METHODS, NO_BASELINES, OBJECTIVES, REPLICATION_MODELS
    from archsim.plan_run import run_plan
    from archsim.validate import DEFAULT_MAX_OPS, SEED_MAX
    from archsim.value_parsers import parse_float

    if not isinstance(network, Network):  # a Network as cost and profile take it (load_network's)
        check_path(network, "network", "a network name or path, or a Network")
    if not isinstance(cluster, (str, Path)):  # a Topology or GpuCluster holds neither the file's devices nor its links
        from archsim.errors import InputError

        raise InputError(f"expected a cluster TOML path, got {type(cluster).__name__}: archsim.plan reads the file "
                         "itself (its servers' devices price the layers; links= and seed= build its links), so pass "
                         "the path the cluster was loaded from", field="cluster")
    microbatches = positive_int(microbatches, "microbatches")
    check_choice(method, METHODS, "method")
    if baselines is not None:
        check_choice(baselines, (*BASELINE_CONFIGS, NO_BASELINES), "baselines")
    seed = None if seed is None else positive_int(seed, "seed", low=0, high=SEED_MAX, what="a seed")
    check_choice(links, LINK_MODELS, "links")
    check_choice(replication, REPLICATION_MODELS, "replication")
    check_choice(objective, OBJECTIVES, "objective")
    max_stages = None if max_stages is None else positive_int(max_stages, "max-stages")
    if activation_compression_ratio is not None:
        try:
            activation_compression_ratio = parse_float(activation_compression_ratio, low=1e-6, high=1e6,
                                                       what="a compression ratio")
        except ValueError as exc:
            from archsim.errors import InputError

            raise InputError(str(exc), field="activation-compression-ratio") from None
    for value, name in ((memory_constraint, "memory_constraint"), (straight_pipeline, "straight_pipeline"),
                        (use_fewer_machines, "use_fewer_machines")):
        check_switch(value, name)
    if dataflow is not None:
        check_choice(dataflow, ("ws", "os", "is"), "dataflow")
    if dtype is not None:
        check_choice(dtype, FP8_ARRAY_DTYPES, "dtype")  # fp8 on an array, as cost's
    if config is not None:
        check_path(config, "config", "a SCALE-Sim .cfg path")
    array, config = cfg_as_config(array, config)  # cost's reading: a device TOML given as array meets config's line
    element_bytes, micro_batch, batch = (None if value is None else positive_int(value, name) for value, name in (
        (element_bytes, "element-bytes"), (micro_batch, "micro-batch"), (batch, "batch")))
    if mode is not None:
        check_choice(mode, MODES, "mode")
    clock_ghz = None if clock_ghz is None else checked_clock_ghz(clock_ghz)
    limit = DEFAULT_MAX_OPS if max_ops is None else positive_int(max_ops, "max-ops")
    steps = None if max_search_steps is None else positive_int(max_search_steps, "max-search-steps",
                                                                            high=10**15, what="a step count")
    settings = SimpleNamespace(
        network=network.name if isinstance(network, Network) else str(network), cluster=str(cluster), microbatches=microbatches, method=method, baselines=baselines,
        seed=seed, links=links, replication=replication, objective=objective, max_stages=max_stages, activation_compression_ratio=activation_compression_ratio,
        memory_constraint=memory_constraint, straight_pipeline=straight_pipeline,
        use_fewer_machines=use_fewer_machines, array=array, dataflow=dataflow,
        config=None if config is None else str(config), dtype=dtype, element_bytes=element_bytes,
        micro_batch=micro_batch, batch=batch, mode=mode, clock_ghz=clock_ghz, only=only,
        input_shape=input_shape, dim=dim, max_ops=limit, max_search_steps=steps)

    def loader(args: SimpleNamespace):
        return load_network(network if isinstance(network, Network) else args.network, only=only, shapes=shapes, unsupported=unsupported, input_shape=input_shape,
                            dim=dim)

    built: list[ArrayConfig] = []  # the array run_plan priced the layers on, if any: config read only then

    def array_of(args: SimpleNamespace) -> ArrayConfig:
        built.append(build_array(array, config=config, dataflow=dataflow, dtype=dtype, element_bytes=element_bytes,
                                 rated=True, fp8=True))  # a .cfg's [macs_per_pe] rate of dtype, as cost's
        return built[-1]

    # the run's notes, warned once it succeeds: a refused run raises its error alone
    done = said_after(lambda hold: run_plan(settings, loader=loader, array_of=array_of, speak=hold), _warn)
    for line in (*done.warnings, *done.notes):  # the cluster file's lines, said after the run as the command's
        _warn("note", line)
    for note in unread_keys_notes(config, rates_read=True) if built else ():  # as archsim plan says it of its --config
        library_note(note, stacklevel=3)
    from archsim.rows import Rows

    return PlanResult(Rows.of(done.rows).frame(), {"meta": done.meta, "rows": done.rows}, done.timeline)


__all__ = ["PlanResult", "plan"]
