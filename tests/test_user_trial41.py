"""A researcher driving archsim from Python in a notebook (user trial 41): each test failed on the code
before its fix. The command's printed output is the reference where the API promises the command's
numbers (docs/api.md: "the flags as keywords")."""

from __future__ import annotations

import pytest
from api_parity_helpers import as_flag, cli_error, cli_json
from test_docs import ROOT

import archsim
from archsim.errors import InputError

SAMPLE = ["pipeline", "layerpipe_sample", "--processors", "3", "--method", "layerpipe", "--mode", "paper"]


@pytest.fixture
def sample_profile(monkeypatch):
    monkeypatch.chdir(ROOT)
    return archsim.profile("layerpipe_sample", array="32x32", batch=32, mode="paper")


@pytest.mark.parametrize("keywords", [{"split_axes": "channels"}, {"split_axes": ["channels"]},
                                      {"axes": "channels"}, {"axes": ("channels",)}])
def test_pipeline_split_axes_is_the_flags_plan(keywords, sample_profile, capsys):
    """``--split-axes channels`` as ``split_axes="channels"`` (the flag's name; before: refused as an unknown
    keyword) and as the partitioner's ``axes="channels"`` (before: read letter by letter, no axis matched, and
    a plan with no δ split, 50,772,615 cycles where the command plans 43,467,589, returned without a word)."""
    printed = cli_json([*SAMPLE, "--split-axes", "channels"], capsys)["meta"]
    plan = archsim.pipeline(sample_profile, processors=3, method="layerpipe", **keywords)
    assert plan.max_stage_cost == printed["iteration_cycles"]


@pytest.mark.parametrize("keyword", ["split_axes", "axes"])
def test_pipeline_unknown_split_axis_is_the_flags_refusal(keyword, sample_profile, capsys):
    """An axis LayerPipe has not (before: ``axes="foo"`` planned with no split, silently)."""
    printed = cli_error([*SAMPLE, "--split-axes", "channels,foo"], capsys)
    with pytest.raises(InputError) as refused:
        archsim.pipeline(sample_profile, processors=3, method="layerpipe", **{keyword: "channels,foo"})
    assert printed == f"archsim pipeline: error: {as_flag(refused.value)}"


def test_pipeline_alpha_as_text_is_read_as_the_flag_reads_it(sample_profile, capsys):
    """``alpha="1.05"`` (a value from a widget or a CSV) is ``--alpha 1.05`` (before: a TypeError from
    inside, comparing a float with a str), and text no flag takes is the flag's one-line refusal."""
    printed = cli_json([*SAMPLE, "--alpha", "1.05"], capsys)["meta"]
    assert archsim.pipeline(sample_profile, processors=3, alpha="1.05").max_stage_cost == printed["iteration_cycles"]
    with pytest.raises(InputError) as refused:
        archsim.pipeline(sample_profile, processors=3, alpha="fast")
    assert refused.value.where.field == "alpha" and "'fast'" in str(refused.value)
