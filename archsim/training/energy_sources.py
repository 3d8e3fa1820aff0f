"""How ``energy_j`` is found for a cluster's devices, in words: the energy model's joules on array devices (the
default table, or a device file's ``[energy]``, plus stated static power), board power × time on catalog GPUs and
tile-timed devices; and the notes ``archsim search --objective energy`` prints when that basis misleads."""

from __future__ import annotations

from archsim.devices.device import Device
from archsim.errors import InputError
from archsim.training.rates import watts

MODEL_SOURCE = "energy model on the ops' accesses (archsim.energy, default table)"
FILE_SOURCE = "energy model on the ops' accesses (archsim.energy, the device file's [energy])"
STATIC_SOURCE = " + static_watts × chips × iteration time"  # after MODEL_SOURCE where the device states static power
LINKS_SOURCE = " + link bytes × 8 × pj_per_bit"  # after them where the device prices its links ([links] pj_per_bit)
BOARD_SOURCE = "board power × iteration time"


def device_source(device: Device) -> str:
    """``energy_source`` of an array device: which figures priced it, its static power where it states one and its
    links where it prices them (until 2026-12-05 unnamed here, though ``energy_breakdown_j`` had the part)."""
    return (FILE_SOURCE if device.energy_table or device.energy_figures else MODEL_SOURCE) + (
        STATIC_SOURCE if device.static_watts else "") + (LINKS_SOURCE if device.link_pj_per_bit else "")


def sources_text(sources: dict[str, list[str]]) -> str:
    """``energy_source`` of the ways ``sources`` maps to the devices each priced: the one way, or each device's."""
    return next(iter(sources)) if len(sources) == 1 else "; ".join(
        f"{', '.join(names)}: {way}" for way, names in sources.items())


def energy_sources(cluster, counts) -> str:
    """``archsim search``'s ``energy_source``: how ``energy_j`` is found on the first ``n`` GPUs for each ``n`` in
    ``counts``, in train's words; where counts differ in it, each after its counts (``8 GPUs: … | 16 GPUs: …``)."""
    texts: dict[str, list[int]] = {}
    for n in sorted(set(counts)):
        texts.setdefault(_count_source(cluster, n), []).append(n)
    return next(iter(texts)) if len(texts) == 1 else " | ".join(
        f"{', '.join(map(str, ns))} GPUs: {text}" for text, ns in texts.items())


def _count_source(cluster, n: int) -> str:
    """:func:`energy_sources` of one count of GPUs: as :func:`~archsim.training.energy.cluster_iteration_energy` words it."""
    sources: dict[str, list[str]] = {}
    for device in array_devices(cluster, n):
        sources.setdefault(device_source(device), []).append(device.name)
    if boards := _boards(cluster, n):
        try:
            board_watts(cluster, n)
        except InputError as exc:
            return f"none: {exc.message}"
        sources[BOARD_SOURCE] = [device.name for device in boards]
    return sources_text(sources)


def _used(cluster, gpus: int) -> tuple[Device, ...]:
    """Each device type among the first ``gpus`` GPUs of ``cluster``, in GPU order."""
    return tuple({cluster.gpu_at(start).name: cluster.gpu_at(start) for start in cluster.starts[:-1]
                  if start < gpus}.values())


def array_devices(cluster, gpus: int) -> tuple[Device, ...]:
    """The array devices (``gemm = "arrays"``) among the first ``gpus`` GPUs of ``cluster``: those the energy
    model prices (module docstring); the others are priced at board power (:func:`board_watts`)."""
    return tuple(device for device in _used(cluster, gpus) if device.gemm == "arrays")


def board_watts(cluster, gpus: int) -> float:
    """Watts at board power of the first ``gpus`` GPUs that are not array devices (0 where all are); a one-line
    :class:`InputError` naming the device and ``gpu_watts`` where one has no figure."""
    return watts(cluster, gpus, counted=lambda device: device.gemm != "arrays")


def energy_basis(cluster, counts) -> str:
    """How ``energy_j`` is found for configurations of these GPU ``counts``, in a few words for an axis title:
    the energy model's joules on array devices, board power × time on the other GPUs (:func:`~archsim.training.energy.cluster_iteration_energy`)."""
    bases = {" + ".join([*sorted({_array_basis(device) for device in array_devices(cluster, n)}),
                         *(["GPUs at board power"] if _boards(cluster, n) else [])]) for n in counts}
    return "; ".join(sorted(bases)) or "GPUs at board power"


def _boards(cluster, gpus: int) -> tuple[Device, ...]:
    """The devices among the first ``gpus`` GPUs priced at board power × time (catalog GPUs, tile devices)."""
    return tuple(device for device in _used(cluster, gpus) if device.gemm != "arrays")


def _array_basis(device: Device) -> str:
    """The energy basis of an array device: the energy model's joules, plus its stated static power."""
    return "energy model on the ops + static power" if device.static_watts else "energy model on the ops"


def unpriced_static_note(cluster, counts) -> str | None:
    """The note ``archsim search --objective energy`` prints when an array device among these GPU ``counts``
    states no static power: its energy is the dynamic joules alone, so idle pipeline time costs nothing."""
    devices = {device.name: device for n in counts for device in array_devices(cluster, n)}
    bare = sorted(name for name, device in devices.items() if not device.static_watts)
    if not bare:
        return None
    return (f"{', '.join(bare)} states no static power, so energy_j counts dynamic joules only and idle pipeline "
            "time costs nothing: state the chip's leakage as [device] static_watts (W per chip) in its device file")


def mixed_basis_note(cluster, counts) -> str | None:
    """The note ``archsim search --objective energy`` prints when its GPU ``counts`` find ``energy_j`` in more than one
    way (:func:`~archsim.training.energy.cluster_iteration_energy`: the energy model's 45 nm joules on array devices, board power × time on GPUs, the
    two summed on layouts spanning both): figures not comparable, so one ranking over them misleads. None otherwise."""
    bases: dict[str, list[int]] = {}
    for n in sorted(set(counts)):
        arrays, boards = array_devices(cluster, n), _boards(cluster, n)
        basis = ("the energy model's on the array devices plus board power × time on the others" if arrays and boards
                 else "the energy model's" if arrays else "board power × time")
        bases.setdefault(basis, []).append(n)
    if len(bases) < 2:
        return None
    ways = "; ".join(f"{', '.join(map(str, ns))} GPUs: {basis}" for basis, ns in bases.items())
    count = "two" if len(bases) == 2 else "three"
    return (f"energy_j is found {count} ways here ({ways}): they are not comparable, so compare energy among "
            "configurations of one way (--gpus)")


__all__ = ["BOARD_SOURCE", "FILE_SOURCE", "MODEL_SOURCE", "STATIC_SOURCE", "array_devices", "board_watts",
           "device_source", "energy_basis", "energy_sources", "mixed_basis_note", "sources_text", "unpriced_static_note"]
