"""How one pair of GPUs is priced, written once for plan (:func:`archsim.spp.topology.build_topology`) and
train (:class:`archsim.training.cluster.GpuCluster`): what a cluster file's link figures mean in bytes/s.

Below ``spp/`` and ``training/`` alike (docs/architecture.md, "Layering"), so both read one meaning.
"""

from __future__ import annotations


def fabric_bytes_per_s(intra_server_gbps: float) -> float:
    """A cluster file's ``intra_server_gbps`` (Gbit/s per GPU, both directions together: an A100's NVLink 3
    is 4800 = 600 GB/s) as the per-direction bytes/s one transfer and the link classes take (the catalog's
    NVLink figure: 300 GB/s for that A100)."""
    return intra_server_gbps * 1e9 / 8 / 2


__all__ = ["fabric_bytes_per_s"]
