"""Energy of one training iteration, from the same ops the iteration is timed on.

* **Array devices** (a device file whose GEMMs run on its arrays, ``gemm = "arrays"``): archsim's
  energy model (:mod:`archsim.energy.model`; the default table, or a device file's ``[energy]`` table
  and figures: :func:`device_energies`) on the ops' accesses — each op's MACs,
  register moves, SRAM and DRAM words (compulsory, or with ``[memory] dram_traffic = "scalesim"`` the count op timing
  charges, :mod:`archsim.devices.array_dram`) and vector elements on one of the device's arrays
  (its shape, dataflow and SRAM; ``train --fp8``'s fp8 GEMMs with 8-bit operand words and an fp8 MAC:
  :func:`device_fp8_energies`), and the HBM words its memory-bound part reads and writes (its
  ``vector_elements``, at the table's DRAM energy per word), and a fused kernel's exponentials, FP32 lane
  operations and integer instructions (FlashAttention's softmax and dropout mask, at the table's ``[fused]``
  figures: :func:`~archsim.energy.model.nonmatmul_picojoules`; until 2026-12-04 none: a dropout mask added time
  and no energy) — summed over every op every device runs in the iteration (the op list the iteration is timed on,
  its attention's included): per micro-batch the layer ops × layers, the embedding and the head, the forward again
  under full recompute, × micro-batches × TP × DP; then each device's optimizer step, its bytes per parameter
  (:mod:`archsim.training.iteration`) at the DRAM energy. The default table has no leakage: a device file's
  ``[device] static_watts`` (W per chip, default 0) adds static_watts × chips × iteration seconds
  (:func:`static_joules`, the one formula: ``archsim sweep``'s device points are priced here too), so idle pipeline
  time costs energy. A device file's ``[links] pj_per_bit`` adds the bytes each chip sends on its links (collectives
  and pipeline hops, :mod:`archsim.training.link_energy`) at that figure, the ``links`` part (without it, the links
  are not counted). Not counted: the host.
* **Catalog GPUs** (and device files timed by tiles): board power × time, every GPU at its board
  power for the whole iteration (:func:`archsim.training.rates.watts`; an upper bound).

On a cluster mixing them, the iteration's energy is the sum over the devices used of each one's own: an array
device's by the energy model on the ops its own pipeline ranks run (their layers, the embedding on the rank of
the first stage, the head on the last's), the other GPUs' at board power × time. The meta says which
(``energy_source``: one source, or each device's where they differ).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, cast

from archsim.array.config import ArrayConfig
from archsim.choices.devices import ELEMENT_BYTES
from archsim.devices.device import Device
from archsim.errors import InputError
from archsim.training.cluster import LAYOUT_ERRORS
from archsim.training.energy_sources import BOARD_SOURCE, board_watts, device_source, sources_text
from archsim.training.mtp import mtp_config, projection_work
from archsim.training.parallel import Parallelism
from archsim.workload.layer_kinds import kind_configs
from archsim.workload.transformer import TransformerConfig

if TYPE_CHECKING:
    from archsim.training.run import TrainResult

def device_array(device: Device, dtype: str) -> ArrayConfig:
    """One of ``device``'s GEMM arrays as the energy model's :class:`ArrayConfig`: its three operand SRAMs at
    their stated sizes, KiB (a .cfg's SramSzkB keys, a TOML's three values), as ``archsim energy --config`` prices
    them; one stated figure is split in three equal buffers (whole KiB, at least 1)."""
    return _units_array(device, device.gemm_units(dtype), ELEMENT_BYTES[dtype])


def _units_array(device: Device, units, element_bytes: int) -> ArrayConfig:
    """``units``, one of ``device``'s array kinds, as :func:`device_array` prices it, at ``element_bytes``."""
    ifmap, filt, ofmap = device.operand_buffers_kib
    return ArrayConfig(rows=units.rows, cols=units.cols, dataflow=units.dataflow, ifmap_sram_kb=ifmap,
                       filter_sram_kb=filt, ofmap_sram_kb=ofmap, element_bytes=element_bytes,
                       clock_hz=units.clock_hz, name=device.name)


