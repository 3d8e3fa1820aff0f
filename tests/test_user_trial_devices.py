"""A first-time user's trial of the device and training commands: each test is a defect found by
running the commands as the README and docs describe them.

References: the measured CSV rows read with the csv module (tests/data/neusight_kernels/, a sample of
NeuSight's files), and the same figure from another command or option of archsim.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archsim.cli import main
from tests.neusight_sample import KERNELS, csv_records, json_output

ROOT = Path(__file__).resolve().parents[1]


def test_gpu_flag_compares_only_the_rows_measured_on_that_gpu(capsys):
    """``validate-gpu --csv linear.csv --gpu "Tesla T4"`` predicted every row of the five GPUs as a T4
    and reported the T4's MAPE against the V100's, A100's, … times (122% over 5,134 kernels on the
    full file, against 8.6% for the T4's own rows)."""
    path = str(KERNELS / "linear.csv")
    t4 = [r for r in csv_records("linear") if r["Device"] == "Tesla T4"]
    rows = json_output(capsys, ["validate-gpu", "--csv", path, "--gpu", "Tesla T4", "--format", "json"])["rows"]
    assert [r["measured_seconds"] for r in rows] == pytest.approx([float(r["Latency"]) / 1e3 for r in t4])
    stats = json_output(capsys, ["validate-gpu", "--csv", path, "--gpu", "Tesla T4", "--format", "json",
                           "--show", "stats"])["rows"]
    every = json_output(capsys, ["validate-gpu", "--csv", path, "--format", "json", "--show", "stats"])["rows"]
    mine = [r for r in every if r["gpu"] == "t4-16gb"]
    assert [(r["gpu"], r["kernel_count"]) for r in stats] == [("t4-16gb", len(t4))]
    assert stats[0]["mape"] == pytest.approx(mine[0]["mape"])


