"""Back-propagation as an exclusive scan, and the modified Blelloch scan (BPPSA §3.1–3.2, Algorithm 1).

The operator is ``A ◇ B = B·A`` (§3.1): associative, not commutative, identity ``I``. Applied to
Equation 5's array ``[∇x_n l, J_nᵀ, …, J_1ᵀ]`` the exclusive scan yields ``[I, ∇x_n l, …, ∇x_1 l]``.
Because ◇ does not commute, the down-sweep must combine ``a[r] ◇ T`` — Algorithm 1 line 13, the
paper's modification — where the textbook Blelloch scan writes ``T ⊕ a[r]``.

Every scan here returns the values *and* the sequence of ◇ it performed, each tagged with its phase
and level, so step counts are measured on a real run (:mod:`archsim.bppsa.steps` derives them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from archsim.errors import InputError


class _Identity:
    """The symbolic identity matrix I (green squares in Fig. 3): ◇ with it is a logical move."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "I"


IDENTITY = _Identity()


def diamond(a: Any, b: Any) -> Any:
    """``A ◇ B = B·A`` (§3.1): B is a (transposed-Jacobian) matrix; A a matrix or a gradient vector."""
    if a is IDENTITY:
        return b
    if b is IDENTITY:
        return a
    return b @ a


def kind(a: Any, b: Any) -> str:
    """'id' (a move: one operand is I), 'mv' (one operand is a vector) or 'mm' (matrix–matrix)."""
    if a is IDENTITY or b is IDENTITY:
        return "id"
    if getattr(a, "ndim", 2) == 1 or getattr(b, "ndim", 2) == 1:
        return "mv"
    return "mm"


@dataclass(frozen=True)
class Step:
    """One ◇ of a run: phase 'up', 'linear' or 'down'; level d (or j for the linear part); a[left] and a[right]."""

    phase: str
    level: int
    left: int
    right: int
    kind: str


@dataclass(frozen=True)
class ScanRun:
    """The scanned array and every ◇ in execution order."""

    values: tuple
    steps: tuple[Step, ...]

    @property
    def levels(self) -> tuple[tuple[str, int], ...]:
        """Distinct sequential levels (phase, level) in the order they ran: one synchronization each."""
        seen: list[tuple[str, int]] = []
        for step in self.steps:
            if not seen or seen[-1] != (step.phase, step.level):
                seen.append((step.phase, step.level))
        return tuple(seen)

    def gradients(self) -> list:
        """``[∇x_n l, …, ∇x_1 l]`` — the scan's outputs after the leading identity."""
        return list(self.values[1:])


Op = Callable[[Any, Any], Any]


def ceil_log2(x: int) -> int:
    """⌈log₂ x⌉ for x ≥ 1, in integers."""
    return (int(x) - 1).bit_length()


def max_up_levels(n: int) -> int:
    """The deepest up-sweep a scan of n + 1 elements has: ⌈log₂(n+1)⌉ − 1 (L of §5.3's hybrid runs 0 … this)."""
    return ceil_log2(n + 1) - 1


def _check(elements: Sequence) -> int:
    n = len(elements) - 1
    if n < 1:
        raise InputError(f"a scan needs a gradient and at least one Jacobian, got {len(elements)} elements",
                         field="elements")
    return n


def linear_scan(elements: Sequence, *, op: Op = diamond) -> ScanRun:
    """Exclusive scan one element at a time — BP itself, written with explicit Jacobians (§3.6)."""
    n = _check(elements)
    out, steps, carry = [IDENTITY], [], IDENTITY
    for j in range(n):
        steps.append(Step("linear", j, j, j + 1, kind(carry, elements[j])))
        carry = op(carry, elements[j])
        out.append(carry)
    return ScanRun(tuple(out), tuple(steps))


def _up_level(a: list, n: int, d: int, op: Op, steps: list) -> None:
    for i in range(0, n - 2 ** d + 1, 2 ** (d + 1)):  # Algorithm 1, lines 2–5
        left, right = i + 2 ** d - 1, min(i + 2 ** (d + 1) - 1, n)
        steps.append(Step("up", d, left, right, kind(a[left], a[right])))
        a[right] = op(a[left], a[right])


def _down_level(a: list, n: int, d: int, op: Op, steps: list, reverse: bool) -> None:
    for i in range(0, n - 2 ** d + 1, 2 ** (d + 1)):  # Algorithm 1, lines 9–14
        left, right = i + 2 ** d - 1, min(i + 2 ** (d + 1) - 1, n)
        t = a[left]
        a[left] = a[right]
        steps.append(Step("down", d, left, right, kind(a[right], t)))
        a[right] = op(a[right], t) if reverse else op(t, a[right])  # line 13: operands reversed


def blelloch_scan(elements: Sequence, *, up_levels: int | None = None, op: Op = diamond,
                  reverse_downsweep: bool = True) -> ScanRun:
    """Exclusive ◇-scan of ``elements`` (Eq. 5's array of n + 1 items) by Algorithm 1.

    ``up_levels=None`` runs Algorithm 1 as printed: up-sweep levels d = 0 … K−2 with
    K = ⌈log₂(n+1)⌉, ``a[n] ← I``, down-sweep d = K−1 … 0. ``up_levels=L`` (0 ≤ L ≤ K−1) is the
    hybrid of §5.3: stop the up-sweep after L levels, scan the block roots ``a[min((j+1)·2^L − 1, n)]``
    linearly, then down-sweep d = L−1 … 0 (L = K−1 is Algorithm 1; L = 0 is the linear scan).
    ``reverse_downsweep=False`` plants the textbook operand order, which is wrong for ◇.
    """
    n = _check(elements)
    top = max_up_levels(n)
    if up_levels is not None and not 0 <= up_levels <= top:
        raise InputError(f"must be between 0 and {top} for {n + 1} elements, got {up_levels}", field="up_levels")
    a, steps = list(elements), list[Step]()
    levels = top if up_levels is None else up_levels
    for d in range(levels):
        _up_level(a, n, d, op, steps)
    if up_levels is None:
        a[n] = IDENTITY  # line 7
        down_from = top
    else:
        roots = [min((j + 1) * 2 ** levels - 1, n) for j in range(-(-(n + 1) // 2 ** levels))]
        carry = IDENTITY
        for j, root in enumerate(roots):
            block, a[root] = a[root], carry
            if j + 1 < len(roots):
                steps.append(Step("linear", j, root, roots[j + 1], kind(carry, block)))
                carry = op(carry, block)
        down_from = levels - 1
    for d in range(down_from, -1, -1):
        _down_level(a, n, d, op, steps, reverse_downsweep)
    return ScanRun(tuple(a), tuple(steps))