def device_file_array(path: str | Path, element_bytes: int = 1) -> tuple[Device, ArrayConfig]:
    """(device, array): the array ``archsim energy --config chip.toml`` prices: the device file's one array kind
    (:func:`~archsim.devices.device_file.load_device`, train's reader), its shape, dataflow, clock and three operand
    SRAMs (KiB) as :func:`device_array` gives train's energy model them, at ``element_bytes`` (bytes per word); its
    ``[energy]`` read beside it as a ``.cfg``'s is. Refused in one line: a tile-timed device and one of two kinds."""
    from archsim.devices.device_file import load_device

    device, file = load_device(path), str(path)
    if device.gemm != "arrays":
        raise InputError(f'its GEMMs are timed as a GPU library\'s tiles (gemm = "{device.gemm}"), on no array: the '
                         "array commands (cost, energy, gemm, pipeline, schedule) count and price one array's cycles "
                         "and its SRAM traffic, which such a chip has none of, so they take a gemm = \"arrays\" device; "
                         "train and search (a cluster file's [[servers]] device) and validate-gpu --gpu on NeuSight "
                         "kernel CSVs take it, timing its ops by the one op timer (kernel_ops.op_seconds; train's "
                         "energy: board power × time)", file=file, field="device.gemm")
    if device.lanes is not None:
        arrays, lanes = device.arrays, device.lanes
        raise InputError(f"two array kinds ({arrays.count} {arrays.rows} × {arrays.cols} arrays and {lanes.count} "
                         f"{lanes.rows} × {lanes.cols} fp32 lanes): the array commands (cost, energy, gemm, pipeline, "
                         "schedule) cost and price one array kind, so give them a file of one kind; train and search "
                         "(a cluster file's [[servers]] device) and validate-gpu --gpu on NeuSight kernel CSVs take "
                         "it, timing fp32 GEMMs on the lanes and the rest on the arrays (kernel_ops.op_seconds)",
                         file=file,
                         field="compute.lanes")
    return device, _units_array(device, device.arrays, element_bytes)


LEAKAGE_ON_DEVICE = ("train and search price a device file's static power as [device] static_watts (W per chip, "
                     "over the whole iteration), not as the energy model's leakage per op")


def load_priced_device(path: str | Path) -> Device:
    """The device a device file describes (:func:`~archsim.devices.device_file.load_device`) with its ``[energy]``
    section (table and per-event figures, a ``.cfg``'s or a TOML's: :func:`~archsim.energy.file_energy.read_cfg_energy`)
    read as ``archsim energy --config`` reads a ``.cfg``'s, so that train, search and device sweeps price the figures
    the file states; its leakage is refused (:data:`LEAKAGE_ON_DEVICE`). Read here: ``devices/`` stays out of tables."""
    from dataclasses import replace

    from archsim.devices.device_file import load_device
    from archsim.energy.file_energy import cfg_table, energy_key_error, read_cfg_energy
    from archsim.energy.table import LEAKAGE_FIGURES

    device = load_device(path)
    cfg = read_cfg_energy(path, leakage=False)
    for key in LEAKAGE_FIGURES:
        if cfg.overrides.get(key):  # at its line, as the reader's own refusals of the section's keys
            raise energy_key_error(LEAKAGE_ON_DEVICE, path, key)
    if cfg.table is not None:
        table = cfg_table(cfg.table)
        if table.pe_leakage_mw or table.sram_leakage_mw_per_kib:
            raise energy_key_error(f"energy table {table.name!r} has leakage: {LEAKAGE_ON_DEVICE}", path, "table")
    return replace(device, energy_table=cfg.table, energy_figures=tuple(sorted(cfg.overrides.items())))


