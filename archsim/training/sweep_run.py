"""``archsim train --sweep``'s run, made once for the command and ``archsim.train_sweep``: the axes read from their
``KEY=V1,V2,…`` texts (:func:`sweep_axes`), the base layout every point starts from (:func:`sweep_base`), the grid run
on the cluster into the rows and meta the command prints with the warnings it says of them (:func:`run_grid`), and
the note on a setting given beside an axis over it (:func:`swept_note`). The points themselves are
:mod:`archsim.training.sweep`'s."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from archsim.choices.training import DEFAULT_P2P
from archsim.console import setting
from archsim.errors import InputError

if TYPE_CHECKING:
    from archsim.training.cluster import GpuCluster


def sweep_axes(given: str | Sequence[str] | Mapping[str, object]) -> list[tuple[str, tuple]]:
    """The axes of ``given``, each read by :func:`~archsim.training.sweep.parse_axis` as ``--sweep`` reads its text:
    ``KEY=V1,V2,…`` texts (one, or a list of them, as the flag is given once per axis), or a mapping of each KEY to
    its values (a list, or one comma text), written as that text first, so both spellings meet the one reader and
    its messages. No axis at all is refused as the flag given no value is."""
    from archsim.training.sweep import parse_axis
    from archsim.value_parsers import NO_VALUES

    if isinstance(given, Mapping):
        texts = [f"{key}={_values_text(values)}" for key, values in given.items()]
    elif isinstance(given, str):
        texts = [given]
    else:
        try:
            texts = list(given)
        except TypeError:  # a number, None: no axis a flag could give
            raise InputError(f"expected KEY=V1,V2,… texts or a mapping of each KEY to its values, got "
                             f"{type(given).__name__}", field="sweep") from None
    if not texts:
        raise InputError(NO_VALUES, field="sweep")
    for text in texts:
        if not isinstance(text, str):
            raise InputError(f"expected KEY=V1,V2,… texts, got {type(text).__name__} {text!r}", field="sweep")
    return [parse_axis(text) for text in texts]


def _values_text(values: object) -> str:
    """An axis's values as ``--sweep``'s comma text: a text as is, any other iterable (a list, a ``range``, a numpy
    array) joined, a bool (numpy's too) as ``true``/``false``, a whole float (``8.0``, a pandas float column's
    count) as its integer, as every count keyword reads one."""
    import numbers

    if isinstance(values, str):
        return values
    if str(values) in ("True", "False"):  # Python's bool or numpy's (np.True_, a pandas bool column's)
        return str(values).lower()
    if isinstance(values, numbers.Real) and not isinstance(values, numbers.Integral) and float(values).is_integer():
        return str(int(float(values)))
    if isinstance(values, numbers.Number):
        return str(values)
    try:
        return ",".join(_values_text(value) for value in values)  # type: ignore[attr-defined]
    except TypeError:  # not iterable: as it prints
        return str(values)


def sweep_base(*, tp: int, pp: int, dp: int, global_batch: int, micro_batch: int, recompute: str,
               sequence_parallel: bool, interleave: int, schedule: str, attention: str, dp_overlap: str,
               grad_accumulation: str | None, distributed_optimizer: bool, fsdp: bool, fsdp_reshard: str,
               fsdp_grad_sync: str, cp: int, cp_comm: str, cp_hierarchy: tuple[int, int] | None, ep: int,
               etp: int | None, fp8: str | None, fp8_param_gather: bool, p2p: str = DEFAULT_P2P) -> dict:
    """Each point's settings before its axes replace some (Parallelism's keyword arguments), from train's flags or
    keywords; a setting left at its default is left out, so a row's columns are the layout's and what was given
    (the attention, DP overlap and pipeline sends, ``p2p``, always: they price every point)."""
    return {"tp": tp, "pp": pp, "dp": dp, "global_batch": global_batch, "micro_batch": micro_batch,
            "recompute": recompute, "sequence_parallel": sequence_parallel, "interleave": interleave,
            "schedule": schedule, "attention": attention, "dp_overlap": dp_overlap, "p2p": p2p,
            **({"grad_accumulation": grad_accumulation} if grad_accumulation else {}),
            **({"distributed_optimizer": True} if distributed_optimizer else {}),
            **({"fsdp": True} if fsdp else {}),
            **({"fsdp_reshard": fsdp_reshard} if fsdp_reshard != "after-forward" else {}),
            **({"fsdp_grad_sync": fsdp_grad_sync} if fsdp_grad_sync != "micro-batch" else {}),
            **({"cp": cp} if cp > 1 else {}),  # cp_comm's also for a swept cp (until 2026-12-05 no axis)
            **({"cp_comm": cp_comm} if cp > 1 or cp_comm != "p2p" else {}),
            **({"cp_hierarchy": cp_hierarchy} if cp_hierarchy else {}),
            **({"ep": ep} if ep > 1 else {}), **({"etp": etp} if etp is not None else {}),
            **({"fp8": fp8} if fp8 else {}), **({"fp8_param_gather": True} if fp8_param_gather else {})}


@dataclass(frozen=True)
class Grid:
    """A sweep run: its ``rows`` (one per point, as :func:`~archsim.training.sweep.sweep` gives them less each one's
    ``energy_source``, ``tp_span``, ``cp_span``, ``fit`` and ``short``), the ``meta`` the command prints above them, the
    ``cluster`` they ran on (in the server order asked for) and the ``warnings`` of a TP or an all-to-all CP group
    across servers, one line per distinct line over the points, and of points over their memory, one line;
    ``short_pipelines``: the note on points whose pipeline gets fewer micro-batches than stages, one line counted as
    the points over their memory are ('' for none: :func:`~archsim.fits.points_note`); ``skipped``: the note counting
    the points ``dp=fill`` leaves out ('' for none: :func:`~archsim.training.sweep.fill_skipped_note`);
    ``sequence_parallel_off``: the note on points asking for sequence parallelism at TP 1, run without it ('' for
    none: :func:`~archsim.training.sweep.sequence_parallel_points_note`)."""

    rows: list[dict]
    meta: dict
    cluster: GpuCluster
    warnings: tuple[str, ...]
    short_pipelines: str = ""
    skipped: str = ""
    sequence_parallel_off: str = ""


def run_grid(config, cluster: GpuCluster, base: dict, axes: list[tuple[str, tuple]], placement: str) -> Grid:
    """Every point of ``axes`` over ``base`` run on ``cluster`` in ``placement``'s server order (``file`` or an
    order ``I,J,…``; ``planned`` is refused: each point runs in one order). A grid no point of which can run (fp32
    beside FlashAttention) is refused with the first point's reason, as ``archsim train`` refuses that one point."""
    from archsim.fits import points_note, tp_span_points_warnings, unfit_points_warning
    from archsim.training.placement import parse_placement
    from archsim.training.sweep import fill_skipped_note, sequence_parallel_points_note, sweep

    order = parse_placement(placement, cluster)
    if order == "planned":
        raise InputError(f"{setting('sweep')} runs each point in one server order: give {setting('placement', 'file')} "
                         "or an order I,J,…", field="placement")
    if isinstance(order, tuple):
        cluster = cluster.reordered(order)
    rows = sweep(config, cluster, base, axes)
    if all(row["error"] for row in rows):  # a setting no point can run with (fp32 beside FlashAttention): as train
        raise InputError(f"no point of the sweep can run; the first: {rows[0]['error']}", field="sweep")
    sources = dict.fromkeys(row.pop("energy_source") for row in rows)  # one per cluster, kept once in the meta
    warnings: list[str] = []
    for key in ("tp_span", "cp_span"):  # train's warnings of a TP or an all-to-all CP group across servers, counted
        spans = [(row.pop(key), (row["tp"], row["pp"], row["dp"], row.get("cp", 1))) for row in rows]
        warnings += tp_span_points_warnings(spans)  # over the points as --runs names its lines
    unfit = unfit_points_warning([(row.pop("fit"), (row["tp"], row["pp"], row["dp"], row.get("cp", 1))) for row in rows])
    warnings += [unfit] if unfit else []  # train's "does not fit", once for the points it holds for
    short = points_note([(row.pop("short"), (row["tp"], row["pp"], row["dp"], row.get("cp", 1))) for row in rows])
    swept_seq = any(name == "seq" for name, _ in axes)  # each row its own: the meta's one length would mislead
    meta = {"model": config.name, **({} if swept_seq else {"seq": config.seq}), "gpu": cluster.gpu_names,
            "dtype": cluster.dtype,
            "points": len(rows), "axes": ",".join(name for name, _ in axes),
            "energy_source": "; ".join(source for source in sources if source) or "none"}
    return Grid(rows, meta, cluster, tuple(warnings), short or "", fill_skipped_note(base, axes, cluster.gpus),
                sequence_parallel_points_note(base, axes, cluster.gpus))


