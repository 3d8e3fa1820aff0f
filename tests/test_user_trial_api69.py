"""User trial 69 (a training-systems engineer who drives archsim from a notebook, never the CLI): the defects it
found in the Python API, each checked against an independent reference — the plan's own makespan in seconds, the
command's words, a length bound a notebook cell can show."""

from __future__ import annotations

import pytest
from test_docs import ROOT

import archsim
from archsim.errors import InputError

TESTBED = str(ROOT / "configs" / "clusters" / "testbed_1080ti.toml")


# --- plan: SPP's timeline is in seconds, and says so ------------------------------------------------------------------
# Failed before: archsim.plan(...).timeline (and plan_on_cluster's) stated no unit, so gantt_figure labelled its axis
# "cycles", its frame had no attrs["unit"] and chrome_trace wrote its seconds as microseconds (a 0.01 s iteration
# drawn as 0.01 µs); `archsim plan --gantt` passed the unit itself and was right.

@pytest.fixture(scope="module")
def spp_plan():
    return archsim.plan("layerpipe_sample", cluster=TESTBED, microbatches=4)


def test_spp_timeline_states_seconds(spp_plan):
    from archsim.report.gantt import gantt_figure

    assert spp_plan.timeline.unit == "seconds"
    assert spp_plan.timeline.to_frame().attrs["unit"] == "seconds"
    assert gantt_figure(spp_plan.timeline, "spp").layout.xaxis.title.text == "seconds"


def test_spp_chrome_trace_is_in_microseconds(spp_plan):
    from archsim.report.export import chrome_trace

    events = [e for e in chrome_trace(spp_plan.timeline)["traceEvents"] if e.get("ph") == "X"]
    end_us = max(e["ts"] + e["dur"] for e in events)
    assert end_us == pytest.approx(spp_plan.meta["makespan_seconds"] * 1e6, rel=1e-6)  # Chrome reads µs



# --- pipeline_dfg: a PlanDFG's repr is one line -----------------------------------------------------------------------
# Failed before: the dataclass's repr listed every node, edge and retiming value: 15,941 characters for LayerPipe's
# 4-layer sample, all printed by a notebook cell ending in `dfg`. The figures below are LayerPipe's worked example
# (docs/papers/layerpipe.md): S − s + 1 weight versions, 24,247,652 cycles over a loop of 6 delays.

def test_plan_dfg_repr_is_one_short_line():
    profile = archsim.profile("layerpipe_sample", array="32x32", batch=32)
    dfg = archsim.pipeline_dfg(archsim.pipeline(profile, processors=3, method="layerpipe"), profile)
    shown = repr(dfg)
    assert "\n" not in shown and len(shown) < 200
    assert "4 layers on 3 stages" in shown and "(3, 2, 1)" in shown
    assert f"{24_247_652 / 6:g} cycles" in shown and "6 delays" in shown


# --- run_sweep and sweep_cache: the configuration cap is advised as the keyword ---------------------------------------
# Failed before: archsim.run_sweep(spec, max_configs=3) said "more than --max-configs 3: …, or a larger --max-configs",
# a flag the function has no way to take; every other job's advice names its keyword (docs/api.md).

SPEC = """[sweep]
name = "cap"
networks = ["ffnn8"]
arrays = ["32x32", "64x64"]
batches = [16, 32]
processors = [2]
methods = ["layerpipe"]
"""  # 2 arrays × 2 batches × 1 × 1 = 4 configurations