def device_energies(device: Device, array: ArrayConfig):
    """Per-event energies (pJ) of ``array``, one of ``device``'s: its device file's ``[energy]`` table and
    figures where it states them (as ``archsim energy --config`` prices that file), else the default table's."""
    from archsim.energy.file_energy import cfg_table
    from archsim.energy.table import access_energies

    table = cfg_table(device.energy_table) if device.energy_table else None
    return access_energies(array, table, dict(device.energy_figures))


def device_fp8_energies(device: Device, array: ArrayConfig, energies):
    """Per-event energies (pJ) of an fp8 GEMM on ``array``, one of ``device``'s (``energies``: its training dtype's,
    :func:`device_energies`): its operands A and B at 8 bits, its MAC an fp8 one, the rest the training dtype's
    (:func:`~archsim.energy.table.fp8_gemm_energies`); ``energies`` itself where the table has no fp8 MAC figure."""
    from archsim.energy.file_energy import cfg_table
    from archsim.energy.table import fp8_gemm_energies, load_table

    table = cfg_table(device.energy_table) if device.energy_table else load_table()
    return fp8_gemm_energies(energies, array.element_bytes, table, dict(device.energy_figures)) or energies


# energy_breakdown_j's parts, in the meta's order, and the energy model's per-op columns each sums
# (archsim.energy.model.PARTS): dram adds the memory-bound ops' HBM words and the optimizer step; nonmatmul is a
# fused kernel's work (nonmatmul_picojoules); leakage adds an array device's static_watts × chips × seconds
ENERGY_PARTS = ("mac", "register", "sram", "dram", "vector", "nonmatmul", "leakage")
@lru_cache(maxsize=1)
def _grouped_columns() -> dict[str, tuple[str, ...]]:
    """The energy model's per-op columns (:data:`archsim.energy.model.ENERGY_COLUMNS`, less their total) by part:
    a column's part is its name's first word (``mac_pj``, ``ifmap_sram_read_pj`` → ``sram``, …), so a column the
    model gains is counted in a part, or refused here, never dropped."""
    from archsim.energy.model import ENERGY_COLUMNS

    groups: dict[str, tuple[str, ...]] = {}
    for column in ENERGY_COLUMNS:
        if column != "energy_pj":
            part = next((p for p in ENERGY_PARTS if p in column.split("_")), None)
            assert part is not None, f"energy column {column} belongs to no part of ENERGY_PARTS"
            groups[part] = (*groups.get(part, ()), column)
    return groups



def ops_energy_parts(ops, array: ArrayConfig, energies, fp8_energies=None, dram=None,
                     fp8_dram=None) -> tuple[float, ...]:
    """Picojoules of ``ops`` by :data:`ENERGY_PARTS`: the energy model's per-op columns summed part by part (an op
    whose GEMMs take fp8 operands, ``gemm_dtype`` fp8, at ``fp8_energies``: :func:`device_fp8_energies`), the
    memory-bound ops' HBM words (their ``vector_elements``, at the DRAM read figure) under dram, their fused kernels'
    non-matmul work under nonmatmul. ``dram``, ``fp8_dram``: the GEMMs' DRAM count op timing charges
    (:func:`archsim.devices.array_dram.device_dram_words`, a device file's ``dram_traffic = "scalesim"``) in the
    training dtype and in fp8; None: compulsory traffic."""
    from archsim.choices.devices import FP8
    from archsim.energy.model import nonmatmul_picojoules, op_energy_columns

    part = dict.fromkeys(_grouped_columns(), 0.0)
    fp8 = fp8_energies is not None
    low = [op for op in ops if fp8 and op.gemm_dtype == FP8]
    for group, figures, words in (([op for op in ops if not (fp8 and op.gemm_dtype == FP8)], energies, dram),
                                  (low, fp8_energies, fp8_dram)):
        if group:
            columns = op_energy_columns(group, array, figures, dram=words)
            for name, names in _grouped_columns().items():
                part[name] += sum(float(columns[column].sum()) for column in names)
    part["dram"] += sum(op.vector_elements for op in ops) * energies.dram_read_pj
    part["nonmatmul"] = nonmatmul_picojoules(ops, energies)
    return tuple(part[name] for name in ENERGY_PARTS)


