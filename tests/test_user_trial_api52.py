"""User trial 52 (a Python user's first day with ``import archsim``): each keyword as its flag, with the values a
notebook hands over — a pandas bool column's ``np.True_``, a DataFrame where a path goes, a second sweep into a
folder that holds a first one's results — and the public names against docs/api.md. The reference for each value
is the same call with the plain Python value, or a fresh run of the same spec; for each name, the page itself."""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from api_parity_helpers import MODEL, NODE, annotation_text
from test_docs import FENCE, ROOT

import archsim

KERNELS = str(ROOT / "tests" / "data" / "neusight_kernels" / "linear.csv")
# each job's switch given as a numpy bool (a pandas bool column's cell) beside the same call with Python's bool
SWITCHES = {
    "cost energy": lambda on: archsim.cost("layerpipe_sample", array="16x16", batch=4, energy=on),
    "gemm min_bandwidth": lambda on: archsim.gemm(m=64, k=128, n=96, array="16x16", engine="cycle", bandwidth=4,
                                                  min_bandwidth=on),
    "schedule unit_costs": lambda on: archsim.schedule("ffnn8", policy="1f1b", processors=2, unit_costs=on),
    "cluster_jobs compare": lambda on: archsim.cluster_jobs(compare=on, jobs=4, gpus=8),
    "train sequence_parallel": lambda on: archsim.train(MODEL, cluster=NODE, tp=2, dp=4, global_batch=16,
                                                        sequence_parallel=on)[0],
    "search distributed_optimizer": lambda on: archsim.search(MODEL, cluster=NODE, global_batch=16, gpus=2, top=1,
                                                              schedule="1f1b", recompute="full", max_micro_batch=1,
                                                              distributed_optimizer=on, progress=False),
}


@pytest.mark.parametrize("label", sorted(SWITCHES))
@pytest.mark.parametrize("value", [True, False])
def test_a_numpy_bool_is_the_switch_it_stands_for(label, value):
    """Defect: every switch keyword refused numpy's bool (``field 'energy': expected True or False, got np.True_``),
    the value a pandas bool column hands over (``row.energy``), where counts take numpy's integers; the run is now the
    one the Python bool gives, and its document is plain JSON (no numpy bool in it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        given = SWITCHES[label](np.bool_(value)).to_dict()
        plain = SWITCHES[label](value).to_dict()
    assert json.dumps(given, default=str) == json.dumps(plain, default=str)
    json.dumps(given["meta"])  # a numpy bool left in the meta would raise here


def test_a_numpy_bool_is_still_no_count():
    """A numpy bool where a count goes is refused as Python's bool is, in the same line (tp=True is no TP size)."""
    with pytest.raises(archsim.InputError) as plain:
        archsim.train(MODEL, cluster=NODE, global_batch=8, tp=True)
    with pytest.raises(archsim.InputError) as given:
        archsim.train(MODEL, cluster=NODE, global_batch=8, tp=np.True_)
    assert str(given.value) == str(plain.value) and given.value.where.field == "tp"


@pytest.mark.parametrize("call", [
    lambda frame: archsim.validate_gpu(csv=frame),
    lambda frame: archsim.search(MODEL, cluster=NODE, global_batch=16, gpus=frame, progress=False),
])
def test_a_dataframe_is_no_list_of_values(call):
    """Defect: a DataFrame given to a list keyword was read as its column names (``validate_gpu(csv=frame)`` said
    ``a: measured CSV not found`` for a frame of column ``a``, and ran the CSV a column happened to be named after);
    now one line naming the keyword, as a dict is."""
    frame = pd.DataFrame({KERNELS: [1.0], "4": [2.0]})
    with pytest.raises(archsim.InputError) as refused:
        call(frame)
    assert "got DataFrame" in str(refused.value) and refused.value.where.field in ("csv", "gpus")


SPEC = """[sweep]
name = "{name}"
networks = ["layerpipe_sample"]
arrays = ["32x32"]
batches = [{batch}]
processors = [2]
methods = ["layerpipe"]
"""


