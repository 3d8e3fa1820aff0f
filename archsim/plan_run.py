"""``archsim plan``'s run, once for the command and :func:`archsim.plan`: pipeline planning over a cluster — SPP,
PipeDream's optimizer, and SPP's baselines. The run reads its settings from ``args``, an object whose attributes
are the command's flags (``argparse.Namespace`` from the command, a ``SimpleNamespace`` from the library), already
of the flags' types; the layers are loaded and the array built by the caller's ``loader`` and ``array_of`` (the
command's flags, or the library's keywords), and a note is said through ``speak(kind, text)``. :func:`run_plan`
returns the rows and meta the command prints, the timeline, and the cluster file's lines said after the run.
Seconds throughout (layer costs priced at a clock, or measured)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archsim.choices.devices import DTYPES, TRAIN_DTYPE
from archsim.console import say, setting, switch_on
from archsim.errors import InputError
from archsim.spp import SEARCH_STEP_LIMIT  # not archsim.spp.plan: pipedream needs none of SPP's search

if TYPE_CHECKING:
    from archsim.array.config import ArrayConfig
    from archsim.sim.timeline import Timeline
    from archsim.workload.layer import Network

LINK_MODELS = ("paper", "exact")  # spp.topology.LINK_MODELS (a test checks)
# how a stage's replicas share a micro-batch: paper (SPP's 1/r each, any r) or exact (whole samples: ⌈m/r⌉/m, r ≤ m)
REPLICATION_MODELS = ("paper", "exact")
BASELINE_METHODS = ("dp", "gpipe", "pipedream-prm", "hetpipe")  # spp.baselines.BASELINES (a test checks)
BASELINE_CONFIGS = ("archsim", "paper")  # spp.baselines.CONFIGS (a test checks); the first, --baselines' default
NO_BASELINES = "none"  # --baselines none: SPP alone, no baseline run (nor its search counted)
PAPER_BASELINES = ("dp", "gpipe", "pipedream", "hetpipe")  # spp.baselines.PAPER_BASELINES (a test checks)
DEFAULT_MICRO_BATCH = 4
DEFAULT_DTYPE = TRAIN_DTYPE  # on a cluster's device, as archsim train's --dtype
METHODS = ("spp", "pipedream", *BASELINE_METHODS)  # planners of archsim.planners on a cluster; pipedream as its own
STAGE_ROWS = "stage / channel"  # a plan's Gantt rows: PE's resources, not GPUs

Speak = Callable[[str, str], None]
Phases = Callable[[str, Sequence[str]], AbstractContextManager]


@dataclass(frozen=True)
class PlanRun:
    """One plan run: the ``rows`` and ``meta`` the command prints; the ``timeline`` (SPP's, or PipeDream's plan
    run when ``drawn``; None for a baseline), its ``title`` and ``caption`` and the Gantt's ``rows_title``; and the
    cluster file's ``warnings`` and ``notes``, said once the run has succeeded."""

    rows: list[dict]
    meta: dict
    timeline: Timeline | None = field(default=None, repr=False)
    title: str = ""
    caption: str = ""
    rows_title: str = STAGE_ROWS
    unit: str = "seconds"
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def run_plan(args: Any, *, loader: Callable[[Any], Network], array_of: Callable[[Any], ArrayConfig],
             speak: Speak = say, drawn: bool = False, phases: Phases | None = None) -> PlanRun:
    """One ``archsim plan`` run on ``args`` (the flags' values; ``mode`` None: not given): the flags checked
    (:func:`check_flags`), the cluster read, the layers priced (:func:`layer_profile`), then planned. ``drawn``:
    the caller will write the timeline (PipeDream's plan is then simulated, not only timed); ``phases``: the
    progress phases of PipeDream's optimizer (default none)."""
    check_flags(args)
    topology, (warnings, notes) = read_plan_cluster(args.cluster, args.seed, args.links)
    profile, priced_on, device_memory = layer_profile(args, loader=loader, array_of=array_of, speak=speak)
    from archsim.validate import check_job_size

    check_job_size(args.microbatches * 2 * len(profile.names), args.max_ops)  # F and B blocks per stage ≤ per layer
    if args.method == "pipedream":
        from archsim.plan_pipedream import run_pipedream

        done = run_pipedream(args, profile, topology, priced_on, device_memory, drawn=drawn, phases=phases)
    else:
        done = _spp(args, topology, profile, priced_on, speak)
    return replace(done, warnings=tuple(warnings), notes=tuple(notes))


