"""A user trial's findings in ``archsim search`` and ``train`` (an LLM trainer with MoE and long-context models):
the text of the EP rule search rejects by."""

from __future__ import annotations

from pathlib import Path

from archsim.training import search as search_module
from archsim.training.search_space import Candidate, rejection
from archsim.workload.model_files import load_transformer

ROOT = Path(__file__).resolve().parents[1]
MIXTRAL = ROOT / "tests" / "data" / "hf_configs" / "mixtral_8x7b.json"


def test_ep_divides_dp_is_stated_as_trains_rule_over_cp_times_dp():
    """``ep-divides-dp`` rejects EP ∤ CP × DP at ETP = TP (Megatron-Core's expert groups take the CP ranks as DP
    ranks): EP 2 at CP 2, DP 1 runs; at CP 1, DP 1 it is rejected. The search's docstring said EP divides DP."""
    config = load_transformer(str(MIXTRAL), seq=4096)
    beside_cp = Candidate(8, 1, 1, 1, "none", "1f1b", 1, True, attention="flash", cp=2, ep=2)
    alone = Candidate(8, 1, 1, 1, "none", "1f1b", 1, True, attention="flash", cp=1, ep=2)
    assert rejection(config, beside_cp, 8, 8) is None  # EP 2 divides CP × DP = 2 × 1
    assert rejection(config, alone, 8, 8) == "ep-divides-dp"  # EP 2 does not divide 1 × 1
    doc = " ".join(search_module.search.__doc__.split())
    said = doc[doc.index("``eps``"):doc.index("``etps``")]
    assert "CP × DP" in said and "experts and DP" not in said
    training = " ".join((ROOT / "docs" / "training.md").read_text().split())
    assert "`ep-divides-dp` where EP does not divide CP × DP" in training
