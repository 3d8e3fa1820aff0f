"""Per-layer profile in seconds → :class:`~archsim.cluster.spb.JobLayerCosts` (a measured cost source).

Format (UTF-8 CSV, one header row, one row per layer in forward order, the network a chain)::

    layer,forward_s,backward_s,activation_bytes,parameter_bytes
    conv1,0.0021,0.0049,38535168,37632

* ``layer``: a unique, non-empty name.
* ``forward_s`` / ``backward_s``: seconds of the layer's forward pass and of its whole backward
  pass (weight and input gradient together; SPB then cannot skip the boundary layer's δ, so the
  suffix time is a slight over-estimate).
* ``activation_bytes``: bytes the layer keeps for its backward pass (normally its input).
* ``parameter_bytes``: bytes of its weights.

Every column is required and no other is allowed (a misspelt column is an error, not ignored);
values are finite and non-negative. Mistakes raise :class:`InputError` naming file, line and field.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from archsim.cluster.csv_table import non_negative, read_rows
from archsim.cluster.spb import JobLayerCosts, chain_producers
from archsim.errors import InputError
from archsim.validate import read_text

COLUMNS = ("layer", "forward_s", "backward_s", "activation_bytes", "parameter_bytes")


def parse_profile_csv(text: str, *, source: str = "<string>") -> JobLayerCosts:
    """Parse profile text (format in the module docstring)."""
    names: list[str] = []
    values: dict[str, list[float]] = {c: [] for c in COLUMNS[1:]}
    for line, cells in read_rows(text, COLUMNS, source=source, what="layer"):
        name = cells["layer"]
        if not name:
            raise InputError("empty layer name", file=source, line=line, field="layer")
        if name in names:
            raise InputError(f"duplicate layer {name!r}", file=source, line=line, field="layer")
        names.append(name)
        for column in COLUMNS[1:]:
            values[column].append(non_negative(cells[column], file=source, line=line, field=column))
    columns = {name: np.asarray(column, dtype=float) for name, column in values.items()}
    return JobLayerCosts(names=tuple(names), forward_s=columns["forward_s"], backward_s=columns["backward_s"],
                      input_grad_s=np.zeros(len(names)), activation_bytes=columns["activation_bytes"],
                      parameter_bytes=columns["parameter_bytes"], producers=chain_producers(len(names)),
                      source=source)


def load_profile_csv(path: str | Path) -> JobLayerCosts:
    """Read a profile file; errors name the file."""
    text = read_text(path, "profile file", encoding="utf-8-sig")  # as written: Path drops a trailing "/"
    path = Path(path)  # as every CSV reader: a BOM is skipped
    return parse_profile_csv(text, source=str(path))


def write_profile_csv(costs: JobLayerCosts) -> str:
    """The CSV text of a profile (e.g. one built from the array model), readable by the parser."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for i, name in enumerate(costs.names):
        writer.writerow([name, repr(float(costs.forward_s[i])), repr(float(costs.backward_s[i])),
                         repr(float(costs.activation_bytes[i])), repr(float(costs.parameter_bytes[i]))])
    return out.getvalue()
