"""Single-device multi-stream out-of-order backprop (000_0084ae54373056ee.txt §4.1, Algorithm 1).

The main stream runs the critical path — every F, then the δ ops D_L..D_2 — back to back; the
sub-stream runs the weight gradients G_l (each needs δ^l, i.e. D_{l+1}'s end, or F_L's for l = L).

**Co-run model (documented, derived from utilizations).** An op of duration t alone keeps a
fraction u of the array's PEs busy (u = MACs / (t · PEs · MACs per PE per cycle), the cost model's utilization). The main
stream has priority, so its ops run as if alone; a sub-stream op runs on the capacity they leave,
1 − u_main, and needs u·t of array-time: alone it takes t, co-run it takes
max(t, u·t / (1 − u_main)) — nothing beats running alone, and it slows as the main stream fills
the array. With u_main = 1 it waits. Low-utilization ops on a large array are where it pays.

Schedules:
* ``single``: one stream, the conventional order (G_l then D_l per layer) — the baseline.
* ``naive``: two streams, each G_l on the sub-stream as soon as it is ready, in layer order.
* ``joint``: Algorithm 1 — the main stream's backward split into regions; repeatedly place, in the
  region whose best candidate gains most, the runnable G with the highest speedup there (lines
  3–11); G's left over run after the main stream. ``prescheduled`` regions (the memory-driven
  variant) first take their G's as soon as ready, which shortens how long their inputs are held.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from archsim.errors import InputError

if TYPE_CHECKING:  # the cost model is loaded when ops are made, not when the module is
    from archsim.modes import Mode

SCHEDULES = ("single", "naive", "joint")


@dataclass(frozen=True)
class DeviceOps:
    """Per layer (0-based, forward order): durations, utilizations and the bytes a G holds."""

    forward: tuple[float, ...]
    delta: tuple[float, ...]  # 0 for a layer without δ
    weight_grad: tuple[float, ...]
    forward_util: tuple[float, ...]
    delta_util: tuple[float, ...]
    weight_grad_util: tuple[float, ...]
    held_bytes: tuple[int, ...] = ()  # inputs a pending G_l keeps alive (a^{l-1} and δ^l)


@dataclass(frozen=True)
class MultiStreamResult:
    makespan: float
    main_end: float
    sub_end: float
    peak_held_bytes: int
    placements: tuple[tuple[int, int, float, float], ...]  # (layer, region or −1, start, end)


def _main_timeline(ops: DeviceOps) -> tuple[list[tuple[str, int, float, float, float]], float]:
    """Main stream: F_1..F_L then D_L..D_2, back to back: (kind, layer, start, end, util)."""
    timeline, now = [], 0.0
    for layer, (t, u) in enumerate(zip(ops.forward, ops.forward_util)):
        timeline.append(("F", layer, now, now + t, u))
        now += t
    for layer in reversed(range(len(ops.forward))):
        t = ops.delta[layer]
        if t > 0:
            timeline.append(("D", layer, now, now + t, ops.delta_util[layer]))
            now += t
    return timeline, now


def _ready_time(layer: int, main: list, layers: int) -> float:
    """G_l needs δ^l: the end of D_{l+1}, or of the last forward for the last layer; where D_{l+1} takes no time
    (a layer of no δ work, left off the main stream) δ^l is there once the main stream has passed its place: the
    end of the last forward and of every D_k, k > l + 1, before it."""
    return max(end for kind, l, _, end, _ in main if (kind == "F" and l == layers - 1) or (kind == "D" and l > layer))


def corun_rate(u: float, main_util: float) -> float:
    """Progress per unit time of a sub-stream op (alone-time units) beside a main op of main_util."""
    if u <= 0:
        return 1.0
    return max(0.0, min(1.0, (1.0 - main_util) / u))


def corun_time(t: float, u: float, main_util: float) -> float:
    """Duration of a sub-stream op of alone-time t beside a constant main-stream utilization."""
    rate = corun_rate(u, main_util)
    return float("inf") if rate == 0 else t / rate


def _advance(main: list, start: float, work: float, u: float) -> float:
    """End time of a sub-stream op started at ``start``: integrate its co-run rate over the main
    stream's ops (after the main stream ends it runs alone at rate 1)."""
    now, left = start, work
    for _, _, seg_start, seg_end, seg_util in main:
        if seg_end <= now or left <= 0:
            continue
        rate = corun_rate(u, seg_util)
        span = seg_end - max(now, seg_start)
        if rate > 0 and rate * span >= left:
            return max(now, seg_start) + left / rate
        left -= rate * span
        now = seg_end
    return now + left


def schedule_single(ops: DeviceOps) -> MultiStreamResult:
    total = sum(ops.forward) + sum(ops.delta) + sum(ops.weight_grad)
    # Conventional single stream: G_l runs as soon as δ^l arrives, so one G's inputs are held at a time.
    return MultiStreamResult(total, total, total, max(ops.held_bytes, default=0), ())


