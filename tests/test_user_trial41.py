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


JOBS = ("cost", "profile", "pipeline", "simulate", "schedule", "train", "train_runs", "search", "load_network",
        "array_config", "run_sweep", "write_report")


def test_package_names_are_typed_for_a_type_checker():
    """``archsim.cost`` and the other lazy exports resolve at run time through ``__getattr__``, which a type
    checker cannot follow: every result of ``archsim.X(...)`` was ``Any`` to mypy in a user's notebook (before:
    no name imported for it). Each export is imported for the checker from the module ``_EXPORTS`` names."""
    import ast

    tree = ast.parse((ROOT / "archsim" / "__init__.py").read_text(encoding="utf-8"))
    checked = next(node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
    imported = {f"{node.module}:{alias.name}" for node in checked.body if isinstance(node, ast.ImportFrom)
                for alias in node.names}
    assert set(archsim._EXPORTS.values()) <= imported, set(archsim._EXPORTS.values()) - imported


@pytest.mark.parametrize("job", JOBS)
def test_jobs_state_what_they_return(job):
    """Before: ``train`` (a TrainResult and its rates), ``search``, ``profile``, ``pipeline`` and ``simulate``
    returned an unannotated value, so ``result.iteration_seconds`` went unchecked."""
    import inspect

    assert inspect.signature(getattr(archsim, job)).return_annotation is not inspect.Signature.empty


@pytest.mark.long
def test_mypy_sees_the_results_types(tmp_path):
    """What a user's script sees: mypy on ``archsim.train(...)`` reveals the TrainResult, not ``Any``."""
    from mypy import api

    script = tmp_path / "notebook.py"
    script.write_text("import archsim\n"
                      "result, rates = archsim.train('gpt2', cluster='c.toml', global_batch=8)\n"
                      "reveal_type(result)\nreveal_type(archsim.simulate)\n"
                      "reveal_type(archsim.cost('vgg16'))\n", encoding="utf-8")
    out, _, _ = api.run([str(script), "--no-error-summary", "--cache-dir", str(tmp_path / "cache"),
                         "--follow-imports", "silent", "--ignore-missing-imports"])
    assert "archsim.training.run.TrainResult" in out and "Timeline" in out and "CostResult" in out, out


SMALL = "docs/examples/tiny_resnet.csv"  # for the cycle engine, which steps every cycle of every GEMM
PROFILE_CASES = {  # keyword → (flags of archsim pipeline, keywords of archsim.profile), at batch 4
    "bandwidth": (["--engine", "cycle", "--bandwidth", "4"], {"engine": "cycle", "bandwidth": 4}),
    "sram_kb": (["--engine", "cycle", "--sram-kb", "16,32,8"], {"engine": "cycle", "sram_kb": "16,32,8"}),
    "config": (["--config", "configs/arrays/scalesim_32x32_ws.cfg", "--array", "16x8"],
               {"config": "configs/arrays/scalesim_32x32_ws.cfg", "array": "16x8"}),
}


@pytest.mark.parametrize("name", sorted(PROFILE_CASES))
def test_profile_takes_the_pipeline_commands_array_flags(name, capsys, monkeypatch):
    """``archsim pipeline --engine cycle --bandwidth 4`` (and ``--sram-kb``, ``--config``) as ``archsim.profile``'s
    keywords of the same names (before: refused as unknown keywords; only an ``array_config(...)`` built apart
    reached them). The command's single-processor cycles and PipeDream plan are the reference."""
    monkeypatch.chdir(ROOT)
    flags, keywords = PROFILE_CASES[name]
    printed = cli_json(["pipeline", SMALL, "--processors", "2", "--method", "pipedream", "--batch", "4", *flags],
                       capsys)["meta"]
    profile = archsim.profile(SMALL, batch=4, **keywords)
    assert float(profile.total.sum()) == printed["single_processor_cycles"]
    assert archsim.pipeline(profile, processors=2, method="pipedream").max_stage_cost == printed["iteration_cycles"]


def test_profile_refuses_and_warns_as_the_command(capsys, monkeypatch):
    """A bandwidth without the cycle engine is the command's refusal; SRAM sizes without it change no cycle of a
    profile, which the command says on stderr and the library as a UserWarning naming keywords."""
    monkeypatch.chdir(ROOT)
    printed = cli_error(["pipeline", SMALL, "--processors", "2", "--bandwidth", "4"], capsys)
    with pytest.raises(InputError) as refused:
        archsim.profile(SMALL, bandwidth=4)
    said = "is the cycle engine's DRAM words/cycle: add {} (analytic cycles have no memory stalls)"
    assert printed == "archsim pipeline: error: argument --bandwidth: --bandwidth " + said.format("--engine cycle")
    assert str(refused.value) == "field 'bandwidth': bandwidth " + said.format("engine='cycle'")
    with pytest.warns(UserWarning, match=r"^sram_kb is not used without engine='cycle'"):
        profile = archsim.profile(SMALL, batch=4, sram_kb=16)
    assert profile.total.tolist() == archsim.profile(SMALL, batch=4).total.tolist()


GPT2 = "configs/transformers/gpt2.json"


@pytest.mark.parametrize("dim", ["seq=64", ["seq=64"], [("seq", "64")]])
def test_dim_as_the_flags_text(dim, capsys, monkeypatch):
    """``--dim seq=64``'s text as ``dim="seq=64"`` (a list of such, as the repeated flag gives) is
    ``dim={"seq": 64}`` (before: a ValueError from unpacking the string); the command's rows are the reference."""
    monkeypatch.chdir(ROOT)
    printed = cli_json(["cost", GPT2, "--dim", "seq=64", "--only", "fc"], capsys)["rows"]
    rows = archsim.cost(GPT2, dim=dim, only="fc").to_dict()["rows"]
    assert [row["F_cycles"] for row in rows] == [row["F_cycles"] for row in printed]


@pytest.mark.parametrize(("keywords", "field"), [({"dim": "seq"}, "dim"), ({"dim": [("seq",)]}, "dim"),
                                                ({"dim": [3]}, "dim"), ({"only": 5}, "only"),
                                                ({"only": ["conv", 5]}, "only")])
def test_network_keywords_no_flag_could_give_are_input_errors(keywords, field, monkeypatch):
    """Before: a ValueError or TypeError from inside (``only=5``: 'int' object is not iterable)."""
    monkeypatch.chdir(ROOT)
    with pytest.raises(InputError) as refused:
        archsim.cost(GPT2, **keywords)
    assert refused.value.where.field == field


@pytest.mark.parametrize("job", ["pipeline", "simulate_plan", "simulate_profile"])
@pytest.mark.parametrize("given", ["vgg16", 3])
def test_pipeline_and_simulate_name_a_wrong_argument(job, given, sample_profile):
    """A network name (what ``archsim pipeline NETWORK`` takes) where the profile goes, or a profile where the
    plan goes: an InputError saying what goes there (before: AttributeError, 'str' object has no attribute
    'array' or 'stages')."""
    plan = archsim.pipeline(sample_profile, processors=2)
    with pytest.raises(InputError) as refused:
        if job == "pipeline":
            archsim.pipeline(given, processors=2)
        elif job == "simulate_plan":
            archsim.simulate(given, sample_profile, microbatches=2)
        else:
            archsim.simulate(plan, given, microbatches=2)
    field = "plan" if job == "simulate_plan" else "profile"
    assert refused.value.where.field == field and "archsim." in str(refused.value)


def test_numbers_from_numpy_are_read_as_a_list_of_them(monkeypatch):
    """A notebook's arrays where a list goes: ``stage_times=np.array([1., 1., 1.])`` is ``"1,1,1"`` (the
    zero-bubble paper's 1F1B: 3m + (p − 1)(F + B + W) = 24 + 9 = 33 at p 4, m 8) and ``sram_kb=np.array([...])``
    the list (before: both refused, their numpy text ``'[1. 1. 1.]'`` read as one value)."""
    import numpy as np

    monkeypatch.chdir(ROOT)
    timed = archsim.schedule(stages=4, stage_times=np.array([1.0, 1.0, 1.0]), microbatches=8, policy="1f1b")
    assert timed.makespan == 33
    stalled = archsim.cost(SMALL, engine="cycle", batch=2, bandwidth=4, sram_kb=np.array([16, 32, 8]))
    assert stalled.equals(archsim.cost(SMALL, engine="cycle", batch=2, bandwidth=4, sram_kb=[16, 32, 8]).table)


def test_an_unknown_keyword_names_a_near_one_only(monkeypatch):
    """``archsim.train(..., gpus=8)`` (search's keyword) said "did you mean 'max_ops'?": the nearest name at any
    distance. A name like none offers none, and a misspelling still gets its own (``sram`` → ``sram_kb``)."""
    monkeypatch.chdir(ROOT)
    with pytest.raises(InputError) as refused:
        archsim.train("gpt2", cluster="configs/clusters/a100_node.toml", global_batch=8, gpus=8)
    assert "did you mean" not in str(refused.value) and "archsim.train takes" in str(refused.value)
    with pytest.raises(InputError, match=r"did you mean 'sram_kb'\?"):
        archsim.cost(SMALL, sram=64)


def test_profile_reads_batch_as_cost_and_the_flag_do(sample_profile):
    """``archsim.profile(..., batch="32")`` is ``--batch 32`` (before: a TypeError comparing str with int), and a
    batch no flag takes is refused as ``archsim.cost`` refuses it (before: ``batch=2.5`` and ``batch=True`` ran,
    a profile of 2.5 samples)."""
    again = archsim.profile("layerpipe_sample", array="32x32", batch="32", mode="paper")
    assert again.batch == 32 and again.total.tolist() == sample_profile.total.tolist()
    for bad in (2.5, True, 0):
        with pytest.raises(InputError) as refused:
            archsim.profile("layerpipe_sample", batch=bad)
        with pytest.raises(InputError) as by_cost:
            archsim.cost("layerpipe_sample", batch=bad)
        assert str(refused.value) == str(by_cost.value)


def test_reprs_of_a_large_network_stay_a_few_lines(monkeypatch):
    """A notebook shows a cell's last value by its repr: ResNet-101's Network, LayerProfile and Partition printed
    79 kB, 36 kB and 126 kB (every layer, cost array and placed op); now what they are, in one line each."""
    monkeypatch.chdir(ROOT)
    network = archsim.load_network("resnet101")
    profile = archsim.profile(network, array="64x64")
    plan = archsim.pipeline(profile, processors=16, method="pipedream")
    for value, said in ((network, ["'resnet101'", f"{len(network.layers)} layers", "conv1"]),
                        (profile, [f"{len(profile.names)} layers", "batch=32", "unit='cycles'"]),
                        (plan, ["'pipedream'", f"{len(plan.stages)} stages", f"{plan.max_stage_cost:g}", "cycles"])):
        text = repr(value)
        assert len(text) < 400 and "\n" not in text and all(part in text for part in said), text


def test_a_search_result_repr_stays_a_few_lines(monkeypatch):
    """GPT-2 on one A100 server at top 5 printed 39 kB (every ranked row and the whole Pareto front, each with its
    Megatron-LM arguments): now the counts, the best row's layout and time, and the rejections."""
    monkeypatch.chdir(ROOT)
    # 1F1B alone: five ranked rows and a Pareto front of several, what the repr must leave out, at a quarter of the work
    found = archsim.search("gpt2", cluster="configs/clusters/a100_node.toml", global_batch=32, top=5, progress=False,
                           schedule=["1f1b"])
    text, best = repr(found), found.rows[0]
    assert len(text) < 600 and "\n" not in text, text
    for part in (f"{len(found.rows)} rows", f"{len(found.pareto)} on the Pareto front",
                 f"tp {best['tp']} × pp {best['pp']} × dp {best['dp']}", f"{best['iteration_seconds']:.4g} s"):
        assert part in text, (part, text)


def test_a_train_result_repr_leaves_out_the_op_rows(monkeypatch):
    """GPT-2 on 8 A100s printed 5.7 kB, most of it the per-op rows (``ops``), the pipeline run and its
    post-processing, which ``to_dict()["rows"]`` and ``.timeline`` give; the repr keeps the figures."""
    monkeypatch.chdir(ROOT)
    result, _ = archsim.train("gpt2", cluster="configs/clusters/a100_node.toml", tp=2, dp=4, global_batch=32,
                              micro_batch=4)
    text = repr(result)
    assert len(text) < 2000, len(text)
    assert "ops=" not in text


def test_a_train_result_repr_is_one_short_line_like_the_other_results(monkeypatch):
    """The repr above still ran to ~1,000 characters (every field of the breakdown, the memory per rank and the
    parallelism): now one line, as a search's, a profile's and a timeline's, with the layout and the figures
    ``archsim train`` prints (seconds, GiB, joules), each checked against the result's own fields."""
    monkeypatch.chdir(ROOT)
    result, _ = archsim.train("gpt2", cluster="configs/clusters/a100_node.toml", tp=2, dp=4, global_batch=32,
                              micro_batch=4)
    text, par = repr(result), result.parallelism
    assert len(text) < 300 and "\n" not in text, text
    assert text.startswith("TrainResult(") and text.endswith(")")
    assert result.energy_j is not None  # archsim.train prices the iteration
    for part in (f"tp {par.tp} × pp {par.pp} × dp {par.dp}", f"micro-batch {par.micro_batch}", par.schedule,
                 f"{result.iteration_seconds:.4g} s", f"{result.peak_memory_gib:.4g} GiB", f"{result.energy_j:.4g} J",
                 f"{len(result.ops)} op rows"):
        assert part in text, (part, text)


def test_a_profile_has_a_frame_to_plot(sample_profile):
    """A profile had no ``to_frame()`` (a plan and a timeline have one): its per-layer costs, named in its unit
    as a plan's are, are ``archsim cost``'s F/G/D cycles and bytes on the same array, batch and mode."""
    frame = sample_profile.to_frame()
    table = archsim.cost("layerpipe_sample", array="32x32", batch=32, mode="paper").table
    assert frame["layer"].tolist() == table["layer"].tolist()
    for column in ("F_cycles", "G_cycles", "D_cycles", "total_cycles", "activation_bytes", "delta_bytes",
                   "weight_bytes"):
        assert frame[column].tolist() == table[column].tolist(), column
    seconds = archsim.profile("layerpipe_sample", array="32x32", batch=32, mode="paper", clock_ghz=1.0).to_frame()
    assert "F_seconds" in seconds and "F_cycles" not in seconds
