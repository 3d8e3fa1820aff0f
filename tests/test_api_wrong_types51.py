"""Every public function of ``archsim`` (archsim/__init__.py's exports) given an argument of the wrong type — an int
or a list where a path goes, text where a number goes, None where one is required — refuses it in one line, an
:class:`archsim.InputError` naming that argument (docs/api.md, "Errors"), never a TypeError, ValueError or
AttributeError from the code the value reached. Before: ``archsim.write_report(results=123)`` raised open()'s
TypeError; so did ``config=123`` to the array jobs, ``gpu=123`` to ``validate_gpu`` and ``read_scalesim_cfg(123)``;
``train(schedule=[...])`` and ``pipeline(method=[...])`` an unhashable-list TypeError; ``schedule(torch_schedule=1)``
an AttributeError; ``run_sweep(dask=1)`` dask's TypeError; ``gemm_cost("abc", ...)`` numpy's ValueError.

The reference is each argument's own name, as the call spells it (a keyword's field may carry its flag's dashes:
``global-batch``)."""

from __future__ import annotations

import warnings

import pytest
from api_parity_helpers import MODEL, NODE
from test_docs import ROOT

import archsim

NET = "layerpipe_sample"
CFG = str(ROOT / "configs" / "arrays" / "scalesim_sparsity_128x128_ws.cfg")
PRUNED = str(ROOT / "docs" / "examples" / "pruned_convs.csv")
TESTBED = str(ROOT / "configs" / "clusters" / "testbed_1080ti.toml")
KERNELS = str(ROOT / "tests" / "data" / "neusight_kernels" / "linear.csv")
SPEC = str(ROOT / "configs" / "sweeps" / "sample_quick.toml")
MODEL_PATH, NODE_PATH = str(ROOT / MODEL), str(ROOT / NODE)