def swept_note(swept: Sequence[str]) -> str:
    """The note on settings given beside the sweep over the same setting (``swept``, as the caller spells them:
    ``--tp``, ``tp``); '' for none."""
    if not swept:
        return ""
    return (f"{', '.join(swept)} given beside {setting('sweep')} over the same setting: every point takes the sweep's "
            "values")


def noted_seq(axes: list[tuple[str, tuple]], seq: int | None) -> int | None:
    """The sequence length the note on a rotary config's sequence reads (:func:`~archsim.workload.model_files.
    default_seq_note`): a ``seq`` axis's longest (said where past the config's context; never "defaulted", as the axis
    sets every point's), else ``seq`` as given (None: the config's own, defaulted)."""
    swept = [values for name, values in axes if name == "seq"]
    return max(swept[0]) if swept else seq


def selective_flash_points_note(rows: Sequence[Mapping]) -> str:
    """:func:`~archsim.training.layout_notes.selective_flash_note` once for a sweep, with how many of its points (those
    that ran, ``rows`` as :func:`run_grid` gives them) run selective recompute beside FlashAttention; '' when none."""
    from archsim.training.layout_notes import selective_flash_count_note

    return selective_flash_count_note([("none", "") if row["error"] else (row["recompute"], row["attention"])
                                       for row in rows], "points")


def refused_points_lines(rows: list[dict], axes: str) -> list[str]:
    """One line per point of a sweep that could not run (its ``error`` set), naming it by its axes' values (``axes``:
    the meta's ``tp,seq``) and saying why, for the table, whose row of ``nan`` figures would hide a reason printed
    only in its last column of a wide table; [] when every point ran. JSON and csv keep the reason in ``error``."""
    names = [name for name in axes.split(",") if name]
    return [f"point {i} of {len(rows)} ({', '.join(f'{name}={row[name]}' for name in names if name in row)}) could "
            f"not run, its figures nan: {row['error']}" for i, row in enumerate(rows, 1) if row.get("error")]


__all__ = ["Grid", "noted_seq", "refused_points_lines", "run_grid", "selective_flash_points_note", "sweep_axes",
           "sweep_base", "swept_note"]
