"""Reading a cluster TOML into a :class:`~archsim.training.cluster.GpuCluster`: today's cluster file
(:mod:`archsim.spp.topology` checks its keys and builds its topology) with each ``[[servers]]`` table
naming its GPU by catalog name (``gpu = "a100-80gb"``) or a device file (``device = "PATH"``, relative
to the cluster file: :mod:`archsim.devices.device_file`). Every server's device is a
:class:`~archsim.devices.device.Device`; a catalog GPU's kernels are the fitted ones
(:func:`archsim.training.fitted.kernels`), a device file's are its own. The GPU count, each server's in-server
link and the network between servers (:func:`archsim.network.read_network`'s) are the topology's, which the
cluster holds (:attr:`GpuCluster.topology <archsim.training.cluster.GpuCluster.topology>`); a server may override the objectives' figures with
``price_per_gpu_hour`` (USD) and ``gpu_watts`` (:mod:`archsim.training.rates`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path

from archsim.choices.devices import DEVICE_SUFFIXES, DTYPES
from archsim.devices.device import Device, catalog_device
from archsim.devices.nonmatmul import assumed_lanes_note
from archsim.errors import InputError
from archsim.links import fabric_bytes_per_s
from archsim.network import ServerNetwork, network_warnings_and_notes, nic_speed_warning, read_network
from archsim.spp.cluster_document import gpu_not_a_count, read_cluster_document, server_gpu
from archsim.spp.topology import cluster_layout, missing_inter_server
from archsim.toml_errors import located, within
from archsim.training.cluster import GpuCluster
from archsim.training.parallel import Parallelism
from archsim.training.shared_nic import shared_nic_note
from archsim.units import GIB
from archsim.validate import folder_ending, shown_number, suffixed_files
from archsim.value_parsers import check_choice, parse_float

MAX_PRICE_OR_WATTS = 1e6  # USD per GPU-hour and watts per GPU a server may override with (far above any real one)
# a training cluster's GPUs: Llama 3 405B's 16,384 H100s (Dubey et al. 2024, Table 4). Train and search price no GPU
# pair; plan's GPUs × GPUs matrix (GpuCluster.topology) is drawn only when asked for, 2 GiB an array at this size
MAX_GPUS = 16384


def _server_device(group: dict, folder: Path, file: str, loaded: dict[str, Device]) -> Device:
    """A ``[[servers]]`` table's device: its catalog ``gpu`` or its ``device`` file (one of the two)."""
    name, path = group.get("gpu"), group.get("device")
    gpu_not_a_count(name, file)
    if name is not None and path is not None:  # which of the two was meant, only the user knows: neither is read
        raise InputError(f"names both gpu = {name!r} and device = {path!r}: a [[servers]] table's chips are a "
                         "catalog GPU or a device file's, not both; keep one of the two", file=file, field="device")
    if name is None and path is None:  # plan prices such a server on an array; train and search need its chip
        raise InputError('every [[servers]] table needs gpu = "<catalog name>" or device = "<device file>" '
                         "(one of the two) to train on", file=file, field="gpu")
    if path is not None:
        if not isinstance(path, str) or not path.strip():
            raise InputError(f"expected a device file's path, got {path!r}", file=file, field="device")
        if folder_ending(path) is not None:  # Path would drop the '/' and read the file it does not name
            raise InputError(f"device file {path!r} named as a folder (a name ending in {folder_ending(path)!r}): "
                             "give the file's name without it", file=file, field="device")
        if path not in loaded:
            from archsim.training.energy import load_priced_device  # a catalog GPU's cluster reads no device file

            if not (folder / path).exists():
                beside = suffixed_files(folder, path, DEVICE_SUFFIXES)
                hint = f': the folder has {beside[0]}: write device = "{beside[0]}"' if beside else ""
                raise InputError(f"device file {folder / path} not found (a device path is read relative to the "
                                 f"cluster file's folder){hint}", file=file, field="device")
            loaded[path] = load_priced_device(folder / path)
        return loaded[path]
    return server_gpu(name, file)


