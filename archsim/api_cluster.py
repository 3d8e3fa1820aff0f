"""The face's job-scheduling study: ``archsim.cluster_jobs``, ``archsim cluster``'s flags as keywords of the same
names (``archsim.cluster`` is the package, hence the name), run by the command's own
:func:`archsim.cluster_run.run_cluster`; nothing here computes a number of its own. Seconds throughout.
Re-exported by :mod:`archsim.api`.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

from archsim.api_keywords import check_choice, check_path, check_switch, positive_int, speaks_keywords
from archsim.console import library_say
from archsim.table_result import TableResult

if TYPE_CHECKING:
    from archsim.count_types import Count, Number


def _bounded(value: object, field: str, *, positive: bool = False) -> float:
    """A keyword whose flag takes a finite number in [0, 10¹²] ((0, 10¹²] where ``positive``), as the flag reads it."""
    from archsim.errors import InputError
    from archsim.value_parsers import parse_float

    try:
        return parse_float(value, low=0.0, high=1e12, low_open=positive,
                           what="a positive number" if positive else "a non-negative number")
    except ValueError as exc:
        raise InputError(str(exc), field=field) from None


@speaks_keywords
def cluster_jobs(*, trace: str | Path = "synthetic", cluster: str | Path | None = None, gpus: Count | None = None,
                 gpus_per_machine: Count | None = None, device_memory_gb: Number | None = None,
                 policy: str = "jigsaw", compare: bool = False,
                 seed: Count | None = None, seeds: Count | None = None, jobs: Count | None = None,
                 interval: Number = 60.0, gamma_ns_per_byte: Number | None = None,
                 unit_seconds: Number | None = None, max_pack: Count | None = None, migration_cost: str = "gpu",
                 report: str | Path | None = None, job_times: str | Path | None = None) -> TableResult:
    """SPB + Jigsaw against the gang schedulers on a job ``trace`` (a Tiresias CSV, or ``"synthetic"``: §4.2's
    workload of ``jobs`` jobs drawn from ``seed``) on ``gpus`` devices (default 45), ``gpus_per_machine`` to a machine
    (default 3), of ``device_memory_gb`` GiB (2³⁰ bytes; default 16), migrating at ``gamma_ns_per_byte`` (default 0.8),
    or on the machines of a ``cluster`` TOML, which states those four (``--cluster``; given beside it they are
    refused), as ``archsim cluster`` runs it, its flags as keywords of the same names: ``policy``
    jigsaw, gandiva, tiresias, … or ``all`` (``compare=True``), which compares the three over ``seeds`` seeds
    (one policy with ``seeds`` given: its statistics over them);
    ``interval`` (s), ``gamma_ns_per_byte``, ``unit_seconds`` (Jigsaw's) and ``max_pack`` (Gandiva's) as their flags; ``migration_cost``
    ``"gpu"`` (default: every change of device pays γ × model size and counts as a migration) or ``"machine"`` (only a
    change of machine), as ``--migration-cost``; ``report`` writes
    the HTML page, ``job_times`` each job's times as CSV (``--job-times``), both written once the run is done, or
    neither where one fails (the command's one set of outputs). Returns a :class:`~archsim.table_result.TableResult`: one row per run (``all``: the statistics
    over seeds per policy, every column of ``--format json``'s), ``.meta`` and ``to_dict()``, the command's JSON.
    The notes the command prints on stderr warn (UserWarning)."""
    from archsim.choices.cluster import POLICIES
    from archsim.cluster_run import run_cluster
    from archsim.output_inputs import outputs_apart
    from archsim.output_targets import check_target, distinct_outputs
    from archsim.rows import Rows
    from archsim.validate import MAX_PROCESSORS, SEED_MAX

    check_path(trace, "trace", "a Tiresias trace CSV path or 'synthetic'")
    if cluster is not None:
        check_path(cluster, "cluster", "a cluster TOML path")
    gpus = None if gpus is None else positive_int(gpus, "gpus", high=MAX_PROCESSORS, what="a processor count")
    gpus_per_machine = None if gpus_per_machine is None else positive_int(gpus_per_machine, "gpus-per-machine")
    device_memory_gb = None if device_memory_gb is None else _bounded(device_memory_gb, "device-memory-gb",
                                                                      positive=True)
    check_choice(policy, (*POLICIES, "all"), "policy")
    check_switch(compare, "compare")
    seed = None if seed is None else positive_int(seed, "seed", low=0, high=SEED_MAX, what="a seed")
    seeds = None if seeds is None else positive_int(seeds, "seeds", high=1000, what="a seed count")
    jobs = None if jobs is None else positive_int(jobs, "jobs", high=100_000, what="a job count")
    interval = _bounded(interval, "interval")
    gamma_ns_per_byte = None if gamma_ns_per_byte is None else _bounded(gamma_ns_per_byte, "gamma-ns-per-byte")
    unit_seconds = None if unit_seconds is None else _bounded(unit_seconds, "unit-seconds")  # None: the policy's default
    max_pack = None if max_pack is None else positive_int(max_pack, "max-pack")
    from archsim.choices.cluster import MIGRATION_COSTS

    check_choice(migration_cost, MIGRATION_COSTS, "migration-cost")
    outputs: list[tuple[str, str | None]] = [(name, str(value)) for name, value in (("report", report), ("job_times", job_times))
               if value is not None]
    for name, value in outputs:
        check_path(value, name, "an output path")
        check_target(str(value))
    inputs: list[tuple[str, object]] = [("trace", str(trace))]
    if cluster is not None:
        inputs.append(("cluster", str(cluster)))
    outputs_apart(outputs, inputs)  # cluster's check: not over the trace or the cluster file
    distinct_outputs(outputs)  # nor one file for both
    settings = SimpleNamespace(trace=str(trace), cluster=None if cluster is None else str(cluster), gpus=gpus,
                               gpus_per_machine=gpus_per_machine,
                               device_memory_gb=device_memory_gb, policy=policy, compare=compare, seed=seed,
                               seeds=seeds, jobs=jobs, interval=interval, gamma_ns_per_byte=gamma_ns_per_byte,
                               unit_seconds=unit_seconds, max_pack=max_pack, migration_cost=migration_cost,
                               report=None if report is None else str(report),
                               job_times=None if job_times is None else str(job_times))
    from archsim.output_files import output_set

    with output_set():  # the report and the job times as one set, as the command writes them: a failure replaces neither
        done = run_cluster(settings, speak=library_say)
    return TableResult.of(done.rows.frame() if isinstance(done.rows, Rows) else done.rows, done.meta)


__all__ = ["cluster_jobs"]
