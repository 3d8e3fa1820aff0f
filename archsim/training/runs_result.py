"""What ``archsim train MODEL --runs RUNS.csv`` prints and ``archsim.train_runs`` returns, made once for both: the
document (:func:`runs_document`: the rows, less each one's ``energy_source``, and the meta the command prints above
them) and :class:`RunsResult`, the rows as the list the API has always returned, with ``to_dict()`` and
``to_frame()`` as every other result has them."""

from __future__ import annotations

import copy
import math
from typing import TYPE_CHECKING

from archsim.read_only import plain, read_only, refuse

if TYPE_CHECKING:
    import pandas as pd

    from archsim.training.cluster import GpuCluster
    from archsim.training.runs import RunRow


def runs_document(out: list[dict], rows: tuple[RunRow, ...], *, model: str, cluster: GpuCluster, attention: str,
                  dp_overlap: str, schedule: str, p2p: str) -> dict:
    """``{"meta": …, "rows": […]}`` of the predicted ``out`` (:func:`archsim.training.runs_predict.predict_runs`' rows) of the
    runs file's ``rows``: each row less its ``energy_source``, said once in the meta (one per cluster), and less its
    ``seq`` where every row has the same (the meta's ``seq``, as ``--sweep``'s: until 2026-12-05 no output said it); the meta
    names the flags every row ran with (``dtype``: the cluster's, the precision priced; ``p2p``: ``--p2p``, that of each
    row whose ``p2p`` cell is empty; fp8 is each row's) and
    the MAPE of the measured rows (a fraction, None where no row is measured). ``rows`` holds one row at least (:func:`~archsim.training.runs.read_runs`)."""
    import numpy as np

    from archsim.training.grad_accumulation import accumulation

    errors = [abs(r["error"]) for r in out if r["error"] is not None]
    sources = dict.fromkeys(r["energy_source"] for r in out)
    seqs = {r["seq"] for r in out}  # one (MODEL's or --seq): said once in the meta; a vTrain file's rows: each its own
    one_seq = {"seq": next(iter(seqs))} if len(seqs) == 1 else {}
    meta = {"model": model, **one_seq, "gpu": cluster.gpu_names, "attention": attention, "dp_overlap": dp_overlap,
            "dtype": cluster.dtype, "schedule": schedule, "p2p": p2p,
            "grad_accumulation": accumulation(rows[0].par, cluster.machine(rows[0].par)),
            "runs": len(out), "measured": len(errors),
            "mape": float(np.mean(errors)) if errors else None, "energy_source": "; ".join(sources)}
    kept = ("energy_source", *one_seq)  # said once in the meta
    return {"meta": meta, "rows": [{k: v for k, v in r.items() if k not in kept} for r in out]}


class RunsResult(list):
    """What :func:`archsim.train_runs` returns: its rows, one dict a row in the file's order (each with its
    ``energy_source``), as the list it returned before this class (2026-12-03), so ``rows[0]``, ``==`` a list,
    ``json.dumps(rows)`` and ``pd.DataFrame(rows)`` keep working; ``to_dict()``, the document ``archsim train --runs
    --format json`` prints (``meta``: the flags, the MAPE, the energy source), and ``to_frame()``, the rows its
    ``--format csv`` prints. A list, not a frozen dataclass, for that compatibility, but read-only all the way down as
    every API result (:mod:`archsim.read_only`): ``rows[0]["mape"] = 0``, ``rows.append(…)`` raise ``TypeError``;
    ``list(rows)`` and ``dict(row)`` are editable copies of one level, ``to_dict()`` of the whole document, a copy
    made when it ran."""

    __setitem__ = __delitem__ = append = extend = insert = pop = remove = clear = sort = reverse = refuse
    __iadd__ = __imul__ = refuse

    def __init__(self, rows: list[dict], document: dict) -> None:
        super().__init__(read_only(list(rows)))
        self._document = read_only(copy.deepcopy(document))

    def __reduce__(self) -> tuple[type[RunsResult], tuple[list, dict]]:
        """Copied and pickled from its rows and document (unpickling a list subclass would append the rows)."""
        return RunsResult, (list(self), self._document)

    def __copy__(self) -> RunsResult:
        return self  # immutable: its own copy

    def __deepcopy__(self, memo: dict) -> RunsResult:
        return RunsResult(copy.deepcopy(list(self), memo), copy.deepcopy(self._document, memo))

    def __repr__(self) -> str:
        """One line, not every row (a notebook shows a cell's value by its repr, and a vTrain file is 1,008 rows);
        ``print(result)`` shows it too (:meth:`__str__`), ``to_frame()`` and ``list(result)`` show every row."""
        meta = self._document["meta"]
        mape = meta.get("mape")
        said = "" if not isinstance(mape, float) or math.isnan(mape) else \
            f", MAPE {mape:.1%} over {meta.get('measured')} measured"  # none measured: no MAPE
        return (f"RunsResult({len(self)} run{'' if len(self) == 1 else 's'} of {meta.get('model')} on "
                f"{meta.get('gpu')}{said})")

    def __str__(self) -> str:
        """The repr's line, as ``print`` shows ``archsim.train``'s and ``archsim.search``'s results (until 2026-12-05
        the list's repr: every row's dict on one line); ``print(result.to_frame())`` shows the rows as a table."""
        return repr(self)

    @property
    def meta(self) -> dict:
        """The document's ``meta`` (an editable copy): what the command prints above its rows."""
        return plain(self._document["meta"])

    def to_dict(self) -> dict:
        """The JSON document ``archsim train MODEL --runs RUNS.csv --format json`` prints for the same keywords; a
        copy, editable, NaN as NaN (the CLI writes null)."""
        return plain(self._document)

    def to_frame(self) -> pd.DataFrame:
        """The rows ``archsim train MODEL --runs RUNS.csv --format csv`` prints, as a DataFrame: each row's columns,
        then the meta's single values as columns (:func:`archsim.outputs.csv_frame`; the compute split one cell of text,
        :func:`~archsim.training.table_lines.csv_rows`; imports pandas)."""
        from archsim.outputs import csv_frame
        from archsim.rows import Rows
        from archsim.training.table_lines import csv_rows

        document = self.to_dict()
        return csv_frame(Rows.of(csv_rows(document["rows"])), document["meta"])


__all__ = ["RunsResult", "runs_document"]