def _check_one_chip_per_name(device: Device, group: dict, earlier: Iterable[tuple[dict, Device]], file: str) -> None:
    """Refuse a server's device whose name an earlier server's different device has: a cluster tells its GPU
    types apart by name (heterogeneity, a stage's one type, placement, the outputs' ``gpu``), so two chips of
    one name (``chip_a.toml`` and ``chip_b.toml``, both ``name = "mychip"``) would be laid out and costed as
    one. ``earlier``: the (``[[servers]]`` table, device) pairs before ``group``."""
    for other_group, other in earlier:
        if other.name == device.name and other != device:
            raise InputError(f"{_source(other_group)} and {_source(group)} both name their chip {device.name!r} "
                             "but describe different chips: give each its own [device] name", file=file,
                             field="device")


def _source(group: dict) -> str:
    """What a ``[[servers]]`` table names its device by, as the file writes it."""
    return f"device file {group['device']}" if "device" in group else f"gpu = {group['gpu']!r}"


def _intra_unit_warning(intra: float, device: Device, file: str | None = None) -> str:
    """A plausibility warning for ``intra_server_gbps`` stated as the GPU's own NVLink in bytes: Gbit/s both
    directions is what the key takes (an H100's 7200), but vendors quote GB/s (900 both directions, 450 per
    direction), and that figure runs every in-server collective 8 or 16 times slower without a word. Empty unless
    the figure is the board's exactly 8 or 16 times too small (a what-if bandwidth other than that is read quietly).
    ``file``: the server's device file, whose link is its ``[links] intra_gbps`` (NVLink, ICI or another fabric:
    the file does not say), named so, and whose own figure may be the slip instead (Gbit/s written where the key
    takes GB/s per direction); None for a catalog GPU, whose link is its NVLink (its PCIe bus on a card without)."""
    own = device.fabric_bytes_per_s * 8 * 2 / 1e9  # the board's figure as the key takes it, Gbit/s both directions
    fabric = "NVLink" if device.nvlink_bytes_per_s else "PCIe"  # a PCIe card's in-server link is its bus
    link = f"the {device.name}'s {fabric}" if file is None else f"{file}'s [links] intra_gbps"
    # the two keys' units side by side; beside a device file either figure may be the slip (the device file's in
    # Gbit/s gives the same ratio), so both fixes are named, the cluster's first
    units = "" if file is None else ", the device file's intra_gbps GB/s per direction"
    for ratio, unit, device_unit in ((8, "GB/s both directions", "Gbit/s per direction"),
                                     (16, "GB/s per direction", "Gbit/s both directions")):
        if math.isclose(intra * ratio, own, rel_tol=1e-3):
            stated = device.fabric_bytes_per_s / 1e9
            other = "" if file is None else (f"; if {file}'s intra_gbps = {stated:g} is in {device_unit} instead, "
                                             f"write intra_gbps = {stated / ratio:g} there and keep "
                                             f"intra_server_gbps = {intra:g}")
            return (f"intra_server_gbps = {intra:g} is {link} in {unit} ({own:g} Gbit/s both "
                    f"directions): the cluster file's [[servers]] intra_server_gbps takes Gbit/s both directions"
                    f"{units}, so it runs 1/{ratio} of the link; if that was the unit, write intra_server_gbps = "
                    f"{own:g}{other}")
    return ""


def load_gpu_cluster(path: str | Path, dtype: str = "fp16") -> GpuCluster:
    """Read a cluster TOML whose servers each name a catalog GPU or a device file; its machines train
    in ``dtype``."""
    check_choice(dtype, DTYPES, "dtype")  # --dtype's line
    file = str(path)
    spec = read_cluster_document(path)
    with located(spec, file):  # a key's error names its line
        return gpu_cluster(spec, Path(path).parent, file, dtype)


