"""PipeDream's optimizer in archsim against the released optimizer's own outputs on its own profiles.

References (never archsim's output): ``tests/data/pipedream/optimizer_results.json`` (vgg16, alexnet,
resnet50, gnmt × 5 settings × 2/4/8/16 machines, see the README beside it) and
``tests/data/pipedream_resnet18.json`` (recorded the same way; see ``tests/data/README.md``).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from archsim.errors import InputError
from archsim.partition import pipedream_dense
from archsim.partition.antichain import antichain_states
from archsim.partition.graph_txt import load_graph_txt
from archsim.partition.pipedream import pipedream_plan, plan_partition
from archsim.partition.pipedream_tables import Level, PipeDreamOptions
from tests.pipedream_evaluator import plan_time

DATA = Path(__file__).resolve().parent / "data"
SHARED = DATA / "pipedream"  # PipeDream's profiles and recorded outputs, shipped with the tests (MIT)
ROOT = Path(__file__).resolve().parents[1]
PROFILES = {p.stem: p for p in sorted((SHARED / "profiles").glob("*.txt"))}


def _records():
    return (json.loads((SHARED / "optimizer_results.json").read_text())
            + json.loads((DATA / "pipedream_resnet18.json").read_text()))


RECORDS = _records()


@cache
def profile_of(model: str):
    return load_graph_txt(PROFILES[model])


def options_of(record) -> PipeDreamOptions:
    setting = record["setting"]
    return PipeDreamOptions(activation_compression_ratio=None if setting == "flat_noact" else 1.0,
                            memory_constraint=setting.endswith("_mem"))


def as_levels(record_levels):
    return [[[(a, b, r) for a, b, _, r in group] for group in level["blocks"]] for level in record_levels]


def test_all_five_models_are_recorded():
    models = {r["model"] for r in RECORDS}
    assert {"resnet18", "vgg16", "alexnet", "resnet50", "gnmt"} <= models and len(RECORDS) == 100


@pytest.fixture(params=["dense", "compiled"])
def search(request, monkeypatch):
    """Each recorded case through both split searches of a final level: the dense numpy one (any size) and
    the compiled walk (never dense), so a bug in either path fails against PipeDream's own outputs."""
    monkeypatch.setattr(pipedream_dense, "WORK_LIMIT", 10**12 if request.param == "dense" else -1)
    return request.param


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: f"{r['model']}-{r['setting']}-{r['N']}")
def test_time_per_stage_equals_the_released_optimizer(record, search):
    profile = profile_of(record["model"])
    options = options_of(record)
    hierarchy = [Level(n, b) for n, b in zip(record["ns"], record["bws"])]
    plan = pipedream_plan(profile, hierarchy, options)
    assert plan.time_per_stage == pytest.approx(record["time_per_stage"], rel=1e-6)
    assert plan.single_stage_time == pytest.approx(record["single_stage_time"], rel=1e-9)
    memory = options.memory_bytes if options.memory_constraint else None
    ratio = options.activation_compression_ratio
    # The evaluator gives PipeDream's own plan PipeDream's own time (so state numbers agree) …
    theirs = plan_time(plan.states, as_levels(record["levels"]), record["ns"], record["bws"], ratio, memory)
    assert theirs == pytest.approx(record["time_per_stage"], rel=1e-6)
    # … and archsim's plan, where it differs (a tie), is an optimum too.
    ours = [[[(b.start, b.end, b.replicas) for b in group] for group in level] for level in plan.levels]
    assert plan_time(plan.states, ours, record["ns"], record["bws"], ratio, memory) == \
        pytest.approx(record["time_per_stage"], rel=1e-6)
    # As archsim's Partition: every node on exactly one stage, the machines all used, and the
    # slowest stage or transfer is the optimizer's time per stage.
    partition = plan_partition(profile, plan)
    placed = [name for stage in partition.stages for name in stage.layers]
    assert sorted(placed) == sorted(profile.names)
    assert partition.processors == record["N"]
    assert partition.max_stage_cost == pytest.approx(record["time_per_stage"], rel=1e-6)
    # Each block's printed compute time is the optimizer's.
    for level, recorded in zip(plan.levels, record["levels"]):
        printed = {(a, b): t for group in recorded["blocks"] for a, b, t, _ in group}
        for group in level:
            for block in group:
                if (block.start, block.end) in printed:
                    assert block.compute == pytest.approx(printed[(block.start, block.end)], rel=1e-9, abs=1e-12)