@lru_cache(maxsize=256)
def _piece_parts(c: TransformerConfig, micro_batch: int, tp: int, sequence_parallel: bool, attention: str,
                 recompute: str, device: Device, dtype: str, implementation: str, cp: int = 1,
                 cp_comm: str = "p2p", cp_hierarchy: tuple[int, int] | None = None, ep: int = 1,
                 etp: int | None = None, fp8: str | None = None) -> tuple[tuple[float, ...], ...]:
    """Picojoules by :data:`ENERGY_PARTS` (:func:`ops_energy_parts`) of one micro-batch on one device of a TP group
    (module docstring), of one layer, the embedding and the head of the op list the iteration is timed on
    (``implementation`` in ``dtype``: :func:`~archsim.training.iteration.piece_works`), a layer's forward again
    under full recompute (``fp8``: the list's linear GEMMs and quantize kernels under it, the GEMMs' accesses
    priced with their operands at 8 bits and an fp8 MAC: :func:`device_fp8_energies`). Cached: a search prices many configurations that share
    these."""
    from archsim.choices.devices import FP8
    from archsim.devices.array_dram import device_dram_words
    from archsim.training.iteration import piece_works

    lists, _ = piece_works(c, micro_batch, tp, sequence_parallel, attention, implementation, dtype, cp, cp_comm,
                           cp_hierarchy, ep, etp, fp8)
    # and an MTP module's projection, rerun with its layer under full recompute (mtp.py)
    pieces = (*lists, *([projection_work(c, micro_batch, tp, sequence_parallel)] if c.mtp_layers else []))
    array = device_array(device, dtype)
    energies = device_energies(device, array)
    low = device_fp8_energies(device, array, energies) if fp8 else None
    dram, low_dram = device_dram_words(device, dtype), device_dram_words(device, FP8)  # None: compulsory
    out = []
    for index, work in enumerate(pieces):
        ops = [*work.forward, *work.backward]
        if index in (0, 3) and recompute == "full":
            ops += list(work.forward)
        out.append(ops_energy_parts(ops, array, energies, low, dram, low_dram))
    return tuple(out)


def array_iteration_parts(c: TransformerConfig, par: Parallelism, device: Device, dtype: str,
                          implementation: str = "megatron", parameters: float = 0.0, ranks=None) -> tuple[float, ...]:
    """Joules of one iteration on array devices by :data:`ENERGY_PARTS` (module docstring; the optimizer step under
    dram); ``parameters``: the parameters those devices hold together (each device's optimizer step reads and writes
    its own); ``ranks``: the pipeline ranks on ``device`` (default every rank: the whole model). Each layer is its
    kind's (:mod:`~archsim.workload.layer_kinds`)."""
    from archsim.training.iteration import optimizer_step_bytes
    from archsim.training.stages import rank_pieces

    layers, embeddings, heads = rank_pieces(c, par, ranks)

    def parts(config: TransformerConfig) -> tuple[tuple[float, ...], ...]:
        return _piece_parts(config, par.micro_batch, par.tp, par.sequence_parallel, par.attention, par.recompute,
                            device, dtype, implementation, par.cp, par.cp_comm, par.cp_hierarchy, par.ep,
                            par.etp, par.fp8)

    own = parts(c)
    pieces = [(parts(config)[0], count) for config, count in zip(kind_configs(c).values(), layers, strict=True)]
    pieces += [(own[1], embeddings), (own[2], heads)]
    if c.mtp_layers:  # the head's MTP modules (mtp.py): each a layer, the embedding, the head and the projection
        pieces += [(piece, c.mtp_layers * heads) for piece in (parts(mtp_config(c))[0], own[1], own[2], own[3])]
    per_microbatch = [sum(piece[i] * count for piece, count in pieces) for i in range(len(ENERGY_PARTS))]
    array = device_array(device, dtype)
    optimizer = parameters * optimizer_step_bytes(dtype) / array.element_bytes * device_energies(device, array).dram_read_pj
    scale = par.microbatches * par.tp * par.cp * par.dp
    return tuple((picojoules * scale + (optimizer if name == "dram" else 0.0)) * 1e-12
                 for name, picojoules in zip(ENERGY_PARTS, per_microbatch, strict=True))