def layer_profile(args: Any, *, loader: Callable[[Any], Network], array_of: Callable[[Any], ArrayConfig],
                  speak: Speak = say):
    """The layer profile in seconds, what it is and what priced it (meta keys: the network, and for costs archsim
    computes the micro-batch, the mode and the device or array, with the array's dtype and element_bytes) and the
    device's memory in bytes (None: not priced on a device). A graph.txt's own costs; else the cluster's device when
    its servers name one and no array flag is given (:func:`_server_machine`); else one array, ``array_of(args)``
    at the clock (default 1 GHz)."""
    if Path(args.network).suffix == ".txt":
        from archsim.partition.graph_txt import load_graph_txt

        profile = load_graph_txt(args.network)
        named = _server_devices(args.cluster)
        if named:
            speak("note", f"{args.cluster}'s servers name {', '.join(sorted({n for n in named if n}))}; plan "
                          f"takes the layer costs {args.network} measured, not the servers' devices")
        return profile, {"network": Path(args.network).name, "priced_on": "the profile's measured seconds"}, None
    from archsim.spp.profiles import profile_from_network, profile_on_machine

    named = _server_devices(args.cluster)
    if named and not array_flags(args):
        if args.dtype not in (None, *DTYPES):
            raise InputError(f"on the servers' device the layers train in {', '.join(DTYPES)} (train's "
                             f"{setting('dtype')}); {args.dtype} sizes an array's words: price on an array with "
                             f"{setting('array')}/{setting('config')}", field="dtype")
        machine = _server_machine(args.cluster, named, args.dtype or DEFAULT_DTYPE)
        if args.element_bytes is not None:
            raise InputError(f"sizes the array model's tensors; on the servers' device ({machine.gpu.name}) they "
                             f"are {machine.dtype}'s ({setting('dtype')}): drop it, or price on an array with "
                             f"{setting('array')}/{setting('config')}", field="element-bytes")
        network, inputs = _network(args, loader, speak)
        profile = profile_on_machine(network, machine, inputs["micro_batch"], args.mode)
        return profile, {**inputs, **_priced_on(machine)}, machine.gpu.memory_bytes
    from archsim.array.options import dtype_meta

    clock_ghz = 1.0 if args.clock_ghz is None else args.clock_ghz
    array = replace(array_of(args), clock_hz=clock_ghz * 1e9)
    shape = f"{array.rows}x{array.cols} {array.dataflow} at {clock_ghz:g} GHz"
    if named:
        speak("note", f"{args.cluster}'s servers name {', '.join(sorted({n for n in named if n}))}; plan prices the "
                      f"layers on one {shape} array per GPU, as {', '.join(array_flags(args))} asked, not on the "
                      f"servers' devices (without {'/'.join(setting(f) for f in ARRAY_FLAGS)} it prices them on the "
                      "device)")
    network, inputs = _network(args, loader, speak)
    profile = profile_from_network(network, array, inputs["micro_batch"], args.mode)
    return profile, {**inputs, "priced_on": f"array {shape}", "dtype": dtype_meta(args.dtype, array),
                     "element_bytes": array.element_bytes}, None


def _network(args: Any, loader: Callable[[Any], Network], speak: Speak):
    """The network archsim prices (a file fixing a batch other than the mini-batch, ``microbatches`` × the
    micro-batch, noted), and the meta keys that say what was priced: its name, the micro-batch and the mode."""
    from archsim.workload.shipped import file_batch_note

    network, samples = loader(args), micro_batch(args)
    if note := file_batch_note(network, samples * args.microbatches):
        speak("note", note)
    return network, {"network": network.name, "micro_batch": samples, "mode": args.mode}


ARRAY_FLAGS = ("array", "config", "dataflow", "clock-ghz")  # the flags that price on an array, not a device


def array_flags(args: Any) -> list[str]:
    """The array settings the user gave (each None unless given), as the caller spells them (``--array``)."""
    return [setting(flag) for flag in ARRAY_FLAGS if getattr(args, flag.replace("-", "_")) is not None]


def _server_devices(cluster: str) -> list[str | None]:
    """Each ``[[servers]]`` table's device as written (its ``device`` path or catalog ``gpu``; None where
    it names neither); empty when no server names one (the cluster's links alone: the array prices)."""
    from archsim.spp.cluster_document import read_cluster_document

    servers = read_cluster_document(cluster).get("servers", [])
    if not isinstance(servers, list):
        return []  # the topology loader has refused it already
    named = [s.get("device", s.get("gpu")) if isinstance(s, dict) else None for s in servers]
    return [None if n is None else str(n) for n in named] if any(n is not None for n in named) else []


