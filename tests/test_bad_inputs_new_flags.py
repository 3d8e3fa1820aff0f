"""Hostile values of bench_collectives.py's --bytes and train's --sweep dp=fill: one line that names the flag and
what to write, never a wrong figure printed."""

import pytest

from archsim.errors import InputError
from archsim.training.sweep import parse_axis
from tests.benchmark_scripts import load_benchmark

CLUSTER = "configs/clusters/a100_node.toml"


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_collectives")


@pytest.mark.parametrize("given", ["1e308", "9223372036854775807"])
def test_bench_collectives_refuses_more_bytes_than_the_collective_command_takes(bench, capsys, given):
    # 1e308 bytes took 2 × s / bw = inf seconds and printed a bus bandwidth of 0 GB/s, exit 0; --bytes now reads
    # sizes as archsim collective --nbytes does, whose largest is 2**53 (a float's whole numbers)
    assert bench.main(["--cluster", CLUSTER, "--bytes", given]) == 2  # archsim's one-line usage error, its status
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert f"--bytes: expected a number of bytes > 0 and <= 9.0072e+15, got {given!r}" in err


def test_bench_collectives_takes_the_largest_size_the_collective_command_takes(bench, capsys):
    assert bench.main(["--cluster", CLUSTER, "--bytes", str(2**53)]) == 0
    assert " 0\n" not in capsys.readouterr().out


@pytest.mark.parametrize("given", ["１", "1_000"])
def test_bench_collectives_refuses_what_archsims_number_flags_refuse(bench, capsys, given):
    # int() reads a full-width digit and an underscore; --link-bandwidth and the other number flags do not
    assert bench.main(["--cluster", CLUSTER, "--bytes", given]) == 2
    assert "--bytes: expected a number of bytes (1073741824, 1e9) or a size in KiB, MiB, GiB or TiB" in capsys.readouterr().err


@pytest.mark.parametrize("given", ["dp=FILL", "dp=filll", "dp=1,fil"])
def test_a_dp_axis_value_refused_names_fill(given):
    # before: "dp: expected a positive integer, got 'FILL'", the word dp also takes unsaid
    with pytest.raises(InputError, match=r"^field 'sweep': dp: expected a positive integer.*\(or dp=fill alone: ") as caught:
        parse_axis(given)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("axis", ["tp", "pp", "micro_batch"])
def test_fill_on_another_axis_says_it_is_dps(axis):
    with pytest.raises(InputError, match=rf"^field 'sweep': {axis}: fill is dp's alone \(dp=fill\); expected a "):
        parse_axis(f"{axis}=fill")


def test_dp_fill_and_counts_still_parse():
    assert parse_axis("dp=fill") == ("dp", ("fill",))
    assert parse_axis("dp=1,2") == ("dp", (1, 2))
