"""A runs file's rows predicted (:mod:`archsim.training.runs` reads them): each row's model (:func:`row_config`),
the checks every row passes before any runs (:func:`row_check`), each row's iteration, memory and energy as
``archsim train`` prices them (:func:`predict_runs`), and the note on measured times that look like milliseconds.

Rows differ in a few fields, and most of an iteration's cost depends on fewer still: the per-piece
costs (one transformer layer, the embedding, the head on one GPU for one micro-batch) do not depend
on PP, DP or the global batch, and :func:`archsim.training.iteration.model_pieces` keeps them across
rows (vTrain's 1,008 rows need 127 distinct ones).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING

from archsim.console import as_keywords
from archsim.errors import InputError
from archsim.training.measured import CsvText
from archsim.training.moe_ops import with_capacity, with_load_imbalance
from archsim.training.runs import RunRow, column_for
from archsim.workload.transformer import TransformerConfig

if TYPE_CHECKING:
    from archsim.training.cluster import GpuCluster


def row_config(base: TransformerConfig, row: RunRow) -> TransformerConfig:
    """MODEL with the row's experts' capacity (:func:`~archsim.training.moe_ops.with_capacity`: refused on a dense
    MODEL, padding without a factor), its load imbalance (refused on a dense MODEL) and its hidden, heads, layers and sequence length where the row names them (the
    FFN kept at MODEL's multiple of hidden, kv heads at its ratio, learned positions — and their limit — at the
    sequence); such a row (vTrain's) needs a GPT MODEL, the layer vTrain measured."""
    base = with_load_imbalance(with_capacity(base, row.moe_expert_capacity_factor, row.moe_pad_expert_input_to_capacity),
                               row.moe_load_imbalance)
    if row.shape is None:
        return base
    if base.family != "gpt":  # vTrain measured Megatron-LM's GPT: its shapes on another layer compare nothing
        raise InputError(f"vTrain's rows replace MODEL's hidden, heads, layers and sequence and were measured on "
                         f"Megatron-LM's GPT: give a GPT config with vTrain's vocabulary (gpt_1024h_24l), not a "
                         f"{base.family} one", field="model")
    hidden, heads, layers, seq = row.shape
    group = base.heads // base.kv_heads
    if heads % group:
        raise InputError(f"{heads} heads do not group into MODEL's {group} query heads per kv head", field="heads")
    try:
        return replace(base, name=f"{base.name}-h{hidden}-l{layers}", hidden=hidden, heads=heads, layers=layers,
                       seq=seq, ffn=base.ffn * hidden // base.hidden, kv_heads=heads // group,
                       positions=seq if base.positions else 0, position_limit=None if base.position_limit is None else seq if base.position_limit else 0)
    except InputError as exc:
        raise InputError(exc.message, field=exc.where.field) from None


def row_check(base: TransformerConfig, cluster: GpuCluster,
              file: str | Path | CsvText | None = None) -> Callable[[RunRow], None]:
    """What a row must pass to run on MODEL ``base`` and ``cluster`` — its shape, TP over the heads, the layer
    split, its TP groups over the servers, its fp8 — as a check raising :class:`InputError` naming its line (and
    ``file``): run on every row before any runs, so a bad row is named at once, not after the rows above it."""
    from archsim.training.fp8_ops import check_fp8
    from archsim.training.parallel import check_fits

    def check(row: RunRow) -> None:
        p = row.par
        try:
            with as_keywords():  # the row's settings named as its columns (tp), not flags (--tp)
                for device in {*cluster.servers, cluster.gpu}:  # its fp8 on every GPU, as search checks it
                    check_fp8(p.fp8, device, cluster.dtype, "megatron", p.fsdp, p.fp8_param_gather,
                              p.distributed_optimizer)
                check_fits(row_config(base, row), row.par, uneven=False)  # no stage_layers column
                cluster.laid_out(row.par)
        except InputError as exc:
            raise InputError(exc.message, file=None if file is None else str(file), line=row.line,
                             field=column_for(exc.where.field)) from None

    return check


def predict_runs(base: TransformerConfig, cluster: GpuCluster, rows: tuple[RunRow, ...],
                 tick: Callable[[], None] = lambda: None, file: str | Path | CsvText | None = None,
                 warn: Callable[[int, str], None] = lambda line, text: None,
                 note: Callable[[int, str], None] | None = None) -> list[dict]:
    """Each row's sequence length (MODEL's, ``--seq`` or a vTrain row's own), its predicted iteration (seconds) and the part of it that is the host issuing ops
    (``host_bound_seconds``, as ``archsim train``'s meta), its compute and recompute by what they are
    (``compute_split_seconds``, train's meta's object: the same run's :func:`~archsim.training.run.compute_split`), its MFU, model and hardware TFLOP/s per GPU and tokens/s
    (:func:`~archsim.training.throughput.throughput`, as ``archsim train`` and its ``--sweep`` give them), peak memory per GPU and its fullest rank's GPU's memory (GiB,
    ``memory_capacity_gib`` as ``archsim train``'s meta), energy (J, and how it was found:
    :func:`~archsim.training.energy.cluster_iteration_energy`, as ``archsim train`` prices it) and, where
    measured, its error (predicted / measured − 1), in the rows' order; ``tick`` is called after each row (a progress bar).
    A row that cannot run on ``cluster`` raises an :class:`InputError` naming its line (and ``file``, the runs file)
    before any row runs (:func:`row_check`).
    ``warn(line, text)`` gets each line ``archsim train`` would warn with for a row alone (a TP group across
    servers, a rank over its GPU's memory): such a row still runs, as a what-if. ``note(line, text)`` gets the note
    ``archsim train`` gives a row alone that fits above 90% of a GPU's memory (:func:`archsim.fits.rank_headroom_note`);
    None: ``warn`` gets it (the library says both as one :class:`UserWarning`)."""
    from archsim.fits import cp_span_warning, rank_headroom_note, rank_memory_warning, tp_span_warning
    from archsim.training.energy import cluster_iteration_energy
    from archsim.training.run import train
    from archsim.training.throughput import mean_peak, throughput

    sharded = any(row.par.distributed_optimizer for row in rows)  # the column only where a row sets it: as before
    full = any(row.par.fsdp for row in rows)
    capped = any(row.moe_expert_capacity_factor is not None for row in rows)  # the capacity columns only then
    uneven = any(row.moe_load_imbalance is not None for row in rows)  # the imbalance column only then
    split = any(row.par.cp > 1 for row in rows)  # the cp and cp_comm columns only where a row sets CP above 1
    # the order a row ran, where one differs from the command's --schedule (1f1b with interleave > 1 runs
    # Megatron's interleaved 1F1B, as train's meta names it) or where a row names its own (its schedule column):
    # the column only then, as the meta's alone misleads
    renamed = any(row.par.schedule_name != row.par.schedule or row.schedule is not None for row in rows)
    own_sends = any(row.p2p is not None for row in rows)  # a p2p column naming a row's sends: each row's, said
    check = row_check(base, cluster, file)
    for row in rows:  # every row checked before any runs (a bad last row is named at once)
        check(row)
    out = []
    for row in rows:
        try:
            with as_keywords():  # a refusal names the row's setting as its column, as row_check's do
                config = row_config(base, row)
                machines = cluster.laid_out(row.par)  # refused as train refuses it (a TP group across part-servers)
                result = train(config, row.par, machines[0], machines)
        except InputError as exc:
            raise InputError(exc.message, file=None if file is None else str(file), line=row.line,
                             field=column_for(exc.where.field)) from None
        for text in (tp_span_warning(cluster, row.par), cp_span_warning(cluster, row.par),
                     rank_memory_warning(result, machines)):
            if text:
                warn(row.line, text)
        headroom = rank_headroom_note(result, machines)  # fits, but with little room for what is not modelled
        if headroom:
            (warn if note is None else note)(row.line, headroom)
        p = row.par
        record = {"line": row.line, "model": config.name, "seq": config.seq, "gpus": p.gpus, "tp": p.tp,
                  **({"cp": p.cp, "cp_comm": p.cp_comm} if split else {}),
                  **({"cp_hierarchy": " ".join(map(str, p.cp_hierarchy or ()))} if any(r.par.cp_hierarchy for r in rows) else {}), **({"ep": p.ep} if any(r.par.ep > 1 for r in rows) else {}), **({"etp": p.expert_tp} if any(r.par.etp is not None for r in rows) else {}), "pp": p.pp, "dp": p.dp, "micro_batch": p.micro_batch, "global_batch": p.global_batch, "recompute": p.recompute,
                  "sequence_parallel": p.sequence_parallel, "interleave": p.chunks,
                  **({"schedule": p.schedule_name} if renamed else {}),
                  **({"p2p": p.p2p} if own_sends else {}),  # else the meta's, the command's --p2p
                  **({"distributed_optimizer": p.distributed_optimizer} if sharded else {}),
                  **({"fsdp": p.fsdp} if full else {}),
                  **({"fp8": p.fp8 or "none"} if any(r.par.fp8 for r in rows) else {}),  # as --sweep names it
                  **({"fp8_param_gather": p.fp8_param_gather} if any(r.par.fp8_param_gather for r in rows) else {}),
                  **({"moe_expert_capacity_factor": config.moe_expert_capacity_factor,  # what the row ran
                      "moe_pad_expert_input_to_capacity": config.moe_pad_expert_input_to_capacity} if capped else {}),
                  **({"moe_load_imbalance": config.moe_load_imbalance} if uneven else {}),
                  **({"fsdp_reshard": p.fsdp_reshard} if any(r.par.fsdp_reshard != "after-forward" for r in rows) else {}),
                  **({"fsdp_grad_sync": p.fsdp_grad_sync} if any(r.par.fsdp_grad_sync != "micro-batch" for r in rows)
                     else {}),
                  "predicted_seconds": result.iteration_seconds,
                  "host_bound_seconds": result.host_bound_seconds,  # train's: of its compute, the host issuing ops
                  "compute_split_seconds": dict(result.compute_split_seconds),  # train's meta's: its compute by class
                  **asdict(throughput(config, p.global_batch, p.recompute, result.iteration_seconds, p.gpus,
                                      mean_peak(machines), p.attention)),  # train's MFU, TFLOP/s and tokens/s, as --sweep
                  "peak_memory_gib": result.peak_memory_gib,
                  "memory_capacity_gib": result.memory_capacity_gib,
                  **cluster_iteration_energy(config, p, cluster, result.iteration_seconds, memory=result.memory),
                  "measured_seconds": row.measured_seconds,
                  "error": None if row.measured_seconds is None else result.iteration_seconds / row.measured_seconds - 1}
        out.append(record)
        tick()
    return out


# a measured run over this many times its prediction, in every measured row: the column is in ms, not seconds
MILLISECONDS_RATIO = 100


def milliseconds_note(out: list[dict]) -> str | None:
    """One line when ``out``'s (:func:`predict_runs`) measured times look like milliseconds: every measured
    row over :data:`MILLISECONDS_RATIO` times its prediction. archsim's predictions are within tens of
    percent of measured runs (docs/training.md), ms read as seconds are 1000× too long; a factor of 100
    in every row is neither, and one row in seconds (or none measured) says nothing. None otherwise."""
    ratios = [r["measured_seconds"] / r["predicted_seconds"] for r in out if r["measured_seconds"] is not None]
    if not ratios or min(ratios) <= MILLISECONDS_RATIO:
        return None
    return (f"measured_seconds look like milliseconds: every measured run is over {MILLISECONDS_RATIO}× its "
            f"prediction (the least {min(ratios):.0f}×); the column is in seconds, the numbers are as given")


__all__ = ["MILLISECONDS_RATIO", "milliseconds_note", "predict_runs", "row_check", "row_config"]
