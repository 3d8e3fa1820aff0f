"""Per-stage costs of a pipeline without a network: what the zero-bubble paper profiles (App. D).

Times are in one unit of the caller's choosing (the paper's are milliseconds); memory in bytes
(or any unit: only ratios to M_B matter to the schedules).

A stage-profile CSV has a header and one row per stage, in stage order::

    forward,backward_input,backward_weight,comm,activation_bytes,weight_bytes
    18.522,18.086,9.337,0.601,201216,73728

``forward``, ``backward_input`` and ``backward_weight`` are required; ``comm`` (latency of a
transfer this stage sends, default 0), ``activation_bytes`` (M_B) and
``weight_bytes`` (M_W, the part of M_B kept from the input backward to the weight backward,
default 0) and ``send_bytes`` (bytes of the activation this stage sends to the next, and of the
gradient that comes back, timed at the link bandwidth given separately) are optional. Unknown
columns are errors, and so is a profile whose every time is 0 (as ``--stage-times 0,0,0`` is).

Without ``activation_bytes`` no activation memory is counted (peak memory 0, in the published and
the list schedules alike); only the memory-limited searches (zb-1p, zb-2p and their exact forms)
still need a unit for their limit of k·p·M_B and take M_B = 1 per stage for it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from archsim.errors import InputError
from archsim.validate import MIN_MAGNITUDE
from archsim.value_parsers import parse_float

# Largest stage time, comm or memory figure: sums over 2³¹ micro-batches stay finite and exact
# enough in float64; anything beyond it is a typo (a trace in ns read as s, an exponent slip).
MAX_STAGE_VALUE = 1e15

COLUMNS = ("forward", "backward_input", "backward_weight", "comm", "activation_bytes", "weight_bytes", "send_bytes")
REQUIRED = COLUMNS[:3]


@dataclass(frozen=True)
class StageProfile:
    """Per (virtual) stage: forward, backward-input, backward-weight time; ``comm``: the latency of
    a transfer each stage sends (one value for all, or one per stage); activation M_B and the part
    M_W kept from I to W (empty: none counted); ``send_bytes`` per hop and link ``bandwidth`` in
    bytes per time unit (None: a transfer takes its latency only, its send bytes unread; ``math.inf``:
    its latency only, carrying its send bytes — GPU training, whose ``comm`` is the hop's priced time,
    so that traces show what a hop moves). The one per-stage record: the published schedules, the
    ``list-…`` variants and GPU training read it."""

    forward: tuple[float, ...]
    backward_input: tuple[float, ...]
    backward_weight: tuple[float, ...]
    comm: float | tuple[float, ...] = 0.0
    activation: tuple[float, ...] = ()
    weight_memory: tuple[float, ...] = ()
    send_bytes: tuple[float, ...] = ()
    bandwidth: float | None = None
    boundary_comm: tuple[float, ...] = ()  # per boundary j (stage j ↔ j + 1), both ways; overrides comm
    @classmethod
    def uniform(cls, stages: int, f: float, b: float, w: float, comm: float = 0.0, activation: float = 1.0,
                weight_memory: float = 0.0) -> StageProfile:
        if stages <= 0:
            raise InputError(f"stages must be positive, got {stages}", field="stages")
        return cls((f,) * stages, (b,) * stages, (w,) * stages, comm, (activation,) * stages,
                   (weight_memory,) * stages)

    def __post_init__(self) -> None:
        n = len(self.forward)
        if n == 0 or len(self.backward_input) != n or len(self.backward_weight) != n:
            raise InputError("stage profile needs forward, backward_input and backward_weight for every stage",
                             field="stage-profile")
        comm = self.comm if isinstance(self.comm, tuple) else (self.comm,)
        for name in ("activation", "weight_memory", "send_bytes"):
            if getattr(self, name) and len(getattr(self, name)) != n:
                raise InputError(f"stage profile: {name} has {len(getattr(self, name))} values for {n} stages",
                                 field=name)
        if self.boundary_comm and len(self.boundary_comm) != n - 1:
            raise InputError(f"stage profile: boundary_comm has {len(self.boundary_comm)} values for {n - 1} "
                             "boundaries", field="boundary_comm")
        if isinstance(self.comm, tuple) and len(self.comm) != n:
            raise InputError(f"stage profile: comm has {len(self.comm)} values for {n} stages", field="comm")
        values = (*self.forward, *self.backward_input, *self.backward_weight, *comm, *self.boundary_comm,
                  *self.activation,
                  *self.weight_memory, *self.send_bytes)
        if any(not (isinstance(v, (int, float)) and math.isfinite(v) and (v == 0 or MIN_MAGNITUDE <= v <= MAX_STAGE_VALUE))
               for v in values):
            raise InputError(f"stage times, comm and memory must be 0 or in {MIN_MAGNITUDE:g}…{MAX_STAGE_VALUE:g}",
                             field="stage-profile")
        if self.bandwidth is not None and not self.bandwidth > 0:
            raise InputError(f"bandwidth must be > 0, got {self.bandwidth}", field="bandwidth")

    @property
    def stages(self) -> int:
        return len(self.forward)

    def hop(self, stage: int) -> float:
        """Latency of a transfer sent by ``stage``."""
        return self.comm[stage] if isinstance(self.comm, tuple) else self.comm

    def latency(self, src: int, dst: int) -> float:
        """Latency of a transfer from stage ``src`` to ``dst``: its boundary's when
        ``boundary_comm`` gives them (adjacent stages), else :meth:`hop` of ``src``."""
        if self.boundary_comm and abs(src - dst) == 1:
            return self.boundary_comm[min(src, dst)]
        return self.hop(src)

    def path(self, p: int) -> float:
        """Latency of the hops from stage 0 to stage p − 1 (boundaries 0 … p − 2): what a micro-batch's
        way down, or a gradient's way up, crosses."""
        return float(sum(self.boundary_comm[:p - 1])) if self.boundary_comm else (p - 1) * self.hop(0)

    def on_ranks(self, rank_of_stage: dict[int, int]) -> StageProfile:
        """Per virtual stage of a schedule: its rank's stage split evenly over the rank's stages."""
        if sorted(set(rank_of_stage.values())) != list(range(self.stages)):
            raise InputError(f"the schedule runs on ranks {sorted(set(rank_of_stage.values()))}, the profile has "
                             f"{self.stages} stages", field="stages")
        share = {r: sum(1 for x in rank_of_stage.values() if x == r) for r in range(self.stages)}
        pick = [rank_of_stage[j] for j in range(len(rank_of_stage))]

        def part(values: tuple[float, ...]) -> tuple[float, ...]:
            return tuple(values[d] / share[d] for d in pick) if values else ()

        comm = tuple(self.comm[d] for d in pick) if isinstance(self.comm, tuple) else self.comm
        return StageProfile(part(self.forward), part(self.backward_input), part(self.backward_weight), comm,
                            part(self.activation), part(self.weight_memory),
                            tuple(self.send_bytes[d] for d in pick) if self.send_bytes else (), self.bandwidth)

    def chunked(self, chunks: int) -> StageProfile:
        """Split each device's stage into ``chunks`` equal chunks: virtual stage j = chunk·p + device."""
        if chunks <= 0:
            raise InputError(f"chunks must be positive, got {chunks}", field="chunks")
        return self.on_ranks({j: j % self.stages for j in range(self.stages * chunks)})


