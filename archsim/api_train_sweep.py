"""The library face's ``archsim train --sweep``: ``archsim.train_sweep``, train's keywords for the point every
axis starts from and ``sweep=`` for the axes, run by :mod:`archsim.training.sweep_run` (the command's run), returning
a :class:`SweepResult`. Seconds, bytes, GiB and joules as the command prints them. Re-exported by :mod:`archsim.api`
(and :mod:`archsim`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, cast

from archsim.api_keywords import (
    check_choice,
    check_switch,
    check_text,
    gpu_cluster,
    positive_int,
    seq_note,
    speaks_keywords,
    train_numbers,
    transformer,
    unread_note,
)
from archsim.choices.training import DEFAULT_P2P
from archsim.console import library_note
from archsim.table_result import TableResult

if TYPE_CHECKING:
    import pandas as pd

    from archsim.api_types import Cluster, Model
    from archsim.count_types import Count, Number


class SweepResult(TableResult):
    """What :func:`train_sweep` returns: ``table``, one row per point of the grid (its GPUs, its settings, its
    seconds, rates, memory and joules, or the reason it cannot run in ``error``), the DataFrame ``archsim train
    --sweep`` prints; ``to_dict()``, the document its ``--format json`` prints (``meta``: the model, sequence,
    GPUs, dtype, points, axes, energy source); ``to_frame()``, its ``--format csv`` rows."""

    def to_frame(self) -> pd.DataFrame:
        """The rows ``archsim train --sweep --format csv`` prints, as a DataFrame: each point's columns (its compute
        split one cell of text, :func:`~archsim.training.table_lines.csv_rows`; ``table`` and ``to_dict()`` keep the
        object), then the meta's single values as columns (imports pandas)."""
        from archsim.outputs import csv_frame
        from archsim.rows import Rows
        from archsim.training.table_lines import csv_rows

        document = self.to_dict()
        return csv_frame(Rows.of(csv_rows(document["rows"])), document["meta"])

    def _headline(self) -> str:
        meta = self.document["meta"]
        ran = sum(1 for row in self.document["rows"] if not row.get("error"))
        return f": {meta.get('model')} over {meta.get('axes')}, {ran} of {meta.get('points')} points ran"


