"""archsim's collectives (archsim/collectives.py) against every nccl-tests table shipped and the cited
multi-server and NVLS figures.

    .venv/bin/python benchmarks/bench_collectives.py
    .venv/bin/python benchmarks/bench_collectives.py --cluster CLUSTER.toml [--bytes 1GiB]

With ``--cluster``: your cluster instead — the all-reduce bus bandwidth of one server's GPUs, of one GPU per
server (DP's group when TP fills a server: one GPU per rail) and of the whole cluster's, each one group priced on
the links archsim train gives a TP group of that size there, or that DP group (its [network] table's NICs, NVLS
where it says so). ``--bytes`` reads sizes as ``archsim collective --nbytes`` does (``1e9``, ``1GiB``, nccl-tests' ``1G``).

Per table (tests/data/e2e/nccl_allreduce: all-reduce on 2–8 A100s and V100s of one server): the sizes
from 16 MB, the mean and largest |error| of the modelled time and whether the GPU count was fitted
(archsim/training/fitted.py: 2, 4 and 8 GPUs) or held out; then the sizes below 16 MB, where NCCL's LL128 protocol
runs (archsim/nccl_protocols.py: its latencies fitted on the same 2-, 4- and 8-GPU tables at every size, Simple's
constants from 16 MB), their mean and largest |error| and signed mean error. Then each cited figure
(tests/data/nccl_multinode.csv, with its source): measured and modelled bus bandwidth and the error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from archsim import links
from archsim.cli import Parser
from archsim.collective_units import nbytes_flag
from archsim.devices.gpu_lookup import gpu
from archsim.errors import InputError
from archsim.training import fitted
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.nccl_cited import bus_gbytes_per_s, predicted_bus_gbytes_per_s, read_cited
from archsim.training.nccl_fit import read_nccl_tables, relative_errors
from archsim.training.parallel import Parallelism

TABLES = ROOT / "tests" / "data" / "e2e" / "nccl_allreduce"
SMALL_BYTES = 16 * 2**20  # below it NCCL runs LL128: Simple's fit leaves it out (archsim/training/nccl_fit.py)


def cluster_bus_bandwidths(path: str | Path, nbytes: float) -> tuple[float | None, float | None]:
    """All-reduce bus bandwidth (GB/s) of ``nbytes`` over the first server's GPUs and over every GPU of the
    cluster file ``path``, each as one group on the links train prices a TP group of that size on; None where
    there is no such all-reduce: one GPU (nothing to reduce with), or a group of the whole cluster that train
    refuses (:func:`whole_cluster_problem`)."""
    cluster = load_gpu_cluster(path)

    def over(n: int) -> float | None:
        if n < 2:
            return None
        return bus_gbytes_per_s("all-reduce", nbytes, n, cluster.machine(Parallelism(tp=n)).links.tp)

    return over(cluster.starts[1]), None if whole_cluster_problem(cluster) else over(cluster.gpus)


def rail_layout(cluster) -> Parallelism | None:
    """The layout whose DP group is one GPU per server over every server (one GPU per rail): TP filling a server,
    DP over the servers, what a model too large for one GPU runs on several servers; None on one server."""
    servers = len(cluster.starts) - 1
    return Parallelism(tp=cluster.starts[1], dp=servers, global_batch=servers) if servers > 1 else None


def rail_bus_bandwidth(path: str | Path, nbytes: float) -> float | None:
    """All-reduce bus bandwidth (GB/s) of ``nbytes`` over one GPU per server of the cluster file ``path``, on the
    links archsim train prices a DP group on when TP fills a server (:func:`rail_layout`); None on one server, or
    where train refuses that layout (:func:`rail_problem`)."""
    cluster = load_gpu_cluster(path)
    par = rail_layout(cluster)
    if par is None or rail_problem(cluster):
        return None
    return bus_gbytes_per_s("all-reduce", nbytes, par.dp, cluster.machine(par).links.dp)


def server_sizes(cluster) -> tuple[int, ...]:
    """Each server's GPU count, in the file's order."""
    return tuple(b - a for a, b in zip(cluster.starts, cluster.starts[1:]))


def mixed_sizes_problem(cluster) -> str | None:
    """Why there is no :func:`rail_layout` on servers of different sizes: no one TP fills every server, so no
    layout leaves DP one GPU per server (TP = the first server's GPUs asks for as many GPUs on every server, a
    count the cluster does not have); None where every server has as many GPUs."""
    sizes = server_sizes(cluster)
    if len(set(sizes)) < 2:
        return None
    return (f"servers of different sizes ({' + '.join(map(str, sizes))} GPUs): no one TP fills every server, "
            "so no layout's DP group is one GPU per server")


def rail_problem(cluster) -> str | None:
    """Why :func:`rail_layout` is not priced here: servers of different sizes (:func:`mixed_sizes_problem`), else
    why ``archsim train`` would refuse it (servers of different GPU types), in its words; None where it runs it."""
    mixed = mixed_sizes_problem(cluster)
    if mixed:
        return mixed
    try:
        cluster.laid_out(rail_layout(cluster))
    except InputError as refused:
        return refused.message
    return None


def whole_cluster_problem(cluster) -> str | None:
    """Why ``archsim train`` would refuse a TP group of all the cluster's GPUs (servers of different sizes, or
    of different GPU types), in train's words (:meth:`archsim.training.cluster.GpuCluster.laid_out`); None where
    it runs one."""
    try:
        cluster.laid_out(Parallelism(tp=cluster.gpus))
    except InputError as refused:
        return refused.message
    return None


def _user_cluster(path: str, nbytes: int) -> None:
    cluster = load_gpu_cluster(path)
    server, whole = cluster_bus_bandwidths(path, nbytes)
    size = f"{nbytes / 2**30:g} GiB" if nbytes >= 2**30 else f"{nbytes:,} bytes"
    servers = len(cluster.starts) - 1

    def gpus(n: int) -> str:
        return f"{n} GPU{'s' if n > 1 else ''}"

    def figure(value: float | None, n: int) -> str:
        if value is not None:  # a small buffer's latency-bound figure keeps 3 digits, not 0.0
            return f"{value:6.1f}" if value >= 1 else f"{value:6.3g}"
        if n < 2:
            return "   no all-reduce on one GPU"
        return f"   not priced: archsim train refuses a TP group of {n} GPUs here ({whole_cluster_problem(cluster)})"

    print(f"{path}: all-reduce of {size}, bus bandwidth as archsim prices it, GB/s")
    print(f"  {gpus(cluster.starts[1])} (1 server): {figure(server, cluster.starts[1])}")
    if servers > 1:  # one server: its line is the whole cluster's, and there is no group across servers
        rail = rail_bus_bandwidth(path, nbytes)
        mixed = mixed_sizes_problem(cluster)  # no such layout at all: not one train refuses for its GPU count
        refused = mixed or f"archsim train refuses TP {cluster.starts[1]} × DP {servers} here ({rail_problem(cluster)})"
        shown = (f"{rail:6.1f}" if rail >= 1 else f"{rail:6.3g}") if rail is not None else f"   not priced: {refused}"
        print(f"  {gpus(servers)} (1 per server, DP's group when TP fills a server): {shown}")
        print(f"  {gpus(cluster.gpus)} ({servers} servers): {figure(whole, cluster.gpus)}")
    for warning in cluster.warnings:  # a link's unit that slipped, as train and search warn of it
        print(f"bench_collectives: warning: {warning}", file=sys.stderr)


def _bytes(text: str) -> int:
    """``--bytes``: a whole number of bytes above 0, read as ``archsim collective --nbytes`` reads it
    (:func:`archsim.collective_units.parse_nbytes`: ``1073741824``, ``1e9``, ``1GiB`` or nccl-tests' ``1G``)."""
    return int(nbytes_flag(text))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The benchmark's flags, read by archsim's own parser: a usage error (an unknown flag, ``--bytes 0``) is one
    line raised as :class:`InputError`, as archsim's."""
    parser = Parser(prog="bench_collectives", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cluster", help="price this cluster file's all-reduces instead of the shipped tables")
    parser.add_argument("--bytes", type=_bytes, default=2**30,
                        help="buffer size with --cluster, bytes: an integer, 1e9, 1GiB or nccl-tests' 1G "
                             "(default 1 GiB)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_args(argv)
        if args.cluster:
            _user_cluster(args.cluster, args.bytes)
            return 0
    except InputError as error:  # a usage error or a cluster file archsim refuses: its one line, as train's
        print(f"bench_collectives: error: {error}", file=sys.stderr)
        return 2
    print("nccl-tests all-reduce, one server: GPUs, fitted?, mean and max |error| from 16 MB (the fitted range), then "
          "the same below 16 MB (NCCL's LL128 protocol: its latencies fitted on the same tables at every size) "
          "and the signed mean there")
    for name in ("a100", "v100"):
        device = gpu("a100-80gb" if name == "a100" else "v100-32gb")
        for n, table in sorted(read_nccl_tables(TABLES, name).items()):
            link = links.nvlink_group(device, tuple(range(n)))
            errors = np.abs(relative_errors(table, link))
            small = relative_errors(table, link, min_bytes=0)[table.sizes < SMALL_BYTES]
            role = "fit " if n in fitted.NCCL_FIT_GPUS else "held"
            below = (f"{np.abs(small).mean():6.1%} {np.abs(small).max():6.1%} {small.mean():+6.1%}" if small.size
                     else "  (no sizes below 16 MB)")
            print(f"  {name} {n} GPUs {role}: {errors.mean():6.1%} {errors.max():6.1%}   below 16 MB: {below}")
    print("cited figures (tests/data/nccl_multinode.csv): measured vs modelled bus bandwidth, GB/s")
    for run in read_cited(ROOT / "tests" / "data" / "nccl_multinode.csv"):
        model = predicted_bus_gbytes_per_s(run)
        print(f"  {run.source:24s} {run.servers}×{run.gpus_per_server} {run.gpu:14s} {run.collective:14s} {run.algorithm:5s} "
              f"{run.bus_gbytes_per_s:6.1f} {model:6.1f} {model / run.bus_gbytes_per_s - 1:+6.1%} ({run.expected})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
