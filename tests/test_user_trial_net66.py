"""A training-systems engineer sizing a multi-server job from the docs alone: cluster TOMLs of their own,
`archsim search` and `archsim train` across servers, the collectives benchmark and the Python API. Each test
failed before its fix."""

from __future__ import annotations

import pytest

import archsim
from archsim.errors import InputError

ROOT_CLUSTERS = "configs/clusters"
MODEL = "configs/transformers/gpt3_1.3b.toml"


def _write(tmp_path, text: str, name: str = "c.toml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.fixture(scope="module")
def bench():
    from tests.benchmark_scripts import load_benchmark

    return load_benchmark("bench_collectives")


def test_bench_collectives_refuses_a_bad_cluster_file_in_one_line(tmp_path, bench, capsys):
    """docs/training.md's "Your own cluster" check on a file with a typo'd key printed a Python traceback
    (archsim's InputError unhandled); train names the key in one line and exits 2, as the benchmark now does."""
    path = _write(tmp_path, '[cluster]\ninter_server_gbsp = 400\n[[servers]]\ncount = 2\ngpus = 8\ngpu = "h100"\n')
    assert bench.main(["--cluster", path]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("bench_collectives: error: ")
    assert "did you mean 'inter_server_gbps'?" in err[0]
    assert bench.main(["--cluster", str(tmp_path / "missing.toml")]) == 2
    assert "not found" in capsys.readouterr().err


@pytest.mark.parametrize("size", ["0", "-5"])
def test_bench_collectives_refuses_a_buffer_of_no_bytes(tmp_path, bench, capsys, size):
    """--bytes 0 printed a bus bandwidth of 0.0 GB/s, --bytes -5 one of -0.0: an all-reduce of no bytes has none."""
    with pytest.raises(SystemExit) as stop:
        bench.main(["--cluster", f"{ROOT_CLUSTERS}/h100_2_servers.toml", "--bytes", size])
    assert stop.value.code == 2
    assert "--bytes: expected a whole number of bytes above 0" in capsys.readouterr().err


def test_bench_collectives_on_one_gpu_says_there_is_no_all_reduce(bench, capsys):
    """A shipped one-GPU cluster (h100_1gpu.toml) raised ZeroDivisionError: one GPU reduces with nobody."""
    assert bench.main(["--cluster", f"{ROOT_CLUSTERS}/h100_1gpu.toml"]) == 0
    out = capsys.readouterr().out
    assert "1 GPU (1 server):" in out and "no all-reduce on one GPU" in out
    assert bench.cluster_bus_bandwidths(f"{ROOT_CLUSTERS}/h100_1gpu.toml", 2**30) == (None, None)


def test_bench_collectives_prints_one_server_once(bench, capsys):
    """On one server the server's line and the whole cluster's are the same group: it was printed twice."""
    assert bench.main(["--cluster", f"{ROOT_CLUSTERS}/a100_node.toml"]) == 0
    assert capsys.readouterr().out.count("8 GPUs (1 server)") == 1


@pytest.mark.parametrize(("name", "gpus"), [("mixed_counts_h100_a100.toml", 16), ("mixed_h100_a100_v100.toml", 32)])
def test_bench_collectives_does_not_price_a_group_train_refuses(bench, capsys, name, gpus):
    """The benchmark prices "a TP group of that size" as train would; over servers of 8 and 4 GPUs, or of
    several GPU types, train refuses that group, yet the benchmark printed a bus bandwidth for it (189.2 GB/s
    on mixed_counts_h100_a100.toml). It now says why it has none, train's own reason."""
    path = f"{ROOT_CLUSTERS}/{name}"
    with pytest.raises(InputError) as refused:
        archsim.train("configs/transformers/gpt3_175b.toml", cluster=path, tp=gpus, pp=1, dp=1, global_batch=1)
    assert bench.cluster_bus_bandwidths(path, 2**30)[1] is None
    assert bench.main(["--cluster", path]) == 0
    out = capsys.readouterr().out
    assert f"{gpus} GPUs (" in out and "not priced: archsim train refuses" in out
    assert refused.value.message in out


def test_bench_collectives_keeps_a_small_buffers_figure(bench, capsys):
    """--bytes 1000 printed 0.0 GB/s for both groups: a latency-bound figure below 1 GB/s rounded to nothing.
    Reference: bus bandwidth = 2(n − 1)/n · S / t, with t at least the ring's 2(n − 1) steps of some µs, so a
    1000-byte all-reduce over 8 GPUs is well below 1 GB/s and above 0."""
    path = f"{ROOT_CLUSTERS}/h100_2_servers.toml"
    server, whole = bench.cluster_bus_bandwidths(path, 1000)
    assert 0 < whole < server < 1
    assert bench.main(["--cluster", path, "--bytes", "1000"]) == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    printed = [float(line.split(":")[1]) for line in lines]
    assert printed == [pytest.approx(server, rel=1e-2), pytest.approx(whole, rel=1e-2)]
