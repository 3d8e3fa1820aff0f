"""The face's validation job: ``archsim.validate_gpu``, ``archsim validate-gpu``'s flags as keywords of the same
names, run by the command's own :func:`archsim.validate_gpu_run.run_validate_gpu`; nothing here computes a number of
its own. Seconds throughout. Re-exported by :mod:`archsim.api`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

from archsim.api_keywords import (
    check_choice,
    check_path,
    check_switch,
    check_text,
    listed,
    positive_float,
    positive_int,
    speaks_keywords,
)
from archsim.console import library_say
from archsim.table_result import TableResult

if TYPE_CHECKING:
    from archsim.count_types import Count, Number


@speaks_keywords
def validate_gpu(*, csv: str | Path | Sequence[str | Path], gpu: str | Path | None = None, like: str | None = None,
                 sm_count: Count | None = None, tensor_cores_per_sm: Count | None = None,
                 mma: str | None = None, clock_mhz: Number | None = None,
                 memory_gbps: Number | None = None, dataflow: str | None = None, no_split_k: bool = False,
                 mode: str | None = None, dtype: str | None = None, show: str | None = None,
                 report: str | Path | None = None, markdown: str | Path | None = None) -> TableResult:
    """archsim's costs against kernels measured on a GPU, as ``archsim validate-gpu`` compares them, its flags as
    keywords of the same names: ``csv`` one CSV or several (a list, or one comma-separated string, as every list
    keyword), archsim's measured CSVs (costed on ``gpu``'s tensor cores as arrays; ``like``, ``sm_count``,
    ``tensor_cores_per_sm``, ``mma``, ``clock_mhz`` (MHz), ``memory_gbps`` (GB/s), ``dataflow``, ``no_split_k``,
    ``mode`` override the GPU table's) or NeuSight's kernel CSVs (each row timed by the kernel time model in
    ``dtype``, default fp32; ``gpu`` a device file's path: every row timed on it as train times it); ``show`` the
    table (default as ``--format json``'s: stats, NeuSight's kernels);
    ``report`` and ``markdown`` write the HTML report and the Markdown summary, both once the study is done, or
    neither where one fails (the command's one set of outputs). Returns a
    :class:`~archsim.table_result.TableResult` (``.table``, ``.meta``, ``to_dict()``: the command's JSON). The
    notes the command prints on stderr warn (UserWarning)."""
    from archsim.array.config import DATAFLOWS
    from archsim.choices.devices import DTYPES
    from archsim.clock import checked_clock
    from archsim.errors import InputError
    from archsim.modes import MODES
    from archsim.output_inputs import outputs_apart
    from archsim.output_targets import check_target, distinct_outputs
    from archsim.validate_gpu_run import SHOW, run_validate_gpu

    files = listed(csv, "csv")  # one path, a list, or "a.csv,b.csv"
    if not files or not all(files):
        raise InputError(f"expected one kernel CSV path or more, got {csv!r}", field="csv")
    for path in files:
        check_path(path, "csv", "a kernel CSV path")
    sm_count, tensor_cores_per_sm = (None if value is None else positive_int(value, name) for value, name in (
        (sm_count, "sm-count"), (tensor_cores_per_sm, "tensor-cores-per-sm")))
    if clock_mhz is not None:
        try:
            clock_mhz = checked_clock(clock_mhz, "MHz")
        except ValueError as exc:
            raise InputError(str(exc), field="clock-mhz") from None
    if memory_gbps is not None:
        memory_gbps = positive_float(memory_gbps, "memory-gbps")  # positive_float_flag's reading
    for value, choices, name in ((dataflow, DATAFLOWS, "dataflow"), (mode, MODES, "mode"), (dtype, DTYPES, "dtype"),
                                 (show, SHOW, "show")):
        if value is not None:
            check_choice(value, choices, name)
    if isinstance(gpu, Path):  # a device file (a GPU name is text)
        gpu = str(gpu)
    for value, name in ((gpu, "gpu"), (like, "like"), (mma, "mma")):  # names, read as text (a path is refused by name)
        if value is not None:
            check_text(value, name, f"a {'MMA shape' if name == 'mma' else 'GPU name'} (str)")
    check_switch(no_split_k, "no_split_k")
    given = [(name, target) for name, target in (("report", report), ("markdown", markdown)) if target is not None]
    for name, target in given:
        check_path(target, name, "an output path")
        check_target(str(target))
    outputs: list[tuple[str, str | None]] = [(name, str(target)) for name, target in given]
    distinct_outputs(outputs)  # validate-gpu's checks of its flags: not one file twice, nor over a measured CSV
    outputs_apart(outputs, [("csv", [str(path) for path in files])])
    settings = SimpleNamespace(csv=[str(path) for path in files], gpu=gpu, like=like, sm_count=sm_count,
                               tensor_cores_per_sm=tensor_cores_per_sm, mma=mma, clock_mhz=clock_mhz,
                               memory_gbps=memory_gbps, dataflow=dataflow, no_split_k=no_split_k, mode=mode,
                               dtype=dtype, show=show, report=None if report is None else str(report),
                               markdown=None if markdown is None else str(markdown))
    from archsim.output_files import output_set

    with output_set():  # the report and the Markdown as one set, as the command writes them: a failure replaces neither
        done = run_validate_gpu(settings, speak=library_say)
    return TableResult.of(done.table, done.meta)


__all__ = ["validate_gpu"]