def gpu_cluster(spec: dict, folder: Path, file: str, dtype: str = "fp16",
                loaded: dict[str, Device] | None = None) -> GpuCluster:
    """A parsed cluster TOML's cluster (:func:`load_gpu_cluster`); ``folder``: where its device paths are
    read from; ``loaded``: devices already made, by the ``device`` path that names them (a device sweep's
    edited device, which has no file)."""
    # each table's device read first (a table without intra_server_gbps runs its device's own link), then the
    # file read into plan's topology: its GPUs, each server's fabric and the network are this record's
    loaded = dict(loaded or {})
    devices = named_devices(spec, folder, file, loaded)
    layout = cluster_layout(spec, file=file, max_devices=MAX_GPUS, network_links=True, devices=devices,
                            default_gbps=device_inter_node_gbps(devices))  # its pairs priced if asked for
    if "gpu_memory_gb" in spec["cluster"]:  # the array planners' figure; a GPU's board (or device file) sizes it here
        raise InputError("sizes archsim plan's GPUs only: train and search take each GPU's memory from its catalog "
                         'board or device file; name a GPU of that memory (gpu = "a100-40gb") or a device file',
                         file=file, field="gpu_memory_gb")
    servers = spec["servers"]
    kinds: list[Device] = []
    prices: list[float | None] = []
    watts: list[float | None] = []
    tables: list[Device] = []  # each [[servers]] table's device
    usable: dict[str, float] = {}  # each GPU name's bytes a job may allocate, where a table states usable_memory_gib
    for n, group in enumerate(servers):
        with within(file, f"servers[{n + 1}]"):  # which [[servers]] table, and so its line
            device = _server_device(group, folder, file, loaded)
            _check_one_chip_per_name(device, group, zip(servers, tables), file)
        tables.append(device)
        intra = group.get("intra_server_gbps")
        if isinstance(intra, list):  # plan draws a figure within it (its seed); an iteration needs the one it ran at
            raise InputError("a [low, high] range is drawn by archsim plan; train and search take one figure, "
                             "Gbit/s", file=file, field=f"servers[{n + 1}].intra_server_gbps")
        for key, out in (("price_per_gpu_hour", prices), ("gpu_watts", watts)):
            value = group.get(key)
            if value is not None:  # a TOML number only (not a string), finite, in (0, 10⁶]
                try:
                    if isinstance(value, str):
                        raise ValueError(f"expected a positive number, got {shown_number(value)}")  # noqa: TRY004 (parse_float's ValueError, one handler)
                    value = parse_float(value, low=0.0, high=MAX_PRICE_OR_WATTS, low_open=True,
                                        what="a positive number")
                except ValueError as exc:
                    raise InputError(str(exc), file=file, field=f"servers[{n + 1}].{key}") from None
            out.extend([value] * group.get("count", 1))
        _usable_memory(device, group.get("usable_memory_gib"), usable, file, n)
        kinds.extend([device] * group.get("count", 1))
    per_server = max(group["gpus"] for group in servers)  # a shared NIC: the most GPUs share one (the slowest per GPU)
    nic = device_inter_node_gbps(kinds)  # the device files' own NIC: used where the file gives none
    if len(kinds) > 1 and "network" not in spec and spec["cluster"].get("inter_server_gbps") is None and not nic:
        raise missing_inter_server(file)  # no figure, or device files that state different ones
    # the topology's network (a drawn inter_server_gbps range has none: read_network refuses it)
    network = layout.network or read_network(spec, per_server, file, default_gbps=nic)
    warnings, unread = cluster_file_warnings_and_notes(spec, tables, network, len(kinds))
    warnings += tuple(dict.fromkeys(line for group, device in zip(servers, tables, strict=True)
                                    if (line := watts_warning(group.get("gpu_watts"), device))))
    return GpuCluster(len(layout.servers), kinds[0], tuple(kinds), tuple(prices), tuple(watts), network, dtype,
                      layout.fabrics, unread, warnings, tuple(sorted(usable.items())),
                      _comm_sms(spec["cluster"].get("comm_sms"), kinds, file),
                      tori=layout.tori if any(layout.tori) else (), file_layout=layout)