def test_every_profile_loads():
    assert len(PROFILES) == 14
    for name, path in PROFILES.items():
        profile = load_graph_txt(path)
        assert len(profile) > 0 and profile.unit == "seconds", name
        assert all(all(p < k for p in profile.producers(k)) for k in range(len(profile))), name


def test_lists_of_output_sizes_are_summed_and_inputs_dropped():
    text = PROFILES["gnmt"].read_text()
    assert "activation_size=[6291456.0; 131072.0; 131072.0]" in text
    profile = load_graph_txt(PROFILES["gnmt"])
    assert 6291456 + 131072 + 131072 in set(profile.activation_bytes.tolist())
    assert not {"node1", "node2", "node3"} & set(profile.names)  # Input0, Input1, Input2
    alexnet = load_graph_txt(PROFILES["alexnet"])
    assert "node1" not in alexnet.names  # the 636 ms Input node is data loading


def write(tmp_path, text, name="graph.txt"):
    path = tmp_path / name
    path.write_text(text)
    return path


NODE = "{id} -- {desc} -- forward_compute_time={f}, backward_compute_time=1.0, activation_size={a}, parameter_size=8.0"


@pytest.mark.parametrize("text, message", [
    (NODE.format(id="node1", desc="Conv", f="1,2", a="4.0"), "forward_compute_time"),
    (NODE.format(id="node1", desc="Conv", f="nan", a="4.0"), "finite"),
    (NODE.format(id="node1", desc="Conv", f="1.0", a="[4.0; x]"), "activation_size"),
    (NODE.format(id="node1", desc="Conv", f="1.0", a="4.5"), "whole number"),
    (NODE.format(id="node1", desc="Conv", f="1.0", a="4.0") + "\n" + NODE.format(id="node1", desc="C", f="1", a="4"),
     "defined twice"),
    (NODE.format(id="node1", desc="Conv", f="1.0", a="4.0") + "\n\tnode1 -- node9", "unknown node node9"),
    (NODE.format(id="node1", desc="A", f="1.0", a="4.0") + "\n" + NODE.format(id="node2", desc="B", f="1", a="4")
     + "\n\tnode1 -- node2\n\tnode2 -- node1", "cycle"),
])
def test_malformed_profiles_name_file_line_and_field(tmp_path, text, message):
    with pytest.raises(InputError) as caught:
        load_graph_txt(write(tmp_path, text))
    assert message in str(caught.value) and "graph.txt" in str(caught.value)


def test_a_node_no_antichain_reaches_is_an_error(tmp_path):
    # node3 hangs off a second source and feeds nothing: PipeDream's states would silently drop it.
    nodes = "\n".join(NODE.format(id=f"node{k}", desc=f"L{k}", f="1.0", a="4.0") for k in (1, 2, 3))
    path = write(tmp_path, nodes + "\n\tnode1 -- node2")
    with pytest.raises(InputError, match="no antichain path"):
        antichain_states(load_graph_txt(path))


def test_no_plan_is_an_error_not_a_guess():
    from archsim.partition import profile_from_costs

    chain = profile_from_costs(["a", "b"], [1.0, 2.0], [0, 0], [1.0, 1.0])
    with pytest.raises(InputError, match="no plan"):
        pipedream_plan(chain, [Level(3, 1.0)], PipeDreamOptions(straight_pipeline=True))
    fewer = pipedream_plan(chain, [Level(3, 1.0)], PipeDreamOptions(straight_pipeline=True, use_fewer_machines=True))
    assert fewer.time_per_stage == 3.0  # b alone (2 + 1) on one of its machines


