"""The cluster the search benchmarks plan on (bench_search.py, bench_uneven.py): ``servers`` DGX A100
servers of 8 A100 80 GB on NVLink (4,800 Gb/s), 200 Gb/s InfiniBand per GPU."""

from __future__ import annotations

import tempfile
from pathlib import Path

from archsim.training.cluster import GpuCluster
from archsim.training.cluster_file import load_gpu_cluster

CLUSTER = """[cluster]
name = "dgx_a100_{servers}"
inter_server_gbps = 200
inter_server_link = "per_gpu_pair"

[[servers]]
count = {servers}
gpus = 8
intra_server_gbps = 4800
gpu = "a100-80gb"
"""


def dgx_a100(servers: int) -> GpuCluster:
    """The cluster of ``servers`` servers, read as ``archsim search --cluster`` reads its file."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"dgx_a100_{servers}.toml"
        path.write_text(CLUSTER.format(servers=servers))
        return load_gpu_cluster(path)
