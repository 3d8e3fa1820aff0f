"""SCALE-Sim's sparsity inputs, read unchanged: the ``.cfg`` ``[sparsity]`` section and the
``Sparsity`` (N:M) column of its topology files.

As ``scalesim/scale_config.py`` reads the section: ``SparsitySupport`` is on when it says ``true`` in
any case; then ``SparseRep`` (case-sensitive, as SCALE-Sim compares it), ``OptimizedMapping``
(``true`` in any case), ``BlockSize`` (read only with optimized mapping, 4 otherwise) and
``RandomNumberGeneratorSeed`` are read. SCALE-Sim needs the section; archsim takes a missing
section or key ``SparsitySupport`` as off, and refuses ``FilterOffset`` 0 with sparsity on (SCALE-Sim
then drops the weight at address 0 as if pruned). A topology's sparsity column (a header containing
``sparsity``) gives each row's N:M; an empty cell or no column is SCALE-Sim's default 1:1.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from archsim.array.cfg_lines import cfg_key_line, cfg_parser
from archsim.array.sparsity import SparsityConfig, check_ratio
from archsim.csv_lines import csv_rows
from archsim.errors import InputError
from archsim.validate import SEED_MAX, read_text, shown
from archsim.value_parsers import parse_int


def read_sparsity_section(path: str | Path) -> SparsityConfig | None:
    """The ``[sparsity]`` section of a SCALE-Sim ``.cfg``, or None when sparsity is off."""
    file = str(path)
    text = read_text(path, "config file", encoding="utf-8-sig")
    parser = cfg_parser(text, file)
    if not parser.has_option("sparsity", "SparsitySupport"):
        return None
    section = parser["sparsity"]
    for switch in ("SparsitySupport", "OptimizedMapping"):  # SCALE-Sim tests == "true": else must be "false"
        if switch in section and section[switch].strip().lower() not in ("true", "false"):
            raise InputError(f"expected true or false, got {shown(section[switch].strip())}", file=file,
                             line=cfg_key_line(text, switch), field=switch)
    if section["SparsitySupport"].strip().lower() != "true":
        return None

    def value(key: str) -> str:
        if key not in section:
            raise InputError("missing key in [sparsity] (SCALE-Sim reads it when SparsitySupport is true)",
                             file=file, field=key, missing=True)
        return section[key].strip()

    def integer(key: str, low: int, high: int) -> int:
        try:
            return parse_int(value(key), low=low, high=high, what="an integer")
        except ValueError as exc:
            raise InputError(str(exc), file=file, line=cfg_key_line(text, key), field=key) from None

    offset = parser.get("architecture_presets", "FilterOffset", fallback="10000000").strip()
    if offset == "0":
        raise InputError("FilterOffset 0 with sparsity on: SCALE-Sim takes the weight stored at address 0 for a "
                         "pruned one (its pattern test is address != 0), which archsim does not copy; use an "
                         "offset above 0", file=file, line=cfg_key_line(text, "FilterOffset"), field="FilterOffset")
    optimized = value("OptimizedMapping").lower() == "true"
    fields: dict[str, Any] = {"representation": value("SparseRep"), "optimized_mapping": optimized,
              "block_size": integer("BlockSize", 1, 2**31 - 1) if optimized else 4,
              "seed": integer("RandomNumberGeneratorSeed", 0, SEED_MAX)}
    try:
        return SparsityConfig(**fields)
    except InputError as exc:
        key = exc.where.field
        raise InputError(exc.message, file=file, line=cfg_key_line(text, key) if key else None, field=key) from None


def read_sparsity_column(path: str | Path) -> list[tuple[int, int]]:
    """Each layer row's N:M, in file order (1:1 where the column is missing or the cell empty)."""
    file = str(path)
    text = read_text(path, "topology file", encoding="utf-8-sig")
    rows = [(n, r) for n, r in csv_rows(text, file, skipinitialspace=True)
            if any(c.strip() for c in r)]
    if not rows:
        raise InputError("empty topology file", file=file)
    header = [c.strip().lower() for c in rows[0][1]]
    column = next((i for i, name in enumerate(header) if "sparsity" in name), None)
    ratios = []
    for line, row in rows[1:]:
        cell = row[column].strip() if column is not None and column < len(row) else ""
        if not cell:
            ratios.append((1, 1))
            continue
        match = re.fullmatch(r"([0-9]{1,10})\s*:\s*([0-9]{1,10})", cell)
        if not match:
            raise InputError(f"expected N:M such as 2:4, got {cell!r}", file=file, line=line, field="Sparsity")
        try:
            ratios.append(check_ratio((int(match.group(1)), int(match.group(2)))))
        except InputError as exc:
            raise InputError(exc.message, file=file, line=line, field="Sparsity") from None
    return ratios
