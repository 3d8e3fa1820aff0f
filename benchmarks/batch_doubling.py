"""How far measured iterations are from growing linearly with the micro-batches (bench_vtrain_e2e.py ``--measured``).

A one-GPU run of global batch B at micro-batch b runs m = B / b micro-batches, then one optimizer step. Any
model that prices the micro-batches alike — archsim's included, whatever its constants — predicts
T(m) = m·x + c with a fixed part c ≥ 0 (the step, the loss's reduction) and a per-micro-batch part x ≥ 0, so
the same cell measured at B and 2B must show T(2B) / T(B) between 1 and 2. Where a measured pair falls outside,
no such model can match both runs, and :func:`pair_floor` is the least mean |error| it must leave on them:
the measurement's own inconsistency, which no change of constants or mechanisms removes. A row is
bench_vtrain_e2e's per-run dict (``hidden``, ``layers``, ``heads``, ``seq``, ``recompute``, ``micro_batch``,
``global_batch``, ``measured_ms``, ``predicted_ms``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DoublingPair:
    """One cell measured at global batch B and 2B (milliseconds)."""

    cell: tuple  # (hidden, layers, heads, seq, recompute, micro_batch)
    batch: int  # B; the pair's other run has 2B
    measured_ms: tuple[float, float]  # T(B), T(2B)
    predicted_ms: tuple[float, float]

    @property
    def measured_ratio(self) -> float:
        """T(2B) / T(B) measured: 1–2 for any run linear in its micro-batches with a fixed part ≥ 0."""
        return self.measured_ms[1] / self.measured_ms[0]

    @property
    def predicted_ratio(self) -> float:
        return self.predicted_ms[1] / self.predicted_ms[0]

    @property
    def micro_batches(self) -> tuple[int, int]:
        b = self.cell[5]
        return self.batch // b, 2 * self.batch // b

    @property
    def per_micro_batch_ms(self) -> float:
        """x of T = m·x + c through both measured runs."""
        (m1, m2), (t1, t2) = self.micro_batches, self.measured_ms
        return (t2 - t1) / (m2 - m1)

    @property
    def predicted_per_micro_batch_ms(self) -> float:
        """x of the line through the two predictions: what a micro-batch adds in the model, free of fixed parts."""
        (m1, m2), (p1, p2) = self.micro_batches, self.predicted_ms
        return (p2 - p1) / (m2 - m1)

    @property
    def fixed_ms(self) -> float:
        """c of T = m·x + c through both measured runs (negative where the pair grows more than twofold)."""
        return self.measured_ms[0] - self.micro_batches[0] * self.per_micro_batch_ms

    @property
    def floor(self) -> float:
        """:func:`pair_floor` of the measured pair."""
        return pair_floor(*self.measured_ms)


def pair_floor(t_b: float, t_2b: float) -> float:
    """The least |p₁/t₁ − 1| + |p₂/t₂ − 1| over predictions p₁ = m·x + c, p₂ = 2m·x + c with x, c ≥ 0, that is
    p₁ ≤ p₂ ≤ 2·p₁: 0 where 1 ≤ t₂/t₁ ≤ 2; 1 − 2t₁/t₂ above 2 (p₁ = t₁, p₂ = 2t₁: the sum is piecewise linear
    and its slope in p₁ along p₂ = 2p₁ changes sign at t₁, since 2/t₂ < 1/t₁); 1 − t₂/t₁ below 1 (p₁ = p₂ = t₂)."""
    ratio = t_2b / t_b
    if ratio > 2:
        return 1 - 2 / ratio
    if ratio < 1:
        return 1 - ratio
    return 0.0


def doubling_pairs(rows: list[dict]) -> list[DoublingPair]:
    """Every cell of ``rows`` measured at some B and at 2B, in the order the B runs come."""
    def cell(r: dict) -> tuple:
        return (r["hidden"], r["layers"], r["heads"], r["seq"], r["recompute"], r["micro_batch"])

    by_key = {(cell(r), r["global_batch"]): r for r in rows}
    pairs = []
    for r in rows:
        other = by_key.get((cell(r), 2 * r["global_batch"]))
        if other is not None:
            pairs.append(DoublingPair(cell(r), r["global_batch"], (r["measured_ms"], other["measured_ms"]),
                                      (r["predicted_ms"], other["predicted_ms"])))
    return pairs


def linear_floor(rows: list[dict]) -> float:
    """The least time MAPE over ``rows`` that any model linear in the micro-batches (fixed part ≥ 0) can reach:
    the pairs' :func:`pair_floor` summed over all rows (a run in no pair can be matched exactly)."""
    return sum(p.floor for p in doubling_pairs(rows)) / len(rows) if rows else 0.0


def doubling_markdown(rows: list[dict]) -> list[str]:
    """The summary's section: one line per pair, then the floor; no lines where no cell is measured twice."""
    pairs = doubling_pairs(rows)
    if not pairs:
        return []
    outside = sum(1 for p in pairs if not 1 <= p.measured_ratio <= 2)
    lines = ["", "## Batch doubling: are the measurements linear in the micro-batches?", "",
             ("Each cell measured at global batch B and 2B (`benchmarks/batch_doubling.py`): any model that prices the "
              "micro-batches alike — archsim's, with any constants — gives T(2B) / T(B) between 1 and 2 (a fixed part "
              f"≥ 0). {outside} of the {len(pairs)} measured pairs fall outside; the least time MAPE such a model can "
              f"reach on all {len(rows)} runs is **{linear_floor(rows):.1%}** (each pair's least sum of its two "
              "errors below, over the runs). Implied: the measured pair's T = m·x + c through both runs (m micro-batches); predicted x: the same "
              "line through archsim's two predictions — a micro-batch's cost with every fixed part taken out."), "",
             ("| model | recompute | b | B | T(B) ms | T(2B) ms | measured ratio | predicted ratio | implied x ms | "
              "predicted x ms | implied c ms | least error sum |"), "| --- " * 12 + "|"]
    for p in pairs:
        hidden, layers, _, _, recompute, b = p.cell
        lines.append(f"| h{hidden} L{layers} | {recompute} | {b} | {p.batch} | {p.measured_ms[0]:.1f} | "
                     f"{p.measured_ms[1]:.1f} | {p.measured_ratio:.3f} | {p.predicted_ratio:.3f} | "
                     f"{p.per_micro_batch_ms:.2f} | {p.predicted_per_micro_batch_ms:.2f} | {p.fixed_ms:.1f} | {p.floor:.1%} |")
    return lines
