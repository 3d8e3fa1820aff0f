"""Backward-pass cycles of the tanh RNN (§4.1) on p systolic arrays: BP vs BPPSA (Fig. 8's trends).

Model (stated in every report):

* n = T Jacobians (∂h_t/∂h_{t−1})ᵀ per sample, each H × H and dense; B samples scan independently.
* **BP baseline**: T − 1 dependent steps; step t computes ∇h_{t−1} = Wₕᵀ(tanh′ ∘ ∇h_t) for the
  whole batch as one GEMM (B × H)·(H × H) sharing Wₕ, its rows split over min(p, B) arrays:
  ``gemm_cost(⌈B/min(p,B)⌉, H, H)`` cycles per step. The elementwise tanh′ is fused (free).
* **BPPSA**: Algorithm 1's levels (:func:`archsim.bppsa.steps.level_census`); a level's B·q
  products run in waves of p, one product per array per wave, a wave lasting as long as its longest
  product (one kernel launch per level, §4.1). mm = ``gemm_cost(H, H, H)``, mv = ``gemm_cost(1, H, H)``
  (row vector times Jacobian); moves (◇ with I) are free. Every product of a sample has its own
  Jacobian, so none shares a stationary operand.
* Jacobians are generated in the forward pass (not counted, as the paper's backward-pass timing
  leaves the forward pass out); memory stalls are not modelled (compute cycles only).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from archsim.array.analytic import gemm_cost
from archsim.array.config import ArrayConfig
from archsim.bppsa.steps import (
    LevelCensus,
    blelloch_level_count,
    level_census,
    per_worker_memory,
    steps_with_workers,
    work,
)
from archsim.errors import InputError
from archsim.validate import INT32_MAX, check_exact
from archsim.value_parsers import parse_int, whole_number

if TYPE_CHECKING:
    import pandas as pd


ONE_STEP = ("must be at least 2: a 1-step sequence has no dependent backward step, so BP and the scan both take "
            "0 cycles and there is no speedup to report")


def check_seq_len(value: object, field: str = "seq_len") -> int:
    """A sequence length T as ``--seq-len``, ``seq_len=`` and :func:`rnn_backward` take it: a whole number (``10``,
    ``"10"``, ``10.0``) with T ≥ 2, else InputError naming ``field``. Every whole number below 2 is told
    :data:`ONE_STEP` (0 and negatives too: valid T starts at 2, not 1); anything else the positive integer's line."""
    number = whole_number(value)
    try:
        whole: int | None = parse_int(number, low=-INT32_MAX, what="a positive integer")
    except ValueError:
        whole = None  # not a whole number at all: the positive integer's line below
    if whole is not None and whole < 2:
        raise InputError(f"T {ONE_STEP}, got {value!r}", field=field)
    try:
        return parse_int(number, what="a positive integer")
    except ValueError as exc:
        raise InputError(str(exc), field=field) from None


@dataclass(frozen=True)
class ProductCycles:
    """Cycles of one ◇ product on one array, and of one BP step."""

    mm: int
    mv: int
    bp_step: int


@dataclass(frozen=True)
class RnnBackward:
    """One (T, p) point of the study: steps, cycles, speedup, work and per-worker memory."""

    seq_len: int
    processors: int
    batch: int
    hidden: int
    bp_steps: int
    bp_cycles: int
    scan_levels: int
    scan_steps: int
    scan_cycles: int
    speedup: float
    bp_products: int
    scan_products: int
    bppsa_bytes_per_worker: int
    pipeline_bytes_per_worker: int


def check_positive(**values: int) -> None:
    """InputError naming the first field that is not a positive integer."""
    for field, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise InputError(f"must be a positive integer, got {value!r}", field=field)


def _cycles(m: int, k: int, n: int, array: ArrayConfig) -> int:
    """SCALE-Sim's cycles of (m, k, n) at the array's MACs per PE per cycle (``array.mac_rate``: a ``.cfg``'s
    ``[macs_per_pe]`` rate of ``--dtype``, the reduction packed as :func:`archsim.array.costing.rated_k` packs it)."""
    from archsim.array.costing import rated_k

    return int(gemm_cost(m, int(rated_k(k, array)), n, array.rows, array.cols, array.dataflow).scalar("cycles"))