def test_run_sweep_takes_force_as_the_command_does(tmp_path):
    """Defect: ``archsim sweep SPEC --force`` takes over a folder that holds another spec's results; ``run_sweep``
    had no ``force`` (``field 'force': unknown keyword``) while its refusal advised ``--force``. Now the refusal names
    ``out`` and ``force=True``, and ``force=True`` gives what the same spec gives in a fresh folder."""
    first, second = tmp_path / "first.toml", tmp_path / "second.toml"
    first.write_text(SPEC.format(name="first", batch=16), encoding="utf-8")
    second.write_text(SPEC.format(name="second", batch=32), encoding="utf-8")
    shared = tmp_path / "shared"
    archsim.run_sweep(str(first), out=shared)
    with pytest.raises(archsim.InputError) as refused:
        archsim.run_sweep(second, out=shared)
    assert "give another out, or force=True to replace them" in str(refused.value)
    assert "--force" not in str(refused.value) and "--out" not in str(refused.value)
    taken = archsim.run_sweep(second, out=shared, force=True)
    fresh = archsim.run_sweep(second, out=tmp_path / "fresh")
    assert taken.drop(columns="network_path").equals(fresh.drop(columns="network_path"))
    assert set(taken["batch"]) == {32}
    with pytest.raises(archsim.InputError, match="field 'force'"):
        archsim.run_sweep(second, out=shared, force="yes")


def test_the_command_still_advises_its_flags(tmp_path, monkeypatch, capsys):
    """``archsim sweep`` keeps naming its flags where ``run_sweep`` names keywords: one refusal, two spellings."""
    from archsim import cli

    monkeypatch.chdir(tmp_path)
    for name, batch in (("first", 16), ("second", 32)):
        (tmp_path / f"{name}.toml").write_text(SPEC.format(name=name, batch=batch), encoding="utf-8")
    assert cli.main(["sweep", "first.toml", "--out", "shared", "--quiet"]) == 0
    capsys.readouterr()
    assert cli.main(["sweep", "second.toml", "--out", "shared", "--quiet"]) == 2
    assert "give another --out, or --force to replace them" in capsys.readouterr().err


def test_every_public_name_is_documented():
    """Defect: ``archsim.Layer`` is in ``archsim.__all__`` (``from archsim import *`` gives it) but docs/api.md
    neither rendered nor named it. Each public name is now rendered (``::: module.NAME``, or a function of
    ``::: archsim.api``) or named (``archsim.NAME``) on the page; and each ``archsim.NAME(`` the page calls is public."""
    import archsim.api

    page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    rendered = set(re.findall(r"^::: \S*\.(\w+)$", page, re.MULTILINE))
    rendered |= set(archsim.api.__all__) if "\n::: archsim.api\n" in page else set()
    named = set(re.findall(r"\barchsim\.(\w+)\b", page))
    missing = [name for name in archsim.__all__ if name != "__version__" and name not in rendered | named]
    assert not missing, f"public but not in docs/api.md: {missing}"
    called = set(re.findall(r"\barchsim\.([a-z_]\w*)\(", page))  # archsim.X(...): a placeholder
    assert called <= set(archsim.__all__), f"docs/api.md calls {sorted(called - set(archsim.__all__))}"


@pytest.mark.long
def test_the_sweep_example_prints_what_its_comments_say(tmp_path):
    """docs/api.md's sweep example, run as written: 2 arrays × 2 batches × (LayerPipe on 2…5 processors,
    PipeDream on 2…4, layerpipe_sample having 4 layer groups) = 2 × 2 × 7 = 28 rows, and the one warning counts the
    skipped point, 1 of 8 (network, processors, method) points, 2 × 2 = 4 of 32 configurations."""
    page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    example = next(body for lang, body in FENCE.findall(page) if lang == "python" and "archsim.run_sweep(" in body)
    for name in ("configs", "layers"):
        (tmp_path / name).symlink_to(ROOT / name)
    done = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, capture_output=True, text=True, check=False,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-800:]
    lines = done.stdout.splitlines()
    assert lines[0] == str(2 * 2 * (4 + 3))
    assert lines[1].startswith("skipped 1 of 8 (network, processors, method) points (4 of 32 configurations)")
    assert lines[2] == "reports/trial.html" and (tmp_path / "reports" / "trial.html").is_file()