WATTS_RATIO = 10  # a stated gpu_watts this many times above or below the board's power is no GPU's draw


def watts_warning(watts: float | None, device: Device) -> str:
    """The warning (one line; empty where none) on a ``[[servers]]`` ``gpu_watts`` more than :data:`WATTS_RATIO`
    times above or below its GPU's board power (a GPU under load draws about its board power or less, never ten
    times it): the energy objective and ``energy_j`` read it as given, so a figure in kW or mW gives joules 1000×
    off. Where the ratio is near 1000 the unit is named with the figure to write. None on a chip without a board
    power (a device file that states none) or an array device (gemm = "arrays"), whose energy is the energy model's
    and which is told it does not read the key."""
    board = device.board_watts
    if watts is None or not board or device.gemm == "arrays" or board / WATTS_RATIO <= watts <= board * WATTS_RATIO:
        return ""
    ratio = watts / board
    unit = (f"; if that is kW, write gpu_watts = {watts * 1000:g}" if ratio < 1 / 200 else
            f"; if that is mW, write gpu_watts = {watts / 1000:g}" if ratio > 200 else "")
    factor = ratio if ratio > 1 else 1 / ratio  # above 10 either way: a whole number reads best (1,000, not 1e+03)
    times = f"{factor:,.0f}×" if ratio > 1 else f"1/{factor:,.0f} of"
    return (f"gpu_watts = {watts:g} is {times} the {device.name}'s {board:g} W board power: energy_j and the energy "
            f"objective run at it as given{unit}")


def _comm_sms(value: object, devices: Sequence[Device], file: str) -> int | None:
    """``[cluster]``'s ``comm_sms``: the SMs an overlapped collective holds on each GPU while compute runs beside it
    (:mod:`archsim.training.comm_sms`; absent: None, each GPU's own ``Device.comm_sms``), a whole number from 0
    (the overlap free) to one fewer than the fewest SMs a GPU here has (one must compute)."""
    if value is None:
        return None
    fewest = min(device.sms for device in devices)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < fewest:
        raise InputError(f"expected a whole number of SMs from 0 to {fewest - 1} (one fewer than the fewest a GPU "
                         f"here has), got {shown_number(value)}", file=file, field="comm_sms")
    return value


def _usable_memory(device: Device, gib: object, usable: dict[str, float], file: str, table: int) -> None:
    """Add a table's ``usable_memory_gib`` (GiB, 2³⁰ bytes: the memory a job may allocate on each of its GPUs, what
    ``fits_memory`` and search's out-of-memory rule compare a rank's states and activations with, less the CUDA
    context, NCCL's buffers and fragmentation the model leaves out) to ``usable``, by its GPU's name. Refused above the
    board's memory, and where tables of one GPU state two figures (a GPU type is one capacity in a layout)."""
    if gib is None:
        return
    field = f"servers[{table + 1}].usable_memory_gib"
    try:
        if isinstance(gib, str):
            raise ValueError(f"expected a positive number of GiB, got {shown_number(gib)}")  # noqa: TRY004 (one handler)
        value = parse_float(gib, low=0.0, high=MAX_PRICE_OR_WATTS, low_open=True, what="a positive number of GiB")
    except ValueError as exc:
        raise InputError(str(exc), file=file, field=field) from None
    if value * GIB > device.memory_bytes:
        raise InputError(f"{value:g} GiB is above the {device.name}'s {device.memory_bytes / GIB:.4g} GiB: a job "
                         "allocates at most the board's memory", file=file, field=field)
    if usable.setdefault(device.name, value * GIB) != value * GIB:
        raise InputError(f"another [[servers]] table gives the {device.name} {usable[device.name] / GIB:g} GiB: "
                         "state one figure per GPU type", file=file, field=field)


