"""The face's inputs, shared by its jobs: ``archsim.load_network`` and ``archsim.array_config``, a network and an
array built from names, paths or objects as the network and array flags build them (re-exported by
:mod:`archsim.api`; :func:`archsim.cost`, :func:`archsim.profile` and :func:`archsim.plan` load through them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archsim.api_keywords import check_choice, check_path, listed, positive_int, speaks_keywords, user_stacklevel
from archsim.api_keywords import clock_ghz as checked_clock_ghz
from archsim.array.config import ArrayConfig
from archsim.choices.networks import GEOMETRIES, SHAPE_CHECKS, UNSUPPORTED
from archsim.errors import InputError
from archsim.value_parsers import comma_items
from archsim.workload.layer import Network

if TYPE_CHECKING:
    from archsim.count_types import Count, Counts, Number


@speaks_keywords
def load_network(source: str | Path | Network, *, only: str | Sequence[str] | None = None,
                 geometry: str = "archsim", shapes: str = "auto", unsupported: str = "error",
                 input_shape: str | None = None,
                 dim: Mapping[str, int] | Sequence[tuple[str, int] | str] | str | None = None) -> Network:
    """A network from a shipped name (``"vgg16"``), a topology CSV, ONNX, transformer config or PyTorch
    file path, or a :class:`Network` as is; the other names are the network flags': ``only`` keeps those
    layer kinds (``"conv,fc"`` or ``["conv"]``); ``geometry="scalesim"`` sizes outputs as SCALE-Sim;
    ``shapes``, ``unsupported``, ``input_shape`` and ``dim`` (``{"seq": 128}``) as ``--shapes``, ``--unsupported``,
    ``--input-shape`` and ``--dim``."""
    from archsim.workload import load_network as _load
    from archsim.workload.shipped import dims_of

    if not isinstance(source, Network):
        check_path(source, "network", "a network name or path, or a Network")
    check_choice(shapes, SHAPE_CHECKS, "shapes")
    check_choice(unsupported, UNSUPPORTED, "unsupported")
    check_choice(geometry, GEOMETRIES, "geometry")
    network = source if isinstance(source, Network) else _load(
        source, geometry=geometry, unsupported=unsupported, dims=dims_of(dim or {}), shapes=shapes,
        input_shape=input_shape)
    # the list keywords' one reader: "conv,fc", ["conv"], a numpy array's cells (until 2026-12-03 refused); only=[]
    # refused as --only alone is
    parts = () if only is None else listed(only, "only", single=True)
    if not all(isinstance(kind, str) for kind in parts):  # only=5: a value --only could not have given
        raise InputError(f"expected layer kinds such as 'conv,fc' or ['conv'], got {only!r}", field="only")
    return network.only(*comma_items(list(parts), "only")) if parts else network


@speaks_keywords
def array_config(array: str | int | Path | ArrayConfig | None = None, *, config: str | Path | None = None,
                 dataflow: str | None = None, dtype: str | None = None, element_bytes: Count | None = None,
                 bandwidth: Count | None = None, sram_kb: Counts | None = None,
                 clock_ghz: Number | None = None) -> ArrayConfig:
    """An :class:`ArrayConfig` as the array flags build it (:func:`archsim.array.options.array_from_options`):
    ``array`` ``"ROWSxCOLS"`` or ``N`` (``32`` or ``"32"``: 32×32; default 32x32, or ``config``'s shape), a
    ``.cfg`` or device TOML path (as ``config``) or a config as is (:func:`cfg_as_config`, every job's reading);
    ``config`` (a SCALE-Sim ``.cfg``, or a device TOML: its one array kind as ``archsim.cost`` reads it, at
    ``dtype`` default fp16 as there), ``dataflow`` (ws, os, is), ``dtype`` (int8, fp16, bf16, fp32)
    or ``element_bytes`` (default 1, or an ``ArrayConfig``'s own; both given must agree), ``bandwidth`` (DRAM
    words/cycle), ``sram_kb`` (KiB, one or ifmap,filter,ofmap) and ``clock_ghz`` as ``--config``,
    ``--dataflow``, ``--dtype``, ``--element-bytes``, ``--bandwidth``, ``--sram-kb`` and ``--clock-ghz``;
    ``sram_kb`` sizes that look like bytes warn (UserWarning) as ``--sram-kb``'s do on stderr, and a device file's
    keys its kind does not read as the array commands note them (:func:`unread_keys_notes`). A device ``.cfg``
    stating ``[memory] hbm_gbps`` and no ``Bandwidth``, without ``bandwidth``, gives the array the DRAM words/cycle
    that file's cycle engine runs at (:func:`archsim.array.device_rate.with_device_bandwidth`, in words of the
    ``dtype``/``element_bytes`` given here), so the config costs under ``engine="cycle"`` as ``config=`` does; the
    analytic engine reads no bandwidth. A ``.cfg``'s ``[macs_per_pe]`` rate of ``dtype`` is its ``mac_rate`` (1
    without ``dtype``), as ``config=`` times the GEMMs (since 2026-12-06); from a file stating rates the array
    names the dtype they are of (``mac_dtype``: ``dtype``, int8 without one), and a job costing it at another dtype
    refuses it in one line (:func:`archsim.array.options.check_rate_dtype`; until 2026-12-06 it kept the rate)."""
    from dataclasses import replace

    from archsim.array.device_rate import with_device_bandwidth
    from archsim.array.device_sections import is_device_toml
    from archsim.array.options import dtype_meta, element_width
    from archsim.choices.devices import ARRAY_DTYPES
    from archsim.console import library_note
    from archsim.device_toml import device_toml_dtype

    file = cfg_as_config(array, config)[1]
    toml = is_device_toml(file)
    if toml:  # its one array kind, read as cost reads it (array_and_notes), at cost's dtype (until 2026-12-06 refused)
        if dtype is not None:  # fp8 refused as with a .cfg (build_array's choices): array_config takes no fp8
            check_choice(dtype, ARRAY_DTYPES, "dtype")
        dtype = device_toml_dtype(file, dtype, element_bytes)
        built, notes = array_and_notes(array, config, dataflow=dataflow, dtype=dtype, element_bytes=element_bytes,
                                       bandwidth=bandwidth, sram_kb=sram_kb, clock_ghz=clock_ghz, engine="analytic")
    else:
        built = build_array(array, config=config, dataflow=dataflow, dtype=dtype, element_bytes=element_bytes,
                            bandwidth=bandwidth, sram_kb=sram_kb, clock_ghz=clock_ghz, rated=True)
        notes = unread_keys_notes(file, rates_read=True)  # its [macs_per_pe] read, as cost's
    if file is not None and bandwidth is None:  # the file's GB/s in its own clock's words, as the commands read it
        width = element_width(dtype, None if element_bytes is None else int(str(element_bytes)))  # checked above
        built = with_device_bandwidth(built, file, width or 1)[0]
    if file is not None and _states_rates(file, toml):  # its rate is the dtype's it was read at: refused at another
        built = replace(built, mac_dtype=dtype_meta(dtype, built))
    for note in notes:
        library_note(note, stacklevel=user_stacklevel())
    return built


def _states_rates(file: str | Path, toml: bool) -> bool:
    """Whether a device file states MACs per PE per cycle (a TOML's ``[compute] macs_per_pe``, a ``.cfg``'s
    ``[macs_per_pe]``): its array's rate is then one dtype's (:attr:`ArrayConfig.mac_dtype`)."""
    if toml:
        from archsim.devices.device_file import load_device

        return bool(load_device(file).macs_per_pe)
    from archsim.array.options import cfg_rate_table

    return bool(cfg_rate_table(file))


def build_array(array: str | int | Path | ArrayConfig | None = None, *, config: str | Path | None = None,
                dataflow: str | None = None, dtype: str | None = None, element_bytes: Count | None = None,
                bandwidth: Count | None = None, sram_kb: Counts | None = None,
                clock_ghz: Number | None = None, rated: bool = False, fp8: bool = False) -> ArrayConfig:
    """:func:`array_config` less its unread-keys warning: what the jobs that say their ``config``'s notes themselves
    (``cost``, ``profile``, ``plan``, ``bppsa_rnn``, ``iteration_energy``) build their array with, so each note is
    said once. ``rated``: a ``.cfg``'s GEMMs at its ``[macs_per_pe]`` rate of ``dtype`` (``cost``, ``energy``,
    ``profile``: the jobs that read a device TOML's ``[compute] macs_per_pe``). ``fp8``: ``dtype`` may be fp8 (the
    jobs that price it: :data:`~archsim.choices.devices.FP8_ARRAY_DTYPES`); elsewhere it is refused as no choice."""
    from dataclasses import replace

    from archsim.array.options import (
        array_from_options,
        array_size_warning,
        array_source,
        check_rate_dtype,
        element_width,
        sram_kb_warning,
        with_clock,
        with_memory,
    )
    from archsim.choices.devices import ARRAY_DTYPES, FP8_ARRAY_DTYPES
    from archsim.console import library_note

    if dtype is not None:
        check_choice(dtype, FP8_ARRAY_DTYPES if fp8 else ARRAY_DTYPES, "dtype")
    if element_bytes is not None:  # as --element-bytes reads it, named so (ArrayConfig's own check says 'element_bytes')
        element_bytes = positive_int(element_bytes, "element-bytes")
    element_bytes = element_width(dtype, element_bytes)
    if bandwidth is not None:  # "4" as --bandwidth reads it (with_memory's own check, the same line)
        bandwidth = positive_int(bandwidth, "bandwidth")
    if clock_ghz is not None:  # "1.5" as --clock-ghz reads it, refused with its line
        clock_ghz = checked_clock_ghz(clock_ghz)
    slip = sram_kb_warning(sram_kb)  # checks the value first: a bad one is refused before anything is said
    if slip:
        library_note(slip, stacklevel=user_stacklevel())

    if isinstance(array, ArrayConfig):
        if config is not None:
            raise InputError("give an ArrayConfig or a .cfg file, not both", field="config")
        changes: dict[str, Any] = {}  # ArrayConfig's fields, checked by it
        check_rate_dtype(array, dtype, element_bytes)
        if dataflow is not None:
            changes["dataflow"] = dataflow
        if element_bytes is not None:
            changes["element_bytes"] = element_bytes
        return with_clock(with_memory(replace(array, **changes), bandwidth, sram_kb), clock_ghz)
    array, config = cfg_as_config(array, config)
    built = array_from_options(None if array is None else str(array), config, dataflow,
                               1 if element_bytes is None else element_bytes, bandwidth, sram_kb, clock_ghz,
                               dtype if rated else None)
    huge = array_size_warning(built.rows, built.cols, array_source(None if array is None else str(array), config))
    if huge:  # the line the array commands warn on stderr
        library_note(huge, stacklevel=user_stacklevel())
    return built


def cfg_as_config(array, config):
    """(array, config): the one reading of the array keywords every job takes (``cost``, ``profile``,
    ``iteration_energy``, ``gemm``, ``schedule``, ``plan``, ``bppsa_rnn``, ``array_config``), as ``--array`` and
    ``--config`` take them. A ``.cfg`` path, or a device TOML's (``chip.toml``, any case of the suffix), given as
    ``array`` (str or Path) moves to ``config``, where ``--config`` takes it (the array it describes, and the
    ``[energy]`` table it names); a whole number ``array`` is its text, ``32`` the ``--array 32`` (32×32) it stands
    for, parsed with the flag's own text (:func:`~archsim.array.config.parse_array_shape`, where the shape is read);
    an :class:`ArrayConfig` stays as is. A ``config`` that is no path is refused in one line naming it, before any
    file is opened."""
    check_config(config)
    if config is None and is_config_path(array):
        return None, array
    if isinstance(array, int) and not isinstance(array, bool):  # array=32 is --array 32 (until 2026-12-06: cost's
        return str(array), config                               # with a device TOML and gemm refused it)
    return array, config


def is_config_path(array: object) -> bool:
    """Whether an ``array`` keyword names a file ``config`` reads, not a ``"ROWSxCOLS"`` shape: a SCALE-Sim ``.cfg``
    or a device TOML (``chip.toml``, the suffix in any case: :func:`~archsim.array.device_sections.is_device_toml`),
    so ``array="chip.toml"`` is read as ``config="chip.toml"`` as ``array="chip.cfg"`` is (until 2026-12-05 the TOML
    was refused as no ``ROWSxCOLS``)."""
    from archsim.array.device_sections import is_device_toml

    if array is None or isinstance(array, ArrayConfig):
        return False
    return str(array).endswith(".cfg") or is_device_toml(str(array))


def check_config(config: object) -> None:
    """A ``config`` keyword that is no path (``config=123``) refused in one line naming it, before any file is
    opened (not open()'s TypeError); None is no config."""
    if config is not None:
        check_path(config, "config", "a .cfg or device TOML path (str or Path)")


def config_notes(config: str | Path | None, dtype: str | None, element_bytes: object,
                 rate: str | None = None, rates_read: bool = True) -> list[str]:
    """What an array command says on stderr of its ``--config`` .cfg: a device file of several arrays costs one; one
    priced at int8 (no ``dtype`` or ``element_bytes``) where train prices fp16; SRAM sizes that look like bytes; then
    ``rate``, the cycle engine's note of the DRAM rate the file's ``[memory] hbm_gbps`` set
    (:func:`archsim.array.device_rate.with_device_bandwidth`), where one was."""
    from archsim.array.device_notes import device_arrays_note, device_dtype_note
    from archsim.array.sram_sizes import cfg_sram_warning

    if config is None:
        return []
    notes = [device_arrays_note(config), None if dtype or element_bytes else device_dtype_note(config),
             *unread_keys_notes(config, rates_read=rates_read), cfg_sram_warning(config), rate]
    return [note for note in notes if note]


def array_and_notes(array: str | int | Path | ArrayConfig | None, config: str | Path | None, *, dataflow: str | None,
                    dtype: str | None, element_bytes: Count | None, bandwidth: Count | None,
                    sram_kb: Counts | None, clock_ghz: Number | None,
                    engine: str) -> tuple[ArrayConfig, list[str]]:
    """(array, notes): the array ``archsim cost`` and ``energy`` cost on and the notes and warnings they print on
    stderr of their ``--config`` (the caller warns them). A device TOML's one array kind is read by the reader the
    commands read it with (:func:`archsim.device_toml.device_toml_notes`), sized and clocked by the array keywords;
    anything else as :func:`build_array` builds it, noted by :func:`config_notes`."""
    from dataclasses import replace

    from archsim.array.device_rate import with_device_bandwidth
    from archsim.array.device_sections import is_device_toml
    from archsim.array.options import element_width, sram_kb_warning, with_memory
    from archsim.choices.devices import FP8_ARRAY_DTYPES
    from archsim.device_toml import device_toml_notes

    array, config = cfg_as_config(array, config)  # a .cfg's [energy] table prices as --config's does; 32 is "32"
    if not is_device_toml(config):
        chosen = build_array(array, config=config, dataflow=dataflow, dtype=dtype, element_bytes=element_bytes,
                             bandwidth=bandwidth, sram_kb=sram_kb, clock_ghz=clock_ghz, rated=True, fp8=True)
        rate = None
        if config is not None and engine == "cycle" and bandwidth is None:  # the file's GB/s, its own clock's words
            width = element_width(dtype, None if element_bytes is None else int(str(element_bytes)))  # checked above
            chosen, rate = with_device_bandwidth(chosen, config, width or 1)
        return chosen, config_notes(config, dtype, element_bytes, rate)
    assert config is not None  # a device TOML, by is_device_toml
    if dtype is not None:
        check_choice(dtype, FP8_ARRAY_DTYPES, "dtype")
    width = element_width(dtype, None if element_bytes is None else positive_int(element_bytes, "element-bytes"))
    if array is not None and not isinstance(array, str):
        raise InputError(f"expected ROWSxCOLS such as '32x32' with a device TOML, got {type(array).__name__}",
                         field="array")
    shaped, said = device_toml_notes(config, array, dataflow, width, engine=engine, bandwidth=bandwidth,
                                     flag="bandwidth", dtype=dtype)
    chosen = with_memory(shaped, None if bandwidth is None else positive_int(bandwidth, "bandwidth"), sram_kb)
    slip = sram_kb_warning(sram_kb)
    if clock_ghz is not None:
        chosen = replace(chosen, clock_hz=checked_clock_ghz(clock_ghz) * 1e9)
    return chosen, [*([slip] if slip else []), *(text for _, text in said)]


def job_array(array: str | int | Path | ArrayConfig | None, config: str | Path | None, *, dataflow: str | None,
              dtype: str | None, element_bytes: Count | None, bandwidth: Count | None, sram_kb: Counts | None,
              clock_ghz: Number | None, engine: str) -> tuple[ArrayConfig, str | Path | None, str | None, list[str]]:
    """(array, config, dtype, notes): the array ``cost`` and ``iteration_energy`` cost on, read as their commands read
    the flags and in their order: a .cfg or device TOML given as ``array`` is ``config`` (checked first, one line); a
    device TOML's dtype is the default (train's); the array and its notes (:func:`array_and_notes`, said by the caller);
    then ``bandwidth`` without the cycle engine refused, after the value's own check as argparse's comes first."""
    from archsim.array.options import check_bandwidth_engine
    from archsim.device_toml import device_toml_dtype

    array, config = cfg_as_config(array, config)
    dtype = device_toml_dtype(config, dtype, element_bytes)
    chosen, notes = array_and_notes(array, config, dataflow=dataflow, dtype=dtype, element_bytes=element_bytes,
                                    bandwidth=bandwidth, sram_kb=sram_kb, clock_ghz=clock_ghz, engine=engine)
    check_bandwidth_engine(bandwidth, engine)
    return chosen, config, dtype, notes


def warn_file_batch(network: Network, batch: int) -> None:
    """Warn, as the commands note on stderr, when ``network``'s file fixes a batch other than ``batch``, the one
    costed (:func:`archsim.workload.shipped.file_batch_note`)."""
    from archsim.console import library_note
    from archsim.workload.shipped import file_batch_note

    line = file_batch_note(network, batch)
    if line:
        library_note(line, stacklevel=4)


def unread_keys_notes(config: str | Path | None, *, rates_read: bool = False) -> list[str]:
    """The note an array command says on stderr of a ``config`` device file stating keys its kind does not read
    (:func:`archsim.devices.unread_keys.config_unread_keys_note`), for the jobs whose other notes are their own
    (``gemm``, ``profile``, ``plan``, ``bppsa_rnn``); empty without one. ``rates_read``: the job runs a ``.cfg``'s
    GEMMs at its ``[macs_per_pe]`` rate (``gemm``, ``profile``), so that key is not named unread."""
    from archsim.devices.unread_keys import config_unread_keys_note

    text = None if config is None else config_unread_keys_note(config, rates_read=rates_read)
    return [text] if text else []


__all__ = [
    "array_and_notes",
    "array_config",
    "build_array",
    "cfg_as_config",
    "check_config",
    "config_notes",
    "is_config_path",
    "job_array",
    "load_network",
    "unread_keys_notes",
    "warn_file_batch",
]
