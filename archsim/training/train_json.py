"""``archsim train``'s JSON document of one iteration, built once for the CLI and for
:meth:`archsim.training.run.TrainResult.to_dict` (so the two cannot drift apart)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from archsim.console import setting
from archsim.units import GIB

if TYPE_CHECKING:
    from archsim.training.search_rows import RowContext

# more timeline slots than this and the document leaves the timeline out (its size, not its content)
MAX_TIMELINE_SLOTS = 20000


def timeline_note(slots: int) -> str | None:
    """The line saying a JSON document's ``timeline`` is left out (``slots`` pipeline actions, over
    :data:`MAX_TIMELINE_SLOTS`), and which outputs write it; None when the document holds it. An empty list alone
    read as a run with no timeline."""
    if slots <= MAX_TIMELINE_SLOTS:
        return None
    return (f"the JSON's timeline is left out: {slots:,} pipeline actions, over {MAX_TIMELINE_SLOTS:,}; "
            f"{setting('chrome-trace', placeholder='OUT.json')} or {setting('schedule-csv', placeholder='OUT.csv')} "
            "writes it")


def train_document(result, config, laid, implementation: str) -> dict:
    """``{"meta": …, "rows": […]}`` as ``archsim train --format json`` prints it (before NaN becomes
    null): ``result`` priced (:func:`archsim.training.energy.priced`) on ``laid``
    (:class:`~archsim.training.train_layout.Layout`) for ``config``. Seconds, GiB, joules; ``peak_tflops_per_gpu``
    the dense peak per GPU at the run's dtype that ``mfu`` divides by (the mean over a mixed cluster's GPUs); the
    rows are the ops (piece, name, op, seconds, and a GEMM's m, n, k and count on one GPU:
    :mod:`archsim.training.op_rows`)."""
    from archsim.training.grad_accumulation import accumulation
    from archsim.training.memory import gradient_dtype
    from archsim.training.op_rows import ROW_KEYS
    from archsim.training.placement import order_text
    from archsim.training.throughput import mean_peak, throughput

    par, placement, machines = laid.par, laid.placement, laid.machines
    memory = [{"rank": r, "gpu": machines[r].gpu.name, "parameters": m.parameters, "states_gib": m.states / GIB,
               "activations_gib": m.activations / GIB, "total_gib": m.total / GIB,
               "capacity_gib": capacity / GIB, "fits": fits}
              for r, (m, capacity, fits) in enumerate(zip(result.memory, result.capacities, result.fits, strict=True))]
    slots = result.timeline.slots  # the engine's arrays: no DataFrame (pandas' import costs more than the run)
    timeline = [{"rank": str(s.processor), "action": str(s.op), "start_s": float(s.start), "end_s": float(s.end)}
                for s in slots] if len(slots) <= MAX_TIMELINE_SLOTS else []
    peak = mean_peak(machines)  # FLOP/s per GPU at the run's dtype: what mfu divides by
    rates = throughput(config, par.global_batch, par.recompute, result.iteration_seconds, par.gpus,
                       peak, par.attention).to_dict()
    meta = {"model": config.name, **parameter_meta(config), "seq": config.seq,
            "gpu": ", ".join(sorted({m.gpu.name for m in machines})), **rows_gpu(result, machines),
            "gpus": par.gpus, "tp": par.tp, "cp": par.cp, "pp": par.pp,
            "dp": par.dp, **({"cp_comm": par.cp_comm} if par.cp > 1 else {}),
            **({"cp_hierarchy": list(par.cp_hierarchy)} if par.cp > 1 and par.cp_hierarchy else {}),
            **({"ep": par.ep, "etp": par.expert_tp, "experts": config.experts, "experts_per_token": config.experts_per_token,
                "moe_expert_capacity_factor": config.moe_expert_capacity_factor,
                "moe_pad_expert_input_to_capacity": config.moe_pad_expert_input_to_capacity,
                "moe_load_imbalance": config.moe_load_imbalance} if config.moe else {}),
            **({name: True for name in ("overlap_moe_expert_parallel_comm", "moe_shared_expert_overlap")
                if getattr(config, name)}),  # only when set (training/moe_overlap.py): the meta otherwise as before
            **({"mtp_layers": config.mtp_layers} if config.mtp_layers else {}),  # only when trained (training/mtp.py)
            "global_batch": par.global_batch, "micro_batch": par.micro_batch,
            "microbatches": par.microbatches, "recompute": par.recompute,
            "sequence_parallel": par.sequence_parallel, "interleave": par.chunks, "schedule": par.schedule_name,
            "attention": par.attention, "dp_overlap": par.dp_overlap, "p2p": par.p2p,  # as runs' and sweeps' meta
            **({"distributed_optimizer": True} if par.distributed_optimizer else {}),  # only when set: as before
            **({"fsdp": True} if par.fsdp else {}),
            **({"fsdp_reshard": par.fsdp_reshard} if par.fsdp_reshard != "after-forward" else {}),
            **({"fsdp_grad_sync": par.fsdp_grad_sync} if par.fsdp_grad_sync != "micro-batch" else {}),
            "stage_layers": ",".join(map(str, par.stage_layers)) if par.stage_layers else "even",
            "placement": order_text(placement) if isinstance(placement, tuple) else "file",
            "dtype": laid.cluster.dtype, "gradient_dtype": gradient_dtype(laid.cluster.dtype, implementation),
            **fp8_meta(par, machines, rates["mfu"]), "implementation": implementation,
            "grad_accumulation": accumulation(par, machines[0]), "iteration_seconds": result.iteration_seconds,
            "forward_seconds": result.forward_seconds, "backward_seconds": result.backward_seconds,
            "host_bound_seconds": result.host_bound_seconds,  # of the breakdown's compute and recompute (run.py)
            "host_seconds_per_op": machines[result.finishing_rank].efficiency.host_s,
            "energy_j": result.energy_j, **static_split(result),
            **({"energy_breakdown_j": dict(result.energy_breakdown_j)} if result.energy_breakdown_j else {}),
            "energy_source": result.energy_source, **lanes_meta(par, machines),
            "peak_tflops_per_gpu": peak / 1e12, **rates, "peak_memory_gib": result.peak_memory_gib,
            "memory_capacity_gib": result.memory_capacity_gib, "fits_memory": all(result.fits),
            "breakdown_seconds": dict(result.breakdown),
            "compute_split_seconds": dict(result.compute_split_seconds),  # of its compute and recompute (run.py)
            **network_meta(laid.cluster, laid.par, laid.machines, config.tied_embeddings),
            "memory_per_rank": memory,
            "after_backward_seconds": [dict(p) for p in result.post], "timeline": timeline}
    rows = [{k: row[k] for k in ROW_KEYS} for row in result.ops]
    return {"meta": meta, "rows": rows}


def fp8_meta(par, machines, mfu: float) -> dict:
    """With ``par.fp8``: the recipe, the peak ``mfu`` divides by (``mfu_peak``: the run's ``--dtype``, the higher
    precision, as the bf16 runs' MFU has it, so an fp8 and a bf16 run compare by MFU as by time) and the same FLOPs
    over the GPUs' mean fp8 peak (``mfu_at_fp8_peak``: how NVIDIA's DGX Cloud benchmark recipes state an fp8 run's
    MFU, docs/training.md), ``fp8_param_gather`` when set; nothing without fp8 (the meta then as before)."""
    from archsim.training.throughput import mean_peak

    if par.fp8 is None:
        return {}
    fp8_peak = sum(m.gpu.peak("fp8") for m in machines) / len(machines)
    return {"fp8": par.fp8, **({"fp8_param_gather": True} if par.fp8_param_gather else {}),
            "mfu_peak": machines[0].dtype, "mfu_at_fp8_peak": mfu * mean_peak(machines) / fp8_peak}


def lanes_meta(par, machines) -> dict:
    """``assumed_vector_lanes``: the lanes a fused attention kernel's exponentials and FP32 row work ran on where the
    device file states none (:func:`archsim.devices.nonmatmul.assumed_lanes`; the fewest over a mixed cluster's
    devices); nothing under standard attention or where every device states its unit (the meta then as before)."""
    from archsim.devices.nonmatmul import assumed_lanes

    lanes = [n for m in machines if (n := assumed_lanes(m.gpu)) is not None] if par.attention == "flash" else []
    return {"assumed_vector_lanes": min(lanes)} if lanes else {}


def rows_gpu(result, machines) -> dict:
    """On a mixed cluster, whose ops the rows and the breakdown are: the finishing rank (``rows_rank``) and its
    GPU (``rows_gpu``); nothing where every rank has the same GPU (the meta then as before)."""
    if len({m.gpu.name for m in machines}) < 2:
        return {}
    return {"rows_gpu": machines[result.finishing_rank].gpu.name, "rows_rank": result.finishing_rank}


def static_split(result) -> dict[str, float]:
    """``energy_j``'s two parts (J) where the device states static power: the energy model's dynamic joules and
    static_watts × chips × seconds; none otherwise (the meta then as before)."""
    if result.energy_static_j is None:
        return {}
    return {"energy_dynamic_j": result.energy_dynamic_j, "energy_static_j": result.energy_static_j}


def parameter_meta(config) -> dict:
    """The meta's ``parameters`` (the model's total) and, for a mixture of experts, ``active_parameters``: those one
    token runs through (each MoE layer's experts cut to the ones it is routed to), the figure model cards quote
    beside the total (Mixtral 8x7B: 12.9 B of 46.7 B)."""
    total, active = config.parameter_count, config.active_parameter_count
    return {"parameters": total, **({"active_parameters": active} if active != total else {})}


def network_meta(cluster, par, machines, tied: bool = False) -> dict:
    """The links ``par``'s iteration on ``cluster`` (in its server order) and ``machines`` (each pipeline rank's) was
    priced on, as the cluster file (or the catalog GPU) gave them:
    ``intra_server`` — the in-server link (``nvlink`` or ``pcie``; ``fabric``: a device file's chip-to-chip link), GB/s (10⁹ bytes/s) per direction per
    GPU (the slowest of the servers the run uses), whether NVLS reduces in the switch — and
    ``inter_server`` — NICs per server, Gb/s each, GPUs sharing a NIC, one GPU's share (GB/s, every GPU
    sending at once) and the groups (tp, cp, ep, etp, dp, expert_dp, pp; ``embedding``: the pair of the first and last rank that
    all-reduces the token table when the model's embeddings are ``tied``) whose collectives or hops cross
    it; figures None on one server. NCCL's algorithm (ring, tree, NVLS) is chosen per message size, so it
    is not one figure per group."""
    from archsim.collectives import Spanning
    from archsim.links import switch_reduces

    used = range(cluster.server_of(0), cluster.server_of(par.gpus - 1) + 1)
    devices = [cluster.servers[s] if cluster.servers else cluster.gpu for s in used]
    fabric = min(d.fabric_bytes_per_s if cluster.fabric(s) is None else cluster.fabric(s)
                 for s, d in zip(used, devices, strict=True))
    net = cluster.network
    intra = {"link": _link_label(devices),
             "gb_per_s_per_gpu": fabric / 1e9,
             "nvls": net is not None and all(switch_reduces(d, net.nvls) for d in devices)}
    tori = [(cluster.torus(s), d, s) for s, d in zip(used, devices, strict=True) if cluster.torus(s)]
    if tori:  # chips on a torus ([[servers]] torus): its dimensions and one link, the first such server's
        dims, device, server = tori[0]
        link = device.fabric_bytes_per_s if cluster.fabric(server) is None else cluster.fabric(server)
        intra |= {"torus": list(dims), "link_gb_per_s": link / device.nvlinks / 1e9}
    if len(cluster.starts) <= 2:  # one server: nothing crosses a network (its figure may be a placeholder)
        return {"intra_server": intra, "inter_server": dict.fromkeys(
            ("nics_per_server", "nic_gbps", "gpus_per_nic", "gb_per_s_per_gpu")) | {"crossed_by": []}}
    crossed = [name for name in ("tp", "cp", "ep", "etp", "dp", "expert_dp", "pp", "embedding")
               if (tied or name != "embedding") and any(
        isinstance(link, Spanning) for m in machines
        for link in (getattr(m.links, name), *(m.links.pp_hops if name == "pp" else ())))]  # dp: DP × CP ranks
    inter = {"nics_per_server": None if net is None else net.nics_per_server,
             "nic_gbps": None if net is None else net.nic_gbps,
             "gpus_per_nic": None if net is None else net.gpus_per_nic,
             "gb_per_s_per_gpu": cluster.inter_server_bytes_per_s / 1e9, "crossed_by": crossed,
             **_leaves_meta(cluster, par, crossed)}
    return {"intra_server": intra, "inter_server": inter}


def _leaves_meta(cluster, par, crossed: list[str]) -> dict:
    """Where the run's servers sit under several leaves of an oversubscribed fabric: ``oversubscription`` and
    ``leaves_crossed_by``, the groups of ``crossed`` some of whose collectives or hops cross an uplink (slowed by the
    share of their traffic that leaves a leaf, :meth:`archsim.network.ServerNetwork.uplinks`), found as the groups whose
    links differ from those of the same layout on the fabric without oversubscription; nothing otherwise (the meta
    then as before)."""
    from dataclasses import replace

    net = cluster.network
    used = range(cluster.server_of(0), cluster.server_of(par.gpus - 1) + 1)
    if net is None or len({net.leaf(cluster.file_server(s)) for s in used}) < 2:  # leaves hold the file's servers
        return {}
    flat = replace(cluster, network=replace(net, oversubscription=1.0)).rank_machines(par) or ()
    over = cluster.rank_machines(par) or ()

    def links(machine, name: str) -> tuple:
        return (getattr(machine.links, name), *(machine.links.pp_hops if name == "pp" else ()))

    leaves = [name for name in crossed if any(links(a, name) != links(b, name) for a, b in zip(over, flat, strict=True))]
    slowdown = {name: max(leaf_slowdown(name, x, y, par) for a, b in zip(over, flat, strict=True)
                          for x, y in zip(links(a, name), links(b, name), strict=True)) for name in leaves}
    return {"oversubscription": net.oversubscription, "leaves_crossed_by": leaves, "leaves_slowdown": slowdown}


# the collectives each group's link carries (train's): rings or trees for the reductions, an all-to-all for EP's tokens,
# a send for a pipeline hop; CP's by its K/V exchange, all three here (its largest)
GROUP_COLLECTIVES = {"tp": ("all-reduce", "all-gather", "reduce-scatter"), "dp": ("all-reduce", "reduce-scatter", "all-gather"),
                     "expert_dp": ("all-reduce", "reduce-scatter", "all-gather"), "etp": ("all-reduce", "all-gather", "reduce-scatter"),
                     "embedding": ("all-reduce",), "ep": ("all-to-all",), "pp": ("p2p",),
                     "cp": ("all-gather", "all-to-all", "p2p")}
SLOWDOWN_BYTES = GIB  # a buffer whose time is its bytes over the links' bandwidth, latency a rounding error


def leaf_slowdown(name: str, over, flat, par) -> float:
    """How many times longer group ``name``'s collectives (:data:`GROUP_COLLECTIVES`, the largest) take on its link
    ``over`` (through the oversubscribed uplinks) than on ``flat`` (the same fabric non-blocking), for a buffer of
    :data:`SLOWDOWN_BYTES` over the group's GPUs: 1 where its pattern sends little out of a leaf (a ring over servers
    laid out leaf by leaf sends one server's worth), up to the oversubscription (a pipeline hop across leaves)."""
    from archsim.collectives import collective_seconds

    if over is None or flat is None or over == flat:
        return 1.0
    size = {"tp": par.tp, "dp": par.dp * par.cp, "cp": par.cp, "ep": par.ep, "etp": par.etp or par.tp,
            "expert_dp": max(1, par.tp * par.dp // ((par.etp or par.tp) * par.ep)), "embedding": 2}.get(name, 2)
    return max(float(collective_seconds(kind, SLOWDOWN_BYTES, max(size, 2), over))
               / float(collective_seconds(kind, SLOWDOWN_BYTES, max(size, 2), flat))
               for kind in GROUP_COLLECTIVES.get(name, ("all-reduce",)))


def first_row_network(cluster, global_batch: int, rows: Sequence[dict], tied: bool = False) -> dict:
    """A search's meta's ``intra_server`` and ``inter_server``: :func:`network_meta` of its first row laid out as
    ``archsim train`` runs that row's ``command`` (its GPUs, server order and groups), so the same two entries as
    train's meta, figures and all; nothing without rows (no layout to price)."""
    from archsim.training.search_rows import row_layout

    if not rows:
        return {}
    par, placed = row_layout(cluster, global_batch, rows[0])
    return network_meta(placed, par, placed.laid_out(par), tied)


def _link_label(devices) -> str:
    """The in-server link's name: ``nvlink`` or ``pcie`` for catalog GPUs, ``fabric`` where a server's chip is a
    device file's (its ``[links] intra_gbps`` is NVLink, ICI or another chip-to-chip link: the file does not say)."""
    from archsim.devices.catalog import chip_of

    if not all(d.nvlink_bytes_per_s for d in devices):
        return "pcie"
    return "nvlink" if all(chip_of(d) is not None for d in devices) else "fabric"


def row_context(config, cluster, global_batch: int, seq: int | None) -> RowContext:
    """What every row's ``archsim train`` line of a search of ``config`` on ``cluster`` says beside the row
    (:class:`~archsim.training.search_rows.RowContext`): the search's global batch, the cluster's dtype, ``seq`` as
    given, the config's load imbalance, its all-to-all overlaps and the MTP modules' count where the model trains some
    or is a DeepSeek config, whose own count may differ."""
    from archsim.training.search_rows import RowContext, overlap_flags

    overlaps = (*((flag, True) for flag in overlap_flags(config)),
                *([("--mtp-layers", config.mtp_layers)] if config.mtp_layers or config.mla else []))
    return RowContext(global_batch, cluster.dtype, seq, config.moe_load_imbalance, overlaps)


def search_document(result, config, cluster, *, model: str, cluster_file: str, global_batch: int,
                    gpus: list[int] | None, seq: int | None, objective: str, balance: str, placement: str,
                    distributed_optimizer: bool = False, fsdp: bool = False, cps=(1,), cp_comms=("p2p",),
                    fsdp_reshard: str = "after-forward", fsdp_grad_sync: str = "micro-batch", eps=None,
                    etps=None, fp8: str | None = None, fp8_param_gather: bool = False, energy_source: str = "",
                    tps=None, pps=None) -> dict:
    """``{"meta": …, "rows": […]}`` as ``archsim search --format json`` prints it (before NaN becomes
    null): ``result`` (:class:`~archsim.training.search_result.SearchResult`) of ``config`` on ``cluster``; each
    row's ``command`` is the ``archsim train`` line naming ``model`` and ``cluster_file``; ``gpus`` and
    ``seq`` as given (None: the cluster's GPUs, the config's length); ``distributed_optimizer`` and ``fsdp``: the
    search's, each in the meta only when set (as in its rows), ``fsdp_reshard`` and ``fsdp_grad_sync`` only when
    not their defaults; ``cps`` and ``cp_comms``: the CP degrees and K/V
    exchanges searched, listed as ``gpus`` lists several counts (``2,4``; one: itself); ``eps``: the EP degrees as
    given (None: the search's default, :func:`~archsim.training.search_experts.expert_degrees`), in a mixture of experts' meta;
    ``etps``: the ETPs as given (``1,tp``), in the meta only when given and other than TP alone; ``fp8``: the recipe and
    the peak the rows' MFU divides by (the dtype's, as train's :func:`fp8_meta`), only when given; ``fp8_param_gather``
    beside them only when set (as train's meta and the search's rows carry it); ``config``'s ``moe_load_imbalance`` in
    the meta and each row's command, only when set, and its all-to-all overlaps likewise; ``tps``, ``pps``: the TPs and
    PPs searched, in the meta only when given (``--tp``, ``--pp``; None: every one), listed as ``cps``."""
    from archsim.training.search_experts import expert_degrees, expert_tp_degrees, expert_tp_text
    from archsim.training.search_rows import train_command

    context = row_context(config, cluster, global_batch, seq)
    command = lambda row: train_command(model, cluster_file, row, context)
    rows = [{**row, "command": command(row)} for row in result.rows]
    gains = [row["uneven_gain"] for row in result.rows if row["uneven_gain"] == row["uneven_gain"]]
    none = float("nan")  # no split applies (or no row): NaN, as the rows' own gain columns have it
    etp_tried = expert_tp_degrees(config, etps)
    meta = {"model": config.name, **parameter_meta(config), "seq": config.seq,
            "gpu": cluster.gpu_names, "dtype": cluster.dtype,
            **({"fp8": fp8, **({"fp8_param_gather": True} if fp8_param_gather else {}), "mfu_peak": cluster.dtype}
               if fp8 else {}),
            # several counts as the flag lists them; one an integer, as the cluster's own count is
            "gpus": ",".join(map(str, gpus)) if gpus and len(gpus) > 1 else gpus[0] if gpus else cluster.gpus,
            "global_batch": global_batch, "objective": objective, "balance": balance,
            "energy_source": energy_source,  # what the rows' energy_j holds (training.energy_sources.energy_sources)
            **{name: ",".join(map(str, given)) if len(given) > 1 else given[0]
               for name, given in (("tp", tps), ("pp", pps)) if given is not None},  # only when given: as before
            "cp": ",".join(map(str, cps)) if len(cps) > 1 else cps[0],
            "cp_comm": ",".join(cp_comms),
            **({"ep": ",".join(map(str, expert_degrees(config, eps)))} if config.moe else {}),
            **({"etp": expert_tp_text(etp_tried)} if config.moe and etp_tried != (None,) else {}),
            **({"moe_load_imbalance": config.moe_load_imbalance} if config.moe_load_imbalance is not None else {}),
            **({name: True for name in ("overlap_moe_expert_parallel_comm", "moe_shared_expert_overlap")
                if getattr(config, name)}),  # only when set (training/moe_overlap.py)
            **({"mtp_layers": config.mtp_layers} if config.mtp_layers else {}),  # only when trained (training/mtp.py)
            **({"distributed_optimizer": True} if distributed_optimizer else {}),  # only when set: as before
            **({"fsdp": True} if fsdp else {}),
            **({"fsdp_reshard": fsdp_reshard} if fsdp_reshard != "after-forward" else {}),
            **({"fsdp_grad_sync": fsdp_grad_sync} if fsdp_grad_sync != "micro-batch" else {}),
            "enumerated": result.enumerated, "costed": result.costed, "rejected": dict(result.rejected),
            "identical_rows_dropped": result.identical_rows_dropped,
            "uneven_gain_first_row": result.rows[0]["uneven_gain"] if result.rows else none,
            "uneven_gain_max": max(gains) if gains else none,
            **({"placement": placement,
                "placement_gain_first_row": result.rows[0]["placement_gain"] if result.rows else none}
               if placement == "planned" else {}),
            **first_row_network(cluster, global_batch, result.rows, config.tied_embeddings),
            # each with its train line too: a front's configuration below --top is no row to copy it from
            "pareto": [{**{k: v for k, v in row.items() if k != "megatron_args"}, "command": command(row)}
                       for row in result.pareto]}
    return {"meta": meta, "rows": rows}