def _server_machine(cluster: str, named: list[str | None], dtype: str = DEFAULT_DTYPE):
    """The training machine (device, kernel constants, ``dtype``: --dtype, default fp16 as train's) of a cluster
    whose servers all name one device, read by ``train``'s own loader
    (:func:`archsim.training.cluster_file.load_gpu_cluster`). The planners take one per-layer cost for every GPU,
    so servers of different devices (or some of none) are refused rather than priced on one of them."""
    from archsim.spp.cluster_document import read_cluster_document
    from archsim.training.cluster_file import load_gpu_cluster
    from archsim.training.parallel import Parallelism

    on_array = f"{setting('array')}/{setting('config')}"
    if None in named:
        raise InputError(f"some servers name a device ({', '.join(sorted({n for n in named if n}))}) and some "
                         "none: name the same gpu or device in every [[servers]] table, or price the layers on "
                         f"one array with {on_array}", file=cluster, field="servers")
    if "gpu_memory_gb" in read_cluster_document(cluster).get("cluster", {}):
        raise InputError("sizes the GPUs of a cluster that names no device; these servers' devices state their "
                         "own memory: drop gpu_memory_gb", file=cluster, field="gpu_memory_gb")
    gpus = load_gpu_cluster(cluster, dtype)
    kinds = sorted({device.name for device in gpus.servers})
    if len(kinds) > 1:
        raise InputError(f"the servers name different devices ({'; '.join(kinds)}): plan prices every GPU with "
                         "one layer profile, so it plans on one device type; give a cluster of one device, or "
                         f"{on_array} to price every GPU as one array", file=cluster, field="servers")
    peaks = [p for p in DTYPES if p in dict(gpus.gpu.peaks)]
    if dtype not in peaks:  # a card of no FP16 peak (GTX 1080 Ti, P100): name the setting that fixes it
        raise InputError(f"{gpus.gpu.name} has no {dtype} peak; give {' or '.join(setting('dtype', p) for p in peaks)}",
                         field="dtype")
    return gpus.machine(Parallelism())


def _priced_on(machine) -> dict[str, str]:
    """Meta keys naming the device that priced the layers and how its GEMMs run (arrays or GPU tiles)."""
    device = machine.gpu
    if device.gemm == "arrays":
        units = device.arrays
        how = (f"{units.count} array{'s' if units.count > 1 else ''} of {units.rows}x{units.cols} {units.dataflow} "
               f"at {units.clock_hz / 1e9:g} GHz")
    else:
        how = f"tiles on {device.sms} SMs at {device.clock_hz / 1e9:g} GHz"
    return {"priced_on": device.name, "priced_on_model": f"{how}, {machine.dtype}"}


def read_plan_cluster(cluster: str, seed: int | None, links: str = "paper"):
    """The cluster file as plan reads it, once: its topology, and what plan says of it on stderr after the run —
    train's warnings and notes on the same file (:func:`archsim.training.cluster_file.cluster_file_lines`), the
    keys only train and search read first among the notes (docs/formats.md, "Cluster (TOML)"). Every device a
    ``[[servers]]`` table names is read (whatever prices the layers): its figures are judged as train judges
    them, and where the file states no bandwidth between servers the devices' one ``[links] inter_node_gbps``
    is taken, as train takes it. ``links``: how a transfer is priced (:func:`archsim.spp.topology.build_topology`)."""
    from collections import Counter

    from archsim.network import network_lines
    from archsim.spp.cluster_document import read_cluster_document
    from archsim.spp.topology import build_topology
    from archsim.toml_errors import located

    spec = read_cluster_document(cluster)
    devices: tuple = ()  # each [[servers]] table's device (archsim.training.cluster_file.named_devices)
    nic = 0.0
    with located(spec, cluster):  # a key's error names its line
        if _server_devices(cluster):  # a cluster of links alone loads no device model
            from archsim.training.cluster_file import device_inter_node_gbps, named_devices

            devices = named_devices(spec, Path(cluster).parent, cluster)
            nic = device_inter_node_gbps(devices)
        topology = build_topology(spec, file=cluster, seed=seed, default_gbps=nic, links=links, devices=devices)
    per_server = Counter(topology.servers)
    network = topology.network  # train's, read once (None: a drawn [low, high] range, no one NIC figure)
    if devices:
        from archsim.training.cluster_file import cluster_file_lines

        warnings, notes = cluster_file_lines(spec, devices, network, len(per_server))
    else:
        warnings, notes = network_lines(spec, network, len(per_server))
    servers = [s for s in spec["servers"] if isinstance(s, dict)]
    readers = {"price_per_gpu_hour": "search reads it (its cost objective)",
               "gpu_watts": "train and search read it (energy)"}
    unread = tuple(f"[[servers]] {key} is not read by plan: {who}" for key, who in readers.items()
                   if any(key in s for s in servers))
    return topology, (warnings, unread + notes)


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


