"""A device sweep's parallel layouts: each (chips, TP, PP) of its ``chips``, ``tp`` and ``pp`` axes, DP = chips /
(TP · PP), checked by ``archsim train``'s own checks (:class:`~archsim.training.parallel.Parallelism`, which
refuses a global batch that is no whole number of micro-batches per DP rank, and
:func:`~archsim.training.parallel.check_fits`, which refuses layers PP does not split and heads TP does not
divide). A layout train refuses is skipped and counted (:func:`skipped_line`: one line on stderr and in the report),
never dropped silently; a spec whose layouts are all skipped is refused.

Why apart from :mod:`archsim.sweep.device_spec`: that module reads the spec's keys; this one asks train about the
layouts they make, and the report counts the skipped ones from the folder's spec.json without reading a spec.
"""

from __future__ import annotations

from archsim.errors import InputError

# a spec without tp and pp: DP over the chips, each chip count refused as before (it names the chips key)
UNSWEPT: tuple[int | None, ...] = (None,)


def layout_refusal(config, chips: int, tp: int, pp: int, global_batch: int, micro_batch: int, recompute: str,
                   attention: str) -> tuple[str, int]:
    """(why ``archsim train --tp TP --pp PP --dp chips/(TP·PP)`` refuses this layout, "" when it runs; its
    schedule's actions, train's ``--max-ops`` count, 0 when refused)."""
    from archsim.training.parallel import Parallelism, check_fits

    if chips % (tp * pp):
        return f"TP × PP = {tp} × {pp} does not divide {chips} chips", 0
    try:
        par = Parallelism(tp, pp, chips // (tp * pp), global_batch, micro_batch, recompute, attention=attention)
        check_fits(config, par)
    except InputError as exc:
        return exc.message, 0
    return "", par.schedule_actions


def checked_layouts(config, chips: tuple[int, ...], tps: tuple[int | None, ...], pps: tuple[int | None, ...], *,
                    global_batch: int, micro_batch: int, recompute: str, attention: str,
                    file: str) -> tuple[tuple[int, int, int, str], ...]:
    """The layouts train refuses, (chips, TP, PP, reason) each, in the spec's order; an iteration above train's
    ``--max-ops`` default is refused here (the spec's batch is the key to change), as is a spec every layout of
    which is skipped. Without ``tp`` and ``pp`` axes a chip count train refuses is refused, naming ``chips``."""
    from archsim.validate import DEFAULT_MAX_OPS

    swept = (tps, pps) != (UNSWEPT, UNSWEPT)
    skipped = []
    for n in chips:
        for tp in tps:
            for pp in pps:
                t, p = tp or 1, pp or 1
                name = f"{n} chip{'s' * (n != 1)}" + (f", TP {t}, PP {p}" if swept else "")
                reason, actions = layout_refusal(config, n, t, p, global_batch, micro_batch, recompute, attention)
                if reason and not swept:
                    raise InputError(f"{name}: {reason}", file=file, field="chips")
                if reason:
                    skipped.append((n, t, p, reason))
                elif actions > DEFAULT_MAX_OPS:
                    raise InputError(f"{name}: an iteration of about {actions:,} schedule actions, above archsim "
                                     f"train's --max-ops default of {DEFAULT_MAX_OPS:,}: give fewer samples or a "
                                     "larger micro_batch", file=file, field="global_batch")
    if skipped and len(skipped) == len(chips) * len(tps) * len(pps):
        n, t, p, reason = skipped[0]
        raise InputError(f"archsim train refuses every layout (chips × tp × pp) of this spec, so no point is left: "
                         f"{n} chips, TP {t}, PP {p}: {reason}", file=file, field="tp" if tps != UNSWEPT else "pp")
    return tuple(skipped)


def skipped_line(skipped, layouts: int, per_layout: int) -> str | None:
    """The one line saying how many of ``layouts`` (chips × tp × pp) were skipped, and so how many points (each
    layout is ``per_layout`` points: the device axes' product), with the first few reasons; None when none was."""
    if not skipped:
        return None
    shown = "; ".join(f"{n} chips TP {t} PP {p} ({reason})" for n, t, p, reason in skipped[:3])
    more = f"; and {len(skipped) - 3} more" if len(skipped) > 3 else ""
    return (f"skipped {len(skipped)} of {layouts} layouts (chips × tp × pp), {len(skipped) * per_layout} of "
            f"{layouts * per_layout} points, that archsim train refuses: {shown}{more}")


__all__ = ["UNSWEPT", "checked_layouts", "layout_refusal", "skipped_line"]