def _regions(main: list, region_size: int) -> list[tuple[float, float, float]]:
    """Backward main-stream ops grouped ``region_size`` at a time: (start, end, time-weighted util)."""
    backward = [op for op in main if op[0] == "D"]
    regions = []
    for i in range(0, len(backward), region_size):
        chunk = backward[i:i + region_size]
        start, end = chunk[0][2], chunk[-1][3]
        busy = sum((e - s) * u for _, _, s, e, u in chunk)
        regions.append((start, end, busy / (end - start) if end > start else 1.0))
    return regions


def algorithm1(ops: DeviceOps, main: list, regions: list, ready: dict, prescheduled: int = 0) -> list[list[int]]:
    """The sub-stream's per-region schedule S[1..N] (Algorithm 1, with the paper's estimate
    T_sub(k, R[i]) from the region's mean utilization); ``prescheduled`` first regions take their
    runnable G's as soon as ready (the memory-driven variant)."""
    layers = len(ops.forward)
    now = [0.0] * len(regions)
    plan: list[list[int]] = [[] for _ in regions]
    pending = set(range(layers))

    def estimate(layer: int, i: int) -> float:
        return corun_time(ops.weight_grad[layer], ops.weight_grad_util[layer], regions[i][2])

    for i in range(min(prescheduled, len(regions))):
        for layer in sorted(pending, reverse=True):
            if ready[layer] <= regions[i][0] + now[i] < regions[i][1]:
                plan[i].append(layer)
                pending.discard(layer)
                now[i] += estimate(layer, i)
    open_regions = {i for i in range(len(regions)) if now[i] < regions[i][1] - regions[i][0]}
    while pending and open_regions:
        best = None
        for i in sorted(open_regions):
            start = regions[i][0] + now[i]
            for layer in sorted(pending):
                if ready[layer] > start:
                    continue
                took = estimate(layer, i)
                gain = ops.weight_grad[layer] / took if took > 0 else 1.0
                if best is None or gain > best[0]:
                    best = (gain, i, layer, took)
        if best is None:
            break
        _, i, layer, took = best
        plan[i].append(layer)
        pending.discard(layer)
        now[i] += took
        if now[i] >= regions[i][1] - regions[i][0]:
            open_regions.discard(i)
    return plan


def schedule_two_streams(ops: DeviceOps, schedule: str, *, region_size: int = 1, prescheduled: int = 0) -> MultiStreamResult:
    """Replay a sub-stream order on one sub-stream with the fluid co-run model."""
    if schedule not in ("naive", "joint"):
        raise InputError(f"unknown schedule {schedule!r}", field="schedule")
    layers = len(ops.forward)
    main, main_end = _main_timeline(ops)
    ready = {l: _ready_time(l, main, layers) for l in range(layers)}
    regions = _regions(main, region_size)
    if schedule == "naive" or not regions:
        order = [(layer, -1, 0.0) for layer in reversed(range(layers))]
    else:
        plan = algorithm1(ops, main, regions, ready, prescheduled)
        placed = {layer for group in plan for layer in group}
        order = [(layer, i, regions[i][0]) for i, group in enumerate(plan) for layer in group]
        order += [(layer, -1, main_end) for layer in reversed(range(layers)) if layer not in placed]
    cursor = 0.0
    placements = []
    for layer, region, earliest in order:
        start = max(cursor, ready[layer], earliest)
        end = _advance(main, start, ops.weight_grad[layer], ops.weight_grad_util[layer])
        placements.append((layer, region, start, end))
        cursor = end
    sub_end = max((end for *_, end in placements), default=0.0)
    return MultiStreamResult(max(main_end, sub_end), main_end, sub_end, _peak_held(ops, placements, ready),
                             tuple(placements))


def _peak_held(ops: DeviceOps, placements, ready) -> int:
    """Bytes held by G's waiting (from δ^l's arrival to the G's end), at their peak."""
    if not ops.held_bytes:
        return 0
    events = []
    for layer, _, _, end in placements:
        events.append((ready[layer], 1, ops.held_bytes[layer]))
        events.append((end, 0, -ops.held_bytes[layer]))
    level = peak = 0
    for _, _, delta in sorted(events):
        level += delta
        peak = max(peak, level)
    return peak


def device_ops(network, array, batch: int, mode: Mode = "exact") -> DeviceOps:
    """A network's ops on one array: durations and utilizations from the cost model, read through the profile
    (:func:`~archsim.partition.profile.op_rates`); a pending G_l holds a^{l-1} and δ^l."""
    from archsim.partition.profile import op_rates

    rates = op_rates(network, array, batch, mode)
    cycles, utilization = rates.cycles, rates.utilization
    return DeviceOps(cycles["F"], cycles["D"], cycles["G"], utilization["F"], utilization["D"], utilization["G"],
                     tuple(held + made for held, made in zip(rates.input_bytes, rates.output_bytes)))


def run(ops: DeviceOps, schedule: str, **options) -> MultiStreamResult:
    if schedule == "single":
        return schedule_single(ops)
    return schedule_two_streams(ops, schedule, **options)


__all__ = ["SCHEDULES", "DeviceOps", "MultiStreamResult", "algorithm1", "corun_rate", "corun_time", "device_ops", "run"]
