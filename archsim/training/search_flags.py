"""The search's refusals of flag values that would enumerate nothing or the same rows twice (a repeated value,
chunks no schedule takes, K/V exchanges at CP 1, a degree dividing none of the GPUs): checked before any file is
read, by ``archsim search`` and :func:`archsim.search` alike."""

from __future__ import annotations

from archsim.console import setting
from archsim.errors import InputError
from archsim.training.layout_problems import or_list
from archsim.training.search_space import CHUNKED, DEFAULT_CHUNKS, divisors


def check_distinct(**values) -> None:
    """Refuse a repeated value of a many-valued search flag (``recompute=("none", "none")``): it enumerated its
    configurations twice, the same row printed twice among the best."""
    for flag, given in values.items():
        seen: set = set()
        for value in given:
            if value in seen:
                raise InputError(f"{setting(flag)} repeats {value!r}: give each value once", field=flag)
            seen.add(value)


def chunk_counts(schedules, chunks) -> tuple[int, ...]:
    """The model chunks per rank that the schedules taking them (:data:`CHUNKED`) try: ``chunks``, or
    :data:`DEFAULT_CHUNKS` when None. Given with none of those schedules it would change nothing, and a count of 1
    interleaves nothing (a plain schedule's order under another name): both refused."""
    if chunks is None:
        return DEFAULT_CHUNKS
    if not any(s in CHUNKED for s in schedules):
        flag = setting("chunks")  # --chunks from the command, chunks from the library
        raise InputError(f"{flag} is tried only by {', '.join(CHUNKED)}; {setting('schedule')} searches "
                         f"{' '.join(schedules)}: add one of them, or drop {flag}", field="chunks")
    if 1 in chunks:  # one chunk per rank interleaves nothing: another schedule's order, searched by its name
        from archsim.training.layout_notes import ONE_CHUNK_RUNS

        runs = "; ".join(f"{name}: {ONE_CHUNK_RUNS[name]()}" for name in CHUNKED)
        raise InputError(f"{setting('chunks')} 1 interleaves nothing: with one model chunk per rank {runs}; give 2 or "
                         "more (the plain schedules are searched by their own names)", field="chunks")
    return tuple(chunks)


def cp_comm_rule(cps, cp_comms) -> None:
    """Refuse K/V exchanges to try (``--cp-comm``, other than p2p alone) when no CP above 1 is searched: CP 1
    exchanges nothing, so they would change no row (as :func:`chunk_counts` refuses chunks no schedule takes)."""
    if tuple(cp_comms) != ("p2p",) and all(cp == 1 for cp in cps):
        raise InputError(f"{setting('cp-comm')} is tried only by a CP above 1 (CP 1 exchanges no K/V); "
                         f"{setting('cp')} searches 1: add a CP of 2 or more, or drop {setting('cp-comm')}",
                         field="cp-comm")


def cp_divides_rule(cps, counts, flag: str = "cp") -> None:
    """Refuse a CP (``flag`` "tp", "pp": a TP, a PP) to try that divides none of the GPU counts searched: a
    configuration's TP × CP × PP × DP is its GPUs, so such a degree has no layout, and a search of it alone enumerated
    nothing (its note named no reason)."""
    idle = [cp for cp in dict.fromkeys(cps) if all(n % cp for n in counts)]
    if idle:
        named = ", ".join(f"{n:,}" for n in counts) + (" GPU" if list(counts) == [1] else " GPUs")
        fitting = sorted({d for n in counts for d in divisors(n)})
        name = flag.upper()
        raise InputError(f"{name} {or_list(idle, 'and')} divide{'s' if len(idle) == 1 else ''} none of the {named} "
                         f"searched (TP × CP × PP × DP is a configuration's GPUs): {name} {or_list(fitting)} "
                         f"divides {'it' if len(counts) == 1 else 'one of them'}", field=flag)


def layout_divides_rule(counts, cps, tps, pps) -> None:
    """Refuse TPs and PPs to try (``--tp``, ``--pp``; None: every one) of which no TP × CP × PP divides a GPU count
    searched (each alone may: TP 8 and PP 8 on 32 GPUs): the grid would hold no configuration."""
    if tps is None and pps is None:
        return
    if not any(n % (cp * tp * pp) == 0 for n in counts for cp in cps if n % cp == 0
               for tp in (tps or divisors(n // cp)) for pp in (pps or divisors(n // cp))):
        named = ", ".join(f"{n:,}" for n in counts) + (" GPU" if list(counts) == [1] else " GPUs")
        given = " and ".join(f"{setting(flag)} {' '.join(map(str, values))}"
                             for flag, values in (("tp", tps), ("pp", pps)) if values is not None)
        raise InputError(f"no TP × CP × PP of {given} (CP {or_list(list(dict.fromkeys(cps)))}) divides the {named} "
                         "searched: give smaller degrees or more GPUs", field="tp" if tps is not None else "pp")


__all__ = ["check_distinct", "chunk_counts", "cp_comm_rule", "cp_divides_rule", "layout_divides_rule"]
