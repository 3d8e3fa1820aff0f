"""bench_collectives.py's ``--bytes`` reads a size as ``archsim collective --nbytes`` reads it (one parser): 2³⁰ bytes
written ``1GiB`` or nccl-tests' ``1G``, and ``1GB`` refused as ambiguous. Failed before: the benchmark had its own
parser, which took integers and scientific notation only."""

from __future__ import annotations

import pytest

from tests.benchmark_scripts import load_benchmark

CLUSTER = "configs/clusters/a100_node.toml"


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_collectives")


# the sizes by hand: KiB, MiB, GiB are 2¹⁰, 2²⁰, 2³⁰ bytes; nccl-tests' K, M, G the same (its parsesize)
@pytest.mark.parametrize(("given", "nbytes"), [("1GiB", 2**30), ("1G", 2**30), ("512MiB", 2**29), ("64k", 2**16),
                                               ("1e9", 10**9), ("123456789", 123456789)])
def test_bytes_reads_the_collective_commands_sizes(bench, given, nbytes):
    args = bench.parse_args(["--cluster", CLUSTER, "--bytes", given])
    assert args.bytes == nbytes and isinstance(args.bytes, int)


def test_bytes_refuses_a_decimal_suffix_as_the_collective_command_does(bench, capsys):
    assert bench.main(["--cluster", CLUSTER, "--bytes", "1GB"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and "--bytes" in err and "ambiguous" in err, err


def test_a_gib_buffer_is_priced_and_named_as_one(bench, capsys):
    assert bench.main(["--cluster", CLUSTER, "--bytes", "2GiB"]) == 0
    assert capsys.readouterr().out.startswith(f"{CLUSTER}: all-reduce of 2 GiB")
