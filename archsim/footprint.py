"""Memory per processor of a pipelined training run: weights (with stashed weight versions),
stashed activations as the schedule really holds them, gradients, optimizer state, and the peak.

Everything is read from a simulated :class:`~archsim.sim.timeline.Timeline` whose op slots carry
``kind`` and ``microbatch`` tags (and ``layer`` or ``stage``), so the figures follow the schedule
that ran — GPipe's fill-drain, 1F1B, LayerPipe's δ-first, zero-bubble's split backward — rather
than a formula per schedule:

* **Stashed activations.** A micro-batch's stash on a processor lives from the start of its first
  forward op there to the end of the last op of the ``release`` kinds there (``G`` for the
  partition pipelines: G reads the layer's input activation; ``B`` or ``W`` for zero-bubble's
  split/fused backward, as that paper counts M_B). The peak over time of the stashed bytes is
  ``peak_activation_bytes``; the peak count of micro-batches in flight is ``peak_in_flight``.
* **Weight versions.** A weight-stashing schedule (PipeDream's 1F1B, LayerPipe) keeps one weight
  version per micro-batch in flight (the backward must use the weights its forward used), so
  versions = ``peak_in_flight`` — PipeDream's S − s + 1, which the training DFG derives as its
  stash depth (tests check both agree). GPipe flushes and keeps one version. A layer without δ
  (``exact`` lowering's first layer) keeps one copy whatever the stage holds: its backward is G,
  which reads δ and the stashed input, never W (:func:`unstashed_layers`); a stage of such layers
  alone states 1 version.
* **Lent weights.** A borrowed δ part (LayerPipe's Algorithm 1: δ′, δ″ or a whole δ run for a layer on
  another processor) reads the slice of its layer's weights that the part needs (:func:`lent_slice_bytes`),
  in the version its micro-batch's forward used. Wherever such parts run — on a processor of their own or
  beside its own layers — the processor holds the lent versions its parts still need after their lenders
  let go (:func:`lent_versions`), not its own in-flight count. A part computes no weight gradient (G stays
  with the lender), so lent slices take no gradient buffer and no optimizer state.
* **Gradients**: one accumulated weight-gradient buffer of the size of the processor's own layers' weights.
  **Optimizer state**: ``optimizer_states`` × those weights (SGD 0, momentum 1, Adam 2: its two moments).
* **Not counted**, on any processor: the working buffers of the op running now (a δ's input gradient
  arriving and the output gradient it sends on, a borrowed part's too): they live while the op runs or
  the tensor is in transit, not across the schedule, so a processor of borrowed parts alone stashes nothing.

Peak = own stashed weights × versions + unstashed weights + lent slices × lent versions + gradients + optimizer
state + peak stashed activations — an upper
bound on the sum of peaks at different instants that the weights terms do not change over time.
Bytes throughout. The partitioners are untouched: :func:`check_capacity` is the constraint a
partitioner or CLI applies to a plan's footprint.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import pandas as pd

from archsim.choices.partitions import FLUSHED_SCHEDULES, OPTIMIZER_STATES
from archsim.errors import InputError
from archsim.partition.profile import LayerProfile, unstashed_layers
from archsim.partition.result import Partition, PlacedOp
from archsim.sim.problem import Problem
from archsim.sim.timeline import Timeline


@dataclass(frozen=True)
class StashProfile:
    """What a schedule holds on one processor: peak stashed bytes and peak micro-batches in flight."""

    peak_activation_bytes: int
    peak_in_flight: int


@dataclass(frozen=True)
class ProcessorMemory:
    """Bytes one processor holds during training (see the module docstring)."""

    processor: str
    weight_bytes: int
    weight_versions: int
    gradient_bytes: int
    optimizer_bytes: int
    peak_activation_bytes: int
    peak_in_flight: int
    unstashed_weight_bytes: int = 0  # of weight_bytes: weights no backward op reads, held once
    lent_weight_bytes: int = 0  # of weight_bytes: slices of other processors' layers its borrowed δ parts read
    lent_weight_versions: int = 0  # copies of those slices held at once (:func:`lent_versions`)

    @property
    def peak_bytes(self) -> int:
        stashed = self.weight_bytes - self.unstashed_weight_bytes - self.lent_weight_bytes
        return (stashed * self.weight_versions + self.unstashed_weight_bytes
                + self.lent_weight_bytes * self.lent_weight_versions + self.gradient_bytes
                + self.optimizer_bytes + self.peak_activation_bytes)



def _problem(timeline: Timeline) -> Problem:
    if timeline.problem is None:
        raise ValueError("the footprint needs the Timeline's problem (its ops' tags)")
    return timeline.problem


def _tags(timeline: Timeline) -> dict[str, dict[str, object]]:
    return {op.id: dict(op.tags) for op in _problem(timeline).ops}


def stash_profile(timeline: Timeline, stash_bytes: Callable[[dict[str, object]], int],
                  release: Iterable[str]) -> dict[str, StashProfile]:
    """Per processor: the peak of stashed bytes and of micro-batches in flight over the timeline.

    ``stash_bytes(tags)`` gives the bytes a forward op (kind ``F``) stashes; the stash of (processor,
    stash key, micro-batch) is held from its forward's start to the end of the last ``release`` op
    with the same key and micro-batch on that processor. The key is the op's ``layer`` tag, else its
    ``stage``. At one instant frees apply before allocations (memory handed back is reusable).
    """
    tags = _tags(timeline)
    release = set(release)
    start: dict[tuple[str, object, object], float] = {}
    end: dict[tuple[str, object, object], float] = {}
    size: dict[tuple[str, object, object], int] = {}
    for slot in timeline.slots:
        tag = tags[slot.op]
        key = (slot.processor, tag.get("layer", tag.get("stage")), tag.get("microbatch"))
        if tag.get("kind") == "F":
            start[key] = min(start.get(key, slot.start), slot.start)
            size[key] = stash_bytes(tag)
        elif tag.get("kind") in release:
            end[key] = max(end.get(key, slot.end), slot.end)
    events: dict[str, list[tuple[float, int, int, object]]] = defaultdict(list)
    for key, begin in start.items():
        if key not in end:
            raise ValueError(f"forward {key} has no {'/'.join(sorted(release))} op on its processor to release it")
        processor, _, microbatch = key
        events[processor].append((begin, 1, size[key], microbatch))
        events[processor].append((end[key], 0, -size[key], microbatch))
    profiles = {p.name: StashProfile(0, 0) for p in _problem(timeline).processors}
    for processor, items in events.items():
        level = peak = in_flight = peak_in_flight = 0
        live: dict[object, int] = defaultdict(int)  # micro-batch → its stashes held now
        for _, opening, delta, microbatch in sorted(items, key=lambda e: (e[0], e[1])):
            level += delta
            before = live[microbatch]
            live[microbatch] += 1 if opening else -1
            in_flight += (live[microbatch] > 0) - (before > 0)
            peak, peak_in_flight = max(peak, level), max(peak_in_flight, in_flight)
        profiles[processor] = StashProfile(peak, peak_in_flight)
    return profiles


def partition_footprint(plan: Partition, profile: LayerProfile, timeline: Timeline, schedule: str,
                        optimizer: str = "sgd") -> list[ProcessorMemory]:
    """Memory of every stage's processor for a partition run under ``schedule`` (the timeline of
    :func:`archsim.policies.pipeline.simulate_partition`). A stage's weights are its layers' plus
    the weight slices LayerPipe ships with borrowed δ ops (:func:`lent_slice_bytes`); activations are
    each layer's input tensor (``stash_bytes``: what its G reads, a first layer's too), held until its G.
    Weights of layers without δ are held once (:func:`unstashed_layers`); lent slices as many times as
    :func:`lent_versions` says, with no gradient or optimizer state (the lender keeps those)."""
    if optimizer not in OPTIMIZER_STATES:
        raise InputError(f"unknown optimizer {optimizer!r}; choose one of {', '.join(OPTIMIZER_STATES)}",
                         field="optimizer")
    index = {name: k for k, name in enumerate(profile.names)}
    stash = stash_profile(timeline, lambda tag: int(profile.stash_bytes[index[str(tag["layer"])]]), ("G",))
    once = unstashed_layers(profile)
    lent = lent_versions(plan, timeline)
    flushed = schedule in FLUSHED_SCHEDULES
    rows = []
    for stage in plan.stages:
        processor = f"p{stage.index + 1}"
        own = sum(int(profile.weight_bytes[index[name]]) for name in stage.layers)
        lent_bytes = sum(lent_slice_bytes(op, profile) for op in stage.ops if op.borrowed)
        single = sum(int(profile.weight_bytes[index[name]]) for name in stage.layers if name in once)
        held = stash.get(processor, StashProfile(0, 0))
        lent_copies = (1 if flushed else max(1, lent.get(processor, 1))) if lent_bytes else 0
        if not stage.layers:
            versions = max(1, lent_copies)  # a borrower's only weights are lent ones
        else:
            versions = 1 if flushed or set(stage.layers) <= once else max(1, held.peak_in_flight)
        rows.append(ProcessorMemory(processor, own + lent_bytes, versions, own, OPTIMIZER_STATES[optimizer] * own,
                                    held.peak_activation_bytes, held.peak_in_flight, single, lent_bytes,
                                    lent_copies))
    return rows


def lent_slice_bytes(op: PlacedOp, profile: LayerProfile) -> int:
    """Bytes of its layer's weights a borrowed δ part reads: what it receives (``extra_bytes``) less, for a
    piece split along δ's reduction, the partial sums of all of δ it sends back (a result in transit, not
    a weight; :func:`archsim.lowering.delta_split.split_delta`); none for a non-GEMM layer's δ, whose
    received bytes (``exact`` mode) are saved activations of its micro-batch, not weights."""
    if op.split_axis is None and profile.lowered and not profile.lowered[profile.names.index(op.layer)].layer.is_gemm:
        return 0
    if op.split_axis != "reduction":
        return op.extra_bytes
    from archsim.partition.coster import borrowed_delta_bytes  # the lowering loads only for a reduction split

    return op.extra_bytes - borrowed_delta_bytes(profile)[profile.names.index(op.layer)][0]


def lent_versions(plan: Partition, timeline: Timeline) -> dict[str, int]:
    """Per processor that runs borrowed δ parts: the most micro-batches whose lent weights it holds at once.

    A part of micro-batch m reads the version of its layer's weights that m's forward used. The lender
    stashes that version until the layer's G of m ends on it (its F allocates it, its G frees it); the part
    runs on the borrower, which must hold the version from the earlier of its part's start and that release
    until its part ends. 1 where each part runs before its lender lets go; more where the borrower lags (at most
    its lender's 1F1B window: the lender's next forward waits for its parts under every weight-stashing schedule).
    The same rule whether the borrower holds layers of its own or none: a part is borrowed where it runs
    away from its layer's processor."""
    home = {name: f"p{stage.index + 1}" for stage in plan.stages for name in stage.layers}
    if not any(op.borrowed for stage in plan.stages for op in stage.ops):
        return {}
    tags = _tags(timeline)
    released: dict[tuple[object, object], float] = {}  # (layer, micro-batch) → end of its G on its home processor
    parts = []  # (borrower, layer, micro-batch, start, end) of every borrowed part run
    for slot in timeline.slots:
        tag = tags[slot.op]
        layer, microbatch = tag.get("layer"), tag.get("microbatch")
        if tag.get("kind") == "G" and home.get(str(layer)) == slot.processor:
            released[(layer, microbatch)] = max(released.get((layer, microbatch), slot.end), slot.end)
        elif tag.get("kind") in ("D", "D1", "D2") and home.get(str(layer), slot.processor) != slot.processor:
            parts.append((slot.processor, layer, microbatch, slot.start, slot.end))
    held: dict[tuple[str, object], tuple[float, float]] = {}  # (borrower, micro-batch) → when it holds lent weights
    for processor, layer, microbatch, start, end in parts:
        begin = min(start, released.get((layer, microbatch), start))
        first, last = held.get((processor, microbatch), (begin, end))
        held[(processor, microbatch)] = (min(first, begin), max(last, end))
    events: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for (processor, _), (begin, end) in held.items():
        events[processor] += [(begin, 1), (end, -1)]
    peaks = {}
    for processor, items in events.items():
        level = peak = 0
        for _, step in sorted(items, key=lambda e: (e[0], e[1])):  # frees before holds at one instant
            level += step
            peak = max(peak, level)
        peaks[processor] = peak
    return peaks


def footprint_frame(memory: Iterable[ProcessorMemory]) -> pd.DataFrame:
    """One row per processor, bytes, with the peak."""
    return pd.DataFrame([{"processor": m.processor, "weight_bytes": m.weight_bytes, "weight_versions": m.weight_versions,
                          "gradient_bytes": m.gradient_bytes, "optimizer_bytes": m.optimizer_bytes,
                          "lent_weight_bytes": m.lent_weight_bytes, "lent_weight_versions": m.lent_weight_versions,
                          "peak_activation_bytes": m.peak_activation_bytes, "peak_in_flight": m.peak_in_flight,
                          "peak_memory_bytes": m.peak_bytes} for m in memory])


def check_capacity(memory: Iterable[ProcessorMemory], capacity_bytes: float | Mapping[str, float]) -> None:
    """Raise :class:`InputError` naming the first processor whose peak exceeds its capacity."""
    for item in memory:
        limit = capacity_bytes[item.processor] if isinstance(capacity_bytes, Mapping) else capacity_bytes
        if item.peak_bytes > limit:
            raise InputError(f"processor {item.processor} needs {item.peak_bytes:,} bytes at its peak, over its "
                             f"capacity of {int(limit):,}", field="capacity-gb")
