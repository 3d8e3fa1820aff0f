"""The note a cluster file gets when its NVSwitch servers (DGX, HGX) share one NIC by default: the key
``inter_server_gbps`` alone means one NIC a server, which such a server is not."""

from __future__ import annotations

from collections.abc import Sequence

from archsim.devices.device import Device


def shared_nic_note(spec: dict, tables: Sequence[Device | None], servers: int) -> str | None:
    """The note that ``inter_server_gbps`` without ``inter_server_link`` is one NIC a server (the key's default,
    ``shared``), where the servers are NVSwitch boards (a DGX or HGX A100, H100 or H200), every one of which has a
    NIC per GPU: written as a DGX's 400 Gb/s NIC's speed, it runs the server's GPUs on one NIC, 1/GPUs of the
    bandwidth the machine has (every shipped file of such servers states ``per_gpu_pair`` or a ``[network]``).
    None where the file states the link, a ``[network]`` table, a range (plan's to draw), one server, or servers
    of another kind."""
    cluster = spec["cluster"]
    gbps = cluster.get("inter_server_gbps")
    if servers < 2 or "network" in spec or "inter_server_link" in cluster or not isinstance(gbps, (int, float)):
        return None
    nvswitch = [group["gpus"] for group, device in zip(spec["servers"], tables)
                if device is not None and device.catalog is not None and device.nvswitch and group["gpus"] > 1]
    if not nvswitch:
        return None
    gpus = max(nvswitch)
    return (f"inter_server_gbps = {gbps:g} with no inter_server_link is one {gbps:g} Gb/s NIC per server, shared by "
            f"its {gpus} GPUs ({gbps / 8 / gpus:.3g} GB/s per direction per GPU; the key's default, \"shared\"); an "
            f"NVSwitch server (DGX, HGX) has a NIC per GPU: write inter_server_link = \"per_gpu_pair\" (or a [network] "
            f"table) for that, or inter_server_link = \"shared\" to keep the one NIC")


__all__ = ["shared_nic_note"]
