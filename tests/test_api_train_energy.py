"""``archsim.train`` returns what ``archsim train`` prints: the iteration's energy (``energy_j``,
``energy_source``) beside its seconds, priced by the one function both call
(:func:`archsim.training.energy.priced`), on the laid-out cluster the iteration ran on; and the
parallelism that ran (a planned split) and whether each rank's memory fits its GPU."""

from __future__ import annotations

import json

import pytest
from test_docs import ROOT

import archsim
from archsim.cli import main
from archsim.training.energy_sources import BOARD_SOURCE, MODEL_SOURCE

MODEL = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")
A100_NODE = str(ROOT / "configs" / "clusters" / "a100_node.toml")
TPU_SLICE = str(ROOT / "configs" / "clusters" / "tpu_v4_like_slice.toml")
A100_SXM4_WATTS = 400.0  # NVIDIA A100 80GB SXM4 datasheet: max TDP

CASES = {  # name → (cluster, keywords as train's flags take them)
    "catalog A100s": (A100_NODE, {"tp": 2, "pp": 2, "dp": 2, "global_batch": 16, "micro_batch": 2}),
    "planned split and order": (A100_NODE, {"pp": 2, "dp": 2, "global_batch": 8, "micro_batch": 2,
                                            "balance": "planned", "placement": "planned"}),
    "array chips": (TPU_SLICE, {"tp": 2, "pp": 2, "dp": 2, "global_batch": 16, "micro_batch": 2, "dtype": "bf16",
                                "attention": "standard"}),
}


def _cli_meta(capsys, cluster: str, keywords: dict) -> dict:
    argv = ["train", MODEL, "--cluster", cluster, "--format", "json"]
    for key, value in keywords.items():
        argv += [f"--{key.replace('_', '-')}", str(value)]
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)["meta"]


@pytest.mark.parametrize("case", CASES)
def test_api_energy_is_the_clis(capsys, case):
    cluster, keywords = CASES[case]
    result, _ = archsim.train(MODEL, cluster=cluster, **keywords)
    meta = _cli_meta(capsys, cluster, keywords)
    assert result.iteration_seconds == meta["iteration_seconds"]
    assert result.energy_j == meta["energy_j"] and result.energy_source == meta["energy_source"]
    assert result.energy_source == (MODEL_SOURCE if cluster == TPU_SLICE else BOARD_SOURCE)
    assert result.parallelism is not None and result.parallelism.microbatches == meta["microbatches"]
    split = result.parallelism.stage_layers
    assert (",".join(map(str, split)) if split else "even") == meta["stage_layers"]
    assert max(result.capacities) / 2**30 == meta["memory_capacity_gib"]
    assert list(result.fits) == [rank["fits"] for rank in meta["memory_per_rank"]]
    assert all(result.fits) == meta["fits_memory"]


def test_a_planned_split_is_returned():
    """balance="planned" chooses the split: the caller sees which (it was only in the CLI's meta)."""
    cluster, keywords = CASES["planned split and order"]
    result, _ = archsim.train(MODEL, cluster=cluster, **keywords)
    assert result.parallelism is not None and result.parallelism.stage_layers is not None
    assert sum(result.parallelism.stage_layers) == 24  # gpt_1024h_24l: 24 layers over the 2 stages


def test_a_rank_over_its_memory_does_not_fit():
    """A100 80 GB: GPT 1024h×24l (≈0.3 B parameters) with a 1,024-sequence micro-batch of 256 under no
    recompute needs far more activation memory than one GPU has."""
    with pytest.warns(UserWarning, match="^does not fit: pipeline rank 0 needs"):
        result, _ = archsim.train(MODEL, cluster=A100_NODE, global_batch=256, micro_batch=256, recompute="none")
    assert result.fits == (False,) and result.peak_memory_gib > 80


def test_board_power_energy_by_hand():
    """On catalog A100s: every GPU at its datasheet board power for the whole iteration."""
    result, _ = archsim.train(MODEL, cluster=A100_NODE, tp=2, pp=2, dp=2, global_batch=16, micro_batch=2)
    assert result.energy_j == pytest.approx(result.iteration_seconds * A100_SXM4_WATTS * 8, rel=1e-12)
