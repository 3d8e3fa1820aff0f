"""A GPU performance modeller checks archsim's one device model against their own kernel measurements and a
Hugging Face model's eager training iteration: ``archsim validate-gpu`` on NeuSight-format CSVs of their own and
``archsim train --implementation pytorch-eager --dtype fp32``.

Each test here failed on the code before its fix (the docstring says how). The references are outside the code:
PyTorch's eager autograd keeps every activation and reruns no forward unless the model wraps its layers in
``torch.utils.checkpoint`` (Hugging Face: ``gradient_checkpointing_enable()``, off by default); a CSV column the
user wrote to state the element type describes the kernels measured, so pricing them in another type is a wrong
answer, not a choice.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
GPT2 = str(ROOT / "configs/transformers/gpt2.json")
H100 = str(ROOT / "configs/clusters/h100_1gpu.toml")
EAGER = ["train", GPT2, "--cluster", H100, "--implementation", "pytorch-eager", "--dtype", "fp32", "--seq", "128",
         "--global-batch", "1", "--format", "json"]


def _meta(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[dict, str]:
    assert main(argv) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out)["meta"], captured.err


def test_eager_training_says_when_it_prices_the_default_full_recompute(capsys):
    """Failed before: ``train --implementation pytorch-eager --dtype fp32`` (Hugging Face's modules, as NeuSight
    measured them) priced Megatron-LM's default full recompute without a word — every layer's forward again in
    the backward, which eager PyTorch never runs unless asked (BERT-large, batch 2, V100: backward 238 ms against
    160 ms without, the measured 151) — while the other settings it defaults (attention, gradient accumulation)
    became plain PyTorch's. The default stays (its figures are documented) but is now named on stderr with the
    flag that removes it; an explicit ``--recompute`` says nothing."""
    implicit, said = _meta(capsys, EAGER)
    explicit, quiet = _meta(capsys, [*EAGER, "--recompute", "full"])
    assert "--recompute full, the default" in said and "--recompute none" in said, said
    assert "recompute" not in quiet, quiet
    assert implicit["recompute"] == "full" and implicit["iteration_seconds"] == explicit["iteration_seconds"]
    _, none_said = _meta(capsys, [*EAGER, "--recompute", "none"])
    assert "recompute" not in none_said


def test_the_python_api_warns_the_same_default_recompute_under_pytorch_eager():
    """Failed before: ``archsim.train(..., implementation="pytorch-eager", dtype="fp32")`` priced full recompute
    silently, as the command did; it now warns the command's note in the keywords' spelling, and an explicit
    ``recompute`` warns nothing and gives the same seconds as the default."""
    import warnings

    import archsim

    def run(**settings: str) -> tuple[float, list[str]]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result, _ = archsim.train(GPT2, cluster=H100, global_batch=1, seq=128, implementation="pytorch-eager",
                                      dtype="fp32", **settings)
        return result.iteration_seconds, [str(w.message) for w in caught]

    implicit, said = run()
    explicit, quiet = run(recompute="full")
    assert any("recompute='full', the default" in line and "recompute='none'" in line for line in said), said
    assert not any("recompute" in line for line in quiet), quiet
    assert implicit == explicit


def test_megatron_training_keeps_its_default_recompute_without_a_note(capsys):
    """The note is the eager list's alone: Megatron-LM's own default is full recompute, which ``train`` models."""
    argv = ["train", GPT2, "--cluster", H100, "--seq", "128", "--global-batch", "1", "--format", "json"]
    meta, said = _meta(capsys, argv)
    assert meta["recompute"] == "full"
    assert "recompute" not in said, said


def _csv(tmp_path: Path, dtype_header: str, cells: list[str]) -> str:
    path = tmp_path / "mine.csv"
    rows = [f"add,0.1,Tesla T4,32,1024,{cell}" for cell in cells]
    path.write_text("\n".join([f"OPName,Latency,Device,B,H,{dtype_header}", *rows]) + "\n")
    return str(path)


@pytest.mark.parametrize(("header", "cell", "flags", "wanted"), [
    ("dtype", "fp16", [], "--dtype fp16"),  # an fp16 file, the default fp32 priced
    ("DType", "torch.bfloat16", [], "--dtype bf16"),  # PyTorch's name, any case of the column's
    ("dtype", "float32", ["--dtype", "fp16"], "--dtype fp32"),
    ("dtype", "tf32", [], "not a dtype"),  # a type archsim has no kernels for
])
def test_a_dtype_column_that_disagrees_with_the_priced_dtype_is_refused(tmp_path, capsys, header, cell, flags, wanted):
    """Failed before: a NeuSight-format CSV of the user's own with a ``dtype`` column saying ``fp16`` was priced
    in fp32 (the format has no dtype column, so ``--dtype`` decides) without a word: the column was ignored like the
    observed kernel-name columns, and each fp16 kernel compared with an fp32 kernel's time. Now the row is named,
    with the flag that prices it as stated."""
    path = _csv(tmp_path, header, ["", cell])
    assert main(["validate-gpu", "--csv", path, *flags]) == 2
    err = capsys.readouterr().err
    assert "line 3" in err and f"'{header}'" in err and wanted in err, err


def test_a_dtype_column_that_agrees_is_read_and_the_rows_priced_as_stated(tmp_path, capsys):
    """The same file with the flag its column names runs, each row priced once in that dtype: an fp16 ``add``
    of 32 × 1,024 elements moves 3 tensors of 2 bytes, half the fp32 kernel's bytes (the launch apart)."""
    path = _csv(tmp_path, "dtype", ["half", "fp16"])
    argv = ["validate-gpu", "--csv", path, "--show", "kernels", "--format", "json"]
    assert main([*argv, "--dtype", "fp16"]) == 0
    fp16 = json.loads(capsys.readouterr().out)["rows"]
    plain = _csv(tmp_path, "note", ["x", "y"])  # another column of the user's: read as before, not a dtype
    assert main(["validate-gpu", "--csv", plain, "--show", "kernels", "--format", "json"]) == 0
    fp32 = json.loads(capsys.readouterr().out)["rows"]
    launch = 16.0e-6  # kernels.FITTED's launch, the same on both
    assert [r["line"] for r in fp16] == [2, 3]
    assert fp16[0]["predicted_seconds"] - launch == pytest.approx((fp32[0]["predicted_seconds"] - launch) / 2,
                                                                  rel=1e-3)


