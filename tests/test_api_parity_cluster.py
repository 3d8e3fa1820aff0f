"""``archsim.cluster_jobs`` run both ways on the same input (docs/api.md): the JSON ``archsim cluster`` prints (full
precision; the command was there first) is the reference, and a refusal is the command's line, the library naming
keywords where the command names flags. Each of these failed before the function existed (``archsim.cluster`` is the
package, whose functions take a trace, a ``JobCluster`` and a ``SimConfig``, not the flags: ``interval_s``,
``gamma_s_per_byte``, the seeds and the comparison over them are the command's)."""

from __future__ import annotations

import pytest
from api_parity_helpers import cli_error, same_json
from test_docs import ROOT

import archsim
from archsim.errors import InputError

TRACE = "configs/traces/sample_tiresias.csv"

CASES = {  # name → (flags, keywords)
    "one policy, synthetic": (["--policy", "jigsaw", "--jobs", "20", "--gpus", "32", "--unit-seconds", "0"],
                              {"policy": "jigsaw", "jobs": "20", "gpus": 32, "unit_seconds": 0}),
    "all, two seeds": (["--policy", "all", "--seeds", "2", "--jobs", "12", "--gpus", "16", "--seed", "3"],
                       {"compare": True, "seeds": 2, "jobs": 12, "gpus": 16, "seed": 3}),
    "one policy over seeds": (["--policy", "jigsaw-nospb", "--seeds", "2", "--jobs", "12", "--gpus", "16"],
                              {"policy": "jigsaw-nospb", "seeds": 2, "jobs": 12, "gpus": 16}),
    "a trace file": (["--trace", TRACE, "--gpus", "16", "--policy", "tiresias", "--interval", "0"],
                     {"trace": TRACE, "gpus": "16", "policy": "tiresias", "interval": "0"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_cluster_jobs_gives_the_commands_json(case, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    flags, keywords = CASES[case]
    result, printed = same_json(["cluster", *flags], archsim.cluster_jobs, keywords, capsys)
    assert len(result) == len(printed["rows"]) > 0


REFUSED = {  # name → (flags, keywords)
    "seed with a trace file": (["--trace", TRACE, "--seed", "1"], {"trace": TRACE, "seed": 1}),
    "seeds with a trace file": (["--trace", TRACE, "--seeds", "3"], {"trace": TRACE, "seeds": 3}),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_cluster_jobs_refuses_as_the_command_does(case, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    flags, keywords = REFUSED[case]
    line = cli_error(["cluster", *flags], capsys)
    with pytest.raises(InputError) as refused:
        archsim.cluster_jobs(**keywords)
    assert line.startswith("archsim cluster: error:") and f"argument --{refused.value.where.field}" in line
    assert "--" in line and "--" not in str(refused.value)


@pytest.mark.parametrize("keywords", [{"gpus": 0}, {"policy": "fifo?"}, {"interval": "-1"}, {"compare": "yes"},
                                      {"device_memory_gb": 0}, {"trace": 5}, {"seeds": 1001}])
def test_a_value_no_flag_could_give_is_one_line(keywords, monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(InputError) as refused:
        archsim.cluster_jobs(**keywords)
    assert "\n" not in str(refused.value)
