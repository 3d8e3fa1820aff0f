"""Closed-form compute cycles and SRAM traffic of a GEMM on a systolic array.

Derived from, and tested against, SCALE-Sim 3.0.0's demand-matrix construction
(``systolic_compute_{ws,os,is}.py``): every number here equals what SCALE-Sim reports for the
same GEMM in its compute report (no memory stalls) — but costs microseconds, not minutes, and
is vectorized so one call costs a whole sweep's worth of GEMMs.

The GEMM is out[M×N] = A[M×K] · B[K×N] (SCALE-Sim's gemm topology ``M, N, K`` means the same).
SCALE-Sim maps it onto an R×C array as a spatial (Sr × Sc) tile grid streamed over T cycles:

======== ====== ====== ====== ===================== =========================
dataflow  Sr     Sc     T      cycles per fold        stationary operand
======== ====== ====== ====== ===================== =========================
ws        K      N      M      2R + C + T − 2        B (weights/filter)
os        M      N      K      R + C + T − 2         out (partial sums)
is        K      M      N      2R + C + T − 2        A (inputs/ifmap)
======== ====== ====== ====== ===================== =========================

folds = ⌈Sr/R⌉·⌈Sc/C⌉, and compute cycles = folds · (cycles per fold) − 1 (SCALE-Sim counts the
last serviced cycle index, not the count). The per-fold cost is fill (R for ws/is weight load),
skew (R − 1 + C − 1) and T streaming cycles; folds do not overlap in SCALE-Sim.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal, TypeVar

import numpy as np
import numpy.typing as npt

from archsim.array.config import ArrayConfig
from archsim.errors import InputError
from archsim.validate import EXACT_LIMIT, check_exact

DATAFLOW_CODES = {"ws": 0, "os": 1, "is": 2}
DIMENSIONS = ("m", "k", "n", "rows", "cols")  # gemm_cost's arguments, as its errors name them
OfmapCount = Literal["scalesim", "true"]
Integers = TypeVar("Integers", int, np.ndarray)  # a scalar closed form that numpy arrays broadcast through

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, repr=False)
class GemmCost:
    """Cost of GEMMs on arrays; every field is an array of the broadcast input shape.

    cycles: compute cycles (SCALE-Sim "Compute cycles", no memory stalls).
    folds / row_folds / col_folds: tiles of the Sr×Sc spatial grid on the R×C array.
    mapping_efficiency: mean over folds of used PEs / all PEs (a fraction; SCALE-Sim prints ×100).
    compute_utilization: mean over folds of MACs / (PEs × fold cycles), SCALE-Sim's definition
        (its fold cycles for ws/is count 2R + 2C + T − 3, one skew more than the fold takes).
    utilization: MACs / (cycles × PEs), SCALE-Sim's "Overall utilization" as a fraction.
    *_sram_reads / ofmap_sram_writes: words moved between SRAM and the array.
    macs: M·K·N.
    """

    cycles: IntArray
    folds: IntArray
    row_folds: IntArray
    col_folds: IntArray
    mapping_efficiency: FloatArray
    compute_utilization: FloatArray
    utilization: FloatArray
    ifmap_sram_reads: IntArray
    filter_sram_reads: IntArray
    ofmap_sram_writes: IntArray
    macs: IntArray

    def __repr__(self) -> str:
        """Each field as a plain number (``cycles=631``) where it holds one, not numpy's ``np.int64(631)``
        (numpy 2's scalar repr); an array field as numpy prints it. The values are the fields' own."""
        shown = (f"{f.name}={_plain_repr(getattr(self, f.name))}" for f in fields(self))
        return f"{type(self).__name__}({', '.join(shown)})"

    def scalar(self, name: str) -> float:
        """One field of a single-GEMM cost as a Python number."""
        value = np.asarray(getattr(self, name))
        if value.size != 1:
            raise ValueError(f"{name} holds {value.size} values, not one")
        return value.item()


def _plain_repr(value: object) -> str:
    """``repr`` of a numpy scalar (or 0-d array) as the Python number it holds; anything else as is."""
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):
        return repr(np.asarray(value).item())
    return repr(value)


def dataflow_codes(dataflow: str | npt.ArrayLike) -> IntArray:
    """Map dataflow names ('ws', 'os', 'is') to the integer codes used in vectorized costing."""
    names = np.asarray(dataflow)
    flat = [str(x).strip().lower() for x in names.ravel()]
    unknown = sorted({x for x in flat if x not in DATAFLOW_CODES})
    if unknown:
        raise InputError(f"unknown dataflow {unknown[0]!r}; choose one of ws, os, is", field="dataflow")
    return np.array([DATAFLOW_CODES[x] for x in flat], dtype=np.int64).reshape(names.shape)


def _holds_bool(x: npt.ArrayLike, value: np.ndarray) -> bool:
    """Whether ``x`` is or holds a bool (``True``, ``np.True_``, a bool array, ``[4, True]``), which the int64 cast
    would count as 1: a bool is no count (docs/api.md)."""
    if value.dtype.kind == "b":
        return True
    if isinstance(x, (list, tuple)):
        return any(isinstance(item, (bool, np.bool_)) for item in np.asarray(x, dtype=object).flat)
    return False


def _whole(x: npt.ArrayLike, name: str) -> IntArray:
    """``x`` as int64; a fraction or a NaN is refused (the cast would drop or garble it silently), and so is a bool
    and what is no number ("abc", None: a ValueError or TypeError from the cast before)."""
    value = np.asarray(x)
    if _holds_bool(x, value):
        raise InputError(f"must be a whole number, not a bool, got {_plain_repr(x):.40}", field=name)
    if value.dtype.kind != "f":
        try:
            return np.asarray(x, dtype=np.int64)  # a Python int past int64 raises OverflowError, as a float does below
        except (TypeError, ValueError):
            raise InputError(f"must be a whole number or an array of them, got {type(x).__name__} {x!r:.40}",
                             field=name) from None
    bad = ~np.isfinite(value) | (np.floor(value) != value)
    if bad.any():
        raise InputError(f"must be a whole number, got {value[bad].flat[0]!r}", field=name)
    if (np.abs(value) >= 2.0**63).any():
        raise OverflowError
    return value.astype(np.int64)


def _python_ints(dims: tuple, code: int) -> tuple:
    """(M, K, N, R, C, D) of a single GEMM of one dataflow as Python ints, exact at any size."""
    values = tuple(int(x) for x in dims)
    if any(not -(2**63) <= x < 2**63 for x in values):  # what the int64 cast of _int64_arrays refuses
        raise InputError("a GEMM dimension exceeds 2^63; use smaller dimensions")
    return (*values, code)


def _int64_arrays(dims: tuple, dataflow: str | npt.ArrayLike, code: int | None) -> tuple:
    """(M, K, N, R, C, D) broadcast together as int64 arrays; D stays a Python int for one dataflow name."""
    codes = code if code is not None else (
        dataflow_codes(dataflow) if isinstance(dataflow, str) or np.asarray(dataflow).dtype.kind in "UO"
        else np.asarray(dataflow, dtype=np.int64))
    try:
        values = np.broadcast_arrays(*(_whole(x, name) for x, name in zip(dims, DIMENSIONS)),
                                     *(() if code is not None else (codes,)))
    except OverflowError:
        raise InputError("a GEMM dimension exceeds 2^63; use smaller dimensions") from None
    return (*values, code) if code is not None else tuple(values)


def _ceil_div(a: IntArray, b: IntArray) -> IntArray:
    return -(-a // b)


def _array_shape(rows: npt.ArrayLike | ArrayConfig | None, cols: npt.ArrayLike | None,
                 dataflow: str | npt.ArrayLike | None, array: ArrayConfig | None,
                 ) -> tuple[npt.ArrayLike, npt.ArrayLike, str | npt.ArrayLike]:
    """gemm_cost's rows, cols and dataflow: given, or an ArrayConfig's (as ``array=`` or in ``rows``'s place);
    refused in one line naming what is missing or given twice (not Python's "missing 'cols'")."""
    if isinstance(rows, ArrayConfig):
        if array is not None:
            raise InputError("an ArrayConfig given both as rows and as array=; give it once", field="array")
        rows, array = None, rows
    if array is not None:
        if not isinstance(array, ArrayConfig):
            raise InputError(f"expected an ArrayConfig, got {type(array).__name__}", field="array")
        if rows is not None or cols is not None:
            raise InputError("rows and cols are the ArrayConfig's; give either them or the array", field="array")
        if array.mac_rate != 1:  # its device file's rate: priced where the real GEMM's MACs stay beside the cycles
            raise InputError(f"this ArrayConfig runs {array.mac_rate:g} MACs per PE per cycle (its device file's "
                             "rate of its dtype); gemm_cost is SCALE-Sim's GEMM at one: give archsim.gemm(m=…, k=…, "
                             "n=…, config=FILE, dtype=…), which prices the file's rate", field="array")
        return array.rows, array.cols, array.dataflow if dataflow is None else dataflow
    for name, value in (("rows", rows), ("cols", cols)):
        if value is None:
            raise InputError("expected the array's rows and cols, or an ArrayConfig as array=", field=name)
    assert rows is not None and cols is not None  # for the type checker: refused above
    return rows, cols, "ws" if dataflow is None else dataflow


def gemm_cost(
    m: npt.ArrayLike,
    k: npt.ArrayLike,
    n: npt.ArrayLike,
    rows: npt.ArrayLike | ArrayConfig | None = None,
    cols: npt.ArrayLike | None = None,
    dataflow: str | npt.ArrayLike | None = None,
    *,
    array: ArrayConfig | None = None,
    ofmap_count: OfmapCount = "scalesim",
) -> GemmCost:
    """Cost out[M×N] = A[M×K]·B[K×N] on R×C arrays; all arguments broadcast together.

    The array is ``rows`` × ``cols`` PEs running ``dataflow`` (None: ``"ws"``), or an
    :class:`~archsim.array.config.ArrayConfig`'s, given as ``array=`` or in ``rows``'s place
    (``gemm_cost(m, k, n, archsim.array_config("32x32"))``): its rows, cols and dataflow, a
    ``dataflow`` given beside it taking the place of its own; one whose ``mac_rate`` is not 1 (a device file's
    ``macs_per_pe``) is refused in one line, SCALE-Sim's GEMM being one MAC per PE per cycle.

    ``ofmap_count="scalesim"`` reproduces SCALE-Sim 3.0.0's os ofmap-write count, which adds
    R + C phantom writes per fold (``systolic_compute_os.create_ofmap_demand_mat`` adds the
    padded fold's shape[0] + shape[1] a second time). The true count is M·N: ``"true"``.
    ws and is counts are the same under both settings (their partial sums really are written
    once per reduction fold).
    """
    if ofmap_count not in ("scalesim", "true"):
        raise InputError(f"unknown ofmap_count {ofmap_count!r}", field="ofmap_count")
    rows, cols, dataflow = _array_shape(rows, cols, dataflow, array)
    # One dataflow name is one Python int: _counts then picks each formula in Python, not per element.
    code = DATAFLOW_CODES.get(dataflow.strip().lower()) if isinstance(dataflow, str) else None
    dims = (m, k, n, rows, cols)
    one = code is not None and all(isinstance(x, (int, np.signedinteger)) and not isinstance(x, bool) for x in dims)
    M, K, N, R, C, D = _python_ints(dims, code) if one and code is not None else _int64_arrays(dims, dataflow, code)
    for name, value in zip(DIMENSIONS, (M, K, N, R, C)):
        low = value if one else (value.min() if value.size else 1)
        if low <= 0:
            raise InputError(f"must be positive, got {int(low)}", field=name)
    if not _surely_exact(M, K, N, R, C, one):
        # The same integer formulas in float64 first: refuse what would not be exact in int64.
        Mf, Kf, Nf, Rf, Cf = (float(x) if one else x.astype(np.float64) for x in (M, K, N, R, C))
        estimate = _counts(Mf, Kf, Nf, Rf, Cf, D, ofmap_count)
        check_exact(list(estimate) if one else [np.max(x) for x in estimate if x.size],
                    "a GEMM's cycles, MACs or SRAM words", "use smaller dimensions or a larger array")
    # Mixed dataflows: np.where/np.select evaluate every dataflow's formula; an unselected one may wrap in
    # int64 (its value is discarded), while the selected ones were bounded by the check above.
    with np.errstate(over="ignore"):
        sr, sc, t, row_folds, col_folds, folds, per_fold, cycles, macs, ifmap_reads, filter_reads, ofmap_writes = \
            _counts(M, K, N, R, C, D, ofmap_count)
    is_os = D == 1
    pes = float(R * C) if one else (R * C).astype(np.float64)  # ratios in float64: PEs × cycles may pass int64
    # Sum over folds of used PEs is exactly Sr·Sc (the folds tile the spatial grid).
    mapping_efficiency = (sr * sc) / (pes * folds)
    util_fold_cycles = per_fold + _where(is_os, 0, C - 1)
    compute_utilization = (t * sr * sc) / (pes * util_fold_cycles * folds)
    # SCALE-Sim counts the last serviced cycle's index, so a 1×1×1 GEMM on a 1×1 os array has 0
    # cycles (and SCALE-Sim divides by zero reporting it); archsim reports its utilization over 1 cycle.
    utilization = macs / ((max(cycles, 1) if one else np.maximum(cycles, 1)) * pes)
    if one:  # numpy scalars, as array inputs give arrays (exact: every count is below 2^53)
        fields: list[Any] = [np.int64(x) if isinstance(x, int) else np.float64(x) for x in (
            cycles, folds, row_folds, col_folds, mapping_efficiency, compute_utilization, utilization, ifmap_reads,
            filter_reads, ofmap_writes, macs)]
        return GemmCost(*fields)

    return GemmCost(
        cycles=cycles,
        folds=folds,
        row_folds=row_folds,
        col_folds=col_folds,
        mapping_efficiency=mapping_efficiency,
        compute_utilization=compute_utilization,
        utilization=utilization,
        ifmap_sram_reads=ifmap_reads,
        filter_sram_reads=filter_reads,
        ofmap_sram_writes=ofmap_writes,
        macs=macs,
    )


def _surely_exact(M, K, N, R, C, one: bool) -> bool:
    """Whether every count of :func:`_counts` is surely below 2^53, from the largest dimension X and array
    side Y alone: sr, sc, t, row and column folds ≤ X, a fold's cycles ≤ 3Y + X, so cycles ≤ X²(X + 3Y), and
    MACs, SRAM reads and writes (≤ X³ + 2X²Y) too. Then the float64 estimate, exact below 2^53, would pass
    for certain and is skipped; otherwise it decides."""
    if one:
        x, y = max(M, K, N), max(R, C)
    else:
        if not M.size:
            return True
        x, y = max(int(M.max()), int(K.max()), int(N.max())), max(int(R.max()), int(C.max()))
    return x * x * (x + 3 * y) < EXACT_LIMIT


def _where(condition, yes, no):
    """``np.where`` per element; a Python bool (one dataflow for all GEMMs) picks in Python, so only the
    chosen formula's array is kept."""
    if isinstance(condition, bool):
        return yes if condition else no
    return np.where(condition, yes, no)


def _select(is_ws, is_os, ws, os, other):
    """``np.select`` over the ws / os / is formulas, picked in Python for one dataflow (see :func:`_where`)."""
    if isinstance(is_ws, bool):
        return ws if is_ws else os if is_os else other
    return np.select([is_ws, is_os], [ws, os], other)


def _counts(M, K, N, R, C, D, ofmap_count: OfmapCount) -> tuple:
    """The integer counts of :func:`gemm_cost` (int64 arrays, or float64 ones for a range check):
    sr, sc, t, row_folds, col_folds, folds, per_fold, cycles, macs, ifmap/filter reads, ofmap writes."""
    is_ws, is_os = D == 0, D == 1
    sr = _where(is_os, M, K)
    sc = _where(D == 2, M, N)
    t = _select(is_ws, is_os, M, K, N)

    row_folds = _ceil_div(sr, R)
    col_folds = _ceil_div(sc, C)
    folds = row_folds * col_folds
    fill = _where(is_os, 0, R)  # ws/is preload the stationary operand: R extra cycles per fold
    per_fold = fill + R + C + t - 2
    cycles = folds * per_fold - 1
    macs = M * K * N

    # Stationary operand read once; streamed operand read once per fold of the other spatial dim;
    # outputs written once per reduction fold (ws, is) or once (os). Each product takes only its
    # dataflow's factor, so no other dataflow's product is computed and thrown away.
    ifmap_reads = M * K * _where(D == 2, 1, col_folds)
    filter_reads = K * N * _select(is_ws, is_os, 1, row_folds, col_folds)
    ofmap_writes = M * N * _where(is_os, 1, row_folds)
    if ofmap_count == "scalesim":
        ofmap_writes = ofmap_writes + _where(is_os, folds * (R + C), 0)
    return sr, sc, t, row_folds, col_folds, folds, per_fold, cycles, macs, ifmap_reads, filter_reads, ofmap_writes


# Which of (m, k, n) plays (Sr, Sc, T) under each dataflow: the spatial rows and columns mapped on
# the array and the streamed length (SCALE-Sim's mapping; :func:`_counts` is its vectorized form).
ROLES = {"ws": (1, 2, 0), "os": (0, 2, 1), "is": (1, 0, 2)}


def fold_geometry(m: Integers, k: Integers, n: Integers, rows: int, cols: int,
                  dataflow: str) -> tuple[Integers, Integers, Integers]:
    """(cycles per fold, row folds, column folds) of one GEMM, with plain integers (or integer
    arrays of one dataflow): compute cycles = row folds · column folds · cycles per fold − 1. The
    one scalar writing of the closed form — :func:`gemm_cycles`, :func:`gemm_cycles_form` and the
    cycle engine's folding read it."""
    roles = ROLES.get(dataflow)
    if roles is None:
        raise InputError(f"unknown dataflow {dataflow!r}; choose one of ws, os, is", field="dataflow")
    shape = (m, k, n)
    sr, sc, t = shape[roles[0]], shape[roles[1]], shape[roles[2]]
    fill = 0 if dataflow == "os" else rows  # ws/is preload the stationary operand: R extra cycles per fold
    return fill + rows + cols + t - 2, -(-sr // rows), -(-sc // cols)


def gemm_cycles(m: Integers, k: Integers, n: Integers, rows: int, cols: int, dataflow: str) -> Integers:
    """Compute cycles of one GEMM with plain integers — the same closed form as :func:`gemm_cost`,
    for hot loops (split searches) where numpy's per-call overhead dominates."""
    per_fold, row_folds, col_folds = fold_geometry(m, k, n, rows, cols, dataflow)
    return row_folds * col_folds * per_fold - 1


def gemm_cycles_form(dim: str, m: int, k: int, n: int, rows: int, cols: int, dataflow: str) -> tuple[int, int, int]:
    """(q, b, a) with ``gemm_cycles = (⌈x/q⌉ + b) · a − 1`` for x ≥ 1 the GEMM's dimension ``dim``
    ("m", "k" or "n"; the value passed for it is ignored, the other two are ≥ 1): the closed form
    as a function of one dimension, for searches that vary it (δ splits).

    The cycles ⌈sr/R⌉·⌈sc/C⌉·(fill + R + C + t − 2) − 1 involve each dimension in exactly one role
    (ws: sr = k, sc = n, t = m; os: sr = m, sc = n, t = k; is: sr = k, sc = m, t = n): a row-fold
    count (q = R), a column-fold count (q = C) or the stream length (q = 1, b = fill + R + C − 2).
    """
    if dim not in ("m", "k", "n"):
        raise ValueError(f"dim must be m, k or n, got {dim!r}")
    per_fold, row_folds, col_folds = fold_geometry(m, k, n, rows, cols, dataflow)
    roles, x = ROLES[dataflow], "mkn".index(dim)
    if x == roles[0]:
        return rows, 0, col_folds * per_fold
    if x == roles[1]:
        return cols, 0, row_folds * per_fold
    return 1, per_fold - (m, k, n)[x], row_folds * col_folds


def form_cycles(x: int, q: int, b: int, a: int) -> int:
    """:func:`gemm_cycles` from its form in one dimension (:func:`gemm_cycles_form`): 0 for x ≤ 0."""
    return (-(-x // q) + b) * a - 1 if x > 0 else 0


def form_within(limit: int, q: int, b: int, a: int) -> int:
    """The largest x ≥ 0 with ``form_cycles(x, q, b, a) ≤ limit`` (an integer): the closed form
    inverted, ⌈x/q⌉ ≤ (limit + 1) // a − b, so a δ split finds its largest fitting part in O(1)."""
    return max(0, ((limit + 1) // a - b) * q)
