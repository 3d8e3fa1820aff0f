"""``archsim plan``: pipeline planning over a cluster — SPP, PipeDream's optimizer, and SPP's baselines."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from archsim.choices.devices import DTYPES, TRAIN_DTYPE
from archsim.commands import Command
from archsim.commands.common import (
    MODE_HELP,
    add_array_arguments,
    add_job_limit_argument,
    add_network_arguments,
    add_output_arguments,
    array_from_args,
    clock_ghz_flag,
    emit,
    network_from_args,
    positive_int,
    width_meta,
)
from archsim.commands.timeline_outputs import add_timeline_outputs, write_timeline_outputs
from archsim.console import note
from archsim.errors import InputError
from archsim.modes import MODES
from archsim.validate import check_job_size, float_flag, int_flag, seed_flag

LINK_MODELS = ("paper", "exact")  # spp.topology.LINK_MODELS (a test checks)
BASELINE_METHODS = ("dp", "gpipe", "pipedream-prm", "hetpipe")  # spp.baselines.BASELINES (a test checks)
BASELINE_CONFIGS = ("archsim", "paper")  # spp.baselines.CONFIGS (a test checks)
NO_BASELINES = "none"  # --baselines none: SPP alone, no baseline run (nor its search counted)
PAPER_BASELINES = ("dp", "gpipe", "pipedream", "hetpipe")  # spp.baselines.PAPER_BASELINES (a test checks)
DEFAULT_MICRO_BATCH = 4
DEFAULT_DTYPE = TRAIN_DTYPE  # on a cluster's device, as archsim train's --dtype
METHODS = ("spp", "pipedream", *BASELINE_METHODS)  # planners of archsim.planners on a cluster; pipedream as its own


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_network_arguments(parser)
    parser.add_argument("--cluster", required=True, metavar="CONFIG.toml", help="cluster topology (configs/clusters/); when its servers name a gpu or device, the "
                             "layers are priced on it (docs/formats.md, which device prices plan's layers)")
    parser.add_argument("--microbatches", type=positive_int, required=True, help="micro-batches per iteration")
    parser.add_argument("--method", default="spp", choices=METHODS,
                        help="spp (default); pipedream: PipeDream's optimizer as released (one server: its flat "
                             "setting; servers × GPUs: its two levels); pipedream-prm: the SPP paper's synchronous "
                             "PipeDream (PRM over the cluster's real links); dp, gpipe, hetpipe: SPP's baselines")
    parser.add_argument("--baselines", default="archsim", choices=(*BASELINE_CONFIGS, NO_BASELINES),
                        help="how the baselines run: archsim (default: dp splits one mini-batch over the GPUs, gpipe "
                             "balances compute, the synchronous pipedream-prm), paper (as the SPP paper's §V-A "
                             "states them: dp trains a mini-batch on every GPU, gpipe balances layer counts, "
                             "pipedream is PipeDream's optimizer; docs/papers/spp.md) or none (run no baseline: "
                             "SPP alone, its search alone counted by --max-search-steps)")
    parser.add_argument("--seed", type=seed_flag, default=None, help="redraw the cluster's bandwidth ranges")
    parser.add_argument("--links", default="paper", choices=LINK_MODELS,
                        help="how a transfer between two GPUs is priced: paper (default: the SPP paper's bytes / "
                             "bandwidth) or exact (as train's pipeline hop on that pair: its link's launch latency "
                             "plus the bytes at η·bandwidth; needs every server to name a gpu or device; "
                             "docs/papers/spp.md)")
    parser.add_argument("--max-stages", type=positive_int, default=None,
                        help="try at most this many stages (default: as many as devices and layers allow)")
    pipedream = parser.add_argument_group("PipeDream's optimizer (--method pipedream), as its own flags")
    pipedream.add_argument("--activation-compression-ratio", type=float_flag(1e-6, 1e6, what="a compression ratio"),
                           default=None, metavar="R",
                           help="count activation transfers, compressed R× (default: ignored, as the optimizer's CLI)")
    pipedream.add_argument("--memory-constraint", action="store_true",
                           help="skip stages whose stash exceeds a GPU's memory (the servers' device's; else the "
                                "cluster's gpu_memory_gb, default 16)")
    pipedream.add_argument("--straight-pipeline", action="store_true", help="no stage replication")
    pipedream.add_argument("--use-fewer-machines", action="store_true", help="a plan may leave machines idle")
    add_array_arguments(parser)
    parser.add_argument("--micro-batch", type=positive_int, default=None,
                        help=f"samples per micro-batch (layer costs; default {DEFAULT_MICRO_BATCH})")
    parser.add_argument("--batch", type=positive_int, default=None,
                        help="mini-batch size: the micro-batch is BATCH / --microbatches (pipeline and schedule "
                             "run --microbatches micro-batches of --batch samples each)")
    parser.add_argument("--mode", default=None, choices=MODES,  # None: not given (check_flags)
                        help=f"{MODE_HELP} (default: exact; refused with a graph.txt, whose layers are measured)")
    parser.add_argument("--clock-ghz", type=clock_ghz_flag, default=None, metavar="GHZ",
                        help="array clock, to turn cycles into seconds (default 1); with a cluster whose servers "
                             "name a device, any array flag prices on the array instead of the device")
    add_timeline_outputs(parser)
    add_output_arguments(parser)
    add_job_limit_argument(parser)
    from archsim.spp import SEARCH_STEP_LIMIT  # not archsim.spp.plan: --method pipedream needs none of SPP's search

    parser.add_argument("--max-search-steps", type=int_flag(1, 10**15, "a step count"), default=SEARCH_STEP_LIMIT,
                        metavar="N", help=f"refuse SPP searches (every method but pipedream runs SPP) of more PRM "
                                          "steps than this, with the pipedream-prm baseline's search of every stage "
                                          "count unless --baselines none or paper leaves it out "
                                          f"(default {SEARCH_STEP_LIMIT:,}, about 10 s of PRM tables)")


def layer_profile(args: argparse.Namespace):
    """The layer profile in seconds, what it is and what priced it (meta keys: the network, and for costs
    archsim computes the micro-batch, the mode and the device or array, with the array's dtype and
    element_bytes) and the device's memory in bytes
    (None: not priced on a device). A graph.txt's own costs; else the cluster's device when its servers
    name one and no array flag is given (:func:`_server_machine`); else one array, --array/--config at
    --clock-ghz. Public: the profile ``plan`` prices is checked apart from the plan made of it."""
    if Path(args.network).suffix == ".txt":
        from archsim.partition.graph_txt import load_graph_txt

        profile = load_graph_txt(args.network)
        named = _server_devices(args.cluster)
        if named:
            note(f"{args.cluster}'s servers name {', '.join(sorted({n for n in named if n}))}; plan "
                 f"takes the layer costs {args.network} measured, not the servers' devices")
        return profile, {"network": Path(args.network).name, "priced_on": "the profile's measured seconds"}, None
    from archsim.spp.profiles import profile_from_network, profile_on_machine

    named = _server_devices(args.cluster)
    if named and not _array_flags(args):
        if args.dtype not in (None, *DTYPES):
            raise InputError(f"on the servers' device the layers train in {', '.join(DTYPES)} (train's --dtype); "
                             f"{args.dtype} sizes an array's words: price on an array with --array/--config",
                             field="dtype")
        machine = _server_machine(args.cluster, named, args.dtype or DEFAULT_DTYPE)
        if args.element_bytes is not None:
            raise InputError(f"sizes the array model's tensors; on the servers' device ({machine.gpu.name}) they "
                             f"are {machine.dtype}'s (--dtype): drop it, or price on an array with --array/--config",
                             field="element-bytes")
        network, inputs = _network(args)
        profile = profile_on_machine(network, machine, inputs["micro_batch"], args.mode)
        return profile, {**inputs, **_priced_on(machine)}, machine.gpu.memory_bytes
    clock_ghz = 1.0 if args.clock_ghz is None else args.clock_ghz
    array = replace(array_from_args(args), clock_hz=clock_ghz * 1e9)
    shape = f"{array.rows}x{array.cols} {array.dataflow} at {clock_ghz:g} GHz"
    if named:
        note(f"{args.cluster}'s servers name {', '.join(sorted({n for n in named if n}))}; plan prices the "
             f"layers on one {shape} array per GPU, as {', '.join(_array_flags(args))} asked, not on the servers' "
             "devices (without --array/--config/--dataflow/--clock-ghz it prices them on the device)")
    network, inputs = _network(args)
    profile = profile_from_network(network, array, inputs["micro_batch"], args.mode)
    return profile, {**inputs, "priced_on": f"array {shape}", **width_meta(args, array)}, None


def _network(args: argparse.Namespace):
    """The network archsim prices, and the meta keys that say what was priced: its name, the samples per
    micro-batch and the cost mode."""
    network = network_from_args(args)
    return network, {"network": network.name, "micro_batch": micro_batch(args), "mode": args.mode}


def _array_flags(args: argparse.Namespace) -> list[str]:
    """The array flags the user gave (each None unless given)."""
    return [flag for flag, value in (("--array", args.array), ("--config", args.config),
                                     ("--dataflow", args.dataflow), ("--clock-ghz", args.clock_ghz))
            if value is not None]


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
    """The training machine (device, kernel constants, ``dtype``: --dtype, default fp16 as train's) of a
    cluster whose servers all name one device, read by ``train``'s own loader
    (:func:`archsim.training.cluster_file.load_gpu_cluster`). The
    planners take one per-layer cost for every GPU, so servers of different devices (or some of none)
    are refused rather than priced on one of them."""
    from archsim.spp.cluster_document import read_cluster_document
    from archsim.training.cluster_file import load_gpu_cluster
    from archsim.training.parallel import Parallelism

    if None in named:
        raise InputError(f"some servers name a device ({', '.join(sorted({n for n in named if n}))}) and some "
                         "none: name the same gpu or device in every [[servers]] table, or price the layers on "
                         "one array with --array/--config", file=cluster, field="servers")
    if "gpu_memory_gb" in read_cluster_document(cluster).get("cluster", {}):
        raise InputError("sizes the GPUs of a cluster that names no device; these servers' devices state their "
                         "own memory: drop gpu_memory_gb", file=cluster, field="gpu_memory_gb")
    gpus = load_gpu_cluster(cluster, dtype)
    kinds = sorted({device.name for device in gpus.servers})
    if len(kinds) > 1:
        raise InputError(f"the servers name different devices ({'; '.join(kinds)}): plan prices every GPU with "
                         "one layer profile, so it plans on one device type; give a cluster of one device, or "
                         "--array/--config to price every GPU as one array", file=cluster, field="servers")
    peaks = [p for p in DTYPES if p in dict(gpus.gpu.peaks)]
    if dtype not in peaks:  # a card of no FP16 peak (GTX 1080 Ti, P100): name the flag that fixes it
        raise InputError(f"{gpus.gpu.name} has no {dtype} peak; give --dtype {' or '.join(peaks)}", field="dtype")
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


def micro_batch(args: argparse.Namespace) -> int:
    """Samples per micro-batch: --micro-batch, or the mini-batch --batch split into --microbatches."""
    if args.batch is None:
        return DEFAULT_MICRO_BATCH if args.micro_batch is None else args.micro_batch
    if args.micro_batch is not None:
        raise InputError("give --batch (the mini-batch) or --micro-batch, not both", field="batch")
    if args.batch % args.microbatches:
        raise InputError(f"--batch {args.batch} does not split into --microbatches {args.microbatches} equal "
                         "micro-batches", field="batch")
    return args.batch // args.microbatches


STAGE_ROWS = "stage / channel"  # a plan's Gantt rows: PE's resources, not GPUs


def stage_rows_caption(rows: list[dict]) -> str:
    """What a plan's Gantt rows stand for, from its table's rows: each stage row sN runs on all its GPUs at once
    (a micro-batch split over its replicas), chN is the channel from sN to sN+1, arN sN's all-reduce."""
    stages = "; ".join(f"s{r['stage']}: {r['first_layer']}–{r['last_layer']} on {r['devices']}" for r in rows)
    return (f"Rows: {stages}. A stage row's bars are its replicas' work together (each micro-batch split over "
            "them); chN is the channel from sN to sN+1 (cf forward, cb backward); arN is sN's all-reduce.")


def check_flags(args: argparse.Namespace) -> None:
    """Before any work: a baseline gives its makespan only, so refuse the timeline files it cannot write (and
    ``--baselines none`` beside it, which runs no baseline);
    a PipeDream graph.txt's layers are priced already, so refuse the flags that price or pick layers
    (then put in --mode's default)."""
    if args.baselines == NO_BASELINES and args.method in BASELINE_METHODS:
        raise InputError(f"--baselines none runs no baseline, and --method {args.method} is one: drop --baselines "
                         "none (or give --baselines paper for the SPP paper's configuration)", field="baselines")
    asked = [flag for flag, value in (("--gantt", args.gantt), ("--chrome-trace", args.trace),
                                      ("--schedule-csv", args.schedule_csv)) if value]
    if asked and args.method in BASELINE_METHODS:
        raise InputError(f"{asked[0]} writes the timeline of --method spp or pipedream; {args.method} gives its "
                         "makespan only", field="method")
    if args.network is not None and Path(args.network).suffix == ".txt":
        given = [flag for flag, value in (
            ("--micro-batch", args.micro_batch), ("--batch", args.batch), ("--mode", args.mode),
            ("--only", args.only), ("--input-shape", args.input_shape), ("--dim", args.dim or None),
            ("--dtype", args.dtype), ("--element-bytes", args.element_bytes)) if value is not None]
        if given or _array_flags(args):
            flag = (given or _array_flags(args))[0]
            raise InputError(f"{flag} sets how archsim prices a network's layers; {args.network} is a PipeDream "
                             "profile whose layers carry their measured seconds: drop it", field=flag.lstrip("-"))
    args.mode = "exact" if args.mode is None else args.mode


def run(args: argparse.Namespace) -> int:
    check_flags(args)
    topology, lines = read_plan_cluster(args.cluster, args.seed, args.links)
    profile, priced_on, device_memory = layer_profile(args)
    status = _plan(args, topology, profile, priced_on, device_memory)
    from archsim.commands.common import print_cluster_lines

    print_cluster_lines(*lines)  # the run done, as train's: notes never precede an error line
    return status


def _plan(args: argparse.Namespace, topology, profile, priced_on: dict[str, str], device_memory: float | None) -> int:
    """Plan with ``args.method`` and write its outputs (:func:`run`'s work once the cluster and layers are read)."""
    from archsim.outputs import render
    from archsim.rows import Rows

    check_job_size(args.microbatches * 2 * len(profile.names), args.max_ops)  # F and B blocks per stage ≤ per layer
    if args.method == "pipedream":
        from archsim.commands.plan_pipedream import run_pipedream

        return run_pipedream(args, profile, topology, priced_on, device_memory)
    from archsim.planners import plan_on_cluster
    from archsim.progress import progress
    from archsim.spp.plan import check_search_size, spp, stage_count_limit, stage_plans

    methods = list({"archsim": BASELINE_METHODS, "paper": PAPER_BASELINES}.get(args.baselines, ()))
    if args.method in BASELINE_METHODS and args.method not in methods:
        methods.append(args.method)
    check_search_size(profile, topology, args.max_stages, args.max_search_steps, methods,  # pipedream-prm's too
                      droppable=args.method == "spp" and "pipedream-prm" in methods)

    # one bar for all the work: SPP's stage counts, then the four baselines (seconds each on a large
    # profile; they once ran after a full bar, silently)
    with progress(stage_count_limit(profile, topology, args.max_stages) + len(methods), "SPP",
                  "step") as bar:
        result = spp(profile, topology, args.microbatches, max_stages=args.max_stages,
                     on_stage_count=lambda _: bar.update())
        others = {}
        for method in methods:
            bar.set_postfix_str(f"baseline {method}")
            makespan = plan_on_cluster(profile, topology, method, args.microbatches,
                                       config=args.baselines).makespan
            assert makespan is not None, "a plan on a cluster is scheduled"
            others[method] = float(makespan)
            bar.update()
    config = {"baselines": args.baselines} if args.baselines != "archsim" else {}
    if args.links != "paper":
        config["links"] = args.links
    names = profile.names
    times = stage_plans(profile, result.plan, topology.bandwidth, topology.latency, topology.links)
    rows = [{"stage": n + 1, "first_layer": names[a], "last_layer": names[b - 1], "layer_count": b - a,
             "replicas": len(d), "devices": " ".join(f"g{x}" for x in d), "microbatch_forward_seconds": t.forward,
             "microbatch_backward_seconds": t.backward, "allreduce_seconds": t.allreduce}
            for n, ((a, b), d, t) in enumerate(zip(result.plan.stages, result.plan.devices, times))]
    if args.method != "spp":
        row = {"method": args.method, "makespan_seconds": others[args.method], "spp_makespan_seconds": result.makespan}
        emit(render(Rows.of([row]), args.format, precision=args.precision,
                    meta={"cluster": topology.name, "gpus": topology.devices, "microbatches": args.microbatches,
                          **config, **priced_on}), args)
        return 0
    def seconds(t: float) -> str:  # the table's digits; csv and json keep full precision, as their numbers do
        return f"{float(t):.4g}" if args.format == "table" else repr(float(t))

    meta = {"method": args.method, "cluster": topology.name, "gpus": topology.devices,
            "microbatches": args.microbatches, "makespan_seconds": result.makespan,
            "stage_counts": "; ".join(f"{s}:{seconds(t)}s" for s, _, t in result.by_stage_count),
            "baselines_seconds": "; ".join(f"{m}:{seconds(t)}" for m, t in others.items()), **config,
            "device_order": " ".join(f"g{x}" for x in result.order), **priced_on}
    write_timeline_outputs(args, result.timeline, f"SPP on {topology.name}, {args.microbatches} micro-batches",
                           unit=profile.unit, rows_title=STAGE_ROWS, caption=stage_rows_caption(rows))
    emit(render(Rows.of(rows), args.format, precision=args.precision, meta=meta), args)
    return 0


COMMAND = Command("plan", "pipeline planning over a cluster: SPP, PipeDream's optimizer, baselines", add_arguments, run)
