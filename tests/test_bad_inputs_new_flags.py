"""Hostile values of bench_collectives.py's --bytes and train's --sweep dp=fill: one line that names the flag and
what to write, never a wrong figure printed."""

import pytest

from tests.benchmark_scripts import load_benchmark

CLUSTER = "configs/clusters/a100_node.toml"


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_collectives")


@pytest.mark.parametrize("given", ["1e308", "9223372036854775808"])
def test_bench_collectives_refuses_more_bytes_than_a_64_bit_size(bench, capsys, given):
    # 1e308 bytes took 2 × s / bw = inf seconds and printed a bus bandwidth of 0 GB/s, exit 0
    with pytest.raises(SystemExit) as stop:
        bench.main(["--cluster", CLUSTER, "--bytes", given])
    out, err = capsys.readouterr()
    assert stop.value.code == 2 and out == ""
    assert f"--bytes: expected at most 2**63 - 1 bytes (a signed 64-bit size), got {given!r}" in err


def test_bench_collectives_takes_the_largest_64_bit_size(bench, capsys):
    assert bench.main(["--cluster", CLUSTER, "--bytes", str(2**63 - 1)]) == 0
    assert " 0\n" not in capsys.readouterr().out


@pytest.mark.parametrize("given", ["１", "1_000"])
def test_bench_collectives_refuses_what_archsims_number_flags_refuse(bench, capsys, given):
    # int() reads a full-width digit and an underscore; --link-bandwidth and the other number flags do not
    with pytest.raises(SystemExit) as stop:
        bench.main(["--cluster", CLUSTER, "--bytes", given])
    assert stop.value.code == 2
    assert f"--bytes: expected a whole number of bytes above 0, got {given!r}" in capsys.readouterr().err