def array_iteration_joules(c: TransformerConfig, par: Parallelism, device: Device, dtype: str,
                           implementation: str = "megatron", parameters: float = 0.0, ranks=None) -> float:
    """Joules of one iteration on array devices: the sum of :func:`array_iteration_parts` (the same arguments)."""
    return sum(array_iteration_parts(c, par, device, dtype, implementation, parameters, ranks))


def chip_static_watts(device: Device, array_leakage_mw: float = 0.0) -> float:
    """Static power of one of ``device``'s chips (W): its ``static_watts`` plus each of its arrays' own leakage
    (``array_leakage_mw``, mW per array with its SRAMs: :func:`~archsim.energy.model.static_power_mw`; train and
    search refuse leakage figures on a device file, so theirs is 0) × its arrays."""
    return device.static_watts + device.arrays.count * array_leakage_mw * 1e-3


def static_joules(device: Device, gpus: int, seconds: float, array_leakage_mw: float = 0.0) -> float:
    """Joules an array device's chips leak over one iteration: :func:`chip_static_watts` (W per chip) × ``gpus`` ×
    ``seconds``. The one formula: ``train``, ``search``, device sweeps and ``archsim energy`` on a device file of
    several arrays (over the chip's seconds) price static energy here."""
    return chip_static_watts(device, array_leakage_mw) * gpus * seconds


LINKS_PART = "links"  # energy_breakdown_j's part of a device file's [links] pj_per_bit, only where one states it


def _device_link_joules(c: TransformerConfig, par: Parallelism, cluster, device: Device, ranks: list[int],
                        memory) -> float:
    """Joules ``device``'s chips (pipeline ranks ``ranks``, TP × DP × CP chips each) spend on their links in one
    iteration: each rank's bytes per chip (:func:`~archsim.training.link_energy.rank_link_bytes`, on the rank's own
    machine and its parameters) at the device's ``[links] pj_per_bit``."""
    from archsim.training.link_energy import link_joules, rank_link_bytes

    machines = cluster.laid_out(par)
    sent = sum(rank_link_bytes(c, par, machines[r], r, memory[r].parameters if r < len(memory) else 0.0)
               for r in ranks)
    return link_joules(sent * par.tp * par.replicas, device.link_pj_per_bit)


