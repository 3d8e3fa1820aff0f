"""A training job given the other job's layout keyword is told what to give instead, in the library's spelling, as
the command is told in its flags' (one text, :func:`archsim.api_keywords.elsewhere`); ``archsim.plan`` given a
cluster object is told to pass the file's path.

Failed before the fix: ``archsim.search(tp=2)`` answered ``did you mean 'top'?`` (the word it resembles, a ranking
count), ``archsim.train(gpus=4)`` named no way to set the GPUs, and ``archsim.plan(cluster=topology)`` said only
``expected a cluster TOML path, got Topology``."""

from __future__ import annotations

import pytest
from test_docs import ROOT
from test_robustness import clean_error, write
from tiny_search import A100_NODE, GPT

import archsim
from archsim.errors import InputError

MODEL = str(ROOT / "configs" / "transformers" / "llama3_8b.toml")
CLUSTER = str(ROOT / "configs" / "clusters" / "h100_2_servers.toml")


@pytest.mark.parametrize("name", ["dp"])  # tp and pp: the TPs and PPs search tries (tests/test_search_ux70.py)
def test_search_given_a_train_layout_keyword_says_search_tries_it(name):
    with pytest.raises(InputError) as caught:
        archsim.search(MODEL, cluster=CLUSTER, global_batch=16, **{name: 2})
    text = str(caught.value)
    assert text.startswith(f"field '{name}': unknown keyword ({name} is archsim.train's: archsim.search tries every "
                           f"{name.upper()} itself, on gpus=N or the cluster's GPUs); archsim.search takes "), text
    assert "top'?" not in text and "--" not in text


def test_train_given_gpus_says_its_layout_keywords():
    with pytest.raises(InputError) as caught:
        archsim.train(MODEL, cluster=CLUSTER, global_batch=16, gpus=4)
    assert str(caught.value).startswith("field 'gpus': unknown keyword (gpus is archsim.search's: archsim.train takes "
                                        "its layout as tp, pp, dp and cp, their product the GPUs it runs on); ")


def test_a_misspelt_keyword_still_names_the_nearest():
    with pytest.raises(InputError, match=r"^field 'too': unknown keyword \(did you mean 'top'\?\)"):
        archsim.search(MODEL, cluster=CLUSTER, global_batch=16, too=2)


def test_the_commands_keep_their_flags_line(tmp_path, capsys):
    """docs/cli.md's lines, word for word."""
    model, cluster = write(tmp_path / "gpt.toml", GPT), write(tmp_path / "c.toml", A100_NODE)
    line = clean_error(capsys, "search", model, "--cluster", cluster, "--global-batch", "8", "--dp", "2")
    assert line.endswith("unrecognized arguments: --dp 2 (--dp is archsim train's: search tries every DP itself, on "
                         "--gpus N or the cluster's GPUs)"), line
    line = clean_error(capsys, "train", model, "--cluster", cluster, "--global-batch", "8", "--gpus", "16")
    assert line.endswith("unrecognized arguments: --gpus 16 (--gpus is archsim search's: train takes its layout as "
                         "--tp, --pp, --dp and --cp, their product the GPUs it runs on)"), line


def test_plan_given_a_topology_says_to_pass_the_file():
    from archsim.spp.topology import load_topology_file

    topology = load_topology_file(ROOT / "configs" / "clusters" / "spp_sim.toml")
    with pytest.raises(InputError) as caught:
        archsim.plan("vgg16", cluster=topology, microbatches=4)
    text = str(caught.value)
    assert "\n" not in text and text.startswith("field 'cluster': expected a cluster TOML path, got Topology: ")
    assert text.endswith("pass the path the cluster was loaded from"), text
