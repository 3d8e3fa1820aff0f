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


AMBIGUOUS = "'1GB' is ambiguous: write 1GiB for 1024-based bytes (nccl-tests' 1G) or 1e9 for 1000-based ones"
NO_NUMBER = "or a size in KiB, MiB, GiB or TiB (1GiB; nccl-tests' 1G), got '2**30'"


@pytest.mark.parametrize(("size", "said"), [("1GB", AMBIGUOUS), ("2**30", NO_NUMBER), ("1X", "got '1X'")])
def test_a_size_it_cannot_read_says_what_to_write(dgx2, capsys, size, said):
    """One line naming what to write: a decimal suffix is 2³⁰ bytes to nccl-tests and 10⁹ to SI, so both are named."""
    assert main(["collective", "all-reduce", "--cluster", dgx2, "--gpus", "16", "--nbytes", size]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err
    with pytest.raises(archsim.InputError, match="field 'nbytes'"):
        archsim.collective("all-reduce", size, cluster=dgx2, gpus=16)


def _shared(tmp_path, gpu, extra=""):
    path = tmp_path / "shared.toml"
    path.write_text(f'[cluster]\ninter_server_gbps = 400\n{extra}\n[[servers]]\ncount = 2\ngpus = 8\ngpu = "{gpu}"\n',
                    encoding="utf-8")
    return str(path)


TRAIN = ["train", "gpt2", "--tp", "4", "--pp", "2", "--dp", "2", "--global-batch", "16", "--format", "json"]


def test_one_shared_nic_on_nvswitch_servers_is_noted(tmp_path, capsys):
    """`inter_server_gbps = 400` is one NIC's speed; without `inter_server_link` the default is one NIC for the
    server (formats.md), so two DGX H100s run DP on 400 Gb/s / 8 GPUs = 6.25 GB/s per GPU where the machine has
    50: the run is priced so (its meta says it) and one note names per_gpu_pair."""
    path = _shared(tmp_path, "NVIDIA H100 80GB HBM3")
    assert main([*TRAIN, "--cluster", path]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["meta"]["inter_server"]["gb_per_s_per_gpu"] == 400 / 8 / 8  # Gb/s → GB/s, 8 GPUs
    notes = [line for line in captured.err.splitlines() if "inter_server_link" in line]
    assert notes == [("archsim train: note: inter_server_gbps = 400 with no inter_server_link is one 400 Gb/s NIC "
                      "per server, shared by its 8 GPUs (6.25 GB/s per direction per GPU; the key's default, "
                      '"shared"); an NVSwitch server (DGX, HGX) has a NIC per GPU: write inter_server_link = '
                      '"per_gpu_pair" (or a [network] table) for that, or inter_server_link = "shared" to keep the '
                      "one NIC")]


@pytest.mark.parametrize(("gpu", "extra"), [("h100", 'inter_server_link = "shared"'),
                                             ("h100", 'inter_server_link = "per_gpu_pair"'),
                                             ("h100-pcie", ""), ("v100-pcie", "")])
def test_no_note_where_the_link_is_stated_or_the_server_has_no_nvswitch(tmp_path, capsys, gpu, extra):
    """Stated either way, the file says what it means; a PCIe server's one NIC is no slip to guess at."""
    assert main([*TRAIN, "--cluster", _shared(tmp_path, gpu, extra), "--dtype", "fp16"]) == 0
    assert "inter_server_link" not in capsys.readouterr().err


def test_search_notes_name_the_row_they_mean_by_its_layout():
    """The table prints no row numbers, so `row 7` alone made a reader count lines: the notes name the row's layout as
    the Pareto block writes it (TP, PP, DP, micro-batch, recompute, schedule, chunks, sp), here spelt by hand."""
    from archsim.fits import row_layout

    row = {"tp": 1, "pp": 4, "dp": 4, "micro_batch": 2, "recompute": "none", "schedule": "interleaved-1f1b",
           "interleave": 2, "sequence_parallel": False}
    assert row_layout(row) == "TP1 PP4 DP4 mb2 none interleaved-1f1b v2"
    assert row_layout({**row, "tp": 2, "interleave": 1, "schedule": "1f1b", "sequence_parallel": True,
                       "cp": 2, "cp_comm": "p2p"}) == "TP2 CP2 p2p PP4 DP4 mb2 none 1f1b sp"


@pytest.mark.parametrize(("layout", "said"), [
    (["--tp", "8", "--pp", "2", "--dp", "2"], "= 32 GPUs > the cluster's 16: --dp 1 fits (8 × 2 × 1 = 16 GPUs)"),
    (["--tp", "4", "--pp", "3", "--dp", "2"], "= 24 GPUs > the cluster's 16: --dp 1 fits (4 × 3 × 1 = 12 GPUs)"),
    (["--tp", "2", "--pp", "2", "--dp", "8"], "= 32 GPUs > the cluster's 16: --dp 4 fits (2 × 2 × 4 = 16 GPUs)"),
    (["--tp", "8", "--pp", "3"], "= 24 GPUs > the cluster's 16: --tp × --pp = 24 alone is more: lower --tp or --pp")])
def test_a_layout_over_the_cluster_says_what_fits(dgx2, capsys, layout, said):
    """TP 8 · PP 2 · DP 2 on two 8-GPU servers was refused without a word on what to change: the line names the
    largest DP beside that TP and PP (16 // (TP · PP), by hand), or which to lower where TP · PP alone is over."""
    assert main(["train", "gpt2", "--cluster", dgx2, *layout, "--global-batch", "48"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.strip().endswith(said)