def named_devices(spec: dict, folder: Path, file: str,
                  loaded: dict[str, Device] | None = None) -> tuple[Device | None, ...]:
    """Each ``[[servers]]`` table's device where it names one (None where it names neither, or is no table):
    what train and archsim plan read for the links (a table's own in-server link where it states none,
    :func:`~archsim.spp.cluster_document.server_fabric`) and warnings a device states, whatever prices its layers. Each
    device file is read once; ``loaded``: devices already read, by path (added to)."""
    servers = spec.get("servers")
    loaded = {} if loaded is None else loaded
    devices: list[Device | None] = []
    for n, group in enumerate(servers if isinstance(servers, list) else ()):
        with within(file, f"servers[{n + 1}]"):  # which [[servers]] table, and so its line
            devices.append(_server_device(group, folder, file, loaded)
                           if isinstance(group, dict) and ("gpu" in group or "device" in group) else None)
    return tuple(devices)


def device_inter_node_gbps(devices: Sequence[Device | None]) -> float:
    """The servers' devices' own NIC, Gbit/s (a device file's ``[links] inter_node_gbps``): what train, search
    and plan run between servers where the cluster file states no inter-server bandwidth (neither
    ``inter_server_gbps`` nor ``[network]``). 0 where they state none, state different ones, or a server names no
    device: the file must then state it (:func:`archsim.spp.topology.missing_inter_server`)."""
    nic = {0.0 if device is None else device.inter_node_gbps for device in devices}
    return nic.pop() if len(nic) == 1 else 0.0