def _calls(plan, profile, tmp):
    """(function name, argument, the wrong value's kind, the call): each call gives one argument a wrong type and
    every other argument a good value, so the refusal can only be that argument's."""
    report = str(tmp / "r.html")
    return [
        # its operand, named as every job that loads a network names it (archsim cost NETWORK)
        ("load_network", "network", "int for a path", lambda: archsim.load_network(123)),
        ("load_network", "network", "None where required", lambda: archsim.load_network(None)),
        ("array_config", "config", "int for a path", lambda: archsim.array_config(config=123)),
        ("array_config", "config", "list for a path", lambda: archsim.array_config(config=[CFG])),
        ("array_config", "bandwidth", "str for a number", lambda: archsim.array_config("16x16", bandwidth="abc")),
        ("cost", "config", "int for a path", lambda: archsim.cost(NET, config=123)),
        ("cost", "batch", "str for a number", lambda: archsim.cost(NET, batch="abc")),
        ("cost", "network", "None where required", lambda: archsim.cost(None)),
        ("profile", "config", "list for a path", lambda: archsim.profile(NET, config=[CFG])),
        ("profile", "batch", "None where required", lambda: archsim.profile(NET, batch=None)),
        ("pipeline", "method", "list for a name", lambda: archsim.pipeline(profile, processors=2, method=["gpipe"])),
        ("pipeline", "processors", "str for a number", lambda: archsim.pipeline(profile, processors="abc")),
        ("pipeline", "profile", "None where required", lambda: archsim.pipeline(None, processors=2)),
        ("simulate", "microbatches", "str for a number", lambda: archsim.simulate(plan, profile, microbatches="abc")),
        ("simulate", "profile", "None where required", lambda: archsim.simulate(plan, None, microbatches=2)),
        ("pipeline_dfg", "out", "int for a path", lambda: archsim.pipeline_dfg(plan, profile, out=123)),
        ("pipeline_memory", "microbatches", "str for a number",
         lambda: archsim.pipeline_memory(plan, profile, microbatches="abc")),
        ("pipeline_memory", "capacity_gb", "list for a number",
         lambda: archsim.pipeline_memory(plan, profile, microbatches=2, capacity_gb=[16])),
        ("pipeline_memory", "plan", "None where required", lambda: archsim.pipeline_memory(None, profile, microbatches=2)),
        ("plan", "cluster", "int for a path", lambda: archsim.plan(NET, cluster=123, microbatches=4)),
        ("plan", "microbatches", "str for a number", lambda: archsim.plan(NET, cluster=TESTBED, microbatches="abc")),
        ("schedule", "torch_schedule", "int for a name",
         lambda: archsim.schedule(stages=2, stage_times="1,1,1", microbatches=4, torch_schedule=1)),
        ("schedule", "torch_schedule", "list for a name",
         lambda: archsim.schedule(stages=2, stage_times="1,1,1", microbatches=4, torch_schedule=["Schedule1F1B"])),
        ("schedule", "stage_profile", "int for a path", lambda: archsim.schedule(stage_profile=123, policy="1f1b")),
        ("schedule", "processors", "str for a number",
         lambda: archsim.schedule("ffnn8", policy="1f1b", processors="abc")),
        ("gemm", "m", "str for a number", lambda: archsim.gemm(m="abc", k=8, n=8)),
        ("gemm", "config", "int for a path", lambda: archsim.gemm(m=8, k=8, n=8, config=123)),
        ("sparse", "config", "None where required", lambda: archsim.sparse(PRUNED, config=None)),
        ("sparse", "config", "int for a path", lambda: archsim.sparse(PRUNED, config=123)),
        ("sparse", "batch", "str for a number", lambda: archsim.sparse(PRUNED, config=CFG, batch="abc")),
        ("iteration_energy", "config", "int for a path", lambda: archsim.iteration_energy(NET, config=123)),
        ("iteration_energy", "microbatches", "str for a number",
         lambda: archsim.iteration_energy(NET, microbatches="abc")),
        ("cluster_jobs", "trace", "int for a path", lambda: archsim.cluster_jobs(trace=123)),
        ("cluster_jobs", "gpus", "str for a number", lambda: archsim.cluster_jobs(gpus="abc")),
        ("collective", "cluster", "int for a path", lambda: archsim.collective("all-reduce", 1e6, cluster=123, gpus=8)),
        ("collective", "nbytes", "list for a number",
         lambda: archsim.collective("all-reduce", [1], cluster=NODE_PATH, gpus=8)),
        ("collective", "kind", "list for a name", lambda: archsim.collective(["all-reduce"], 1e6, cluster=NODE_PATH, gpus=8)),
        ("collective", "gpus", "str for a number", lambda: archsim.collective("all-reduce", 1e6, cluster=NODE_PATH, gpus="abc")),
        ("collective", "per_server", "list for a number",
         lambda: archsim.collective("all-reduce", 1e6, cluster=NODE_PATH, gpus=8, per_server=[1])),
        ("bppsa_rnn", "config", "list for a path", lambda: archsim.bppsa_rnn(config=[CFG])),
        ("bppsa_rnn", "hidden", "str for a number", lambda: archsim.bppsa_rnn(hidden="abc")),
        ("bppsa_pruned_vgg11", "sparsity", "str for a number", lambda: archsim.bppsa_pruned_vgg11(sparsity="abc")),
        ("bppsa_network", "network", "int for a path", lambda: archsim.bppsa_network(123)),
        ("bppsa_network", "batch", "str for a number", lambda: archsim.bppsa_network("ffnn8", batch="abc")),
        ("bppsa_network", "up_levels", "list for a depth", lambda: archsim.bppsa_network("ffnn8", up_levels=[1])),
        ("validate_gpu", "csv", "int for a path", lambda: archsim.validate_gpu(csv=123)),
        ("validate_gpu", "gpu", "int for a name", lambda: archsim.validate_gpu(csv=KERNELS, gpu=123)),
        ("validate_gpu", "like", "list for a name", lambda: archsim.validate_gpu(csv=KERNELS, like=["a100-80gb"])),
        ("validate_gpu", "mma", "int for a shape", lambda: archsim.validate_gpu(csv=KERNELS, mma=16)),
        ("validate_gpu", "sm_count", "str for a number", lambda: archsim.validate_gpu(csv=KERNELS, sm_count="abc")),
        ("run_sweep", "spec", "int for a path", lambda: archsim.run_sweep(123)),
        ("run_sweep", "dask", "int for an address", lambda: archsim.run_sweep(SPEC, out=str(tmp / "res"), dask=1)),
        ("run_sweep", "workers", "str for a number", lambda: archsim.run_sweep(SPEC, workers="abc")),
        ("sweep_cache", "spec", "int for a path", lambda: archsim.sweep_cache(123)),
        ("sweep_cache", "out", "list for a path", lambda: archsim.sweep_cache(SPEC, out=[str(tmp)])),
        ("sweep_cache", "prune", "str for a switch", lambda: archsim.sweep_cache(SPEC, out=str(tmp / "res"), prune="yes")),
        ("write_report", "results", "int for a path", lambda: archsim.write_report(results=123, out=report)),
        ("write_report", "results", "list for a path", lambda: archsim.write_report([str(tmp)], out=report)),
        ("write_report", "results", "None where required", lambda: archsim.write_report(None, out=report)),
        ("write_report", "out", "int for a path", lambda: archsim.write_report(str(tmp), out=123)),
        ("write_report", "spec", "int for a path", lambda: archsim.write_report(str(tmp), out=report, spec=123)),
        ("train", "cluster", "int for a path", lambda: archsim.train(MODEL_PATH, cluster=123, global_batch=8)),
        ("train", "schedule", "list for a name",
         lambda: archsim.train(MODEL_PATH, cluster=NODE_PATH, global_batch=8, schedule=["1f1b"])),
        ("train", "global_batch", "str for a number",
         lambda: archsim.train(MODEL_PATH, cluster=NODE_PATH, global_batch="abc")),
        ("train", "model", "None where required", lambda: archsim.train(None, cluster=NODE_PATH, global_batch=8)),
        ("train_runs", "runs", "int for a path", lambda: archsim.train_runs(MODEL_PATH, runs=123, cluster=NODE_PATH)),
        ("train_runs", "runs", "None where required",
         lambda: archsim.train_runs(MODEL_PATH, runs=None, cluster=NODE_PATH)),
        ("train_sweep", "sweep", "int for the axes",
         lambda: archsim.train_sweep(MODEL_PATH, sweep=123, cluster=NODE_PATH, global_batch=8)),
        ("train_sweep", "sweep", "None where required",
         lambda: archsim.train_sweep(MODEL_PATH, sweep=None, cluster=NODE_PATH, global_batch=8)),
        ("train_sweep", "cluster", "int for a path",
         lambda: archsim.train_sweep(MODEL_PATH, sweep="tp=1,2", cluster=123, global_batch=8)),
        ("search", "cluster", "list for a path", lambda: archsim.search(MODEL_PATH, cluster=[NODE_PATH], global_batch=8)),
        ("search", "top", "str for a number",
         lambda: archsim.search(MODEL_PATH, cluster=NODE_PATH, global_batch=8, top="abc")),
        ("gemm_cost", "m", "str for a number", lambda: archsim.gemm_cost("abc", 8, 8, 16, 16)),
        ("gemm_cost", "k", "None where required", lambda: archsim.gemm_cost(8, None, 8, 16, 16)),
        ("read_scalesim_cfg", "path", "int for a path", lambda: archsim.read_scalesim_cfg(123)),
        ("read_scalesim_cfg", "path", "list for a path", lambda: archsim.read_scalesim_cfg([CFG])),
    ]


@pytest.fixture(scope="module")
def made():
    profile = archsim.profile(NET, array="16x16", batch=4)
    return archsim.pipeline(profile, processors=2), profile


CASES = _calls(None, None, ROOT)  # the labels only; each test builds its own calls


@pytest.mark.parametrize("index", range(len(CASES)),
                         ids=[f"{function}-{argument}-{kind}" for function, argument, kind, _ in CASES])
def test_a_wrong_type_is_one_line_naming_the_argument(index, made, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing a refused call might write lands in the checkout
    function, argument, _, call = _calls(*made, tmp_path)[index]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(archsim.InputError) as refused:
            call()
    field = refused.value.where.field
    assert field in (argument, argument.replace("_", "-")), (function, field, str(refused.value))
    assert "\n" not in str(refused.value)
    assert list(tmp_path.iterdir()) == []  # refused before anything is written


def test_every_public_function_is_called_with_a_wrong_type():
    """The table reaches each function archsim exports (its classes check their own fields)."""
    functions = {name for name in archsim.__all__ if name[0].islower() and callable(getattr(archsim, name))}
    assert functions == {function for function, *_ in CASES}
