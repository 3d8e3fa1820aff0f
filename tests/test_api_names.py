"""The Python API's names as a user meets them: an error line names a field by its keyword's spelling where the
CLI's line names it by its flag's (docs/api.md), an unknown keyword is one line naming the nearest valid one, and
``dir(archsim)`` lists the public API only."""

from __future__ import annotations

import pytest

import archsim

MODEL = "gpt_1024h_24l"
CLUSTER = "configs/clusters/a100_node.toml"


@pytest.mark.parametrize(("keywords", "field"), [
    ({"dp": 3, "global_batch": 16}, "global-batch"),  # not a multiple of micro-batch × DP
    ({"global_batch": 0}, "global-batch"),             # was 'global_batch'
    ({"global_batch": 8, "micro_batch": 0}, "micro-batch"),
    ({"global_batch": 8, "max_ops": 0}, "max-ops"),
    ({"global_batch": 8, "pp": 2, "stage_layers": [12, "x"]}, "stage-layers"),
])
def test_train_names_a_field_as_its_keyword_is_spelled(keywords, field):
    """The field is the flag's (``where.field``); the line spells it as the keyword, as the sentence around it
    does (followups 24: the line said ``field 'global-batch'`` from Python before)."""
    with pytest.raises(archsim.InputError) as refused:
        archsim.train(MODEL, cluster=CLUSTER, **keywords)
    assert refused.value.where.field == field
    assert f"field '{field.replace('-', '_')}'" in str(refused.value) and f"field '{field}'" not in str(refused.value)


@pytest.mark.parametrize(("keywords", "field"), [
    ({"dp_overlap": "sometimes"}, "dp-overlap"),
    ({"grad_accumulation": "later"}, "grad-accumulation"),
    ({"max_ops": 0}, "max-ops"),
])
def test_train_runs_names_a_field_as_train_and_search_do(keywords, field, tmp_path):
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch,global_batch\n1,1,1,1,8\n")
    with pytest.raises(archsim.InputError) as refused:
        archsim.train_runs(MODEL, runs=runs, cluster=CLUSTER, **keywords)
    assert refused.value.where.field == field


@pytest.mark.parametrize(("keywords", "field"), [
    ({"global_batch": "sixteen"}, "global-batch"),
    ({"global_batch": 8, "max_micro_batch": 0}, "max-micro-batch"),
    ({"global_batch": 8, "max_ops": 0}, "max-ops"),
])
def test_search_names_a_field_as_its_flag_does(keywords, field):
    with pytest.raises(archsim.InputError) as refused:
        archsim.search(MODEL, cluster=CLUSTER, **keywords)
    assert refused.value.where.field == field


def test_the_cli_names_the_same_field(capsys):
    """``archsim train --dp 3 --global-batch 16`` and ``archsim.train(dp=3, global_batch=16)``: one line each,
    the same field, each spelling it as its caller does."""
    from archsim.cli import main

    assert main(["train", MODEL, "--cluster", CLUSTER, "--dp", "3", "--global-batch", "16"]) == 2
    printed = capsys.readouterr().err.strip()
    with pytest.raises(archsim.InputError) as refused:
        archsim.train(MODEL, cluster=CLUSTER, dp=3, global_batch=16)
    assert "argument --global-batch" in printed and "field 'global_batch'" in str(refused.value)
    assert printed.endswith(str(refused.value).replace("field 'global_batch'", "argument --global-batch"))


@pytest.fixture(scope="module")
def sample_profile():
    return archsim.profile("layerpipe_sample", array="32x32", batch=32)


@pytest.mark.parametrize(("method", "keyword", "nearest"), [
    ("layerpipe", "alphaa", "alpha"),
    ("layerpipe", "split_axis", "split_axes"),  # --split-axes' keyword; the partitioner's own axes is no flag's
    ("layerpipe", "borow", "borrow"),  # ooo's bandwidth went: since 2026-12-05 pipeline takes no bandwidth (DRAM's)
    ("gpipe", "balanc", "balance"),
    ("pipedream", "replicaton", "replication"),
])
def test_pipeline_refuses_an_unknown_keyword_in_one_line(sample_profile, method, keyword, nearest):
    """``archsim.pipeline(profile, processors=3, alphaa=1)`` was a bare TypeError from inside the partitioner."""
    with pytest.raises(archsim.InputError) as refused:
        archsim.pipeline(sample_profile, processors=3, method=method, **{keyword: 2})
    assert refused.value.where.field == keyword
    assert f"did you mean {nearest!r}?" in str(refused.value)
    assert "\n" not in str(refused.value)


