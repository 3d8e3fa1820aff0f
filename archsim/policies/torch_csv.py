"""torch.distributed.pipelining's schedule CSV (``_dump_csv`` / ``_load_csv``): the one reader and writer.

One line per rank, one cell per action: ``{stage}{kind}{microbatch}`` with kind F, I, W, B (see
:mod:`archsim.policies.actions`) or, in a compute_comms schedule, SEND_F, RECV_F, SEND_B, RECV_B;
an overlapped pair is ``(0F1;5B0)OVERLAP_F_B``; UNSHARD, RESHARD and REDUCE_GRAD cells (FSDP)
are skipped. :func:`parse_cells` reads any such file; :func:`parse_order_csv` keeps the compute
actions as a :class:`~archsim.policies.actions.StageOrder` and checks it is complete;
:func:`format_rows` writes cells (from an order, :func:`order_csv`, or from a timeline,
:func:`archsim.report.export.pipeline_schedule_csv`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from archsim.csv_lines import csv_rows
from archsim.errors import InputError
from archsim.policies.actions import Action, StageOrder
from archsim.sim.builder import KINDS
from archsim.validate import read_text

_CELL = re.compile(r"([0-9]{1,9})(F|I|W|B|SEND_F|RECV_F|SEND_B|RECV_B)([0-9]{1,9})")  # stage, micro-batch < 10⁹: no 5,000-digit int()
_OVERLAP = re.compile(r"\(([^;()]+);([^;()]+)\)OVERLAP_F_B")
_SKIPPED = re.compile(r"[0-9]*(UNSHARD|RESHARD|REDUCE_GRAD)[0-9]*")
Cell = tuple[int, str, int]  # (stage, kind, micro-batch)


def parse_cells(text: str, source: str = "schedule csv", *, compute_only: bool = False
                ) -> tuple[list[list[Cell]], list[tuple[int, ...]]]:
    """Per rank, (stage, kind, micro-batch) of every action cell in order, and per rank where its
    overlapped pairs start; ``compute_only`` skips SEND/RECV cells. Trailing empty ranks are dropped.
    Raises InputError naming the line and cell of anything else and of a repeated action."""
    ranks: list[list[Cell]] = []
    pairs: list[tuple[int, ...]] = []
    seen: set[Cell] = set()
    for line, row in csv_rows(text, source):
        actions: list[Cell] = []
        starts: list[int] = []
        for column, cell in enumerate(row, start=1):
            cell = cell.strip()
            if not cell or _SKIPPED.fullmatch(cell):
                continue
            overlap = _OVERLAP.fullmatch(cell)
            if overlap:
                starts.append(len(actions))
            for part in (overlap[1], overlap[2]) if overlap else (cell,):
                match = _CELL.fullmatch(part.strip())
                if match is None or (overlap and match[2] not in KINDS):
                    raise InputError(f"cell {column}: {cell!r} is not an action like 0F0, 1I2, 2W0, 1B3, 0SEND_F2 "
                                     "or (0F1;3B0)OVERLAP_F_B", file=source, line=line, field="action")
                action = (int(match[1]), match[2], int(match[3]))
                if compute_only and action[1] not in KINDS:
                    continue
                if action in seen:
                    raise InputError(f"cell {column}: action {part.strip()} appears twice", file=source, line=line,
                                     field="action")
                seen.add(action)
                actions.append(action)
        ranks.append(actions)
        pairs.append(tuple(starts))
    while ranks and not ranks[-1]:
        ranks.pop()
    return ranks, pairs[:len(ranks)]


def parse_order_csv(text: str, source: str = "schedule csv", name: str = "csv") -> StageOrder:
    """The compute actions of a torch CSV as an order; every (stage, micro-batch) needs one F and
    either one B or one I and one W, and every stage one rank."""
    cells, pairs = parse_cells(text, source, compute_only=True)
    if not cells:
        raise InputError("no actions", file=source, field="action")
    seen = {cell for rank in cells for cell in rank}
    stages = 1 + max(s for s, _, _ in seen)
    m = 1 + max(i for _, _, i in seen)
    order = StageOrder(name, tuple(tuple(Action(*cell) for cell in rank) for rank in cells), stages, m,
                       tuple(pairs) if any(pairs) else ())
    order.rank_of_stage()
    for s in range(stages):
        for i in range(m):
            if (s, "F", i) not in seen:
                raise InputError(f"stage {s} has no forward of micro-batch {i}", file=source, field="action")
            full, split = (s, "B", i) in seen, ((s, "I", i) in seen, (s, "W", i) in seen)
            if full == any(split) or (not full and not all(split)):
                raise InputError(f"stage {s}, micro-batch {i} needs one B or one I and one W", file=source,
                                 field="action")
    return order


def read_order_csv(path: str | Path) -> StageOrder:
    return parse_order_csv(read_text(path, "schedule CSV"), str(path), Path(path).stem)


def format_rows(rows: Iterable[Iterable[str]]) -> str:
    """Cells per rank as torch writes them: comma-separated, one line per rank."""
    return "".join(",".join(row) + "\n" for row in rows)


def order_csv(order: StageOrder) -> str:
    """The order as torch's ``_dump_csv`` writes a compute-only schedule (pairs as ``(0F1;5B0)OVERLAP_F_B``)."""
    rows = []
    for rank, actions in enumerate(order.ranks):
        starts = set(order.pairs[rank]) if order.pairs else set()
        cells, k = [], 0
        while k < len(actions):
            if k in starts:
                cells.append(f"({actions[k]};{actions[k + 1]})OVERLAP_F_B")
                k += 2
            else:
                cells.append(str(actions[k]))
                k += 1
        rows.append(cells)
    return format_rows(rows)


__all__ = ["format_rows", "order_csv", "parse_cells", "parse_order_csv", "read_order_csv"]
