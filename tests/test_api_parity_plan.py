"""``archsim.plan`` run both ways on the same input (docs/api.md): the JSON ``archsim plan`` prints (full precision;
the command was there first) is the reference, a refusal is the command's line with keywords where it names flags,
and a note it prints on stderr is a UserWarning. Each of these failed before ``archsim.plan`` existed."""

from __future__ import annotations

import warnings

import pytest
from api_parity_helpers import as_printed, cli_error, cli_json
from test_docs import ROOT

import archsim
from archsim.errors import InputError

TESTBED = "configs/clusters/testbed_1080ti.toml"
ON_GPUS = "configs/clusters/testbed_1080ti_gpu.toml"  # servers naming a GTX 1080 Ti: the layers priced on it
GRAPH = "tests/data/pipedream/profiles/alexnet.txt"  # PipeDream's measured layers
SIM = "configs/clusters/spp_sim.toml"

CASES = {  # name → (network, cluster, flags, keywords)
    "spp": ("layerpipe_sample", TESTBED, ["--microbatches", "4"], {"microbatches": 4}),
    "text counts": ("layerpipe_sample", TESTBED, ["--microbatches", "4", "--batch", "16", "--array", "16x16"],
                    {"microbatches": "4", "batch": "16", "array": "16x16"}),
    "array flags": ("layerpipe_sample", TESTBED, ["--microbatches", "8", "--micro-batch", "2", "--dataflow", "os",
                                                  "--dtype", "fp16", "--clock-ghz", "0.5", "--mode", "paper",
                                                  "--max-stages", "2", "--links", "paper", "--only", "conv"],
                    {"microbatches": 8, "micro_batch": 2, "dataflow": "os", "dtype": "fp16", "clock_ghz": 0.5,
                     "mode": "paper", "max_stages": 2, "links": "paper", "only": "conv"}),
    "baseline": ("layerpipe_sample", TESTBED, ["--microbatches", "4", "--method", "gpipe", "--baselines", "paper"],
                 {"microbatches": 4, "method": "gpipe", "baselines": "paper"}),
    "pipedream": ("layerpipe_sample", ON_GPUS, ["--microbatches", "4", "--dtype", "fp32", "--method", "pipedream",
                                                "--straight-pipeline", "--use-fewer-machines",
                                                "--activation-compression-ratio", "2"],
                  {"microbatches": 4, "dtype": "fp32", "method": "pipedream", "straight_pipeline": True,
                   "use_fewer_machines": True, "activation_compression_ratio": 2}),
    "device": ("layerpipe_sample", ON_GPUS, ["--microbatches", "4", "--dtype", "fp32", "--baselines", "none"],
               {"microbatches": 4, "dtype": "fp32", "baselines": "none"}),
    "graph.txt": (GRAPH, SIM, ["--microbatches", "4", "--baselines", "none", "--seed", "3"],
                  {"microbatches": 4, "baselines": "none", "seed": 3}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_plan_gives_the_commands_json(case, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    network, cluster, flags, keywords = CASES[case]
    printed = cli_json(["plan", network, "--cluster", cluster, *flags], capsys)
    result = archsim.plan(network, cluster=cluster, **keywords)
    assert as_printed(result.to_dict()) == printed
    assert len(result) == len(printed["rows"]) and result.meta == printed["meta"]


def test_plan_returns_spps_timeline_whose_end_is_the_makespan(monkeypatch):
    monkeypatch.chdir(ROOT)
    result = archsim.plan("layerpipe_sample", cluster=TESTBED, microbatches=4)
    assert result.timeline is not None and result.timeline.makespan == pytest.approx(result.meta["makespan_seconds"])
    assert archsim.plan("layerpipe_sample", cluster=TESTBED, microbatches=4, method="dp").timeline is None


def test_plan_warns_the_notes_the_command_prints(capsys, monkeypatch):
    """The servers name a device and an array keyword prices on the array instead: the command's note, named as
    the caller spells the setting."""
    monkeypatch.chdir(ROOT)
    capsys.readouterr()
    cli_json(["plan", "layerpipe_sample", "--cluster", ON_GPUS, "--microbatches", "4", "--array", "32x32"], capsys)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        archsim.plan("layerpipe_sample", cluster=ON_GPUS, microbatches=4, array="32x32")
    texts = [str(w.message) for w in said]
    assert any("plan prices the layers on one 32x32 ws at 1 GHz array per GPU, as array asked" in t and
               "(without array/config/dataflow/clock_ghz it prices them on the device)" in t for t in texts), texts


REFUSALS = [  # (network, keywords, flags, the API's line, the command's line)
    ("layerpipe_sample", {"batch": 16, "micro_batch": 2}, ["--batch", "16", "--micro-batch", "2"],
     "field 'batch': give batch (the mini-batch) or micro_batch, not both",
     "argument --batch: give --batch (the mini-batch) or --micro-batch, not both"),
    ("layerpipe_sample", {"batch": 10}, ["--batch", "10"],
     "field 'batch': batch=10 does not split into microbatches=4 equal micro-batches",
     "argument --batch: --batch 10 does not split into --microbatches 4 equal micro-batches"),
    ("layerpipe_sample", {"method": "dp", "baselines": "none"}, ["--method", "dp", "--baselines", "none"],
     ("field 'baselines': baselines='none' runs no baseline, and method='dp' is one: drop baselines='none' (or give "
     "baselines='paper' for the SPP paper's configuration)"),
     ("argument --baselines: --baselines none runs no baseline, and --method dp is one: drop --baselines none (or give "
     "--baselines paper for the SPP paper's configuration)")),
    (GRAPH, {"array": "16x16"}, ["--array", "16x16"],
     (f"field 'array': array sets how archsim prices a network's layers; {GRAPH} is a PipeDream profile whose layers "
     "carry their measured seconds: drop it"),
     (f"argument --array: --array sets how archsim prices a network's layers; {GRAPH} is a PipeDream profile whose "
     "layers carry their measured seconds: drop it")),
]


@pytest.mark.parametrize(("network", "keywords", "flags", "line", "command_line"), REFUSALS)
def test_plan_refuses_as_the_command_does(network, keywords, flags, line, command_line, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(InputError) as refused:
        archsim.plan(network, cluster=TESTBED, microbatches=4, **keywords)
    assert str(refused.value) == line
    argv = ["plan", network, "--cluster", TESTBED, "--microbatches", "4", *flags]
    assert cli_error(argv, capsys) == f"archsim plan: error: {command_line}"


@pytest.mark.parametrize(("keywords", "field"), [
    ({"microbatches": 0}, "microbatches"), ({"microbatches": "four"}, "microbatches"),
    ({"method": "best"}, "method"), ({"baselines": "all"}, "baselines"), ({"seed": -1}, "seed"),
    ({"links": "fast"}, "links"), ({"memory_constraint": "yes"}, "memory_constraint"),
    ({"activation_compression_ratio": 0}, "activation-compression-ratio"), ({"dtype": "fp4"}, "dtype"),
    ({"mode": "fast"}, "mode"), ({"clock_ghz": 1e9}, "clock-ghz"), ({"max_search_steps": 0}, "max-search-steps"),
    ({"cluster": 3}, "cluster"), ({"microbatch": 4}, "microbatch"),
])
def test_plan_refuses_a_value_no_flag_could_give_in_one_line(keywords, field, monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(InputError) as refused:
        archsim.plan("layerpipe_sample", **{"cluster": TESTBED, "microbatches": 4, **keywords})
    assert refused.value.where.field == field