@speaks_keywords
def train_sweep(model: Model, *, sweep: str | Sequence[str] | Mapping[str, object], cluster: Cluster,
                global_batch: Count, tp: Count = 1, pp: Count = 1, dp: Count = 1, micro_batch: Count = 1,
                seq: Count | None = None, recompute: str = "full", sequence_parallel: bool = False,
                interleave: Count = 1, schedule: str = "1f1b", stage_layers: str | Sequence[Count] | None = None,
                attention: str | None = None, dp_overlap: str = "none", dtype: str | None = None,
                implementation: str = "megatron", grad_accumulation: str | None = None, balance: str = "even",
                placement: str = "file", max_ops: Count | None = None, distributed_optimizer: bool = False,
                fsdp: bool = False, cp: Count = 1, cp_comm: str = "p2p", fsdp_reshard: str = "after-forward",
                fsdp_grad_sync: str = "micro-batch", cp_hierarchy: str | Sequence[Count] | None = None,
                ep: Count = 1, etp: Count | None = None,
                moe_expert_capacity_factor: Number | None = None, moe_pad_expert_input_to_capacity: bool = False,
                moe_load_imbalance: Number | None = None, fp8: str | None = None, fp8_param_gather: bool = False,
                overlap_moe_expert_parallel_comm: bool = False, moe_shared_expert_overlap: bool = False,
                mtp_layers: Count | None = None, p2p: str = DEFAULT_P2P) -> SweepResult:
    """Every point of a grid of iterations predicted as ``archsim train MODEL --sweep KEY=V1,V2,… …`` predicts it.
    ``sweep``: the axes, a mapping of each KEY to its values (``{"tp": [1, 2], "micro_batch": "1,2,4"}``; a ``range``
    or a numpy array too, a whole float as its count) or the flag's texts (``["tp=1,2", "micro_batch=1,2,4"]``, or
    one), read by the flag's one reader with its checks and messages; KEY one of :data:`archsim.training.sweep.AXES`
    (``{"dp": "fill"}``: each point's DP fills the cluster, a point it does not divide skipped with a warning). The other keywords are :func:`archsim.train`'s, the
    point each axis starts from, with its names and defaults, except that ``stage_layers``, ``balance`` other than
    ``"even"``, ``placement="planned"`` and ``implementation="pytorch-eager"`` are refused as ``--sweep`` refuses
    their flags (each point runs Megatron's even split, in one server order); ``p2p`` prices every point's pipeline
    sends, as ``--p2p`` does (each row's ``p2p`` column; ``{"p2p": [...]}`` sweeps it). A point that cannot run is its row
    with the reason in ``error``; a grid none of whose points can run is an :class:`~archsim.errors.InputError`.
    A TP or an all-to-all CP group across servers (counted over the points), a rotary config's default sequence, a
    config.json's unread fields, its ``torch_dtype`` without ``dtype``, the capacity's padding note, the cluster
    file's notes (GPUs some points leave idle among them) and a keyword given beside an axis over it are each a
    :class:`UserWarning`, the lines the command prints on stderr."""
    from archsim.choices.training import (
        ATTENTIONS,
        BALANCES,
        CP_COMMS,
        DP_OVERLAPS,
        FP8_RECIPES,
        FSDP_GRAD_SYNCS,
        FSDP_RESHARDS,
        GRAD_ACCUMULATIONS,
        IMPLEMENTATION_ATTENTION,
        IMPLEMENTATIONS,
        P2P_MODES,
        RECOMPUTE,
    )
    from archsim.console import setting
    from archsim.errors import InputError
    from archsim.training.cluster import GpuCluster
    from archsim.training.cluster_file import cluster_notes
    from archsim.training.moe_ops import padding_note, with_capacity, with_load_imbalance
    from archsim.training.moe_overlap import with_overlap
    from archsim.training.mtp import with_mtp_layers
    from archsim.training.sweep import check_sweep_size
    from archsim.training.sweep_run import (
        noted_seq,
        run_grid,
        selective_flash_points_note,
        sweep_axes,
        sweep_base,
        swept_note,
    )
    from archsim.validate import DEFAULT_MAX_OPS
    from archsim.workload.model_files import config_dtype_note

    given = dict(locals())  # the keywords as given, before any is read: which an axis replaces
    # the checks archsim train's parser makes, before any file is read
    check_choice(implementation, IMPLEMENTATIONS, "implementation")
    check_choice(balance, BALANCES, "balance")
    for value, choices, field in ((recompute, RECOMPUTE, "recompute"), (dp_overlap, DP_OVERLAPS, "dp-overlap"),
                                  (cp_comm, CP_COMMS, "cp-comm"), (fsdp_reshard, FSDP_RESHARDS, "fsdp-reshard"),
                                  (fsdp_grad_sync, FSDP_GRAD_SYNCS, "fsdp-grad-sync")):
        check_choice(value, choices, field)
    for maybe, choices, field in ((attention, ATTENTIONS, "attention"), (fp8, FP8_RECIPES, "fp8"),
                                  (grad_accumulation, GRAD_ACCUMULATIONS, "grad-accumulation")):
        if maybe is not None:  # None: the implementation's own, or off
            check_choice(maybe, choices, field)
    check_text(schedule, "schedule", "a schedule name (str)")
    check_text(placement, "placement", "file, planned or a server order I,J,… (str)")
    for switch, name in ((sequence_parallel, "sequence_parallel"), (distributed_optimizer, "distributed_optimizer"),
                         (fsdp, "fsdp"), (fp8_param_gather, "fp8_param_gather"),
                         (moe_pad_expert_input_to_capacity, "moe_pad_expert_input_to_capacity"),
                         (overlap_moe_expert_parallel_comm, "overlap_moe_expert_parallel_comm"),
                         (moe_shared_expert_overlap, "moe_shared_expert_overlap")):
        check_switch(switch, name)
    n = train_numbers(tp=tp, pp=pp, dp=dp, global_batch=global_batch, micro_batch=micro_batch, interleave=interleave,
                      cp=cp, ep=ep, etp=etp, cp_hierarchy=cp_hierarchy, seq=seq,
                      moe_expert_capacity_factor=moe_expert_capacity_factor, moe_load_imbalance=moe_load_imbalance,
                      mtp_layers=mtp_layers)
    limit = DEFAULT_MAX_OPS if max_ops is None else positive_int(max_ops, "max-ops")
    apart = [setting(name) for name, default in (("stage_layers", None), ("balance", "even")) if given[name] != default]
    if apart:  # as train --sweep refuses their flags
        raise InputError(f"{', '.join(apart)}: {setting('sweep')} runs each point on Megatron's even split; drop "
                         "them, or run one point with archsim.train", field="sweep")
    if implementation != "megatron":
        raise InputError(f"{setting('implementation', implementation)} times one iteration: not with "
                         f"{setting('sweep')}", field="implementation")
    check_choice(p2p, P2P_MODES, "p2p")
    axes = sweep_axes(sweep)
    base = sweep_base(tp=n.tp, pp=n.pp, dp=n.dp, global_batch=n.global_batch, micro_batch=n.micro_batch,
                      recompute=recompute, sequence_parallel=sequence_parallel, interleave=n.interleave, schedule=schedule,
                      attention=IMPLEMENTATION_ATTENTION[implementation] if attention is None else attention,
                      dp_overlap=dp_overlap, grad_accumulation=grad_accumulation,
                      distributed_optimizer=distributed_optimizer, fsdp=fsdp, fsdp_reshard=fsdp_reshard,
                      fsdp_grad_sync=fsdp_grad_sync, cp=n.cp, cp_comm=cp_comm, cp_hierarchy=n.cp_hierarchy, ep=n.ep,
                      etp=n.etp, fp8=fp8, fp8_param_gather=fp8_param_gather, p2p=p2p)
    config = with_load_imbalance(with_capacity(with_overlap(with_mtp_layers(transformer(model, n.seq), n.mtp),
                                                            overlap_moe_expert_parallel_comm, moe_shared_expert_overlap),
                                               n.capacity, moe_pad_expert_input_to_capacity), n.imbalance)
    on = gpu_cluster(cluster, dtype)
    check_sweep_size(base, axes, limit, on.gpus)  # dp=fill's points: the cluster's GPUs
    grid = run_grid(config, on, base, axes, placement)
    defaults = {"global_batch": object(), **_DEFAULTS}  # global_batch is required: always given, as --global-batch
    swept = [setting(key) for key, _ in axes if given[key] != defaults[key]]
    dtype_note = "" if dtype is not None or isinstance(cluster, GpuCluster) else \
        config_dtype_note(config, grid.cluster.dtype, model=model)
    for note in (*grid.warnings, seq_note(model, config, noted_seq(axes, n.seq)), unread_note(model), grid.skipped,
                 grid.sequence_parallel_off,
                 dtype_note,
                 padding_note(config), grid.short_pipelines, selective_flash_points_note(grid.rows),
                 *grid.cluster.warnings,
                 *cluster_notes(grid.cluster, "train", points=grid.rows), swept_note(swept)):
        if note:  # the lines archsim train --sweep prints on stderr, in its order
            library_note(note, stacklevel=3)
    import pandas as pd

    return cast("SweepResult", SweepResult.of(pd.DataFrame(grid.rows), grid.meta))


def _defaults() -> dict:
    """Each keyword's default, to tell which an axis replaces (as train tells its flags given from their defaults)."""
    import inspect

    return {name: p.default for name, p in inspect.signature(train_sweep).parameters.items()
            if p.default is not inspect.Parameter.empty}


_DEFAULTS = _defaults()


__all__ = ["SweepResult", "train_sweep"]
