"""``archsim collective``: the library's ``archsim.collective`` as a command, one row per size (nccl-tests' sweep by
default), checked against hand counts on one GPU a server and against the library, and refusing in one line."""

from __future__ import annotations

import json

import pytest

import archsim
from archsim.cli import main

NIC8 = '[cluster]\n[network]\nnics_per_server = 8\nnic_gbps = 400\n[[servers]]\ncount = 8\ngpus = 8\ngpu = "h100"\n'


def _run(capsys, *argv):
    assert main(["collective", *argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_one_gpu_a_server_is_its_nic_at_large_sizes(tmp_path, capsys):
    """8 servers, one GPU each on its own 400 Gb/s NIC (50 GB/s), the 8 rails' groups at once: a 4 GiB ring all-reduce
    runs at NCCL's channel speed η = 0.96 of the NIC, bus bandwidth 48 GB/s (hand count), less its latency."""
    path = tmp_path / "c.toml"
    path.write_text(NIC8, encoding="utf-8")
    doc = _run(capsys, "all-reduce", "--cluster", str(path), "--gpus", "8", "--per-server", "1", "--nbytes", "4294967296")
    row, = doc["rows"]
    assert row["nbytes"] == 2**32 and row["nccl_algorithm"] == "ring"
    assert row["bus_gbytes_per_s"] == pytest.approx(0.96 * 50, rel=2e-3)
    assert row["bus_gbytes_per_s"] == pytest.approx(row["algorithm_gbytes_per_s"] * 2 * 7 / 8)
    assert (doc["meta"]["gpus"], doc["meta"]["per_server"], doc["meta"]["servers_spanned"]) == (8, 1, 8)


def test_default_sizes_are_nccl_tests_sweep_and_match_the_library(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text(NIC8, encoding="utf-8")
    doc = _run(capsys, "all-to-all", "--cluster", str(path), "--gpus", "16")
    assert [row["nbytes"] for row in doc["rows"]] == [2**20, 2**22, 2**24, 2**26, 2**28, 2**30, 2**32]
    for row in doc["rows"]:
        one = archsim.collective("all-to-all", row["nbytes"], cluster=str(path), gpus=16)
        assert row["collective_seconds"] == one.seconds and row["nccl_algorithm"] == "pairwise"


def test_refusals_name_the_flags(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text(NIC8, encoding="utf-8")
    assert main(["collective", "all-reduce", "--cluster", str(path), "--gpus", "12", "--per-server", "3"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--per-server 3 GPUs of a group in each server must divide" in err
    assert main(["collective", "broadcast", "--cluster", str(path), "--gpus", "8"]) == 2
    assert "expected one of all-reduce, all-gather, reduce-scatter, all-to-all" in capsys.readouterr().err


def test_a_fraction_of_a_byte_is_refused_in_one_line(tmp_path, capsys):
    """A message is whole bytes: 1.5 is refused (command and library) in one line naming it; 1e9, an integral
    float, is read as 10⁹ bytes."""
    path = tmp_path / "c.toml"
    path.write_text(NIC8, encoding="utf-8")
    assert main(["collective", "all-reduce", "--cluster", str(path), "--gpus", "8", "--nbytes", "1.5"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--nbytes" in err and "whole number of bytes, got '1.5'" in err
    with pytest.raises(archsim.InputError, match=r"field 'nbytes': expected a whole number of bytes, got '?1\.5") as info:
        archsim.collective("all-reduce", 1.5, cluster=str(path), gpus=8)
    assert str(info.value).count("\n") == 0
    with pytest.raises(archsim.InputError, match="whole number of bytes"):
        archsim.collective("all-reduce", "2.5e0", cluster=str(path), gpus=8)
    doc = _run(capsys, "all-reduce", "--cluster", str(path), "--gpus", "8", "--nbytes", "1e9")
    assert [row["nbytes"] for row in doc["rows"]] == [10**9]
    assert archsim.collective("all-reduce", 1e9, cluster=str(path), gpus=8).nbytes == 10**9
