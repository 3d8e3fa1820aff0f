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


def test_megatron_training_keeps_its_default_recompute_without_a_note(capsys):
    """The note is the eager list's alone: Megatron-LM's own default is full recompute, which ``train`` models."""
    argv = ["train", GPT2, "--cluster", H100, "--seq", "128", "--global-batch", "1", "--format", "json"]
    meta, said = _meta(capsys, argv)
    assert meta["recompute"] == "full"
    assert "recompute" not in said, said
