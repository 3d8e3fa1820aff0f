"""A cluster file as read before it is a :class:`~archsim.spp.topology.Topology`: the TOML document (a device file
given in its place refused as what it is) and what a ``[[servers]]`` table's chip states — its catalog GPU and the
in-server link a table that states none takes from it (:func:`server_fabric`, bytes/s per GPU per direction)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from archsim.choices.devices import DEVICE_SUFFIXES
from archsim.errors import InputError
from archsim.toml_errors import parse_toml
from archsim.validate import read_text

if TYPE_CHECKING:
    from archsim.devices.device import Device

# a device file given where a cluster file goes: what to write instead (a device TOML; a SCALE-Sim .cfg)
DEVICE_NOT_CLUSTER = ('this is a device file: name it in a cluster file\'s [[servers]] table (device = "FILE", '
                      'beside gpus = N), and give that cluster file (configs/clusters/tpu_v4_like_slice.toml)')
CFG_NOT_CLUSTER = ("this is a SCALE-Sim .cfg, not a cluster file: with [device], [memory] and [links] sections it is "
                   "a device file (docs/formats.md, Device files); name it in a cluster file's [[servers]] table "
                   '(device = "FILE", beside gpus = N) and give that cluster file '
                   "(configs/clusters/scalesim_32x32_device.toml)")


def server_fabric(group: dict, device: Device | None, file: str) -> float:
    """A server's in-server bandwidth when its ``[[servers]]`` table states no ``intra_server_gbps``: its chip's own
    link, one direction, bytes/s — a catalog ``gpu``'s NVLink (or PCIe; what the shipped files state: 4800 Gb/s
    both directions for an A100, 300 GB/s a direction), or a ``device`` file's ``[links] intra_gbps`` (GB/s per
    direction). The one default train, search and plan read. ``device``: the table's device where the caller has
    read it (a device file's is read by :func:`archsim.training.cluster_file.named_devices`); None: a catalog
    ``gpu`` is looked up here, and a table naming no chip is refused, naming both places to state the link."""
    gpu_not_a_count(group.get("gpu"), file)
    if device is None and "device" not in group and isinstance(group.get("gpu"), str):
        device = server_gpu(group["gpu"], file)
    if device is None:
        raise InputError("missing: the in-server bandwidth: state intra_server_gbps in the [[servers]] table (Gbit/s "
                         "per GPU, both directions), or name the chip whose own link is read: gpu = \"<catalog "
                         'name>", or device = "<device file>" with its [links] intra_gbps (GB/s per direction)',
                         file=file, field="intra_server_gbps", missing=True)
    return device.fabric_bytes_per_s


def gpu_not_a_count(name: object, file: str) -> None:
    """Refuse ``gpu = 8``, a [[servers]] table's chip named by a number: ``gpus = 8`` (the GPUs per server) with its
    last letter dropped, which was told "unknown GPU '8'" or "names both gpu = 8 and device" — never the slip."""
    if isinstance(name, int) and not isinstance(name, bool):
        raise InputError(f'gpu = {name} is a number: gpu names a catalog GPU (gpu = "a100-80gb"), and the GPUs per '
                         f"server are gpus = {name}", file=file, field="gpu")


def server_gpu(name: object, file: str) -> Device:
    """A ``[[servers]]`` table's ``gpu = NAME``: its catalog GPU. A device file's name written there
    (``gpu = "chip.toml"``) is refused naming ``device`` as the key to write, whichever reader meets it first
    (the in-server link a table leaves out, or the device train prices), so the hint never depends on which
    other keys the table states; a GPU the catalog lacks (``b200``) is refused naming that key too, the way
    to describe it."""
    from archsim.devices.device import catalog_device  # only a server that names a catalog GPU reads the catalog

    gpu_not_a_count(name, file)
    try:
        return catalog_device(str(name))
    except InputError as exc:
        if isinstance(name, str) and name.strip().lower().endswith(DEVICE_SUFFIXES):  # a device file in the wrong key
            raise InputError(f'gpu names a catalog GPU, and {name!r} is a file name: a device file goes in '
                             f'device = "{name}" (relative to the cluster file), in place of gpu', file=file,
                             field="gpu") from None
        if exc.message.startswith(f"unknown GPU {name!r}; the catalog has"):  # a part the catalog lacks: how to add it
            raise InputError(f'{exc.message}; for another GPU write a device file and name it with device = "FILE" in '
                             'place of gpu (docs/formats.md, "Device files")', file=file, field="gpu") from None
        raise exc.at(file=file, field="gpu") from None


def read_cluster_document(path: str | Path) -> dict:
    """A cluster file parsed as TOML. A SCALE-Sim ``.cfg`` device file given in its place is no TOML; it is
    refused as what it is (a device to name in ``[[servers]]``), not as a TOML syntax error at its line 2."""
    try:
        text = read_text(path, "cluster file")
    except InputError as exc:  # a shipped cluster's name given as MODEL takes a shipped model's: say where it is
        shipped = _shipped_cluster(path) if exc.message == "cluster file not found" else None
        if shipped is None:
            listing = _near_shipped(path) if exc.message == "cluster file not found" else ""
            if not listing:
                raise
            raise InputError(f"{exc.message}{listing}", file=str(path)) from None
        raise InputError(f"{exc.message}; the shipped cluster of that name is {shipped}: give its path",
                         file=str(path)) from None
    try:
        return parse_toml(text, str(path))
    except InputError:
        if Path(path).suffix.lower() == ".cfg" or "[architecture_presets]" in text:
            raise InputError(CFG_NOT_CLUSTER, file=str(path), field="cluster") from None
        raise


def _near_shipped(path: str | Path) -> str:
    """For a bare name (no folder) that names no file and no shipped cluster but is near one's (``a100`` and
    ``a100_node``, ``h100_2_server``): that cluster's file, for the refusal to point at; "" for a path (meant as
    written) or a name like none (the plain line stays: a file of the user's own was meant)."""
    from difflib import get_close_matches

    from archsim.validate import shipped_names

    text = str(path)
    if "/" in text or "\\" in text or not text.isprintable() or not text:
        return ""
    stem = text[:-5] if text.lower().endswith(".toml") else text
    nearest = get_close_matches(stem.lower(), shipped_names("clusters", (".toml",)), n=1, cutoff=0.6)
    near = _shipped_cluster(nearest[0]) if nearest else None
    return f" (did you mean {nearest[0]!r}?); the shipped cluster of that name is {near}: give its path" if near else ""


def _shipped_cluster(path: str | Path) -> Path | None:
    """``configs/clusters/NAME.toml`` where ``path`` is a bare name (no folder, no such file) of a shipped
    cluster, else None. Clusters are read by path only (device files resolve beside them)."""
    from archsim.validate import shipped_file

    text = str(path)
    if "/" in text or "\\" in text or not text.isprintable() or not text:
        return None
    try:
        return shipped_file("clusters", text, ("",) if text.lower().endswith(".toml") else (".toml",), "cluster")
    except InputError:  # a name the shipped folder refuses (".." and the like): no hint
        return None