def cluster_iteration_energy(c: TransformerConfig, par: Parallelism, cluster, seconds: float,
                             implementation: str = "megatron",
                             memory=()) -> dict[str, float | str | dict[str, float] | None]:
    """A transformer's training iteration priced on a cluster (not :func:`archsim.energy.iteration_energy`, one array
    network's iteration by op kind, until 2026-12-05 its namesake):
    ``energy_j`` (None when no figure is known) and ``energy_source`` of one iteration on ``cluster``, laid out
    as ``par`` (each pipeline rank on GPUs of one type): the sum over the devices used of each one's own (module
    docstring); ``memory``: each pipeline rank's :class:`~archsim.training.memory.StageMemory` (its parameters
    per device, for the optimizer step). ``archsim train`` and ``archsim search`` both price energy here.
    ``energy_source``: the one source, or each device's (``NAME: source``, joined by ``;``) where they differ. On
    array devices alone, one stating static power, ``energy_dynamic_j`` and ``energy_static_j`` are the two parts
    of ``energy_j`` (J); elsewhere absent. On array devices alone, ``energy_breakdown_j``: ``energy_j`` by
    :data:`ENERGY_PARTS` (J; their sum), and :data:`LINKS_PART` where a device states ``[links] pj_per_bit`` (its
    chips' link joules, in ``energy_j`` and its dynamic part); absent where a GPU is priced at board power (no parts
    of it are known)."""
    kinds = cluster.rank_gpus(par)
    if kinds is None:
        raise InputError(LAYOUT_ERRORS["stage-mixes-gpu-types"], field="tp")
    ranks: dict[Device, list[int]] = {}
    for rank, device in enumerate(kinds):
        ranks.setdefault(device, []).append(rank)
    dynamic = static = links = 0.0
    parts = [0.0] * len(ENERGY_PARTS)
    sources: dict[str, list[str]] = {}  # source → the devices priced by it
    for device, own in ranks.items():
        if device.gemm != "arrays":
            continue
        held = sum(memory[r].parameters for r in own if r < len(memory))
        joules = array_iteration_parts(c, par, device, cluster.dtype, implementation,
                                       held * par.tp * par.replicas / par.optimizer_shards,  # each 1/DP
                                       None if len(own) == par.pp else own)
        parts = [total + part for total, part in zip(parts, joules, strict=True)]
        dynamic += sum(joules)
        if device.link_pj_per_bit:
            links += _device_link_joules(c, par, cluster, device, own, memory)
        static += static_joules(device, len(own) * par.tp * par.replicas, seconds)
        sources.setdefault(device_source(device), []).append(device.name)
    boards = [device.name for device in ranks if device.gemm != "arrays"]
    board = 0.0
    if boards:
        try:
            board = seconds * board_watts(cluster, par.gpus)
        except InputError as exc:
            return {"energy_j": None, "energy_source": f"none: {exc.message}"}
        sources[BOARD_SOURCE] = boards
    source = sources_text(sources)
    dynamic += links  # the links' bytes are dynamic energy too
    if boards:
        return {"energy_j": dynamic + static + board, "energy_source": source}
    breakdown = dict(zip(ENERGY_PARTS, parts, strict=True))
    breakdown["leakage"] += static  # the stated static power, beside the energy model's own leakage
    if any(device.link_pj_per_bit for device in ranks):
        breakdown[LINKS_PART] = links
    if not any(device.static_watts for device in ranks):
        return {"energy_j": dynamic + static, "energy_source": source, "energy_breakdown_j": breakdown}
    return {"energy_j": dynamic + static, "energy_source": source, "energy_dynamic_j": dynamic,
            "energy_static_j": static, "energy_breakdown_j": breakdown}


def priced(result: TrainResult, c: TransformerConfig, par: Parallelism, cluster,
           implementation: str = "megatron") -> TrainResult:
    """``result`` with its iteration's ``energy_j`` and ``energy_source`` (:func:`cluster_iteration_energy` on the
    laid-out ``par`` and ``cluster`` the iteration ran on): the one place ``archsim train`` and
    ``archsim.train`` price an iteration, so the two give the same figure."""
    from dataclasses import replace

    energy = cluster_iteration_energy(c, par, cluster, result.iteration_seconds, implementation, memory=result.memory)
    return replace(result, energy_j=cast("float | None", energy["energy_j"]), energy_source=str(energy["energy_source"]),
                   energy_static_j=cast("float | None", energy.get("energy_static_j")),
                   energy_dynamic_j=cast("float | None", energy.get("energy_dynamic_j")),
                   energy_breakdown_j=cast("dict[str, float] | None", energy.get("energy_breakdown_j")))


__all__ = [
    "ENERGY_PARTS",
    "LEAKAGE_ON_DEVICE",
    "LINKS_PART",
    "array_iteration_joules",
    "array_iteration_parts",
    "chip_static_watts",
    "cluster_iteration_energy",
    "device_array",
    "device_energies",
    "device_file_array",
    "device_fp8_energies",
    "load_priced_device",
    "ops_energy_parts",
    "priced",
    "static_joules",
]