def test_plan_takes_a_network_as_cost_and_profile_do():
    """Defect: ``archsim.plan(archsim.load_network(...), ...)`` was refused (``expected a network name or path, got
    Network``) where ``cost``, ``profile``, ``schedule`` and ``iteration_energy`` take the loaded network; the plan
    is now the one the network's name gives, the network keywords applied to it as to a name."""
    cluster = str(ROOT / "configs" / "clusters" / "testbed_1080ti.toml")
    for keywords in ({}, {"only": "conv", "batch": 16}):
        given = archsim.plan(archsim.load_network("vgg16"), cluster=cluster, microbatches=4, **keywords)
        named = archsim.plan("vgg16", cluster=cluster, microbatches=4, **keywords)
        assert given.to_dict() == named.to_dict()
    with pytest.raises(archsim.InputError, match="field 'network': expected a network name or path, or a Network"):
        archsim.plan(3, cluster=cluster, microbatches=4)


@pytest.fixture(scope="module")
def sample_plan():
    profile = archsim.profile("layerpipe_sample", array="32x32", batch=32)
    return archsim.pipeline(profile, processors=3, method="layerpipe"), profile


def test_pipeline_memory_is_the_commands_memory_flag(sample_plan, capsys):
    """Defect: ``archsim pipeline --microbatches M --memory --optimizer adam --capacity-gb GB`` had no keyword in the
    library (the pipeline route is profile, pipeline, simulate; none took them). ``archsim.pipeline_memory`` gives
    the command's bytes per processor; each layer's gradient is held once, on its owner (the gradients sum to the
    profile's weights), Adam's state is twice the gradients (--optimizer's help), and a processor over the capacity
    warns the command's line, naming ``capacity_gb`` where the command names ``--capacity-gb``."""
    from archsim import cli

    plan, profile = sample_plan
    memory = archsim.pipeline_memory(plan, profile, microbatches=4, optimizer="adam")
    assert memory.gradient_bytes.sum() == profile.weight_bytes.sum()
    assert (memory.optimizer_bytes == 2 * memory.gradient_bytes).all()
    argv = ["pipeline", "layerpipe_sample", "--array", "32x32", "--batch", "32", "--processors", "3", "--method",
            "layerpipe", "--microbatches", "4", "--memory", "--optimizer", "adam", "--capacity-gb", "0.01",
            "--format", "json"]
    capsys.readouterr()
    assert cli.main(argv) == 0
    printed = capsys.readouterr()
    rows = json.loads(printed.out)["rows"]
    columns = [name for name in memory.columns if name != "processor"]
    assert [[row[name] for name in columns] for row in rows] == memory[columns].to_numpy().tolist()
    with pytest.warns(UserWarning) as caught:
        archsim.pipeline_memory(plan, profile, microbatches=4, optimizer="adam", capacity_gb="0.01")
    line = str(caught[0].message)
    assert "capacity_gb" in line and line.replace("(capacity_gb)", "(--capacity-gb)") in printed.err


@pytest.mark.parametrize(("keywords", "field"), [
    ({"optimizer": "adamw"}, "optimizer"), ({"capacity_gb": 0}, "capacity_gb"), ({"capacity_gb": "x"}, "capacity_gb"),
    ({"microbatches": 0}, "microbatches"), ({"max_ops": 1}, "max_ops"), ({"microbatch": 4}, "microbatch"),
])
def test_pipeline_memory_refuses_as_the_command_does(sample_plan, keywords, field):
    plan, profile = sample_plan
    with pytest.raises(archsim.InputError) as refused:
        archsim.pipeline_memory(plan, profile, **{"microbatches": 4, **keywords})
    assert f"field '{field}'" in str(refused.value)


@pytest.mark.parametrize(("job", "counts"), [("run_sweep", ("workers", "max_configs")),
                                             ("pipeline_memory", ("microbatches", "capacity_gb", "max_ops"))])
def test_a_count_keyword_is_annotated_as_its_flags_text_too(job, counts):
    """Defect: ``run_sweep(workers="2", max_configs="100")`` ran (read as ``--workers 2`` reads it) but its
    annotations said ``int``, so a type checker refused what the run takes (docs/api.md: the annotations say
    ``int | str``; tests/test_api_counts.py checks the other jobs)."""
    parameters = inspect.signature(getattr(archsim, job)).parameters
    narrow = [name for name in counts if "str" not in annotation_text(parameters[name].annotation)]
    assert not narrow, f"archsim.{job}: {narrow} refuse text for a type checker, which the run reads"
