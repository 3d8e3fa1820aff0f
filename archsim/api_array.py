"""The face's array jobs beside ``cost``: ``archsim.gemm`` and ``archsim.sparse``, keyword-only functions that take
``archsim gemm``'s and ``archsim sparse``'s flags as keywords of the same names and call the run those commands call
(:func:`archsim.array.gemm_run.run_gemm`, :func:`archsim.sparse_run.run_sparse`); nothing here computes a number of
its own. Cycles are array clock cycles, SRAM and DRAM counts words. Re-exported by :mod:`archsim.api`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from archsim.api_inputs import (
    cfg_as_config,
    job_array,
    load_network,
    unread_keys_notes,
    warn_file_batch,
)
from archsim.api_keywords import check_choice, check_path, check_switch, positive_int, speaks_keywords
from archsim.api_keywords import clock_ghz as checked_clock_ghz
from archsim.array.config import ArrayConfig
from archsim.console import library_note, library_say
from archsim.table_result import TableResult

if TYPE_CHECKING:
    from archsim.array.analytic import OfmapCount
    from archsim.count_types import Count, Counts, Number
    from archsim.workload.layer import Network


@speaks_keywords
def gemm(*, m: Count | None = None, k: Count | None = None, n: Count | None = None,
         array: str | int | Path | None = None, dataflow: str | None = None, config: str | Path | None = None,
         shapes: str | Path | None = None, ofmap_count: str = "scalesim", engine: str = "analytic",
         bandwidth: Count | None = None, sram_kb: Counts | None = None,
         layout: str | Path | None = None, bank_rule: str = "set", min_bandwidth: bool = False,
         clock_ghz: Number | None = None, dtype: str | None = None,
         element_bytes: Count | None = None) -> TableResult:
    """SCALE-Sim-exact cost of one GEMM out[M×N] = A[M×K]·B[K×N] (``m``, ``k``, ``n``) on ``array``
    (``"ROWSxCOLS"`` or ``N``, ``32`` or ``"32"`` for 32×32, default 32x32 or ``config``'s: a SCALE-Sim ``.cfg``,
    or a device TOML read as :func:`iteration_energy` reads it; a ``.cfg`` or TOML path given as ``array`` is
    ``config``, as :func:`archsim.cost`'s; an :class:`ArrayConfig` is refused, naming the keywords it stands for)
    in ``dataflow`` (ws, os, is), or of every row of a ``shapes`` CSV (columns m,k,n,rows,cols,dataflow), as
    ``archsim gemm`` costs them, its flags as keywords of the same names
    (``ofmap_count``: ``scalesim`` or ``true``; ``engine="cycle"``: stall cycles and DRAM words under ``bandwidth``
    (DRAM words/cycle) and ``sram_kb`` (KiB); ``layout`` and ``bank_rule``: a SCALE-Sim layout file's bank
    conflicts; ``min_bandwidth=True``: the fewest DRAM words/cycle that run stall-free; ``clock_ghz`` adds
    ``X_seconds`` beside every ``X_cycles``; ``dtype`` or ``element_bytes``, as ``--dtype`` and ``--element-bytes``
    (:func:`archsim.cost`'s: one definition), add the SRAM and DRAM traffic in bytes). Returns a :class:`~archsim.table_result.TableResult`: ``.table``,
    the rows the command prints, and ``to_dict()``, its ``--format json`` document. The notes and warnings the
    command prints on stderr (SRAM sizes that look like bytes, an implausibly large array, a device file's keys
    gemm does not read) warn (UserWarning)."""
    from archsim.array.device_sections import is_device_toml
    from archsim.array.gemm_run import BANK_RULES, OFMAP_COUNTS, run_gemm
    from archsim.array.options import element_width
    from archsim.choices.devices import ENGINES, FP8_ARRAY_DTYPES
    from archsim.device_toml import device_toml_dtype, device_toml_notes
    from archsim.gemm_chip import with_chip_seconds

    m, k, n = (None if value is None else positive_int(value, name) for value, name in ((m, "m"), (k, "k"), (n, "n")))
    if isinstance(array, ArrayConfig):  # archsim gemm takes a shape and a file: what an ArrayConfig is built from
        from archsim.errors import InputError

        raise InputError("gemm costs the array archsim gemm's flags describe, not an ArrayConfig: give its shape as "
                         f"array='{array.rows}x{array.cols}' with dataflow=, sram_kb=, bandwidth=, clock_ghz= and "
                         "dtype= or element_bytes=, or the .cfg or device TOML it was read from as config=",
                         field="array")
    array, config = cfg_as_config(array, config)  # cost's reading: 32 is "32", a .cfg or device TOML is config
    array = None if array is None else str(array)
    if dataflow is not None:
        check_choice(dataflow, ("ws", "os", "is"), "dataflow")
    for value, name, what in ((config, "config", "a SCALE-Sim .cfg or device TOML path"), (shapes, "shapes", "a shapes CSV path"),
                              (layout, "layout", "a layout CSV path")):
        if value is not None:
            check_path(value, name, what)
    check_choice(ofmap_count, OFMAP_COUNTS, "ofmap-count")
    check_choice(engine, ENGINES, "engine")
    bandwidth = None if bandwidth is None else positive_int(bandwidth, "bandwidth")
    check_choice(bank_rule, BANK_RULES, "bank-rule")
    check_switch(min_bandwidth, "min_bandwidth")
    clock = None if clock_ghz is None else checked_clock_ghz(clock_ghz)
    if dtype is not None:
        check_choice(dtype, FP8_ARRAY_DTYPES, "dtype")
    element_bytes = None if element_bytes is None else positive_int(element_bytes, "element-bytes")
    dtype = device_toml_dtype(config, dtype, element_bytes)  # a device TOML's default: train's, as the command's
    width = element_width(dtype, element_bytes)
    toml = is_device_toml(config) and layout is None  # a layout reads a .cfg's [layout]: refused there
    read, said = device_toml_notes(config, None, None, width, engine=engine, bandwidth=bandwidth, flag="bandwidth",
                                   dtype=dtype) if (
        toml and config is not None) else (None, [])  # the one reader's notes, said after the run as cost's
    done = run_gemm(m=m, k=k, n=n, array=array, dataflow=dataflow, config=config, shapes=shapes,
                    ofmap_count=cast("OfmapCount", ofmap_count), engine=engine, dram_bandwidth=bandwidth,
                    sram_kb=sram_kb, layout=layout, bank_rule=bank_rule, min_bandwidth=min_bandwidth,
                    clock_ghz=clock, dtype=dtype, element_bytes=element_bytes, toml_array=read, speak=library_say,
                    speak_after=library_say)
    done = with_chip_seconds(done, config, engine=engine, dtype=dtype, shapes=bool(shapes))
    for note in (*(text for _, text in said), *([] if toml else unread_keys_notes(config, rates_read=True))):  # array/ never reads a file's device keys
        library_note(note, stacklevel=3)
    from archsim.rows import Rows

    table = done.table.frame() if isinstance(done.table, Rows) else done.table
    return TableResult.of(table, done.meta)


@speaks_keywords
def sparse(network: str | Path | None = None, *, config: str | Path, topology: str | Path | None = None,
           delta: str = "transposed", gradient: str = "dense", batch: Count = 1, energy: bool = False,
           processors: Count | None = None, method: str | None = None) -> TableResult:
    """A SCALE-Sim sparsity run as ``archsim sparse`` runs it: ``network`` (or ``topology``, its older name), a
    SCALE-Sim topology CSV with a ``Sparsity`` N:M column, on ``config``, a ``.cfg`` with ``[sparsity]
    SparsitySupport : true``; per layer SCALE-Sim's compute cycles, SRAM counts and sparse report, and the δ/G cycles
    of training the pruned layer (``delta``: transposed or dense; ``gradient``: dense or masked), for ``batch``
    samples per GEMM (1 reproduces SCALE-Sim); ``energy=True`` adds the pJ columns; ``processors`` partitions the
    pruned network instead (``method``: default layerpipe), the meta comparing it with the dense one. Returns a
    :class:`~archsim.table_result.TableResult` (``.table``: the rows the command prints; ``to_dict()``: its
    ``--format json`` document)."""
    from archsim.choices.devices import DELTA_OPTIONS, GRADIENT_OPTIONS
    from archsim.errors import InputError
    from archsim.planners import PARTITIONERS
    from archsim.sparse_run import run_sparse
    from archsim.validate import MAX_PROCESSORS

    if network is None and topology is None:
        raise InputError("give network (a SCALE-Sim topology CSV), or topology, its older name", field="network",
                         missing=True)
    if network is not None and topology is not None:
        raise InputError("give network or topology, not both: they name one file", field="topology")
    csv = network if network is not None else topology
    assert csv is not None  # one of the two, checked above
    check_path(csv, "network" if network is not None else "topology", "a SCALE-Sim topology CSV path")
    check_path(config, "config", "a SCALE-Sim .cfg path")
    check_choice(delta, DELTA_OPTIONS, "delta")
    check_choice(gradient, GRADIENT_OPTIONS, "gradient")
    batch = positive_int(batch, "batch")
    check_switch(energy, "energy")
    processors = None if processors is None else positive_int(processors, "processors", high=MAX_PROCESSORS, what="a processor count")
    if method is not None:
        check_choice(method, PARTITIONERS, "method")
    done = run_sparse(csv, config=config, delta=delta, gradient=gradient, batch=batch, energy=energy,
                      processors=processors, method=method)
    return TableResult.of(done.table, done.meta)


@speaks_keywords
def iteration_energy(network: str | Path | Network, *, array: str | int | Path | ArrayConfig | None = None,
                     batch: Count = 32, microbatches: Count = 1, mode: str = "exact",
                     engine: str = "analytic", dataflow: str | None = None, dtype: str | None = None,
                     element_bytes: Count | None = None, config: str | Path | None = None,
                     bandwidth: Count | None = None, sram_kb: Counts | None = None,
                     clock_ghz: Number | None = None, energy_table: str | Path | None = None,
                     only: str | Sequence[str] | None = None, shapes: str = "auto", unsupported: str = "error",
                     input_shape: str | None = None,
                     dim: Mapping[str, int] | Sequence[tuple[str, int] | str] | str | None = None) -> TableResult:
    """``archsim energy`` as a function (``archsim.energy`` is the energy package, hence the name): the energy of one
    training iteration of ``batch`` samples in ``microbatches`` micro-batches by part (MACs, array registers, SRAM
    reads and writes per operand, DRAM, vector unit, leakage) and op kind, and the array's area, with the command's
    flags as keywords of the same names: the array keywords as :func:`array_config` (``config`` a SCALE-Sim
    ``.cfg`` or a device TOML, whose one array kind is priced as train's energy model reads it), ``engine`` and the
    cycle engine's ``bandwidth`` and ``sram_kb``, ``clock_ghz`` (adds the iteration's seconds and average watts to
    the meta), ``energy_table`` (a name or TOML; default the config's, else horowitz45) and the network keywords as
    :func:`load_network`. Returns a :class:`~archsim.table_result.TableResult`: the rows the command prints (pJ,
    TOTAL last), ``.meta`` (area in mm² among it) and ``to_dict()``, its ``--format json`` document. The notes and
    warnings the command prints on stderr warn (UserWarning)."""
    from archsim.choices.devices import ENGINES
    from archsim.energy_run import energy_document
    from archsim.lowering import check_mode

    check_choice(engine, ENGINES, "engine")
    batch = positive_int(batch, "batch")
    microbatches = positive_int(microbatches, "microbatches")
    if energy_table is not None:
        check_path(energy_table, "energy-table", "an energy table's name or TOML path")
    chosen, config, dtype, notes = job_array(array, config, dataflow=dataflow, dtype=dtype, element_bytes=element_bytes,
                                             bandwidth=bandwidth, sram_kb=sram_kb, clock_ghz=clock_ghz, engine=engine)
    layers = load_network(network, only=only, shapes=shapes, unsupported=unsupported, input_shape=input_shape,
                          dim=dim)
    warn_file_batch(layers, batch)
    rows, meta, said = energy_document(layers, chosen, batch=batch, microbatches=microbatches,
                                       mode=check_mode(mode), engine=engine, dtype=dtype,
                                       energy_table=energy_table, config=config)
    for note in (*notes, *said):
        if note:
            library_note(note, stacklevel=3)
    from archsim.rows import Rows

    return TableResult(Rows.of(rows).frame(), {"meta": meta, "rows": rows})  # the rows as the command prints them


__all__ = ["gemm", "iteration_energy", "sparse"]