def stage_rows_caption(rows: list[dict]) -> str:
    """What a plan's Gantt rows stand for, from its table's rows: each stage row sN runs on all its GPUs at once
    (a micro-batch split over its replicas), chN is the channel from sN to sN+1, arN sN's all-reduce."""
    stages = "; ".join(f"s{r['stage']}: {r['first_layer']}–{r['last_layer']} on {r['devices']}" for r in rows)
    return (f"Rows: {stages}. A stage row's bars are its replicas' work together (each micro-batch split over "
            "them); chN is the channel from sN to sN+1 (cf forward, cb backward); arN is sN's all-reduce.")


def check_flags(args: Any) -> None:
    """Before any work: a baseline gives its makespan only, so refuse the timeline files it cannot write (and
    ``baselines`` none beside it, which runs no baseline); a PipeDream graph.txt's layers are priced already, so
    refuse the settings that price or pick layers (then put in ``mode``'s default)."""
    if args.baselines == NO_BASELINES and args.method in BASELINE_METHODS:
        raise InputError(f"{setting('baselines', 'none')} runs no baseline, and {setting('method', args.method)} is "
                         f"one: drop {setting('baselines', 'none')} (or give {setting('baselines', 'paper')} for the "
                         "SPP paper's configuration)", field="baselines")
    asked = [flag for flag, value in (("--gantt", getattr(args, "gantt", None)),
                                      ("--chrome-trace", getattr(args, "trace", None)),
                                      ("--schedule-csv", getattr(args, "schedule_csv", None))) if value]
    if asked and args.method in BASELINE_METHODS:
        raise InputError(f"{asked[0]} writes the timeline of --method spp or pipedream; {args.method} gives its "
                         "makespan only", field="method")
    _check_method_options(args)
    for name, default in (("baselines", BASELINE_CONFIGS[0]), ("max_search_steps", SEARCH_STEP_LIMIT)):  # None: not given
        setattr(args, name, default if getattr(args, name, None) is None else getattr(args, name))
    if getattr(args, "replication", "paper") == "exact" and args.method == "pipedream":
        raise InputError(f"{setting('replication', 'exact')} sets how SPP's replicas share a micro-batch; "
                         f"{setting('method', 'pipedream')} is PipeDream's optimizer, which replicates by its own "
                         "model: drop it", field="replication")
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


def _too_few_samples(devices: int, stages: int, samples: int) -> InputError:
    """Why no plan exists: every GPU holds a stage or a replica, and with each replica taking whole samples a stage
    has at most m (``samples``) replicas, so ``stages`` stages reach at most stages × m of the ``devices`` GPUs."""
    most = stages * samples
    return InputError(f"no plan puts all {devices} GPUs to work: a replica takes whole samples, so a stage of a "
                      f"{samples}-sample micro-batch has at most {samples} replicas and {stages} stage"
                      f"{'s' if stages > 1 else ''} at most {most} GPUs; give a larger {setting('micro-batch')}, "
                      f"more {setting('max-stages')} where the layers allow, a cluster of fewer GPUs, or "
                      f"{setting('replication', 'paper')} "
                      "(each replica 1/r of a micro-batch)", field="replication")


