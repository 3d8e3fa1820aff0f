"""What the cluster simulators read: jobs with per-worker task costs, the cluster, the knobs, the result.

A :class:`JobSpec` is a trace row joined with its model profile (§3: "each task has two resources
in its specification: peak GPU memory required, and running time"): the non-SPB task every gang
baseline runs on every worker, and the k SPB tasks Jigsaw runs (§4.2: the baselines run standard
jobs, without SPB).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from archsim.choices.cluster import MIGRATION_COSTS
from archsim.cluster.catalog import ModelProfile, lookup
from archsim.cluster.trace import TraceJob
from archsim.errors import InputError
from archsim.units import GIB

if TYPE_CHECKING:
    import pandas as pd  # the per-job frame is built on first use (``archsim cluster`` prints without it)

V100_MEMORY_BYTES = 16 * GIB
TEN_GBE_S_PER_BYTE = 8 / 10e9


@dataclass(frozen=True)
class JobSpec:
    """One job. Times in seconds per iteration, sizes in bytes; spb_* has one entry per worker."""

    job_id: str
    submit_s: float
    workers: int
    iterations: int
    model: str
    full_task_s: float
    full_memory_bytes: float
    spb_task_s: tuple[float, ...]
    spb_memory_bytes: tuple[float, ...]
    model_bytes: float

    def __post_init__(self) -> None:
        for name in ("workers", "iterations"):  # a count of the wrong type is named so, not as a task mismatch
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise InputError(f"job {self.job_id!r}: expected {name} as an int, got {type(value).__name__} "
                                 f"{value!r}", field=name)
        if len(self.spb_task_s) != self.workers or len(self.spb_memory_bytes) != self.workers:
            raise InputError("one SPB task per worker", field=self.job_id)
        if self.iterations < 1 or self.full_task_s <= 0 or min(self.spb_task_s) <= 0:
            raise InputError("a job needs ≥ 1 iteration and positive task times", field=self.job_id)
        if not math.isfinite(self.submit_s) or self.submit_s < 0:  # a NaN arrival hung the event loop
            raise InputError(f"submit_s must be finite and non-negative, got {self.submit_s!r}", field=self.job_id)


@dataclass(frozen=True)
class JobCluster:
    """The job scheduler's view of a cluster: machines of devices (GPUs or arrays), ``machine_sizes[m]``
    devices on machine m, each with the same memory. Not the planners' device cluster
    (:class:`~archsim.spp.topology.Topology`, links and bandwidths): jobs are placed by count only."""

    machine_sizes: tuple[int, ...]
    device_memory_bytes: float = V100_MEMORY_BYTES

    def __post_init__(self) -> None:
        if isinstance(self.machine_sizes, (int, float, str)):
            raise InputError(f"expected each machine's device count, as (2, 2), got {self.machine_sizes!r}; "
                             f"JobCluster.uniform(devices, per_machine) spreads a count", field="machine_sizes")
        object.__setattr__(self, "machine_sizes", tuple(self.machine_sizes))  # a list as a tuple: frozen, hashable
        if not self.machine_sizes or min(self.machine_sizes) < 1:
            raise InputError("every machine needs at least one device", field="machine_sizes")
        if self.device_memory_bytes <= 0:
            raise InputError("device memory must be positive", field="device_memory_bytes")

    @classmethod
    def uniform(cls, devices: int, per_machine: int = 3, device_memory_bytes: float = V100_MEMORY_BYTES
                ) -> JobCluster:
        """``devices`` devices, ``per_machine`` to a machine (the last machine may hold fewer)."""
        if devices < 1 or per_machine < 1:
            raise InputError(f"need ≥ 1 device and ≥ 1 per machine, got {devices}, {per_machine}", field="gpus")
        full, rest = divmod(devices, per_machine)
        return cls(tuple([per_machine] * full + ([rest] if rest else [])), device_memory_bytes)

    @property
    def devices(self) -> int:
        return sum(self.machine_sizes)

    def machine_of(self) -> np.ndarray:
        """Machine index of every device."""
        return np.repeat(np.arange(len(self.machine_sizes)), self.machine_sizes)




@dataclass(frozen=True)
class SimConfig:
    """Scheduler knobs shared by the policies (defaults: §4.2 and documented assumptions).

    interval_s: scheduling interval T (§4.2: 1 min); jobs are admitted at the first boundary at or
        after submission (0: on submission). gamma_s_per_byte: migration cost γ (§3.1; 10 GbE).
    unit_s: Jigsaw plans blocks of ⌈unit_s / iteration⌉ iterations as one iteration ("coarse-grained
        scheduling of fine-grained iterations", §3.1); 0 plans every iteration (exact).
    max_pack: Gandiva's jobs per device when packing. tiresias_thresholds: 2D-LAS queue limits in
        device-seconds of attained service. util_bin_s: width of the utilization series' bins.
    migration_cost: what a worker's move pays γ × model size for, and what counts as a migration: ``gpu`` (default)
        any change of device, ``machine`` only a change of machine, a move to another device of the same machine
        free and uncounted (§3.2 and Fig. 4(c) say "machine", and Fig. 2 calls devices machines: both readings).
    """

    interval_s: float = 60.0
    gamma_s_per_byte: float = TEN_GBE_S_PER_BYTE
    unit_s: float = 10.0
    max_pack: int = 2
    tiresias_thresholds: tuple[float, ...] = (3600.0,)
    util_bin_s: float = 60.0
    migration_cost: str = "gpu"

    def __post_init__(self) -> None:
        if self.migration_cost not in MIGRATION_COSTS:
            raise InputError(f"must be one of {', '.join(MIGRATION_COSTS)}, got {self.migration_cost!r}",
                             field="migration_cost")
        for name in ("interval_s", "gamma_s_per_byte", "unit_s"):
            if getattr(self, name) < 0:
                raise InputError("must be non-negative", field=name)
        if self.max_pack < 1 or self.util_bin_s <= 0:
            raise InputError("max_pack must be ≥ 1 and util_bin_s positive", field="max_pack")

    def admit_time(self, submit_s: float) -> float:
        if self.interval_s == 0:
            return submit_s
        # + 0.0: ceil(-1e-9) is -0.0, so a job submitted at 0 was admitted, and started, at "-0.0" s
        return float(np.ceil(submit_s / self.interval_s - 1e-9) * self.interval_s) + 0.0


@dataclass(frozen=True, eq=False)
class SimResult:
    """One policy's run: per-job columns (job_id, submit_s, start_s, end_s, workers, iterations,
    migrations, jct_s; arrays or lists, or a DataFrame of them), device-busy segments (start, end,
    devices busy), makespan."""

    policy: str
    job_columns: Mapping[str, object]
    busy: np.ndarray
    makespan_s: float
    devices: int

    @cached_property
    def jobs(self) -> pd.DataFrame:
        """The per-job columns as a DataFrame (imports pandas)."""
        import pandas as pd

        return self.job_columns if isinstance(self.job_columns, pd.DataFrame) else pd.DataFrame(self.job_columns)

    def column(self, name: str) -> np.ndarray:
        """One per-job column as an array, without pandas."""
        return np.asarray(self.job_columns[name])


def check_trace_job(row: TraceJob) -> None:
    """A row as a trace file's would be checked, for rows built in Python: ≥ 1 GPU, finite non-negative seconds
    (a NaN submit time hung the event loop), ≥ 0 iterations, not both iterations and duration 0."""
    def bad(field: str, value: object, what: str) -> InputError:
        return InputError(f"{what}, got {value!r}", field=f"job {row.job_id} {field}")

    if isinstance(row.workers, bool) or not isinstance(row.workers, numbers.Integral) or row.workers < 1:
        raise bad("num_gpu", row.workers, "a job needs a whole number of GPUs, at least one")
    for field, value in (("submit_time", row.submit_s), ("duration", row.duration_s)):
        if not isinstance(value, numbers.Real) or not math.isfinite(value) or value < 0:
            raise bad(field, value, "expected a finite non-negative number of seconds")
    if isinstance(row.iterations, bool) or not isinstance(row.iterations, numbers.Integral) or row.iterations < 0:
        raise bad("iterations", row.iterations, "expected a non-negative whole number")
    if row.iterations == 0 and row.duration_s == 0:
        raise bad("duration", row.duration_s, "iterations and duration cannot both be 0")


def build_jobs(trace: Sequence[TraceJob], catalog: dict[str, ModelProfile], cluster: JobCluster,
               shares: Sequence[float] | None = None) -> tuple[JobSpec, ...]:
    """Join trace rows with profiles. A row with both duration and iterations sets the iteration time
    (duration / iterations; the profile then gives only the SPB shape); either alone is completed
    from the profile. Jobs wider than the cluster, or tasks larger than a device, are input errors.
    """
    jobs = []
    for row in trace:
        check_trace_job(row)
        profile = lookup(catalog, row.model)
        if row.workers > cluster.devices:
            raise InputError(f"job needs {row.workers} devices; the cluster has {cluster.devices}", line=row.line,
                             field=f"job {row.job_id} num_gpu")
        iterations = row.iterations or max(1, round(row.duration_s / profile.full_s))
        scale = (row.duration_s / row.iterations / profile.full_s) if row.iterations and row.duration_s else 1.0
        tasks = profile.worker_tasks(row.workers, shares if shares is not None and len(shares) == row.workers
                                     else None)
        if max(profile.full_memory_bytes, *(m for _, m in tasks)) > cluster.device_memory_bytes:
            raise InputError(f"model {row.model} needs {profile.full_memory_bytes / GIB:.3g} GiB; a device has "
                             f"{cluster.device_memory_bytes / GIB:.3g} GiB", line=row.line,
                             field=f"job {row.job_id} model_name")
        jobs.append(JobSpec(row.job_id, row.submit_s, row.workers, iterations, row.model, profile.full_s * scale,
                            profile.full_memory_bytes, tuple(t * scale for t, _ in tasks),
                            tuple(m for _, m in tasks), profile.model_bytes))
    return tuple(jobs)