def test_the_stats_say_which_way_each_class_is_off(tmp_path, capsys):
    """Failed before: ``validate-gpu --show stats`` on NeuSight-format CSVs gave each GPU and op class a MAPE
    alone, which has no sign: a modeller could not tell a class predicted 30% slow from one 30% fast without the
    per-kernel rows. Each row now has ``median_ratio``, the median of predicted / measured, as the measured CSVs'
    statistics name it. Reference by construction: measured times set to the prediction ÷ 2, ÷ 0.8 and ÷ 0.25
    make the ratios 2, 0.8 and 0.25 — median 0.8, a class predicted 20% fast — and the MAPE (1 + 0.2 + 0.75) / 3."""
    shapes = ["add,1,Tesla T4,32,1024", "relu,1,Tesla T4,4096,4096", "gelu,1,Tesla T4,64,100000"]
    path = tmp_path / "mine.csv"
    path.write_text("\n".join(["OPName,Latency,Device,B,H", *shapes]) + "\n")
    assert main(["validate-gpu", "--csv", str(path), "--show", "kernels", "--format", "json"]) == 0
    predicted = [row["predicted_seconds"] for row in json.loads(capsys.readouterr().out)["rows"]]
    ratios = (2.0, 0.8, 0.25)
    rows = [f"{shape.split(',', 1)[0]},{seconds * 1e3 / ratio!r},{shape.split(',', 2)[2]}"
            for shape, seconds, ratio in zip(shapes, predicted, ratios, strict=True)]
    path.write_text("\n".join(["OPName,Latency,Device,B,H", *rows]) + "\n")
    assert main(["validate-gpu", "--csv", str(path), "--show", "stats", "--format", "json"]) == 0
    (stats,) = json.loads(capsys.readouterr().out)["rows"]
    assert stats["op_class"] == "elementwise" and stats["kernel_count"] == 3
    assert stats["median_ratio"] == pytest.approx(0.8)
    assert stats["mape"] == pytest.approx((1.0 + 0.2 + 0.75) / 3)


@pytest.mark.parametrize("flags", [[], ["--dtype", "fp16"]])
def test_a_linear_on_a_batched_input_is_one_gemm_of_all_its_rows(tmp_path, capsys, flags):
    """Failed before: a ``linear`` row with B > 1 (NeuSight's own rows all have B = 1; a user's ``nn.Linear`` on a
    B × M × K input) was priced as B GEMMs in one launch, each reading the weight again: B = 512 one-token rows
    of a 4,096² layer on a T4 took 0.14 s, 31× the same 512 rows as one GEMM (4.5 ms), the weight's 64 MiB read
    512 times. PyTorch folds a linear's leading dimensions into the rows — one GEMM of B·M rows against the one
    weight (``F.linear`` on a contiguous 3-d input runs one addmm) — so B × M prices as 1 × B·M. A ``bmm`` keeps its B
    GEMMs, each with its own second operand: 512 one-row products of 4,096² read 512 weights."""
    rows = ["linear,1,Tesla T4,512,1,4096,4096", "linear,1,Tesla T4,1,512,4096,4096",
            "linear,1,Tesla T4,8,128,1024,1024", "linear,1,Tesla T4,1,1024,1024,1024", "bmm,1,Tesla T4,512,1,4096,4096"]
    path = tmp_path / "mine.csv"
    path.write_text("\n".join(["OPName,Latency,Device,B,M,N,K", *rows]) + "\n")
    assert main(["validate-gpu", "--csv", str(path), "--show", "kernels", "--format", "json", *flags]) == 0
    out = json.loads(capsys.readouterr().out)["rows"]
    seconds = [row["predicted_seconds"] for row in out]
    assert [(row["B"], row["M"]) for row in out] == [(512, 1), (1, 512), (8, 128), (1, 1024), (512, 1)]  # as given
    assert seconds[0] == seconds[1] and seconds[2] == seconds[3]
    weights = 512 * 4096 * 4096 * (2 if flags else 4) / 320e9  # the bmm's 512 weights once at the T4's 320 GB/s
    assert seconds[4] >= weights and seconds[0] < weights / 10  # the linear reads its one weight
