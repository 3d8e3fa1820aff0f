"""``archsim plan``'s flags: their name sets and defaults, what the command and :func:`archsim.plan` share, and
their checks before any work (a setting the chosen method or a PipeDream profile does not read refused, the
micro-batch worked out). ``args``: an object whose attributes are the command's flags (``argparse.Namespace``
from the command, a ``SimpleNamespace`` from the library), already of the flags' types."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from archsim.choices.devices import TRAIN_DTYPE
from archsim.console import setting, switch_on
from archsim.errors import InputError
from archsim.spp import SEARCH_STEP_LIMIT  # not archsim.spp.plan: pipedream needs none of SPP's search

LINK_MODELS = ("paper", "exact")  # spp.topology.LINK_MODELS (a test checks)
# how a stage's replicas share a micro-batch: paper (SPP's 1/r each, any r) or exact (whole samples: ⌈m/r⌉/m, r ≤ m)
REPLICATION_MODELS = ("paper", "exact")
# which plan SPP keeps of each stage count: paper (PRM's best by 𝒲, §IV-B) or exact (the one PE runs fastest of the
# tables' candidates, archsim.spp.prm_exact)
OBJECTIVES = ("paper", "exact")
BASELINE_METHODS = ("dp", "gpipe", "pipedream-prm", "hetpipe")  # spp.baselines.BASELINES (a test checks)
BASELINE_CONFIGS = ("archsim", "paper")  # spp.baselines.CONFIGS (a test checks); the first, --baselines' default
NO_BASELINES = "none"  # --baselines none: SPP alone, no baseline run (nor its search counted)
PAPER_BASELINES = ("dp", "gpipe", "pipedream", "hetpipe")  # spp.baselines.PAPER_BASELINES (a test checks)
DEFAULT_MICRO_BATCH = 4
DEFAULT_DTYPE = TRAIN_DTYPE  # on a cluster's device, as archsim train's --dtype
# a method whose makespan alone plan prints, beside SPP's: SPP's baselines, and LayerPipe's Algorithm 1 laid on the
# cluster (archsim.spp.layerpipe_cluster; not one of --baselines' set, which are the SPP paper's)
MAKESPAN_METHODS = (*BASELINE_METHODS, "layerpipe")
# the methods whose iteration is one PE schedule of one pipeline, so a timeline to draw: dp is compute plus an
# all-reduce, hetpipe a pipeline per server plus one across them, neither one schedule
TIMELINE_METHODS = ("gpipe", "pipedream-prm", "layerpipe")
METHODS = ("spp", "pipedream", *MAKESPAN_METHODS)  # planners of archsim.planners on a cluster; pipedream as its own
ARRAY_FLAGS = ("array", "config", "dataflow", "clock-ghz")  # the flags that price on an array, not a device


def array_flags(args: Any) -> list[str]:
    """The array settings the user gave (each None unless given), as the caller spells them (``--array``)."""
    return [setting(flag) for flag in ARRAY_FLAGS if getattr(args, flag.replace("-", "_")) is not None]


def micro_batch(args: Any) -> int:
    """Samples per micro-batch: ``micro_batch``, or the mini-batch ``batch`` split into ``microbatches``."""
    if args.batch is None:
        return DEFAULT_MICRO_BATCH if args.micro_batch is None else args.micro_batch
    if args.micro_batch is not None:
        raise InputError(f"give {setting('batch')} (the mini-batch) or {setting('micro-batch')}, not both",
                         field="batch")
    if args.batch % args.microbatches:
        raise InputError(f"{setting('batch', args.batch)} does not split into {setting('microbatches', args.microbatches)} "
                         "equal micro-batches", field="batch")
    return args.batch // args.microbatches


def check_flags(args: Any) -> None:
    """Before any work: a baseline gives its makespan only, so refuse the timeline files it cannot write (and
    ``baselines`` none beside it, which runs no baseline); a PipeDream graph.txt's layers are priced already, so
    refuse the settings that price or pick layers (then put in ``mode``'s default). A device TOML as ``config`` is
    refused: plan prices one array per GPU of the cluster, and a device TOML is a whole chip, which the cluster file
    names as its servers' ``device`` (then plan prices the layers on all its arrays, as train does)."""
    from archsim.array.device_sections import is_device_toml

    config = getattr(args, "config", None)
    if is_device_toml(config):
        raise InputError(f"{setting('config')} prices one array per GPU (a SCALE-Sim .cfg); {config} is a TOML: a "
                         "device TOML is a whole chip, so name it as the servers' device in the cluster file "
                         "(device = \"FILE.toml\"), where plan prices the layers on all its arrays as train does",
                         field="config")
    if args.baselines == NO_BASELINES and args.method in BASELINE_METHODS:
        raise InputError(f"{setting('baselines', 'none')} runs no baseline, and {setting('method', args.method)} is "
                         f"one: drop {setting('baselines', 'none')} (or give {setting('baselines', 'paper')} for the "
                         "SPP paper's configuration)", field="baselines")
    asked = [flag for flag, value in (("--gantt", getattr(args, "gantt", None)),
                                      ("--chrome-trace", getattr(args, "trace", None)),
                                      ("--schedule-csv", getattr(args, "schedule_csv", None))) if value]
    if asked and args.method in MAKESPAN_METHODS and args.method not in TIMELINE_METHODS:
        raise InputError(f"{asked[0]} writes the timeline of one pipeline's schedule (--method spp, pipedream, "
                         f"{', '.join(TIMELINE_METHODS)}); {args.method} gives its makespan only", field="method")
    _check_method_options(args)
    for name, default in (("baselines", BASELINE_CONFIGS[0]), ("max_search_steps", SEARCH_STEP_LIMIT)):  # None: not given
        setattr(args, name, default if getattr(args, name, None) is None else getattr(args, name))
    if getattr(args, "replication", "paper") == "exact" and args.method == "pipedream":
        raise InputError(f"{setting('replication', 'exact')} sets how SPP's replicas share a micro-batch; "
                         f"{setting('method', 'pipedream')} is PipeDream's optimizer, which replicates by its own "
                         "model: drop it", field="replication")
    if getattr(args, "objective", "paper") == "exact" and args.method == "pipedream":
        raise InputError(f"{setting('objective', 'exact')} sets which plan SPP keeps; {setting('method', 'pipedream')} "
                         "is PipeDream's optimizer, which runs no SPP search: drop it", field="objective")
    if args.network is not None and Path(args.network).suffix == ".txt":
        given = [name for name, value in (
            ("micro-batch", args.micro_batch), ("batch", args.batch), ("mode", args.mode), ("only", args.only),
            ("input-shape", args.input_shape), ("dim", args.dim or None), ("dtype", args.dtype),
            ("element-bytes", args.element_bytes)) if value is not None]
        given += [name for name in ARRAY_FLAGS if getattr(args, name.replace("-", "_")) is not None]
        if given:
            raise InputError(f"{setting(given[0])} sets how archsim prices a network's layers; {args.network} is a "
                             "PipeDream profile whose layers carry their measured seconds: drop it", field=given[0])
        if getattr(args, "replication", "paper") == "exact":
            raise InputError(f"{setting('replication', 'exact')} deals a micro-batch's samples to a stage's replicas; "
                             f"{args.network} is a PipeDream profile that does not say how many samples its "
                             f"seconds are of: give {setting('replication', 'paper')}", field="replication")
    args.mode = "exact" if args.mode is None else args.mode


def _check_method_options(args: Any) -> None:
    """Refuse a setting the chosen method does not read, which would change nothing silently: SPP's three (None: not
    given) beside PipeDream's optimizer, which runs no SPP; its own four options beside SPP or a baseline."""
    if args.method == "pipedream":
        for name, what, why in (("max-stages", "bounds SPP's search", "tries every stage count its levels allow"),
                                ("baselines", "sets how SPP's baselines run beside SPP", "runs no baseline"),
                                ("max-search-steps", "bounds SPP's search", "runs no SPP search")):
            if (value := getattr(args, name.replace("-", "_"), None)) is not None:
                raise InputError(f"{setting(name, value)} {what}; {setting('method', 'pipedream')} is PipeDream's "
                                 f"optimizer, which {why}: drop it", field=name)
        return
    given = [(name, switch_on(name)) for name in ("memory-constraint", "straight-pipeline", "use-fewer-machines")
             if getattr(args, name.replace("-", "_"), False)]
    if (ratio := getattr(args, "activation_compression_ratio", None)) is not None:
        given.insert(0, ("activation-compression-ratio", setting("activation-compression-ratio", ratio)))
    if given:
        name, shown = given[0]
        raise InputError(f"{shown} is an option of PipeDream's optimizer ({setting('method', 'pipedream')}); "
                         f"{setting('method', args.method)} does not read it: drop it", field=name)


__all__ = ["ARRAY_FLAGS", "BASELINE_CONFIGS", "BASELINE_METHODS", "DEFAULT_DTYPE", "DEFAULT_MICRO_BATCH", "LINK_MODELS",
           "MAKESPAN_METHODS", "METHODS", "NO_BASELINES", "OBJECTIVES", "PAPER_BASELINES", "REPLICATION_MODELS", "TIMELINE_METHODS",
           "array_flags", "check_flags", "micro_batch"]