@pytest.mark.parametrize("argv", [["pipeline", "layerpipe_sample", "--processors", "6", "--method", "pipedream"],
                                  ["pipeline", "layerpipe_sample", "--processors", "5", "--method", "pipedream",
                                   "--mode", "paper"]])
def test_more_processors_than_layers_names_the_limit(argv, capsys):
    # layerpipe_sample has 4 layers: a straight pipeline of whole layers fills at most 4 processors.
    # The refusal named a flag `pipeline` does not have ("allow fewer machines") and field 'machines'.
    from archsim.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "at most 4 processors" in err and "argument --processors" in err and "fewer machines" not in err


def run_cli(*argv):
    import io
    from contextlib import redirect_stdout

    from archsim.cli import main

    out = io.StringIO()
    with redirect_stdout(out):
        code = main([str(a) for a in argv])
    return code, out.getvalue()


CLUSTER = """[cluster]
name = "{name}"
inter_server_gbps = {inter}
[[servers]]
count = {servers}
gpus = {gpus}
intra_server_gbps = {intra}
"""


@pytest.mark.parametrize("setting, servers, gpus, intra, inter, extra", [
    # in-server figures both directions together: 16 Gb/s is 1 GB/s a transfer
    ("flat", 1, 8, 16, 8, ["--activation-compression-ratio", "1"]),           # 1 GB/s = 8 Gb/s, one level
    ("flat_noact", 1, 8, 16, 8, []),                                            # the CLI's default: ignored
    ("flat_mem", 1, 8, 16, 8, ["--activation-compression-ratio", "1", "--memory-constraint"]),
    ("hier", 2, 4, 256, 10, ["--activation-compression-ratio", "1"]),          # 1.6e10 B/s in, 1.25e9 B/s across
])
def test_archsim_plan_method_pipedream_gives_the_optimizers_answer(tmp_path, setting, servers, gpus, intra, inter,
                                                                   extra):
    cluster = tmp_path / "c.toml"
    cluster.write_text(CLUSTER.format(name="c", inter=inter, servers=servers, gpus=gpus, intra=intra))
    code, out = run_cli("plan", PROFILES["resnet50"], "--cluster", cluster, "--method", "pipedream",
                        "--microbatches", 4, "--format", "json", *extra)
    assert code == 0
    result = json.loads(out)
    record = next(r for r in RECORDS if (r["model"], r["setting"], r["N"]) == ("resnet50", setting, 8))
    meta = result["meta"]
    assert meta["time_per_stage"] == pytest.approx(record["time_per_stage"], rel=1e-6)
    assert meta["single_stage_time"] == pytest.approx(record["single_stage_time"], rel=1e-9)
    assert [level["level"] for level in meta["levels"]] == [level["level"] for level in record["levels"]]
    assert sum(row["replicas"] for row in result["rows"]) == 8
    # The simulation runs 4 micro-batches through every stage: never faster than the busiest stage's work.
    busiest = max(row["compute_seconds"] / row["replicas"] for row in result["rows"])
    assert meta["simulated_makespan_seconds"] >= 4 * busiest * (1 - 1e-9)
    assert meta["time_per_stage_by_machines"][-1] == pytest.approx(record["time_per_stage"], rel=1e-6)


@pytest.mark.long
def test_too_many_states_is_a_one_line_error_naming_the_profile(tmp_path, capsys):
    cluster = tmp_path / "c.toml"
    cluster.write_text(CLUSTER.format(name="c", inter=8, servers=1, gpus=2, intra=8))
    code, _ = run_cli("plan", PROFILES["inception_v3"], "--cluster", cluster, "--method", "pipedream",
                      "--microbatches", 2)
    error = capsys.readouterr().err
    assert code == 2 and "inception_v3.txt" in error and "antichain states" in error and error.count("\n") == 1


def test_a_ranged_cluster_is_refused_for_pipedreams_uniform_levels():
    code, _ = run_cli("plan", PROFILES["alexnet"], "--cluster", ROOT / "configs" / "clusters" / "spp_sim.toml", "--method",
                      "pipedream", "--microbatches", 2)
    assert code == 2
