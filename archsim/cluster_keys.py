"""The cluster file's keys, table by table, and the hint an unknown one gets: where it is another table's key, that
table (read by the ``[cluster]``/``[[servers]]`` reader in :mod:`archsim.spp.topology` and the ``[network]`` reader in
:mod:`archsim.network` alike, so each names the others' keys); and the one bound of its Gbit/s figures, which a device
file's NIC (``[links] inter_node_gbps``) is held to as well: here, below the array layer, which may not reach the
GPU half that :mod:`archsim.links` imports."""

from __future__ import annotations

from collections.abc import Iterable

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


TABLES = (("[cluster]", CLUSTER_KEYS), ("[[servers]]", SERVER_KEYS), ("[network]", NETWORK_KEYS))
# other tools' names for a key, which difflib matches to a wrong key (gpus_per_server: nics_per_server; gpu_count:
# count, the servers) or to none (rails, leaf_size): the table and key meant
KEY_ALIASES = {
    **dict.fromkeys(("gpu_count", "num_gpus", "n_gpus", "gpus_per_server", "gpus_per_node"), ("[[servers]]", "gpus")),
    **dict.fromkeys(("servers", "nodes", "num_servers", "num_nodes", "server_count"), ("[[servers]]", "count")),
    **dict.fromkeys(("rails", "nics", "num_nics", "nic_count", "nics_per_node", "rails_per_server"),
                    ("[network]", "nics_per_server")),
    **dict.fromkeys(("gpus_per_rail",), ("[network]", "gpus_per_nic")),
    **dict.fromkeys(("leaf_size", "servers_per_switch", "nodes_per_leaf", "servers_per_su", "scalable_unit"),
                    ("[network]", "servers_per_leaf")),
    **dict.fromkeys(("tiers", "switch_levels", "levels", "network_tiers"), ("[network]", "switch_tiers")),
    **dict.fromkeys(("blocking_factor", "blocking_ratio", "taper", "oversubscription_ratio"),
                    ("[network]", "oversubscription")),
}
# a Gbit/s key written as GB/s (nic_gbs = 50): its Gbit/s name, read 8× the figure (intra_server_gbps: both
# directions together, so 8× a both-ways figure, 16× one direction's)
GBYTE_SUFFIXES = ("_gbs", "_gb_s", "_gbytes", "_gbyte_s", "_gbytes_per_s", "_gbyte_per_s", "_gb_per_s")


def _gbytes_hint(key: str, value: object, here: str) -> str:
    """The hint of a key of bytes (``nic_gbs``) whose key takes bits (``nic_gbps``): the key and the figure to
    write, a GB/s ``value`` being 8 × itself in Gbit/s, where difflib would name the key alone and the figure
    would run 8× slow with no warning (50 Gb/s is a NIC sold)."""
    low = key.lower()
    ends = ((end, low) for end in GBYTE_SUFFIXES)  # nic_gbs, nic_gb_s; and GBps, bytes by its capital B: nic_GBps
    stem = next((text[: -len(end)] for end, text in (*ends, ("_GBps", key)) if text.endswith(end)), None)
    meant = f"{stem.lower()}_gbps" if stem else ""
    table = next((name for name, known in TABLES if meant in known), None)
    if table is None:
        return ""
    where = "" if table == here else f" of {table}"
    number = isinstance(value, int | float) and not isinstance(value, bool)
    value = float(value) if number else 0.0  # type: ignore[arg-type]  # a TOML number, checked above
    if meant == "intra_server_gbps":
        figure = (f": {value:g} GB/s both ways is {meant} = {8 * value:g}, {value:g} GB/s a direction "
                  f"{16 * value:g}") if number else ": 8 × GB/s both ways, 16 × one direction's"
        return f" (did you mean {meant!r}{where}? it takes Gbit/s both directions together{figure})"
    figure = f": {value:g} GB/s is {meant} = {8 * value:g}" if number else ": 8 × GB/s"
    return f" (did you mean {meant!r}{where}? it takes Gbit/s{figure})"


def key_hint(key: str, here: str, keys: set[str], value: object = None, written: Iterable[str] = ()) -> str:
    """The hint of an unknown ``key`` (given ``value``) in the cluster file's table ``here`` (``[cluster]``,
    ``[[servers]]`` or ``[network]``): where it is another of the three tables' key, that table (``nic_gbps`` in
    ``[cluster]`` is ``[network]``'s, where a near name of ``here``'s would mislead: ``inter_server_link`` in
    ``[network]`` is not ``nics_per_server``); a key of GB/s whose key takes Gbit/s (``nic_gbs``), that key and the
    figure to write; another tool's name for a key (:data:`KEY_ALIASES`: ``rails``, ``gpus_per_node``), the key
    meant and its table; else the nearest of ``keys`` the table does not already hold (``written``: its keys as
    given; ``gpsu`` beside ``gpu = "a100-80gb"`` means ``gpus``, not the ``gpu`` written two lines below it)."""
    for table, known in TABLES:
        if table != here and key in known:
            return f" ({key!r} is a key of {table}: write it there)"
    gbytes = _gbytes_hint(key, value, here)
    if gbytes:
        return gbytes
    alias = KEY_ALIASES.get(key.lower())
    if alias is not None:
        table, meant = alias
        return f" (did you mean {meant!r}{'' if table == here else f' of {table}'}?)"
    return did_you_mean(key, keys - set(written))


__all__ = ["CLUSTER_KEYS", "KEY_ALIASES", "MAX_GBPS", "MIN_GBPS", "NETWORK_KEYS", "SERVER_KEYS", "is_gbps", "key_hint"]