@pytest.mark.parametrize("job", ["run_sweep", "sweep_cache"])
def test_sweep_cap_is_advised_as_the_keyword(tmp_path, job):
    spec = tmp_path / "cap.toml"
    spec.write_text(SPEC, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        getattr(archsim, job)(spec, out=tmp_path / "out", max_configs=3)
    said = str(caught.value)
    assert "4 configurations" in said and "max_configs=3" in said and "a larger max_configs" in said
    assert "--" not in said


def test_sweep_command_keeps_its_flag(tmp_path, capsys):
    from archsim.cli import main

    spec = tmp_path / "cap.toml"
    spec.write_text(SPEC, encoding="utf-8")
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--quiet", "--max-configs", "3"]) == 2
    assert "more than --max-configs 3: give fewer values, or a larger --max-configs" in capsys.readouterr().err


# --- run_sweep: archsim sweep's other flags say which function does their job -----------------------------------------
# Failed before: run_sweep(report=True), quiet=True, cache_info=True and prune_cache=True were told "unknown keyword"
# and the list of run_sweep's own, where train(gantt=…) and search(runs=…) name the function that does it.

@pytest.mark.parametrize("flag, named", [("report", "archsim.write_report("), ("quiet", "progress=True"),
                                         ("cache_info", "archsim.sweep_cache("), ("prune_cache", "prune=True")])
def test_run_sweep_names_the_function_for_a_flag_it_lacks(tmp_path, flag, named):
    with pytest.raises(InputError) as caught:
        archsim.run_sweep(tmp_path / "cap.toml", **{flag: True})
    assert caught.value.where.field == flag and named in str(caught.value)


def test_every_sweep_flag_is_a_keyword_or_names_its_function():
    """The parser read afresh (tests/test_api_parity.py's reading): a flag added to ``archsim sweep`` without a keyword
    or a hint fails here; ``--workers 2`` is ``workers=2`` and so on."""
    import inspect

    from test_api_parity import keywords

    from archsim.output_hints import command_outputs

    taken = set(inspect.signature(archsim.run_sweep).parameters) | set(inspect.signature(archsim.sweep_cache).parameters)
    hinted = set(command_outputs("archsim.run_sweep"))
    assert [name for name in keywords("sweep") if name not in taken | hinted] == []


A100 = str(ROOT / "configs" / "clusters" / "a100_node.toml")


# --- repr: a schedule's and a one-row search's line --------------------------------------------------------------------
# Failed before: a ScheduleResult's repr was the dataclass's, the meta's notes and all (450–600 characters, its
# makespan 5.7474e+06 rounded away); a search of one row said "1 rows".

def test_schedule_repr_is_its_row_in_one_line():
    # the zero-bubble paper's setting: 3m + (p − 1)(F + B + W) = 33 for 1F1B, 27 for ZB-H1 (docs/api.md)
    one = archsim.schedule(stages=4, stage_times="1,1,1", microbatches=8, policy="1f1b")
    shown = repr(one)
    assert "\n" not in shown and len(shown) < 200 and "policy=1f1b" in shown and "makespan=33," in shown
    assert "zero-bubble paper" not in shown  # the meta's notes stay in .meta
    layered = repr(archsim.schedule("ffnn8", policy="ooo-pipe2", processors=2, unit_costs=True))  # Fig. 5: 16 units
    assert layered.startswith("ScheduleResult(ffnn8: policy=ooo-pipe2") and "makespan=16," in layered
    assert layered.endswith("; times in units)")


def test_a_one_row_search_says_row():
    found = archsim.search("gpt_1024h_24l", cluster=A100, global_batch=16, top=1, schedule=["1f1b"],
                           max_micro_batch=1, progress=False)
    assert repr(found).startswith("SearchResult(1 row, best ")


# --- the timeline writers take a result, as write_gantt does -----------------------------------------------------------
# Failed before: write_gantt(result, PATH) drew train's TrainResult, but write_chrome_trace(result, PATH) and
# write_pipeline_schedule_csv(result, PATH) raised AttributeError: 'TrainResult' object has no attribute 'problem'
# (chrome_trace of a timeline's frame too).

def test_chrome_trace_and_schedule_csv_take_a_train_result(tmp_path):
    from archsim.report.export import chrome_trace, write_chrome_trace, write_pipeline_schedule_csv

    # pp 2 × dp 4 at micro-batch 1: 16 / (1 × 4) = 4 micro-batches, so each rank runs 4 forwards and 4 backwards
    result, _ = archsim.train("gpt_1024h_24l", cluster=A100, global_batch=16, pp=2, dp=4)
    timeline = result.timeline
    events = [e for e in chrome_trace(result)["traceEvents"] if e["ph"] == "X"]
    assert len(events) == len(timeline.slots) + len(timeline.transfers)
    assert len([e for e in chrome_trace(timeline.to_frame())["traceEvents"] if e["ph"] == "X"]) == len(timeline.slots)
    write_chrome_trace(result, tmp_path / "trace.json")
    ranks = write_pipeline_schedule_csv(result, tmp_path / "ranks.csv").read_text(encoding="utf-8").split()
    assert [sorted(rank.split(",")) for rank in ranks] == [
        sorted([f"{stage}F{m}" for m in range(4)] + [f"{stage}B{m}" for m in range(4)]) for stage in (0, 1)]


# --- a cluster's repr is one line ------------------------------------------------------------------------------------
# Failed before: a GpuCluster (a train/search cluster loaded in a notebook, docs/api.md's "Training devices") printed
# every server's Device: 140,347 characters for the 128 DGX H100 servers of dgx_h100_superpod.toml.

@pytest.mark.parametrize("name, said", [
    ("dgx_h100_superpod.toml", "GpuCluster(1024 GPUs on 128 servers: 1024 × NVIDIA H100 SXM5 80GB; fp16)"),
    ("mixed_counts_h100_a100.toml", "on 3 servers: 8 × NVIDIA H100 SXM5 80GB, 8 × NVIDIA A100 SXM4 40GB; fp16)"),
    ("h100_1gpu.toml", "GpuCluster(1 GPU on 1 server: 1 × NVIDIA H100 SXM5 80GB; fp16)")])
def test_gpu_cluster_repr_counts_its_gpus_by_kind(name, said):
    from archsim.training.cluster_file import load_gpu_cluster

    cluster = load_gpu_cluster(str(ROOT / "configs" / "clusters" / name))
    shown = repr(cluster)
    assert said in shown and "\n" not in shown and len(shown) < 200


# --- schedule on a LayerProfile: a policy that needs a network says so -------------------------------------------------
# Failed before: archsim.schedule(profile, policy="1f1b", …) said "expected one of mp, gpipe, ooo-pipe1, ooo-pipe2,
# got '1f1b'", as if 1f1b were no policy. What each runs on is the command's own refusal (per-stage costs or a network).

@pytest.mark.parametrize("policy, runs_on", [
    ("1f1b", "a network (its name, path or Network, costed by this call's array keywords) or per-stage costs"),
    ("dp-wfbp", "a network (its name"), ("list-zb-h1", "a network (its name"), ("multistream", "a network (its name"),
    ("zb-1p-exact", "per-stage costs (stages=, stage_times=)")])
def test_schedule_on_a_profile_names_what_the_policy_runs_on(policy, runs_on):
    profile = archsim.profile("ffnn8", array="8x8")
    with pytest.raises(InputError) as caught:
        archsim.schedule(profile, policy=policy, processors=2, microbatches=2)
    said = str(caught.value)
    assert caught.value.where.field == "policy" and f"{policy} runs on {runs_on}" in said
    assert "mp, gpipe, ooo-pipe1, ooo-pipe2" in said
    assert policy != "zb-1p-exact" or "network" not in said.split("runs on")[-1]


def test_schedule_on_a_profile_still_names_an_unknown_policy_nearest():
    with pytest.raises(InputError, match="expected one of mp, gpipe, ooo-pipe1, ooo-pipe2, got 'ooo-pipe3'"):
        archsim.schedule(archsim.profile("ffnn8", array="8x8"), policy="ooo-pipe3", processors=2)


# --- pipeline: archsim pipeline's costing flags name archsim.profile ---------------------------------------------------
# Failed before: archsim.pipeline(profile, processors=3, array="32x32") was "unknown keyword" and the partitioner's
# options, as the command's --array, --batch, --dtype … price the profile the library takes already made.

@pytest.mark.parametrize("keyword, value", [("array", "32x32"), ("batch", 8), ("dtype", "fp16"), ("engine", "cycle")])
def test_pipeline_names_profile_for_a_costing_flag(keyword, value):
    import inspect

    assert keyword in inspect.signature(archsim.profile).parameters  # the flag's keyword is profile's
    with pytest.raises(InputError) as caught:
        archsim.pipeline(archsim.profile("ffnn8", array="8x8"), processors=2, **{keyword: value})
    assert caught.value.where.field == keyword and f"archsim.profile(network, {keyword}=…)" in str(caught.value)