def _spp(args: Any, topology, profile, priced_on: dict[str, str], speak: Speak = say) -> PlanRun:
    """SPP's plan, or a baseline's makespan beside SPP's (``args.method``), with the baselines ``args.baselines``
    names run for the meta; a ``max_stages`` above what the layers and GPUs allow noted as capped."""
    from archsim.planners import plan_on_cluster
    from archsim.progress import progress
    from archsim.spp.plan import check_search_size, spp, stage_count_limit, stage_plans

    samples = micro_batch(args) if getattr(args, "replication", "paper") == "exact" else None  # None: SPP's 1/r
    limit = stage_count_limit(profile, topology, args.max_stages)
    if samples is not None and topology.devices > limit * samples:  # before the search: no plan would fill the GPUs
        raise _too_few_samples(topology.devices, limit, samples)
    methods = list({"archsim": BASELINE_METHODS, "paper": PAPER_BASELINES}.get(args.baselines, ()))
    if args.method in BASELINE_METHODS and args.method not in methods:
        methods.append(args.method)
    check_search_size(profile, topology, args.max_stages, args.max_search_steps, methods,  # pipedream-prm's too
                      droppable=args.method == "spp" and "pipedream-prm" in methods)

    # one bar for all the work: the PRM tables' levels (nearly all of SPP's time; a bar over stage counts alone sat
    # at 0 until they were built), SPP's stage counts, then the baselines (seconds each on a large profile)
    with progress(max(limit - 1, 0) + limit + len(methods), "SPP", "step") as bar:
        result = spp(profile, topology, args.microbatches, max_stages=args.max_stages, samples=samples,
                     on_level=lambda _: bar.update(), on_stage_count=lambda _: bar.update())
        others = {}
        for method in methods:
            bar.set_postfix_str(f"baseline {method}")
            makespan = plan_on_cluster(profile, topology, method, args.microbatches, config=args.baselines).makespan
            assert makespan is not None, "a plan on a cluster is scheduled"
            others[method] = float(makespan)
            bar.update()
    if args.max_stages is not None and args.max_stages > limit:  # "at most": said once, after the search
        speak("note", f"{setting('max-stages', args.max_stages)} is more stages than a plan of {len(profile)} layer"
                      f"{'s' if len(profile) != 1 else ''} on {topology.devices} GPU"
                      f"{'s' if topology.devices != 1 else ''} can have (one layer and one GPU a stage at least): "
                      f"SPP tries at most {limit}")
    config = {"baselines": args.baselines} if args.baselines != "archsim" else {}
    if args.links != "paper":
        config["links"] = args.links
    if samples is not None:
        config["replication"] = "exact"
    names = profile.names
    times = stage_plans(profile, result.plan, topology.bandwidth, topology.latency, topology.links, samples)
    rows = [{"stage": n + 1, "first_layer": names[a], "last_layer": names[b - 1], "layer_count": b - a,
             "replicas": len(d), "devices": " ".join(f"g{x}" for x in d), "microbatch_forward_seconds": t.forward,
             "microbatch_backward_seconds": t.backward, "allreduce_seconds": t.allreduce}
            for n, ((a, b), d, t) in enumerate(zip(result.plan.stages, result.plan.devices, times))]
    if args.method != "spp":
        row = {"method": args.method, "makespan_seconds": others[args.method], "spp_makespan_seconds": result.makespan}
        return PlanRun([row], {"cluster": topology.name, "gpus": topology.devices, "microbatches": args.microbatches,
                               **config, **priced_on})

    def seconds(t: float) -> str:  # the table's digits; csv and json keep full precision, as their numbers do
        return f"{float(t):.4g}" if getattr(args, "format", "json") == "table" else repr(float(t))

    meta = {"method": args.method, "cluster": topology.name, "gpus": topology.devices,
            "microbatches": args.microbatches, "makespan_seconds": result.makespan,
            "stage_counts": "; ".join(f"{s}:{seconds(t)}s" for s, _, t in result.by_stage_count),
            "baselines_seconds": "; ".join(f"{m}:{seconds(t)}" for m, t in others.items()), **config,
            "device_order": " ".join(f"g{x}" for x in result.order), **priced_on}
    from archsim.sim.timeline import Timeline

    assert isinstance(result.timeline, Timeline), type(result.timeline)  # SPP's PE schedule, simulated
    return PlanRun(rows, meta, result.timeline, f"SPP on {topology.name}, {args.microbatches} micro-batches",
                   stage_rows_caption(rows), unit=profile.unit)


__all__ = ["BASELINE_CONFIGS", "BASELINE_METHODS", "DEFAULT_DTYPE", "DEFAULT_MICRO_BATCH", "LINK_MODELS", "METHODS",
           "NO_BASELINES", "PAPER_BASELINES", "REPLICATION_MODELS", "STAGE_ROWS", "PlanRun", "array_flags",
           "check_flags", "layer_profile", "micro_batch", "read_plan_cluster", "run_plan", "stage_rows_caption"]