def cluster_file_warnings_and_notes(spec: dict, tables: Sequence[Device | None], network: ServerNetwork | None,
                                    servers: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What a cluster document states that train, search and plan say on stderr, one line each, once: warnings
    (a figure that is plausible only in another unit: an in-server link that is the GPU's own NVLink in GB/s, a
    NIC speed no NIC has, a device file's HBM or SRAM figure no chip has) and notes (a figure another one replaces: a device file's in-server link, and the
    network's, :func:`archsim.network.network_warnings_and_notes`). ``tables``:
    each ``[[servers]]`` table's device (None: it names none, nothing to judge its figures by); ``network``: the
    network as read (None: plan's drawn ``[low, high]`` range, no one NIC figure); ``servers``: the server count.
    A drawn in-server range is not judged either."""
    from archsim.devices.device_file import implausible_figures
    from archsim.devices.unread_keys import unread_keys_note

    overridden: list[str] = []  # notes: a device file's link that the cluster's in-server figure replaces
    slipped: list[str] = []  # warnings: an in-server figure that is the GPU's own in another unit
    for group, device in zip(spec["servers"], tables):
        if device is None:
            continue
        slipped.extend(implausible_figures(device))  # an HBM or SRAM figure whose unit slipped (none for a catalog GPU)
        intra = group.get("intra_server_gbps")
        if isinstance(intra, (int, float)):
            fabric = fabric_bytes_per_s(intra)
            if "device" in group and not math.isclose(fabric, device.fabric_bytes_per_s, rel_tol=1e-9):
                # two required statements of the chip's link that disagree: say which one prices the collectives
                overridden.append(f"[[servers]] intra_server_gbps = {intra:g} ({fabric / 1e9:g} GB/s per direction "
                                  f"per GPU) prices the in-server links, not {group['device']}'s [links] intra_gbps "
                                  f"= {device.fabric_bytes_per_s / 1e9:g} GB/s")
            unit_slip = _intra_unit_warning(intra, device, group.get("device"))
            if unit_slip:
                slipped.append(unit_slip)
        unread = unread_keys_note(device, group["device"]) if "device" in group else None
        if unread:  # a key its kind ignores (board_watts on an array device), named with the file
            overridden.append(unread)
        if "device" in group and device.inter_node_gbps:  # the device file's NIC: its unit may slip as nic_gbps's
            nic_unit = nic_speed_warning("inter_node_gbps", device.inter_node_gbps)
            if nic_unit:
                slipped.append(f"{group['device']} [links]: {nic_unit}")
    warnings, notes = network_warnings_and_notes(spec, network, servers)
    shared = (note,) if (note := shared_nic_note(spec, tables, servers)) else ()
    return tuple(dict.fromkeys(slipped)) + warnings, notes + tuple(dict.fromkeys(overridden)) + shared


def cluster_notes(cluster: GpuCluster, job: str, par: Parallelism | None = None,
                  points: Sequence[dict] = (), attention: str | None = None) -> tuple[str, ...]:
    """What ``job`` (``"train"`` or ``"search"``) does not read of what the cluster file and its device files
    state, or reads otherwise than written, one line each (docs/formats.md, "Cluster (TOML)": the read-by column):
    the ``note:`` lines ``archsim train`` and ``search`` print on stderr, and the notes ``archsim.train``,
    ``train_runs`` and ``search`` warn as a :class:`UserWarning` each. Said, not refused: the run is priced.
    ``par``: one iteration's layout (train's, not a runs file's rows: those set their layouts on purpose),
    noted when it leaves some of the cluster's GPUs idle (:func:`idle_gpus_note`); ``points``: a ``train --sweep``'s
    rows, likewise (:func:`idle_points_notes`); ``attention``: search's, for :func:`assumed_lanes_note`'s fused kernel."""
    notes = [idle_gpus_note(cluster, par)] if par is not None and par.gpus < cluster.gpus else []
    notes += [*idle_points_notes(cluster, points), *cluster.unread, *mixed_domain_notes(cluster)]
    if job == "train" and any(price is not None for price in cluster.prices):
        notes.append("price_per_gpu_hour is not read by train: it prices archsim search's cost objective")
    if any(w is not None and cluster.gpu_at(start).gemm == "arrays" for w, start in zip(cluster.watts, cluster.starts)):
        notes.append(f"gpu_watts is not read by {job} on an array device (gemm = \"arrays\"): its energy_j is "
                     "the energy model's on the ops' accesses, not board power × time (docs/training.md, Accelerators)")
    flash = "flash" in {attention, getattr(par, "attention", None), *(point.get("attention") for point in points)}
    lanes = (line for d in dict.fromkeys(cluster.servers or (cluster.gpu,)) if flash and (line := assumed_lanes_note(d)))
    return (*notes, *fp32_on_arrays_notes(cluster), *lanes)


def mixed_domain_notes(cluster: GpuCluster) -> list[str]:
    """The note that an ``nvlink_domain`` over servers is not read on a cluster of several server kinds (GPU, GPU
    count or in-server link: :attr:`GpuCluster.heterogeneous`), whose pairs of two servers train and search price
    over the NICs (:meth:`GpuCluster.one_domain`); none elsewhere."""
    net = cluster.network
    if net is None or not cluster.heterogeneous or net.nvlink_domain <= max(cluster.sizes, default=cluster.gpus):
        return []
    return [(f"nvlink_domain = {net.nvlink_domain} is not read: the servers differ in GPU, GPU count or "
             "intra_server_gbps, and an NVLink domain joins servers of one kind, so every transfer between two servers "
             "crosses [network]'s NICs (docs/training.md, Beyond one server)")]


def idle_gpus_note(cluster: GpuCluster, par: Parallelism) -> str:
    """The note that ``par`` (TP × PP × DP) runs on fewer GPUs than ``cluster`` has: train's layout is its
    flags' (each 1 by default), never the cluster's size, so a user who names an 8-GPU cluster and no layout
    times one GPU, and the output's ``gpus`` is the only word of it."""
    return _idle_line("this layout uses", par.gpus, cluster, [(par.tp, par.cp, par.pp, par.dp)])


def idle_points_notes(cluster: GpuCluster, points: Sequence[dict]) -> tuple[str, ...]:
    """:func:`idle_gpus_note` for a ``train --sweep``: one line per GPU count below the cluster's that points which
    ran use (``points``: the sweep's rows, with ``gpus``, ``tp``, ``pp``, ``dp`` and ``error``), saying how many of
    the sweep's points use it and their layouts — not one line per point, which a grid of hundreds would be."""
    cases: dict[int, list[tuple[int, int, int, int]]] = {}
    for row in points:
        if not row["error"] and row["gpus"] < cluster.gpus:
            cases.setdefault(row["gpus"], []).append((row["tp"], row.get("cp", 1), row["pp"], row["dp"]))
    notes = []
    for gpus, layouts in sorted(cases.items()):
        count = len(layouts)
        subject = (f"all {count} points of the sweep use" if count == len(points) else
                   f"{count} of the sweep's {len(points)} points {'uses' if count == 1 else 'use'}")
        notes.append(_idle_line(subject, gpus, cluster, list(dict.fromkeys(layouts))))
    return tuple(notes)


def _idle_line(subject: str, gpus: int, cluster: GpuCluster, layouts: list[tuple[int, int, int, int]]) -> str:
    """The idle-GPU note's one wording: ``subject`` uses ``gpus`` of the cluster's, in ``layouts`` (tp, cp, pp,
    dp); CP is named only where a layout has it, so a user of context parallelism is told to set it too."""
    cp = any(c > 1 for _, c, _, _ in layouts)
    named = ", ".join(f"tp {tp}{f' × cp {c}' if cp else ''} × pp {pp} × dp {dp}" for tp, c, pp, dp in layouts[:3])
    more = f" and {len(layouts) - 3} more" if len(layouts) > 3 else ""
    from archsim.console import job, setting

    flags = ("tp", "cp", "pp", "dp") if cp else ("tp", "pp", "dp")
    return (f"{subject} {gpus} of the cluster's {cluster.gpus} GPUs ({named}{more}); set "
            f"{'/'.join(setting(name) for name in flags)}, or {job('search')} to choose")


def fp32_on_arrays_notes(cluster: GpuCluster) -> tuple[str, ...]:
    """One line per device of ``cluster`` whose fp32 GEMMs run on its arrays at their fp16 rate: a ``gemm =
    "arrays"`` device file without ``[compute] lanes`` (docs/formats.md, "Device files": fp32 then runs on the
    arrays), when the cluster trains in fp32. Said, not refused: a TPU's MXUs do run fp32 as one bf16 pass."""
    if cluster.dtype != "fp32":
        return ()
    devices = dict.fromkeys(cluster.servers or (cluster.gpu,))
    return tuple(line for d in devices if (line := fp32_on_arrays_note(d)))


def fp32_on_arrays_note(device: Device) -> str | None:
    """:func:`fp32_on_arrays_notes`' line for one device trained in fp32 (a device sweep's too), or None."""
    if device.gemm != "arrays" or device.lanes is not None or "fp32" in dict(device.macs_per_pe):
        return None  # lanes, or the arrays' fp32 rate stated ([compute] macs_per_pe): the file says how fp32 runs
    return f"{device.name} states no fp32 lanes ([compute] lanes): its fp32 GEMMs run on its arrays at their fp16 rate"


def single_node(name: str = "a100-80gb", gpus: int = 8) -> GpuCluster:
    """One server of ``gpus`` catalog GPUs on NVLink (the measured runs' machine)."""
    return GpuCluster(gpus, catalog_device(name))



__all__ = ["cluster_file_warnings_and_notes", "cluster_notes", "device_inter_node_gbps", "fp32_on_arrays_note",
           "fp32_on_arrays_notes", "gpu_cluster", "load_gpu_cluster", "named_devices", "single_node"]
