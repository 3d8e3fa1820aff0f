"""An engineer planning two DGX H100 servers: what the trial found unclear or refused, each checked against the
documented rule or a hand count."""

from __future__ import annotations

import json

import pytest

import archsim
from archsim.cli import main

DGX2 = ('[cluster]\n[network]\nnics_per_server = 8\nnic_gbps = 400\n[[servers]]\ncount = 2\ngpus = 8\n'
        'gpu = "NVIDIA H100 80GB HBM3"\n')


@pytest.fixture
def dgx2(tmp_path):
    path = tmp_path / "dgx2.toml"
    path.write_text(DGX2, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(("size", "nbytes"), [("1GiB", 2**30), ("1G", 2**30), ("512MiB", 2**29), ("4k", 4096),
                                               ("1.5G", 3 * 2**29), (" 2 TiB ", 2 * 2**40)])
def test_nbytes_takes_binary_sizes_as_nccl_tests_does(dgx2, capsys, size, nbytes):
    """nccl-tests' -b/-e read K, M, G as powers of 1024 (its parsesize); the help says --nbytes takes nccl-tests' sizes,
    yet `--nbytes 1GiB` and `1G` were refused as no number. The row's nbytes is the hand count, and so is the
    library's."""
    assert main(["collective", "all-reduce", "--cluster", dgx2, "--gpus", "16", "--nbytes", size,
                 "--format", "json"]) == 0
    row, = json.loads(capsys.readouterr().out)["rows"]
    assert row["nbytes"] == nbytes
    assert archsim.collective("all-reduce", size, cluster=dgx2, gpus=16).nbytes == nbytes


@pytest.mark.parametrize(("size", "said"), [("1GB", "'1GB' is ambiguous: write 1GiB for 1024-based bytes "
                                                   "(nccl-tests' 1G) or 1e9 for 1000-based ones"),
                                            ("2**30", "or a size in KiB, MiB, GiB or TiB (1GiB; nccl-tests' 1G), "
                                                      "got '2**30'"),
                                            ("1X", "got '1X'")])
def test_a_size_it_cannot_read_says_what_to_write(dgx2, capsys, size, said):
    """One line naming what to write: a decimal suffix is 2³⁰ bytes to nccl-tests and 10⁹ to SI, so both are named."""
    assert main(["collective", "all-reduce", "--cluster", dgx2, "--gpus", "16", "--nbytes", size]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err
    with pytest.raises(archsim.InputError, match="field 'nbytes'"):
        archsim.collective("all-reduce", size, cluster=dgx2, gpus=16)
