"""The cluster file's keys, table by table, and the hint an unknown one gets: where it is another table's key, that
table (read by the ``[cluster]``/``[[servers]]`` reader in :mod:`archsim.spp.topology` and the ``[network]`` reader in
:mod:`archsim.network` alike, so each names the others' keys); and the one bound of its Gbit/s figures, which a device
file's NIC (``[links] inter_node_gbps``) is held to as well: here, below the array layer, which may not reach the
GPU half that :mod:`archsim.links` imports."""

from __future__ import annotations

from archsim.validate import did_you_mean

CLUSTER_KEYS = {"name", "seed", "inter_server_gbps", "inter_server_link", "gpu_memory_gb",
                "comm_sms"}  # the SMs an overlapped collective holds: train and search (training/comm_sms.py)
SERVER_KEYS = {"count", "gpus", "intra_server_gbps", "gpu", "device",  # a catalog name / a device file: archsim train
               "price_per_gpu_hour", "gpu_watts",  # the search's cost and energy objectives
               "usable_memory_gib",  # the memory train and search let a job allocate (training/cluster_file.py)
               "torus"}  # the chips' torus of point-to-point links: train and search (training/cluster_file.py)
NETWORK_KEYS = {"nics_per_server", "nic_gbps", "gpus_per_nic", "nvlink_domain", "switch_tiers", "servers_per_leaf",
                "oversubscription", "nvls"}

# Every link figure of a cluster file, Gbit/s (intra_server_gbps, inter_server_gbps, [network] nic_gbps): 1 kbit/s …
# 10⁶ Gbit/s = 125 TB/s (no subnormals, no inf); outside it a figure is refused, naming file, line and key.
MIN_GBPS, MAX_GBPS = 1e-6, 1e6


def is_gbps(value: object) -> bool:
    """Whether ``value`` is a cluster file's Gbit/s figure: a TOML number in [:data:`MIN_GBPS`, :data:`MAX_GBPS`]."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and MIN_GBPS <= value <= MAX_GBPS


def key_hint(key: str, here: str, keys: set[str]) -> str:
    """The hint of an unknown ``key`` in the cluster file's table ``here`` (``[cluster]``, ``[[servers]]`` or
    ``[network]``): where it is another of the three tables' key, that table (``nic_gbps`` in ``[cluster]`` is
    ``[network]``'s, where a near name of ``here``'s would mislead: ``inter_server_link`` in ``[network]`` is not
    ``nics_per_server``), else the nearest of ``keys``."""
    for table, known in (("[cluster]", CLUSTER_KEYS), ("[[servers]]", SERVER_KEYS), ("[network]", NETWORK_KEYS)):
        if table != here and key in known:
            return f" ({key!r} is a key of {table}: write it there)"
    return did_you_mean(key, keys)


__all__ = ["CLUSTER_KEYS", "MAX_GBPS", "MIN_GBPS", "NETWORK_KEYS", "SERVER_KEYS", "is_gbps", "key_hint"]
