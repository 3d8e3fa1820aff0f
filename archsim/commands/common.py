"""Arguments several sub-commands share, and turning them into domain objects."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from archsim.choices.devices import ARRAY_DTYPES, FP8_ARRAY_DTYPES, SCALESIM_DTYPE
from archsim.choices.outputs import FORMATS
from archsim.choices.training import HF_MODEL_TYPES
from archsim.console import note, say_after_run, warn
from archsim.modes import MODES
from archsim.output_files import note_written, write_output
from archsim.output_targets import output_flag
from archsim.progress import progress
from archsim.validate import DEFAULT_MAX_OPS
from archsim.value_parsers import int_flag, positive_float_flag, positive_int_flag

if TYPE_CHECKING:  # the array model is imported by the commands that cost on it
    from archsim.array.config import ArrayConfig
    from archsim.training.cluster import GpuCluster


def positive_int(text: str) -> int:
    """argparse type: an integer in 1 … 2³¹ − 1 (see :mod:`archsim.validate`)."""
    return positive_int_flag(text)


def add_job_limit_argument(parser: argparse.ArgumentParser) -> None:
    """--max-ops: the simulated-op count above which a command refuses before starting."""
    parser.add_argument("--max-ops", type=positive_int, default=DEFAULT_MAX_OPS, metavar="N",
                        help=f"refuse jobs simulating more ops than this (default {DEFAULT_MAX_OPS:,}: the "
                             "largest accepted jobs measured peaked at 0.7–1.3 GB: docs/cli.md, docs/training.md)")


MODE_HELP = "paper: LayerPipe's simplifications (δ for the first layer, dense δ); exact: what training computes"


positive_float = positive_float_flag


def add_clock_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--clock-ghz", type=clock_ghz_flag, default=None, metavar="GHZ",
                        help="array clock: adds seconds beside cycles (default: the .cfg's [archsim] ClockGHz, "
                             "else cycles only)")


def clock_flag(unit: str):
    """argparse type: a clock in ``unit``, kept in it (:func:`archsim.clock.checked_clock`'s range and message)."""

    def convert(text: str) -> float:
        from archsim.clock import checked_clock

        try:
            return checked_clock(text, unit)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


clock_ghz_flag = clock_flag("GHz")


def with_clock(array: ArrayConfig, args: argparse.Namespace) -> ArrayConfig:
    """``array`` at the --clock-ghz the user gave (else its own clock, possibly none)."""
    from archsim.array import options

    return options.with_clock(array, args.clock_ghz)


def add_array_arguments(parser: argparse.ArgumentParser, device_toml: bool = False,
                        device_dtype: str | None = None, fp8: bool = False) -> None:
    """The array flags, the element width among them as ``--dtype`` (train's names) or ``--element-bytes``
    (any width): one set for every array command, so each reads a width the same way. ``device_toml``: the
    command's ``--config`` takes a device TOML too (``energy``), and its help says so. ``device_dtype``: the
    command also prices on a device its input names (``plan`` on a cluster's servers' GPU), in this dtype unless
    ``--dtype`` is given, and its help says so. ``fp8``: ``--dtype`` takes fp8 too (:func:`add_width_arguments`)."""
    parser.add_argument("--array", default=None, help="systolic array ROWSxCOLS (default: 32x32)")
    parser.add_argument("--dataflow", default=None, choices=("ws", "os", "is"),
                        help="dataflow (default: ws, or the config file's)")
    toml = (" or a device TOML (train's device file: its arrays, three operand SRAMs and [energy], read as train "
            "reads them)") if device_toml else ""
    parser.add_argument("--config", default=None, metavar="FILE.cfg|FILE.toml" if device_toml else "FILE.cfg",
                        help=f"SCALE-Sim .cfg file for the array{toml} (overrides --array unless given too)")
    add_width_arguments(parser, device_dtype, fp8)


def add_width_arguments(parser: argparse.ArgumentParser, device_dtype: str | None = None, fp8: bool = False) -> None:
    """``--dtype`` (train's names and SCALE-Sim's 1-byte word: :data:`~archsim.choices.devices.ARRAY_DTYPES`) and
    ``--element-bytes`` (any width): the one definition of the element width ``cost``, ``energy``, ``gemm`` and the
    other array commands take (read by :func:`archsim.array.options.element_width`). ``device_dtype``: the default
    on a device the command's input names, where that is not the array's (:func:`add_array_arguments`). ``fp8``:
    fp8 among the choices (:data:`~archsim.choices.devices.FP8_ARRAY_DTYPES`), for the commands that price it."""
    on_device = "" if device_dtype is None else (
        f" on an array; {device_dtype} on the device a cluster's servers name, which takes fp16, bf16 or fp32, "
        "stated in priced_on_model")
    low = ("; fp8 (1 byte: GEMMs at the device file's macs_per_pe fp8 rate, each MAC at the energy table's fp8 "
           "figure, as train --fp8 prices its linear GEMMs)") if fp8 else ""
    parser.add_argument("--dtype", default=None, choices=FP8_ARRAY_DTYPES if fp8 else ARRAY_DTYPES,
                        help=f"element type, by archsim train's --dtype names: {SCALESIM_DTYPE} (1-byte words as "
                             f"SCALE-Sim counts them; default{on_device}), fp16 or bf16 (2 bytes), fp32 (4){low}; bytes "
                             "per element of the tensors and of the DRAM and SRAM traffic (the cycle engine's SRAMs "
                             "hold KiB / that many words), and every per-word energy where one is priced (the energy "
                             "table's figures at that width); stated as dtype and element_bytes in the output")
    parser.add_argument("--element-bytes", type=positive_int, default=None,
                        help="bytes per tensor element, for a width --dtype does not name (default: --dtype's)")


def array_from_args(args: argparse.Namespace, note: bool = True, rated: bool = False) -> ArrayConfig:
    """--config, --array, --dataflow and --element-bytes or --dtype (:func:`archsim.array.options.array_from_flags`,
    :func:`~archsim.array.options.element_width`); ``note``: say on stderr when --config is a device file of
    several arrays, of which one is costed, and when the cycle engine runs a CALC-mode file. Under the cycle engine
    without the bandwidth flag, a device file's ``[memory] hbm_gbps`` is the DRAM rate
    (:func:`archsim.array.device_rate.with_device_bandwidth`), said in a note."""
    from archsim.array.options import array_from_flags, element_width

    width = element_width(args.dtype, args.element_bytes)
    array = array_from_flags(args.array, args.config, args.dataflow, 1 if width is None else width,
                             getattr(args, "dtype", None) if rated else None)
    warn_array_size(array.rows, array.cols, args.array, args.config)
    rate = None
    if args.config and getattr(args, "engine", None) == "cycle" and args.dram_bandwidth is None:
        from archsim.array.device_rate import with_device_bandwidth

        array, rate = with_device_bandwidth(array, args.config, width or 1, args.bandwidth_flag.lstrip("-"))  # the file's GB/s
    if note and args.config:
        note_device_arrays(args.config, dtype_given=width is not None, rates_read=rated)
        if getattr(args, "engine", None) == "cycle":
            from archsim.array.options import calc_mode_note

            calc = calc_mode_note(args.config)  # its stalls are not SCALE-Sim's for that file
            for text in (calc, rate):
                if text:
                    say_after_run("note", text)
    return array


def warn_array_size(rows: int, cols: int, array: str | None, config: str | None) -> None:
    """Warn on stderr, after the run, of an array of implausibly many PEs
    (:func:`archsim.array.options.array_size_warning`), naming --array or the .cfg's keys that gave it."""
    from archsim.array.options import array_size_warning, array_source

    slip = array_size_warning(rows, cols, array_source(array, config))
    if slip:
        say_after_run("warning", slip)


def width_meta(args: argparse.Namespace, array: ArrayConfig) -> dict[str, object]:
    """The element width a table was costed at, as every array command states it: ``dtype``
    (:func:`~archsim.array.options.dtype_meta`) beside ``element_bytes`` (bytes per element)."""
    from archsim.array.options import dtype_meta

    return {"dtype": dtype_meta(args.dtype, array), "element_bytes": array.element_bytes}


def note_unread_cluster_keys(cluster: GpuCluster, command: str, par=None, points: Sequence[dict] = (),
                             attention: str | None = None) -> None:
    """Say on stderr, once each, what the cluster file and its device files state that is implausible (a warning:
    a NIC speed, HBM or SRAM figure whose unit slipped) and what ``command`` (train or search) does not read
    (:func:`archsim.training.cluster_file.cluster_notes`; ``par``: one iteration's layout, ``points``: a
    ``train --sweep``'s rows, noted when they leave GPUs idle; ``attention``: search's)."""
    from archsim.training.cluster_file import cluster_notes

    print_cluster_lines(cluster.warnings, cluster_notes(cluster, command, par, points, attention))


def print_cluster_lines(warnings: Sequence[str], notes: Sequence[str]) -> None:
    """A cluster file's warnings, then its notes, on stderr, one line each, as every command that reads one
    (train, search, plan) prints them: ``archsim COMMAND: warning: …`` and ``archsim COMMAND: note: …``."""
    for line in warnings:
        warn(line)
    for line in notes:
        note(line)


def add_model_argument(parser: argparse.ArgumentParser) -> None:
    """The MODEL positional of the transformer commands (train, search): one wording of what a config may be."""
    parser.add_argument("model", metavar="MODEL", help="transformer config: Hugging Face config.json (model_type "
                        f"{', '.join(HF_MODEL_TYPES)}) or a [transformer] TOML, or a shipped "
                        "configs/transformers/ name (gpt3_1.3b)")


def note_default_seq(config, model: str, seq: int | None) -> None:
    """Say on stderr that a rotary config's sequence defaulted to its longest context
    (:func:`archsim.workload.model_files.default_seq_note`) and which of a config.json's fields were not read
    (:func:`~archsim.workload.model_files.unread_fields_note`), after the run: notes never precede an error line."""
    from archsim.workload.model_files import default_seq_note, unread_fields_note

    for text in (default_seq_note(config, model, seq), unread_fields_note(model)):
        if text:
            note(text)


def note_device_arrays(config: str, dtype_given: bool = True, rates_read: bool = False) -> None:
    """Say on stderr when ``--config`` is a device file of several arrays: an array command costs one; and,
    without ``dtype_given`` (no --dtype or --element-bytes), that it prices int8 where train prices fp16; and warn
    when its SRAM sizes look like bytes (:func:`archsim.array.sram_sizes.cfg_sram_warning`). Said after the run
    (:func:`~archsim.console.say_after_run`), as train's notes are: a later refusal is then its one line."""
    from archsim.array.device_notes import device_arrays_note, device_dtype_note
    from archsim.array.sram_sizes import cfg_sram_warning

    for text in (device_arrays_note(config), None if dtype_given else device_dtype_note(config)):
        if text:
            say_after_run("note", text)
    note_unread_keys(config, rates_read=rates_read)
    slip = cfg_sram_warning(config)  # its SRAMs in bytes, judged as --sram-kb is
    if slip:
        say_after_run("warning", slip)


def note_unread_keys(config: str, rates_read: bool = False) -> None:
    """Say on stderr, after the run, which keys ``--config`` (an array device file) states that its kind does not
    read (:func:`archsim.devices.unread_keys.config_unread_keys_note`): every command reading such a file says it
    once, here, as ``array/`` and ``policies/`` may not read devices."""
    from archsim.devices.unread_keys import config_unread_keys_note

    text = config_unread_keys_note(config, rates_read=rates_read)  # rates_read: the caller runs the file's MAC rate
    if text:
        say_after_run("note", text)


def add_engine_arguments(parser: argparse.ArgumentParser, bandwidth_flag: str = "--bandwidth") -> None:
    """--engine and the memory the ``cycle`` engine models (the analytic one ignores memory).

    ``bandwidth_flag`` renames the DRAM-bandwidth option where ``--bandwidth`` means something else."""
    from archsim.choices.devices import ENGINES

    parser.add_argument("--engine", default="analytic", choices=ENGINES,
                        help="analytic: compute cycles; cycle: memory-aware, with stall cycles and DRAM "
                             "traffic (SCALE-Sim USER-bandwidth model)")
    parser.add_argument(bandwidth_flag, dest="dram_bandwidth", type=positive_int, default=None, metavar="WORDS",
                        help="DRAM words/cycle per operand for --engine cycle (default: 10, or the config's: "
                             "a SCALE-Sim USER-mode .cfg reads ifmap/filter at its [layout] bank rates)")
    parser.set_defaults(bandwidth_flag=bandwidth_flag)  # what check_engine_flags calls it
    parser.add_argument("--sram-kb", default=None, metavar="KIB[,KIB,KIB]",
                        help="ifmap,filter,ofmap SRAM KiB for --engine cycle (one value: all three; default: 64)")


# What --batch means, one phrase per command (docs/cli.md's table states the same): pipeline's and schedule's is
# each micro-batch's size, M micro-batches of it M × BATCH samples an iteration; cost's, energy's and plan's the
# iteration's whole mini-batch, which energy and plan split into M micro-batches of BATCH / M (a sweep spec's
# batches alike, split by its microbatches axis).
PER_MICROBATCH = "samples per micro-batch: with --microbatches M an iteration runs M × BATCH samples"
WHOLE_SPLIT = "samples per iteration, the whole mini-batch: with --microbatches M, M micro-batches of BATCH / M"
BATCH_HELP = {"cost": "samples per iteration, the whole mini-batch, costed as one batch", "energy": WHOLE_SPLIT,
              "plan": WHOLE_SPLIT, "pipeline": PER_MICROBATCH, "schedule": PER_MICROBATCH}
LAYER_COST_BATCH_HELP = f"{PER_MICROBATCH} (default: 32)"
# what --global-batch is, in train's and search's refusal without it (one wording for both)
GLOBAL_BATCH_MEANING = "the samples one iteration trains, all data-parallel replicas together, e.g. --global-batch 8"


def global_batch_required(unless: str = "") -> str:
    """The one line ``train`` and ``search`` refuse with when ``--global-batch`` is missing (``unless``: where the flag
    may be left out, e.g. "--runs"): argparse's bare "required" named the flag, not what its number is."""
    return f"--global-batch is required{f' (unless {unless})' if unless else ''}: {GLOBAL_BATCH_MEANING}"


def add_layer_cost_arguments(parser: argparse.ArgumentParser, bandwidth_flag: str = "--bandwidth") -> None:
    """How pipeline and schedule cost a network's layers: the array, engine and clock flags, then
    --batch (32) and --mode (exact), in that order (their --help lists them so). Their ``--config`` takes a device
    TOML too, read as ``cost`` reads it (:func:`config_array`)."""
    add_array_arguments(parser, device_toml=True, fp8=True)
    add_engine_arguments(parser, bandwidth_flag=bandwidth_flag)
    add_clock_argument(parser)
    parser.add_argument("--batch", type=positive_int, default=32, help=LAYER_COST_BATCH_HELP)
    parser.add_argument("--mode", default="exact", choices=MODES, help=MODE_HELP)


def check_engine_flags(args: argparse.Namespace) -> None:
    """Refuse a DRAM bandwidth the analytic engine would drop (:func:`archsim.array.options.check_bandwidth_engine`)."""
    from archsim.array.options import check_bandwidth_engine

    check_bandwidth_engine(args.dram_bandwidth, args.engine, args.bandwidth_flag)


def with_memory_args(array: ArrayConfig, args: argparse.Namespace) -> ArrayConfig:
    """``array`` with the --bandwidth and --sram-kb the user gave (:func:`archsim.array.options.with_memory`);
    --sram-kb sizes that look like bytes are warned on stderr (:func:`archsim.array.options.sram_kb_warning`)."""
    from archsim.array.options import sram_kb_warning, with_memory

    check_engine_flags(args)
    costed = with_memory(array, args.dram_bandwidth, args.sram_kb)
    warning = sram_kb_warning(args.sram_kb)
    if warning:
        warn(warning)
    return costed


def warn_sram_unused(args: argparse.Namespace, figures: str) -> None:
    """Say on stderr that --sram-kb changes none of a command's ``figures`` (its analytic cycles) when the
    analytic engine runs (:func:`~archsim.array.options.sram_unused_warning`); the size is still checked by the
    caller (:func:`with_memory_args`)."""
    from archsim.array.options import sram_unused_warning

    unused = sram_unused_warning(args.sram_kb, args.engine, figures)
    if unused:
        warn(unused)


def costed_array(args: argparse.Namespace) -> ArrayConfig:
    """The array an array command costs on: :func:`array_from_args` with the memory flags
    (:func:`with_memory_args`) and the clock (:func:`with_clock`) the user gave, in that order."""
    return with_clock(with_memory_args(array_from_args(args, rated=True), args), args)


def config_array(args: argparse.Namespace) -> ArrayConfig:
    """The array ``cost``, ``energy``, ``gemm`` and ``pipeline``'s commands cost on: a ``.cfg``'s or the flags'
    (:func:`costed_array`), or a device TOML's one array kind read by the one reader they share
    (:func:`archsim.device_toml.device_toml_notes`: its notes said after the run), sized and clocked by the same
    flags."""
    from archsim.array.device_sections import is_device_toml
    from archsim.array.options import element_width
    from archsim.device_toml import device_toml_notes

    if not is_device_toml(args.config):
        return costed_array(args)
    width = element_width(args.dtype, args.element_bytes)
    array, notes = device_toml_notes(args.config, args.array, args.dataflow, width, engine=args.engine,
                                     bandwidth=args.dram_bandwidth, flag=args.bandwidth_flag.lstrip("-"),
                                     dtype=args.dtype)
    for kind, text in notes:
        say_after_run(kind, text)
    return with_clock(with_memory_args(array, args), args)


DOUBLE_DIGITS = 17  # significant digits that tell any two doubles apart (IEEE 754's max_digits10): more print noise


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", default="table", choices=FORMATS,
                        help="output format: an aligned table, CSV or JSON")
    parser.add_argument("--precision", type=int_flag(1, DOUBLE_DIGITS, "a count of significant digits"),
                        default=None, metavar="DIGITS",
                        help=f"significant digits of non-integral numbers in a table, 1 … {DOUBLE_DIGITS} (a double's "
                             "digits; default: 4, validate-gpu 3; "
                             "one they would write with an exponent is shown to the unit; csv and json keep full "
                             "precision)")
    parser.add_argument("--out", type=output_flag, default=None, metavar="FILE", help="write to FILE (atomically) instead of stdout")


def emit(text: str, args: argparse.Namespace) -> None:
    if args.out:
        path = write_output(Path(args.out), text)
        note_written(f"wrote {path}", out=True)
    else:
        sys.stdout.write(text)


@contextmanager
def phases(desc: str, names: Sequence[str], enabled: bool = True):
    """The phases of a long run (cost, build, simulate, validate) as a :func:`~archsim.progress.progress` bar — on a
    terminal only, and only where ``enabled`` (a job its size says is long) — naming the phase under way; yields
    ``step(name)``, called as each phase starts. It draws between phases only, so the simulation itself runs
    untouched."""
    with progress(len(names), desc, "phase", enabled=enabled) as bar:
        started = False

        def step(name: str) -> None:
            nonlocal started
            if started:
                bar.update()
            started = True
            bar.set_postfix_str(name)

        yield step
        if started:
            bar.update()