def read_stage_profile(path: str | Path, bandwidth: float | None = None) -> StageProfile:
    """A :class:`StageProfile` from a stage-profile CSV (see the module docstring)."""
    from archsim.csv_lines import csv_rows
    from archsim.validate import read_text

    rows = csv_rows(read_text(path, "stage profile"), str(path))  # (line, cells), no comment line
    if not rows:
        raise InputError("empty stage profile", file=str(path))
    first, header = rows[0][0], [h.strip() for h in rows[0][1]]
    for name in header:
        if name not in COLUMNS:
            raise InputError(f"unknown column {name!r}; expected {', '.join(COLUMNS)}", file=str(path), line=first,
                             field=name)
    for name in REQUIRED:
        if name not in header:
            raise InputError(f"missing column {name!r}", file=str(path), line=first, field=name, missing=True)
    columns: dict[str, list[float]] = {name: [] for name in header}
    for line, row in rows[1:]:
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise InputError(f"{len(row)} cells for {len(header)} columns", file=str(path), line=line)
        for name, cell in zip(header, row):
            try:
                value = parse_float(cell, high=MAX_STAGE_VALUE, what="a non-negative number")
            except ValueError as exc:
                raise InputError(str(exc), file=str(path), line=line, field=name) from None
            columns[name].append(value)
    if not columns["forward"]:
        raise InputError("no stages", file=str(path))
    if not any(any(columns[name]) for name in REQUIRED):  # as --stage-times 0,0,0: a makespan of 0, a bubble of 0/0
        raise InputError("every op would take no time: give some stage a positive forward, backward_input or "
                         "backward_weight",
                         file=str(path), field="forward")
    return StageProfile(tuple(columns["forward"]), tuple(columns["backward_input"]),
                        tuple(columns["backward_weight"]), tuple(columns["comm"]) if "comm" in columns else 0.0,
                        tuple(columns.get("activation_bytes", ())), tuple(columns.get("weight_bytes", ())),
                        tuple(columns.get("send_bytes", ())), bandwidth)


__all__ = ["COLUMNS", "StageProfile", "read_stage_profile"]
