"""The pruned VGG-11 micro-benchmark (BPPSA §4.3, §5.3, Fig. 10): FLOPs per scan step vs BP.

VGG-11's convolutional stack (config "A": 64, M, 128, M, 256, 256, M, 512, 512, M, 512, 512, M;
3×3 convolutions with padding 1, each followed by ReLU; 2×2 max-pooling, stride 2) on one 32×32×3
CIFAR-10 image — the paper's setting — is n = 21 operators, hence Fig. 3's levels. Weights are
pruned at random to the requested sparsity (seeded): exactly round(s·size) zeros per layer. The
paper prunes 97% by magnitude (See et al., 2016) after training; random pruning has the same
per-layer density, which is all FLOP counts depend on, but not the same placement.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

import numpy as np

from archsim.bppsa.jacobians import scan_input
from archsim.bppsa.layers import Conv2d, Layer, MaxPool2d, ReLU, forward_chain
from archsim.bppsa.sparse_cost import CountedStep, count_flops
from archsim.choices.bppsa import ZEROS
from archsim.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

VGG11_CONV = (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M")
VGG11_OPERATORS = sum(1 if item == "M" else 2 for item in VGG11_CONV)  # conv + ReLU, or a pooling: n = 21


def check_sparsity(sparsity: float) -> float:
    """Sparsity must be a number in [0, 1)."""
    if isinstance(sparsity, bool) or not isinstance(sparsity, (int, float)) or not 0.0 <= sparsity < 1.0:
        raise InputError(f"must be in [0, 1), got {sparsity!r}", field="sparsity")
    return float(sparsity)


def prune_random(weight: np.ndarray, sparsity: float, rng: np.random.Generator) -> np.ndarray:
    """A copy of ``weight`` with exactly round(sparsity·size) entries, chosen at random, set to zero."""
    pruned = weight.copy().reshape(-1)
    pruned[rng.choice(pruned.size, size=round(check_sparsity(sparsity) * pruned.size), replace=False)] = 0.0
    return pruned.reshape(weight.shape)


def check_width_divisor(width_divisor: int, field: str = "width_divisor") -> int:
    """A divisor of every VGG-11 channel count (64, 128, 256, 512): the narrow copy keeps the network's shape."""
    widths = sorted({c for c in VGG11_CONV if not isinstance(c, str)})
    if isinstance(width_divisor, bool) or width_divisor <= 0 or any(c % width_divisor for c in widths):
        raise InputError(f"must divide every VGG-11 channel count ({', '.join(map(str, widths))}): "
                         f"1, 2, 4, … 64, got {width_divisor}", field=field)
    return width_divisor


def vgg11_conv_stack(*, sparsity: float = 0.0, seed: int = 0, in_channels: int = 3,
                     width_divisor: int = 1) -> tuple[Layer, ...]:
    """VGG-11's conv/ReLU/max-pool chain with He-initialized weights pruned to ``sparsity``.

    ``width_divisor`` divides every channel count (tests use a narrow copy of the same shape).
    """
    check_sparsity(sparsity)
    check_width_divisor(width_divisor)
    rng = np.random.default_rng(seed)
    layers: list[Layer] = []
    channels = in_channels
    for item in VGG11_CONV:
        if isinstance(item, str):  # "M"
            layers.append(MaxPool2d((2, 2), (2, 2)))
            continue
        out = item // width_divisor
        weight = rng.standard_normal((out, channels, 3, 3)) * np.sqrt(2.0 / (9 * channels))
        layers += [Conv2d(prune_random(weight, sparsity, rng), (1, 1), (1, 1)), ReLU()]
        channels = out
    return tuple(layers)


# The scan work (BPPSA's FLOPs, all steps) of the unpruned network at --width-divisor 8, per up-sweep depth
# (vgg_flops(sparsity=0, up_levels=L, width_divisor=8); depths ≥ 3 run Algorithm 1's whole up-sweep, as 'full').
DENSE_SCAN_FLOPS_W8 = {0: 3_546_880, 1: 11_552_608, 2: 847_658_848, 3: 1_847_031_968}


def scan_work_estimate(sparsity: float, width_divisor: int, depths: list[int | None]) -> int:
    """Estimated scan FLOPs of the runs at these up-sweep depths (None: full), from the flags alone (no
    Jacobian built): the unpruned work scaled to the width and thinned by pruning. Depths 0–1 multiply a
    convolution only by diagonal or pooling Jacobians: their work grows with the square of the width and is
    counted unpruned (a bound, small). Depth 2 multiplies two pruned convolutions: cube of the width, and
    d² + d/25 of the unpruned work at density d = 1 − sparsity (measured at width divisors 4–16 within 50%,
    tests/test_followups_27.py). Deeper products fill in towards dense as the width grows: counted unpruned."""
    density, total = 1.0 - sparsity, 0.0
    for depth in depths:
        level = 3 if depth is None else min(depth, 3)
        scale = (8 / width_divisor) ** (2 if level < 2 else 3)
        thinning = density * density + density / 25 if level == 2 else 1.0
        total += DENSE_SCAN_FLOPS_W8[level] * scale * thinning
    return round(total)