def product_cycles(hidden: int, batch: int, processors: int, array: ArrayConfig) -> ProductCycles:
    """Cycles of an H×H·H×H product, a 1×H·H×H product, and one batched BP step."""
    rows_per_array = -(-batch // min(processors, batch))
    return ProductCycles(_cycles(hidden, hidden, hidden, array), _cycles(1, hidden, hidden, array),
                         _cycles(rows_per_array, hidden, hidden, array))


def level_cycles(level: LevelCensus, copies: int, workers: int, cost: ProductCycles) -> int:
    """Waves of ``workers`` products, longest first: mm waves, then the rest at mv cost."""
    n_mm, n_all = copies * level.mm, copies * level.products
    waves_mm = -(-n_mm // workers)
    return waves_mm * cost.mm + (-(-n_all // workers) - waves_mm) * cost.mv


def rnn_backward(seq_len: int, processors: int, *, hidden: int = 20, batch: int = 1,
                 array: ArrayConfig | None = None) -> RnnBackward:
    """Backward pass of a length-T tanh RNN, BP vs BPPSA, on ``processors`` arrays."""
    if not isinstance(seq_len, int) or isinstance(seq_len, bool):
        check_positive(seq_len=seq_len)  # a float, a text or a bool: refused as the other sizes are
    check_seq_len(seq_len)
    check_positive(processors=processors, hidden=hidden, batch=batch)
    array = array or ArrayConfig()
    cost = product_cycles(hidden, batch, processors, array)
    census = level_census(seq_len)
    scan_cycles = sum(level_cycles(level, batch, processors, cost) for level in census)
    bp_cycles = (seq_len - 1) * cost.bp_step
    speedup = bp_cycles / scan_cycles  # T ≥ 2: the scan has at least one product
    done = work(census)
    jacobian_bytes = hidden * hidden * array.element_bytes  # one sample's H×H Jacobian
    bppsa_mem, pipe_mem = per_worker_memory(seq_len, processors, jacobian_bytes, batch * hidden * array.element_bytes,
                                            copies=batch)
    products = batch * (done["mm"] + done["mv"])
    check_exact([bp_cycles, scan_cycles, products, bppsa_mem, pipe_mem], "the RNN study's cycles, products or bytes",
                "use a shorter sequence, a smaller hidden size or batch")
    return RnnBackward(seq_len, processors, batch, hidden, seq_len - 1, bp_cycles, blelloch_level_count(seq_len),
                       steps_with_workers(census, processors, batch), scan_cycles, speedup,
                       batch * (seq_len - 1), products, bppsa_mem, pipe_mem)


def speedup_bound(processors: int, *, hidden: int = 20, batch: int = 16, array: ArrayConfig | None = None) -> float:
    """The limit of :func:`rnn_backward`'s speedup as T grows on ``processors`` arrays: BP's T − 1 steps of c_BP
    cycles against the scan's ≈ T matrix–matrix (up-sweep) and ≈ T matrix–vector (down-sweep) products per sample
    (Eq. 7's ≈ 2T work), B samples' run in waves of p once every level is p-wide: p·c_BP / (B·(c_mm + c_mv)), a ratio
    (29.1 at p = 1024 with H = 20, B = 16 on a 32×32 ws array, far below p: each product costs about BP's step)."""
    check_positive(processors=processors, hidden=hidden, batch=batch)
    cost = product_cycles(hidden, batch, processors, array or ArrayConfig())
    return processors * cost.bp_step / (batch * (cost.mm + cost.mv))


def rnn_records(seq_lens: Iterable[int], processors: Iterable[int], *, hidden: int = 20, batch: int = 16,
                array: ArrayConfig | None = None) -> list[dict]:
    """One record per (T, p): the backward-pass speedup of BPPSA over BP as T and p vary (Fig. 8)."""
    return [asdict(rnn_backward(t, p, hidden=hidden, batch=batch, array=array)) for p in processors for t in seq_lens]


def rnn_frame(seq_lens: Iterable[int], processors: Iterable[int], *, hidden: int = 20, batch: int = 16,
              array: ArrayConfig | None = None) -> pd.DataFrame:
    """:func:`rnn_records` as a DataFrame (imports pandas); the command's run with its meta is
    :func:`archsim.bppsa_run.rnn_study`."""
    import pandas as pd

    return pd.DataFrame(rnn_records(seq_lens, processors, hidden=hidden, batch=batch, array=array))