@pytest.mark.filterwarnings("ignore:.*stays? idle:UserWarning")  # the plan's own note, not this test's subject
def test_pipeline_still_takes_each_methods_own_keywords(sample_profile):
    from archsim.choices.partitions import LAYERPIPE_ALPHA

    plain = archsim.pipeline(sample_profile, processors=3, method="gpipe")
    assert archsim.pipeline(sample_profile, processors=3, method="gpipe", balance="layers") == plain
    assert archsim.pipeline(sample_profile, processors=3, alpha=LAYERPIPE_ALPHA) == \
        archsim.pipeline(sample_profile, processors=3)


def test_each_planners_options_are_keywords_of_its_partitioner():
    """Planner.options is what the refusal lets through: each must be a keyword the partitioner takes."""
    import inspect

    from archsim.partition.gpipe import gpipe_partition
    from archsim.partition.layerpipe import layerpipe_partition
    from archsim.partition.pipedream import pipedream_partition
    from archsim.planners import PLANNERS

    functions = {"layerpipe": layerpipe_partition, "gpipe": gpipe_partition, "pipedream": pipedream_partition}
    for name, planner in PLANNERS.items():
        taken = set(inspect.signature(functions[name]).parameters) if name in functions else set()
        assert set(planner.options) <= taken, name


@pytest.mark.parametrize("package", ["archsim", "archsim.validation", "archsim.partition", "archsim.workload",
                                     "archsim.bppsa"])
def test_dir_lists_the_public_names_only(package):
    """``dir(archsim)`` listed ``annotations``, ``lazy`` and ``lazy_exports``: how the package is built, not API."""
    import importlib

    module = importlib.import_module(package)
    getattr(module, module.__all__[-1])  # a loaded export stays listed once, as itself
    public = [name for name in dir(module) if not name.startswith("_")]
    assert public == sorted(n for n in module.__all__ if not n.startswith("_"))
    assert "__version__" in dir(archsim) and "__doc__" in dir(module)


def test_dir_keeps_every_documented_name():
    documented = {"load_network", "array_config", "cost", "profile", "pipeline", "simulate", "run_sweep",
                  "write_report", "train", "search", "train_runs", "train_sweep", "gemm_cost", "read_scalesim_cfg", "ArrayConfig",
                  "Layer", "Network", "InputError", "__version__",
                  # the jobs' result types, for type hints (docs/api.md; since 2026-12-05)
                  "CacheUse", "CollectiveCost", "CostResult", "GemmCost", "LayerProfile", "Partition", "PlanDFG",
                  "PlanResult", "RunsResult", "ScheduleResult", "SearchResult", "SweepResult", "TableResult",
                  "Throughput", "Timeline", "TrainResult"}
    assert documented <= set(dir(archsim))
    assert {"annotations", "lazy", "lazy_exports"}.isdisjoint(dir(archsim))


@pytest.mark.parametrize(("text", "value"), [("0", 0), ("2147483648", 2**31)])
def test_element_bytes_is_refused_as_its_flag_refuses_it(text, value, capsys):
    """``archsim.cost(element_bytes=0)`` said ``field 'element_bytes'`` (ArrayConfig's field), the flag ``--element-bytes``."""
    from archsim.cli import main

    with pytest.raises(archsim.InputError) as refused:
        archsim.cost("layerpipe_sample", element_bytes=value)
    assert refused.value.where.field == "element-bytes"
    assert main(["cost", "layerpipe_sample", "--element-bytes", text]) == 2
    assert capsys.readouterr().err.strip().endswith(f"argument --element-bytes: {refused.value.message}")