def _rows(method: str, counted: tuple[CountedStep, ...]) -> list[dict]:
    rows, seq, last = [], -1, None
    for c in counted:
        if (c.step.phase, c.step.level) != last:
            seq, last = seq + 1, (c.step.phase, c.step.level)
        rows.append({"method": method, "seq_step": seq, **asdict(c.step), "flops": c.flops,
                     "dense_flops": c.dense_flops})
    return rows


def vgg_elements(*, sparsity: float = 0.97, seed: int = 0, image: int = 32, width_divisor: int = 1,
                 zeros: str = "pattern") -> list:
    """The scan's input (Eq. 5: the gradient, then the transposed Jacobians) of the pruned VGG-11 on one seeded
    ``image`` × ``image`` input; every up-sweep depth scans the same elements, so a study builds them once.

    ``zeros="pattern"`` keeps the input-dependent zeros (ReLU's inactive diagonal, pooling's
    non-maxima) as stored entries, so the counts hold for every input (§3.3's ahead-of-time
    pattern); ``"values"`` drops them for this one input, as CSR matrices built from a real run's
    Jacobian values would — far less fill-in in the up-sweep's products."""
    if image <= 0 or image % 32:
        raise InputError(f"must be a positive multiple of 32 (five 2×2 poolings), got {image}", field="image")
    if zeros not in ZEROS:
        raise InputError(f"expected one of {', '.join(ZEROS)}, got {zeros!r}", field="zeros")
    layers = vgg11_conv_stack(sparsity=sparsity, seed=seed, width_divisor=width_divisor)
    rng = np.random.default_rng(seed + 1)
    activations = forward_chain(layers, rng.standard_normal((3, image, image)))
    elements = scan_input(layers, activations, rng.standard_normal(activations[-1].size))
    if zeros == "values":
        for jacobian in elements[1:]:
            jacobian.eliminate_zeros()
    return elements


def scan_steps(up_levels: int | None) -> int:
    """The ◇ operations :func:`scan_flops` runs on VGG-11's n = 21 operators (BPPSA's and BP's), counted from
    the levels alone (:func:`~archsim.bppsa.steps.level_census`): a progress bar's total."""
    from archsim.bppsa.steps import level_census, linear_census, work

    return sum(work(level_census(VGG11_OPERATORS, up_levels)).values()) + sum(
        work(linear_census(VGG11_OPERATORS)).values())


def scan_flops(elements: list, up_levels: int | None = 2, on_step=None, on_part=None, budget=None) -> pd.DataFrame:
    """FLOPs of every step of BPPSA (hybrid with ``up_levels``; None = Algorithm 1) and of BP on ``elements``
    (:func:`vgg_elements`, or any chain's :func:`~archsim.bppsa.jacobians.scan_input`); ``on_step()``, if given, is called after each ◇, ``on_part(f)`` within a long
    product (:func:`~archsim.bppsa.sparse_cost.product_flops`): progress; ``budget(multiplies, entries)`` before
    each product (it may raise: :class:`~archsim.bppsa.sparse_cost.FlopCounter`).

    ``critical`` marks, per sequential step, the largest operation — the one on the critical path
    when every operation of a level has its own worker (n = 21 ≪ p, as in Fig. 10).
    """
    import pandas as pd  # here: `bppsa rnn` loads this module and renders without pandas

    counted = {"on_step": on_step, "on_part": on_part, "budget": budget}
    frame = pd.DataFrame(_rows("bppsa", count_flops(elements, up_levels=up_levels, **counted))
                         + _rows("bp", count_flops(elements, method="bp", **counted)))
    frame["critical"] = frame.index.isin(frame.groupby(["method", "seq_step"]).flops.idxmax())
    return frame


def vgg_flops(*, sparsity: float = 0.97, seed: int = 0, image: int = 32, up_levels: int | None = 2,
              width_divisor: int = 1, zeros: str = "pattern") -> pd.DataFrame:
    """FLOPs of every step of BPPSA (hybrid with ``up_levels``; None = Algorithm 1) and of BP: :func:`scan_flops`
    on :func:`vgg_elements` (``zeros``: ``"pattern"`` counts for every input, ``"values"`` for this one)."""
    return scan_flops(vgg_elements(sparsity=sparsity, seed=seed, image=image, width_divisor=width_divisor,
                                   zeros=zeros), up_levels)


def critical_path(frame: pd.DataFrame) -> pd.DataFrame:
    """Per method: sequential steps, critical-path FLOPs and total work FLOPs."""
    import pandas as pd

    crit = frame[frame.critical]
    return pd.DataFrame([{"method": m, "steps": int(part.seq_step.nunique()),
                          "critical_path_flops": int(crit[crit.method == m].flops.sum()),
                          "work_flops": int(part.flops.sum())}
                         for m, part in frame.groupby("method", sort=False)])
