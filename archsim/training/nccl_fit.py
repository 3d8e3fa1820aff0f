"""Read nccl-tests all-reduce tables and fit a link class's η, α, α₀ and γ to part of them.

A table (``*_AR_GPU{n}_*.csv``) has the header ``size(B),count,type,time(ns),busbw(GB/s),time(ns),
busbw(GB/s)``: two runs per size. archsim takes the mean of the two times.

The fit minimises the squared log-ratio of modelled to measured time (every size counts alike,
whatever its magnitude) over the tables given: Simple's η, α, α₀ and γ (:func:`fit_link`) on sizes from 16 MB
(below, NCCL switches to LL128, which Simple's α–β line does not follow), then, those held, the low-latency
protocols' latencies (:func:`fit_protocols`, :mod:`archsim.nccl_protocols`) on every size; the caller decides
which GPU counts are fitted and which are kept for the check (:data:`archsim.training.fitted`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from archsim.collectives import LinkClass, collective_seconds
from archsim.errors import InputError
from archsim.nccl_protocols import FRACTIONS, Protocol
from archsim.validate import read_text
from archsim.value_parsers import parse_float, parse_int

_NAME = re.compile(r"_GPU([0-9]+)_")


@dataclass(frozen=True)
class NcclTable:
    """One all-reduce table: ``gpus``, buffer ``sizes`` (bytes) and mean measured ``seconds``."""

    gpus: int
    sizes: np.ndarray
    seconds: np.ndarray


def read_nccl_table(path: str | Path) -> NcclTable:
    path = Path(path)
    match = _NAME.search(path.name)
    if not match:
        raise InputError("expected a file name with _GPU<n>_ (nccl-tests table)", file=str(path))
    lines = read_text(path, "nccl table").splitlines()
    sizes, seconds = [], []
    for number, line in enumerate(lines[1:], start=2):
        cells = line.split(",")
        if not line.strip():
            continue
        if len(cells) < 6:
            raise InputError("expected size,count,type,time,busbw,time,busbw", file=str(path), line=number)
        try:  # bytes and microseconds: finite, positive, no subnormal
            sizes.append(parse_float(cells[0], low=0.0, low_open=True, what="a positive size in bytes"))
            seconds.append((parse_float(cells[3], low=0.0, low_open=True, what="a positive time in µs")
                            + parse_float(cells[5], low=0.0, low_open=True, what="a positive time in µs")) / 2e9)
        except ValueError as exc:
            raise InputError(str(exc), file=str(path), line=number) from None
    try:
        gpus = parse_int(match.group(1), what="a GPU count")
    except ValueError as exc:
        raise InputError(str(exc), file=str(path)) from None
    return NcclTable(gpus, np.asarray(sizes), np.asarray(seconds))


def read_nccl_tables(folder: str | Path, gpu: str) -> dict[int, NcclTable]:
    """Every ``{gpu}_AR_GPU*`` table in ``folder``, by GPU count."""
    tables = [read_nccl_table(p) for p in sorted(Path(folder).glob(f"{gpu}_AR_GPU*_*.csv"))]
    if not tables:
        raise InputError(f"no {gpu}_AR_GPU*.csv tables", file=str(folder))
    return {t.gpus: t for t in tables}


def model_seconds(table: NcclTable, link: LinkClass) -> np.ndarray:
    return collective_seconds("all-reduce", table.sizes, table.gpus, link)


def fit_link(tables: list[NcclTable], base: LinkClass, min_bytes: float = 16 * 2**20,
             bandwidth_of=None) -> LinkClass:
    """``base`` with η, α, α₀ and γ fitted to ``tables`` (least squares on log time ratios);
    ``bandwidth_of(gpus)``, when given, is each table's link bandwidth (servers without an NVSwitch:
    rings × one link's, :mod:`archsim.nvlink_rings`)."""
    from scipy.optimize import least_squares

    def link_of(x: np.ndarray) -> LinkClass:
        return replace(base, efficiency=float(x[0]), alpha_s=float(x[1]) * 1e-6, launch_s=float(x[2]) * 1e-6,
                       copy_s_per_byte=float(x[3]) * 1e-12)

    def residuals(x: np.ndarray) -> np.ndarray:
        link = link_of(x)
        return np.concatenate([np.log(model_seconds(t, link if bandwidth_of is None
                                                    else replace(link, bandwidth=bandwidth_of(t.gpus))) / t.seconds)
                               [t.sizes >= min_bytes] for t in tables])

    fit = least_squares(residuals, x0=[0.7, 5.0, 20.0, 1.0], bounds=([0.05, 0, 0, 0], [1.0, 1000.0, 1000.0, 100.0]))
    return link_of(fit.x)


def fit_protocols(tables: list[NcclTable], link_of, names: tuple[str, ...] = ("LL", "LL128")) -> tuple[Protocol, ...]:
    """NCCL's low-latency protocols ``names`` (:data:`archsim.nccl_protocols.FRACTIONS`: at NCCL's fractions of
    Simple's bandwidth) with their launch and per-step latencies fitted to ``tables`` at every size (least squares on
    log time ratios), the link classes ``link_of(gpus)`` (Simple: their fitted η, α, α₀, γ) held."""
    from scipy.optimize import least_squares

    def protocols(x: np.ndarray) -> tuple[Protocol, ...]:
        return tuple(Protocol(name, FRACTIONS[name], float(x[2 * i]) * 1e-6, float(x[2 * i + 1]) * 1e-6)
                     for i, name in enumerate(names))

    def residuals(x: np.ndarray) -> np.ndarray:
        return np.concatenate([np.log(model_seconds(t, replace(link_of(t.gpus), protocols=protocols(x))) / t.seconds)
                               for t in tables])

    fit = least_squares(residuals, x0=[20.0, 2.0] * len(names), bounds=([0.0] * 2 * len(names), [300.0, 50.0] * len(names)))
    return protocols(fit.x)


def relative_errors(table: NcclTable, link: LinkClass, min_bytes: float = 16 * 2**20) -> np.ndarray:
    """(model − measured) / measured for the table's sizes of at least ``min_bytes``."""
    keep = table.sizes >= min_bytes
    return model_seconds(table, link)[keep] / table.seconds[keep] - 1.0


__all__ = ["NcclTable", "fit_link", "fit_protocols", "model_seconds", "read_nccl_table", "read_nccl_tables", "relative_errors"]
