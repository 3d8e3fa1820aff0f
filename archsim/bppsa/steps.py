"""Step, work and space complexity of the scans in closed form (BPPSA §3.6, Eqs. 6–7).

**Levels of Algorithm 1.** Let n + 1 elements and K = ⌈log₂(n+1)⌉. The up-sweep runs d = 0 … K−2
(line 1): K − 1 levels, each non-empty because its first pair needs 2^d ≤ n and 2^{K−2} < n.
Line 7 is a move. The down-sweep runs d = K−1 … 0 (line 8): K levels, each non-empty because
2^{K−1} < n + 1. Every level waits for the one before (one kernel launch each, §4.1), so the
critical path is **2⌈log₂(n+1)⌉ − 1 levels**. Level d holds ⌊(n − 2^d)/2^{d+1}⌋ + 1 pairs
(i = 0, 2^{d+1}, … ≤ n − 2^d).

**Kinds.** In the up-sweep the pair with i = 0 reduces a block holding ``a[0] = ∇x_n l``, a vector,
so it is a matrix–vector product (mv); the others are matrix–matrix (mm). In the down-sweep the pair
with i = 0 has ``a[r] = I`` (a move); the others multiply the vector prefix by a matrix (mv).

**Hybrid (§5.3).** Stopping after L up levels leaves J = ⌈(n+1)/2^L⌉ block roots, scanned linearly
in J − 1 dependent steps (the first a move), then L down levels: 2L + J − 1 levels. L = K−1 gives
J = 2 and Algorithm 1's count; L = 0 gives the linear scan's n steps.

**p workers** (Brent): a level with q products takes ⌈q/p⌉ waves (at least one step), so
S = Σ_levels max(1, ⌈q_level/p⌉) ≤ Σ (q_level/p + 1) ≤ 2n/p + 2K. Since log₂ n = log₂ p + log₂(n/p)
and log₂(n/p) < n/p, that is Θ(n/p + log p) for p < n and Θ(log n) for p > n — Equation 6.
**Work**: Σ q_level < 2n products (Eq. 7, Θ(n)), against n − 1 for the linear scan.
"""

from __future__ import annotations

from dataclasses import dataclass

from archsim.bppsa.scan import ceil_log2, max_up_levels
from archsim.errors import InputError
from archsim.validate import positive_count


@dataclass(frozen=True)
class LevelCensus:
    """The ◇ operations of one sequential level: matrix–matrix, matrix–vector, and moves (◇ with I)."""

    phase: str
    level: int
    mm: int
    mv: int
    moves: int

    @property
    def products(self) -> int:
        return self.mm + self.mv


def _pairs(n: int, d: int) -> int:
    return (n - 2 ** d) // 2 ** (d + 1) + 1


def blelloch_level_count(n: int) -> int:
    """Sequential levels of Algorithm 1 on n + 1 elements: 2⌈log₂(n+1)⌉ − 1."""
    return 2 * ceil_log2(positive_count(n, "n") + 1) - 1


def hybrid_level_count(n: int, up_levels: int) -> int:
    """Sequential levels of the hybrid that stops the up-sweep after L levels: 2L + ⌈(n+1)/2^L⌉ − 1."""
    return 2 * up_levels + -(-(positive_count(n, "n") + 1) // 2 ** up_levels) - 1


def level_census(n: int, up_levels: int | None = None) -> tuple[LevelCensus, ...]:
    """Per-level operation counts of :func:`archsim.bppsa.scan.blelloch_scan` without running it."""
    n = positive_count(n, "n")  # a numpy integer as the int it counts: the census holds ints
    top = max_up_levels(n)
    levels = top if up_levels is None else up_levels
    if not 0 <= levels <= top:
        raise InputError(f"must be between 0 and {top}, got {up_levels}", field="up_levels")
    census = [LevelCensus("up", d, _pairs(n, d) - 1, 1, 0) for d in range(levels)]
    if up_levels is None:
        down_from = top
    else:
        roots = -(-(n + 1) // 2 ** levels)
        census += [LevelCensus("linear", j, 0, int(j > 0), int(j == 0)) for j in range(roots - 1)]
        down_from = levels - 1
    census += [LevelCensus("down", d, 0, _pairs(n, d) - 1, 1) for d in range(down_from, -1, -1)]
    return tuple(census)


def linear_census(n: int) -> tuple[LevelCensus, ...]:
    """The linear scan (BP): n dependent steps, a move then n − 1 matrix–vector products."""
    return tuple(LevelCensus("linear", j, 0, int(j > 0), int(j == 0)) for j in range(positive_count(n, "n")))


def steps_with_workers(census: tuple[LevelCensus, ...], workers: int, copies: int = 1) -> int:
    """Critical-path steps when each level's ``copies × products`` run in waves of ``workers`` (Eq. 6)."""
    workers = positive_count(workers, "processors")
    return sum(max(1, -(-copies * level.products // workers)) for level in census)


def work(census: tuple[LevelCensus, ...]) -> dict[str, int]:
    """Total operations by kind (Eq. 7)."""
    return {"mm": sum(c.mm for c in census), "mv": sum(c.mv for c in census), "moves": sum(c.moves for c in census)}


def per_worker_memory(n: int, workers: int, jacobian_bytes: int, activation_bytes: int, copies: int = 1
                      ) -> tuple[int, int]:
    """(BPPSA, pipeline) bytes per worker (§3.6, Appendix B).

    BPPSA: the ``copies`` independent scans' (n+1)-element arrays spread over the p workers, as their
    products are (:func:`steps_with_workers`): ⌈copies·(n+1)/p⌉ Jacobians of ``jacobian_bytes`` each,
    Θ(max(n/p′, 1))·M_Jacob with p′ = p/copies workers per scan.
    Pipeline parallelism: ⌈n/p⌉ layers' activations to re-materialize plus one boundary activation
    per in-flight micro-batch, p of them to fill the pipe: (⌈n/p⌉ + p)·M_x.
    """
    n, workers, copies = positive_count(n, "n"), positive_count(workers, "processors"), positive_count(copies, "copies")
    return -(-copies * (n + 1) // workers) * jacobian_bytes, (-(-n // workers) + workers) * activation_bytes
