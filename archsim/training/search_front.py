"""A search's Pareto front (:func:`pareto_front`; its rows, :func:`pareto_front_rows`) and its identical-row twins
(:func:`distinct_rows`, :func:`identical_rows_dropped`): configurations alike in every column but recompute, listed once, and how
many of the rows listed stand for such twins (``SearchResult.identical_rows_dropped``); the block that closes the
table, the front spread along its length (:func:`front_block`)."""

from __future__ import annotations

from collections.abc import Sequence

from archsim.pareto_rule import front_indices
from archsim.progress import progress
from archsim.training.search_row_maker import RowMaker
from archsim.training.search_space import Candidate
from archsim.units import GIB


def pareto_front(costed: list[tuple], second=lambda t: t[2]) -> list[tuple]:
    """(seconds, timing, bytes, candidate) none of the others beats on both seconds and ``second`` (default the
    bytes), fastest first: :mod:`archsim.pareto_rule`'s front with ``ties="first"``, so of configurations equal
    in both only the first in ``costed``'s order stays (the sweeps keep every copy)."""
    return [costed[i] for i in front_indices([(t[0], second(t)) for t in costed], ties="first")]


# the most configurations of the Pareto front the search table's closing block lists (issue #40: a 7B model on 16
# H100s printed 57 lines under a 10-row table); JSON's meta.pareto, csv's pareto_optimal and --pareto-html keep all
FRONT_SHOWN = 10


def front_shown(count: int, most: int = FRONT_SHOWN) -> list[int]:
    """The positions of a front of ``count`` configurations (fastest first, so least memory, cost or energy last)
    that the table lists: all where ``count`` ≤ ``most``; else ``most`` spread evenly by position from the fastest to
    the last, round(i·(count − 1)/(most − 1)) for i = 0 … most − 1 (both ends always; distinct, the step being > 1)."""
    if count <= most:
        return list(range(count))
    return [round(i * (count - 1) / (most - 1)) for i in range(most)]


def pareto_front_rows(make: RowMaker, costed: list[tuple], twins: set[int], retimed: dict[int, dict],
                      second, delay: float = 1.0) -> tuple[list[dict], set[Candidate]]:
    """The Pareto front's rows (:func:`pareto_front` by time and ``second``) and their candidates, over every
    costed configuration with the time the rows give it: a row re-timed by the event simulator (``retimed``,
    by index in ``costed``) enters with that time, memory and server order, and is the front's entry as it is
    the row, so one configuration shows one time in one output; ``twins`` (indices) are left out as the rows
    leave them out, their listed twin standing for them. A bar counts the rows made (each plans and times its
    split: about 0.7 s for docs' 1T search), drawn after ``delay`` seconds."""
    known: list[tuple] = []
    rows_of: dict[int, dict] = {}  # id of an entry of known → the re-timed row it is
    for index, item in enumerate(costed):
        if index in twins:
            continue
        row = retimed.get(index)
        if row is not None:
            item = (row["iteration_seconds"], row["timing"], row["peak_memory_gib"] * GIB, make.keep[id(row)])
            rows_of[id(item)] = row
        known.append(item)
    chosen = pareto_front(known, second)
    front = []
    with progress(len(chosen), "build the Pareto front's rows", "row", delay=delay) as bar:
        for t in chosen:
            front.append(dict(rows_of[id(t)]) if id(t) in rows_of else make(t[3], t[0], t[2], t[1]))
            bar.update(1)
    for row in front:
        row["pareto_optimal"] = True
    return front, {t[3] for t in chosen}


def distinct_rows(make: RowMaker, costed: list[tuple], count: int,
                  delay: float = 1.0) -> tuple[list[dict], list[int], dict[int, int]]:
    """The first ``count`` rows of ``costed`` (best first), each row's index in ``costed``, and the twins left
    out on the way — alike in every column but ``recompute`` (and the Megatron arguments it sets) to a row
    listed before them —, index → that row's index. A twin ties with its row in ``costed``'s order, so the
    scan reads past ``count`` while the items tie with the last row: its twins there are its twins too. Under
    FlashAttention selective recompute has nothing to rerun, so it prices exactly as ``none``; the first in the
    recompute order given is kept, and ``--top N`` lists N distinct configurations. A bar counts the rows
    listed (each plans and times its split), drawn after ``delay`` seconds."""
    rows: list[dict] = []
    picked: list[int] = []
    seen: dict[tuple, int] = {}  # a row's columns but recompute → its index in costed
    twins: dict[int, int] = {}
    with progress(min(count, len(costed)), "build the ranked rows", "row", delay=delay) as bar:
        for index, (s, timing, mem, k) in enumerate(costed):
            full = len(rows) == count
            if full and (make.value(costed[index]), s) != (make.value(costed[picked[-1]]), costed[picked[-1]][0]):
                break  # past the last row's ties (costed's sort key): no twin of a row follows
            row = make(k, s, mem, timing)
            key = tuple((name, repr(value)) for name, value in row.items() if name not in ("recompute", "megatron_args"))
            if key in seen:
                twins[index] = seen[key]
            elif not full:
                seen[key] = index
                rows.append(row)
                picked.append(index)
                bar.update(1)
    return rows, picked, twins


def identical_rows_dropped(first: list[tuple[int, dict]], retimed: dict[int, dict], rows: list[dict],
                           twins: dict[int, int]) -> int:
    """How many configurations the rows listed (``rows``, re-timed and cut to the top) stand for as twins
    (``SearchResult.identical_rows_dropped``, a count): ``first`` pairs each row's index in ``costed`` with the
    row before re-timing, ``retimed`` maps an index to its re-timed row."""
    index_of = {id(retimed.get(index, row)): index for index, row in first}
    listed = {index_of[id(row)] for row in rows}  # the twins counted: those of the rows listed (re-timed, top)
    return sum(index in listed for index in twins.values())


def front_line(r: dict) -> str:
    """One Pareto configuration: its parallelism, schedule, time and memory per GPU."""
    from archsim.fits import row_layout

    return f"{row_layout(r)}: {r['iteration_seconds']:.4g} s, {r['peak_memory_gib']:.3g} GiB"


def front_block(front: Sequence[dict], objective: str) -> str:
    """The table's closing block: the Pareto front, one indented line per configuration, fastest first, at most
    :data:`~archsim.training.search_front.FRONT_SHOWN` of them spread along it (both ends always:
    :func:`~archsim.training.search_front.front_shown`) and a line counting the rest, which JSON lists (no
    ``# name:`` lines: those are the meta's)."""
    against = {"time": "memory per GPU", "cost": "cost per iteration", "energy": "energy per iteration"}[objective]
    from archsim.outputs import format_number  # joules to the unit, as the table's column shows them

    shown = front_shown(len(front))
    spread = (f", {len(shown)} shown from the fastest to the least {against.split(' per ')[0]}"
              if len(shown) < len(front) else "")
    heading = f"Pareto front, iteration time against {against} ({len(front)} configuration{'s' * (len(front) != 1)}"
    lines = [f"{heading}{spread}):"]
    lines += [f"  {front_line(r)}" + (f", {r['cost_usd']:.4g} USD" if objective == "cost" else "")
              + (f", {format_number(r['energy_j'])} J" if objective == "energy" else "")
              for r in (front[i] for i in shown)]
    if len(shown) < len(front):
        lines.append(f"  {len(front) - len(shown)} more on the front: --format json lists all")
    return "\n" + "\n".join(lines) + "\n"


__all__ = ["FRONT_SHOWN", "distinct_rows", "front_block", "front_line", "front_shown", "identical_rows_dropped", "pareto_front", "pareto_front_rows"]