def test_gpu_flag_names_what_each_row_was_measured_on(capsys):
    """A GPU the file has no rows of (the docs' ``--gpu "NVIDIA L4" --show kernels``) is predicted on
    every row; each row says which GPU its measured time is from, and no MAPE is printed as if the
    two were the same GPU."""
    path = str(KERNELS / "bmm.csv")
    rows = json_output(capsys, ["validate-gpu", "--csv", path, "--gpu", "NVIDIA L4", "--format", "json"])["rows"]
    assert [r["measured_device"] for r in rows] == [r["Device"] for r in csv_records("bmm")]
    assert {r["gpu"] for r in rows} == {"l4-24gb"}
    assert main(["validate-gpu", "--csv", path, "--gpu", "NVIDIA L4", "--show", "stats"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "NVIDIA L4" in err and "--show kernels" in err


def _quoted_command(page: str, needle: str) -> list[str]:
    """The ``archsim …`` line of a docs page that contains ``needle``, as argv (without ``archsim``)."""
    import shlex

    lines = [line for line in (ROOT / "docs" / page).read_text().splitlines()
             if line.startswith("archsim ") and needle in line]
    assert len(lines) == 1, lines
    return shlex.split(lines[0])[1:]


def test_the_runs_example_of_the_training_page_predicts_vtrains_runs_as_stated(capsys, monkeypatch):
    """docs/training.md's ``--runs configs/runs/vtrain_h1024_l24.csv`` example ran FlashAttention
    (train's default) on vTrain's runs, which Megatron-DeepSpeed ran with the standard attention core:
    24% MAPE against the measured times the file holds, where the page (and README) state 6–7%."""
    monkeypatch.chdir(ROOT)  # the page's paths are the repository's
    argv = _quoted_command("training.md", "--runs configs/runs/vtrain_h1024_l24.csv")
    meta = json_output(capsys, [*argv, "--format", "json"])["meta"]
    assert meta["measured"] == 18
    assert meta["mape"] < 0.10


@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_train_prices_energy_on_the_op_list_it_times(capsys, dtype):
    """``train --implementation pytorch-eager`` on an array device timed plain PyTorch's op list but
    priced its energy on Megatron's (the command passed no implementation to the energy): 6.514 J for
    both in fp32, although the eager list is 40% slower. Its GEMMs are the same and its unfused
    memory-bound kernels read and write more HBM words, so its energy must be the larger."""
    argv = ["train", str(ROOT / "configs" / "transformers" / "gpt2.json"), "--cluster",
            str(ROOT / "configs" / "clusters" / "scalesim_32x32_device.toml"), "--global-batch", "1",
            "--attention", "standard", "--recompute", "none", "--dtype", dtype, "--format", "json"]
    megatron = json_output(capsys, argv)["meta"]
    eager = json_output(capsys, [*argv, "--implementation", "pytorch-eager"])["meta"]
    assert megatron["energy_source"] == eager["energy_source"] == "energy model on the ops' accesses " \
                                                                   "(archsim.energy, default table)"
    assert eager["iteration_seconds"] > megatron["iteration_seconds"]
    assert eager["energy_j"] > megatron["energy_j"]
    if dtype == "fp16":  # the fp32 eager list is NeuSight's kernel split (eager_ops), not derived here
        assert eager["energy_j"] - megatron["energy_j"] == pytest.approx(_eager_extra_fp16_by_hand() * 1e-12,
                                                                         rel=1e-9)


def _eager_extra_fp16_by_hand() -> float:
    """pJ plain PyTorch's fp16 GPT-2 iteration (micro-batch 1, s = T = 1,024, h = 768, f = 3,072, 12 heads, 12
    layers, vocabulary padded to V = 50,304) spends above Megatron's: the same GEMMs, so only the memory-bound
    ops' HBM words differ, each at the vector add (0.4 pJ) and a DRAM word (1300 / 64 × 16 pJ). Words in 2-byte
    units from the documented tables (archsim/training/eager_ops.py, layer_ops.py), X = T·h, F = T·f, S = s²·a:
    a layer, Megatron: norms 2 × (2 + 3)X, fused softmax (2 + 3)S, attention dropout 2 × 2.5S, bias-dropout-adds
    2 × 2 × 3.5X, bias-GeLU (2 + 3)F = 24X + 10S + 5F; eager: LayerNorms 2 × (2 + 3 + 2)X, masked_fill 2 × 4S (a clone, then the
    in-place fill), softmax 2S + (3 + 3)S (CUDA's dY ∘ Y product before the backward kernel), dropout 5S, context copy 2X,
    residual adds 2 × 2 × 3X, hidden dropouts 2 × 2 × 2.5X, GeLU 5F, bias gradients (3X + X + F + X), dq and dk scaled by
    1/√d 2 × 2X, q/k/v gradients' concatenation 6X = 53X + 21S + 6F. Embedding: Megatron
    lookup 4X, dropout 2 × 2.5X, gradient V·h + 3X; eager two gathers 2 × 2X, add 3X, transpose 2X, dropout
    2 × 2.5X, position gradient 2X, contiguous 2X, token gradient V·h + 2X, tied sum 3V·h. Head: Megatron final
    norm 5X, cross-entropy (11 + 4)T·V; eager final norm 5X + 2X (γ, β), casts 3 + 3, log-softmax 4 + 6, NLL
    2T and 2T·V."""
    t, h, f, heads, layers, vocab = 1024, 768, 3072, 12, 12, 50304
    x, ff, s = t * h, t * f, t * t * heads
    layer = (53 * x + 21 * s + 6 * ff) - (24 * x + 10 * s + 5 * ff)
    embedding = (4 * x + 3 * x + 2 * x + 5 * x + 2 * x + 2 * x + vocab * h + 2 * x + 3 * vocab * h) \
        - (4 * x + 5 * x + vocab * h + 3 * x)
    head = (7 * x + 18 * t * vocab + 2 * t) - (5 * x + 15 * t * vocab)
    return (layers * layer + embedding + head) * (0.4 + 1300 / 64 * 16)


@pytest.mark.parametrize("cluster", ["tpu_v4_like_slice.toml", "h100_1gpu.toml"])
def test_a_sweep_point_has_the_energy_train_prints_for_it(capsys, cluster):
    """``train --sweep`` printed time, rates and memory per point but no energy, though ``train`` prints
    ``energy_j`` for one point and ``search`` a column of it: the same point's figure, on array devices
    (the energy model) and on catalog GPUs (board power × time) alike."""
    model = str(ROOT / "configs" / "transformers" / "gpt3_1.3b.toml")
    path = str(ROOT / "configs" / "clusters" / cluster)
    gpus = "16" if cluster.startswith("tpu") else "1"
    base = ["train", model, "--cluster", path, "--dp", gpus, "--global-batch", "32", "--format", "json"]
    swept = json_output(capsys, [*base, "--sweep", "micro_batch=1,2"])
    for row in swept["rows"]:
        one = json_output(capsys, [*base, "--micro-batch", str(row["micro_batch"])])["meta"]
        assert row["iteration_seconds"] == pytest.approx(one["iteration_seconds"])
        assert row["energy_j"] == pytest.approx(one["energy_j"])
    assert swept["meta"]["energy_source"] == one["energy_source"]


@pytest.mark.parametrize("header, row, missing", [
    ("OPName,Latency,Device,B,M,N", "linear,0.1,Tesla T4,1,64,64", "K"),
    ("OPName,Latency,Device,B", "softmax,0.1,Tesla T4,8", "H")])
def test_a_missing_shape_column_is_named_as_missing(tmp_path, capsys, header, row, missing):
    """A NeuSight CSV without a shape column its ops need was refused as a bad cell of the first row
    ("line 2, field 'K': must be a positive integer, got ''"), as if the value were empty."""
    path = tmp_path / "kernels.csv"
    path.write_text(f"{header}\n{row}\n")
    assert main(["validate-gpu", "--csv", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}, line 1, field '{missing}'" in err and "missing column" in err


def test_a_mig_slice_is_not_taken_for_the_whole_gpu(capsys):
    """CUDA names a MIG instance "NVIDIA A100-SXM4-80GB MIG 1g.10gb": the catalog read it as the whole
    A100 (108 SMs, where a 1g slice has 14: NVIDIA's MIG user guide) and timed its kernels 7× fast."""
    from archsim.devices.gpu_lookup import find_gpu
    from archsim.errors import InputError

    with pytest.raises(InputError, match="MIG slice"):
        find_gpu("NVIDIA A100-SXM4-80GB MIG 1g.10gb")
    assert find_gpu("NVIDIA A100-SXM4-80GB") == "a100-80gb"
    path = str(KERNELS / "softmax.csv")
    assert main(["validate-gpu", "--csv", path, "--gpu", "NVIDIA A100-SXM4-80GB MIG 1g.10gb"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and "MIG slice" in err


def test_a_cuda_name_with_another_memory_size_is_not_the_catalog_board(tmp_path, capsys):
    """A cluster of "Tesla V100-PCIE-16GB" trained on the catalog's 32 GB V100 PCIe board: twice the memory
    the GPU has (NVIDIA's V100 PCIe datasheet: 16 or 32 GB), so a run that does not fit was said to. (The SXM2
    16 GB module, "Tesla V100-SXM2-16GB", is a catalog board of its own: tests/test_v100_16gb.py.)"""
    cluster = tmp_path / "v100_16gb.toml"
    cluster.write_text('[cluster]\nname = "v100_16gb"\n\n[[servers]]\ncount = 1\ngpus = 1\n'
                       'intra_server_gbps = 1200\ngpu = "Tesla V100-PCIE-16GB"\n')
    argv = ["train", str(ROOT / "configs" / "transformers" / "gpt2.json"), "--cluster", str(cluster),
            "--global-batch", "1"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "16" in err and "32" in err
    cluster.write_text(cluster.read_text().replace("16GB", "32GB"))
    assert main([*argv, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["meta"]["memory_capacity_gib"] == pytest.approx(32)


def test_a_runs_row_has_the_energy_train_prints_for_it(capsys, tmp_path):
    """``train --runs`` printed each row's time and memory but not the energy ``train`` prints for the same
    iteration (and ``--sweep`` for each point), on array devices and GPUs alike."""
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch,global_batch,recompute\n2,1,8,1,64,full\n1,2,8,2,64,none\n")
    model = str(ROOT / "configs" / "transformers" / "gpt3_1.3b.toml")
    cluster = str(ROOT / "configs" / "clusters" / "tpu_v4_like_slice.toml")
    out = json_output(capsys, ["train", model, "--cluster", cluster, "--runs", str(runs), "--format", "json"])
    for row in out["rows"]:
        one = json_output(capsys, ["train", model, "--cluster", cluster, "--tp", str(row["tp"]), "--pp", str(row["pp"]),
                             "--dp", str(row["dp"]), "--micro-batch", str(row["micro_batch"]), "--global-batch",
                             str(row["global_batch"]), "--recompute", row["recompute"], "--format", "json"])["meta"]
        assert row["predicted_seconds"] == pytest.approx(one["iteration_seconds"])
        assert row["energy_j"] == pytest.approx(one["energy_j"])
    assert out["meta"]["energy_source"] == one["energy_source"]


def test_train_names_the_sequence_length_its_tokens_per_second_count(capsys):
    """``train --seq`` (or a config's own length) set the tokens each sample has, but no output named
    it: tokens/s could not be read back to samples/s. The meta's ``seq`` is the one tokens/s counts."""
    model = str(ROOT / "configs" / "transformers" / "gpt3_1.3b.toml")
    cluster = str(ROOT / "configs" / "clusters" / "a100_node.toml")
    for extra in ([], ["--seq", "1024"]):
        meta = json_output(capsys, ["train", model, "--cluster", cluster, "--global-batch", "8", "--format", "json",
                              *extra])["meta"]
        seq = 1024 if extra else 2048  # the config's seq = 2048
        assert meta["seq"] == seq
        assert meta["tokens_per_second"] == pytest.approx(8 * seq / meta["iteration_seconds"])


@pytest.mark.long
def test_gpu_flag_does_not_model_another_gpu_against_a_measured_csvs_times(capsys):
    """``validate-gpu --csv gpu_kernels_h200.csv --gpu "Tesla T4"`` modelled a T4 with the H200's 132 SMs
    (the CSV's ``# sm_count``), labelled the rows h200 and compared them with the H200's times
    (seconds_mape 5.76): a GPU that is not the CSV's ``# gpu:`` is refused, naming both."""
    path = str(ROOT / "benchmarks" / "results" / "gpu_kernels_h200.csv")
    with open(path, encoding="utf-8") as handle:
        assert handle.readline().strip() == "# gpu: NVIDIA H200"
    assert main(["validate-gpu", "--csv", path, "--gpu", "Tesla T4"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "NVIDIA H200" in err and "Tesla T4" in err
    same = json_output(capsys, ["validate-gpu", "--csv", path, "--gpu", "NVIDIA H200", "--format", "json"])
    assert same == json_output(capsys, ["validate-gpu", "--csv", path, "--format", "json"])


def test_an_iterations_csv_given_to_validate_gpu_is_told_apart(tmp_path, capsys):
    """NeuSight's ``train_iterations.csv`` (whole training iterations) given to ``validate-gpu`` was
    refused as "missing column(s) network, layer, op, measured_ms", naming neither kernel format nor
    what reads iterations."""
    path = tmp_path / "train_iterations.csv"
    path.write_text("device,model,seq,batch,parallel,e2e_ms,fw_ms,bwall_ms,layers_measured\n"
                    "Tesla_V100-PCIE-32GB,bert_large,512,2,single,234.2,82.9,151.2,24\n")
    assert main(["validate-gpu", "--csv", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "OPName" in err and "iterations" in err and "archsim train" in err


@pytest.mark.parametrize("name", ["Tesla P100-SXM2-16GB", "NVIDIA H100 NVL"])
def test_another_board_of_a_catalog_chip_is_not_taken_for_it(name):
    """CUDA's names of boards the catalog does not hold were matched to another board of the chip: the
    P100 SXM2 (1,480 MHz boost, 300 W: NVIDIA's P100 datasheet) to the P100 PCIe (1,303 MHz, 250 W), the
    H100 NVL (a 94 GB, 400 W PCIe card) to the H100 SXM5 (80 GB, 700 W)."""
    from archsim.devices.gpu_lookup import find_gpu

    assert find_gpu(name) is None


def test_a_sweep_none_of_whose_points_runs_is_an_error(capsys):
    """``train --dtype fp32 --sweep micro_batch=1,2`` on a GPU kept train's default FlashAttention, which
    has no fp32 kernel: every row was that error, with exit status 0 and no time anywhere. One line
    and exit 2, as ``train`` gives for the same flags."""
    argv = ["train", str(ROOT / "configs" / "transformers" / "gpt2.json"), "--cluster",
            str(ROOT / "configs" / "clusters" / "h100_1gpu.toml"), "--global-batch", "8", "--dtype", "fp32"]
    assert main(argv) == 2
    single = capsys.readouterr().err
    assert main([*argv, "--sweep", "micro_batch=1,2"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and "no point" in err
    assert single.split("error: ", 1)[1].split(": ", 1)[1].strip() in err
