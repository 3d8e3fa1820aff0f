"""``archsim pipeline``'s weight-stash column states S − s + 1 directly (no networkx, no integer
program); here it is checked against the derivation from the pipelined training DFG
(:func:`archsim.dfg.pipeline`) on every chain of up to 7 layers cut into stages, with and without an
empty stage among them."""

import itertools
from types import SimpleNamespace

import pytest

from archsim.commands.pipeline import stash_depths
from archsim.dfg import pipeline


def derived(plan, names, first_layer_delta=True):
    """The DFG's weight versions per plan stage (0 for an empty one): the most any of its layers holds."""
    homes = [stage for stage in plan.stages if stage.layers]
    stage_of = {name: number for number, stage in enumerate(homes, start=1) for name in stage.layers}
    versions: dict[int, int] = {}
    for item in pipeline(names, stage_of, first_layer_delta=first_layer_delta).layers:
        versions[stage_of[item.layer]] = max(versions.get(stage_of[item.layer], 0), item.weight_versions)
    number = {stage.index: n for n, stage in enumerate(homes, start=1)}
    return [versions.get(number.get(stage.index, 0), 0) for stage in plan.stages]


def plans(n):
    names = [f"l{i}" for i in range(n)]
    for cuts in itertools.product((False, True), repeat=n - 1):
        groups, current = [], [names[0]]
        for name, cut in zip(names[1:], cuts):
            if cut:
                groups.append(current)
                current = []
            current.append(name)
        groups.append(current)
        for empty_at in (None, 0, len(groups)):
            layers = [tuple(g) for g in groups]
            if empty_at is not None:
                layers.insert(empty_at, ())
            yield names, SimpleNamespace(stages=[SimpleNamespace(index=i, layers=g) for i, g in enumerate(layers)])


@pytest.mark.long
@pytest.mark.parametrize("first_layer_delta", [True, False], ids=["paper", "exact"])
@pytest.mark.parametrize("n", range(1, 8))
def test_stated_stash_depths_equal_the_derived_ones(n, first_layer_delta):
    """``exact``: the first layer has no δ, so a stage holding it alone keeps 1 version (failed before:
    the closed form said S − s + 1 there)."""
    unstashed = frozenset() if first_layer_delta else frozenset({"l0"})
    for names, plan in plans(n):
        network = SimpleNamespace(layers=[SimpleNamespace(name=name, inputs=("x",)) for name in names])
        assert stash_depths(plan, network, "1f1b", unstashed) == derived(plan, names, first_layer_delta)


def test_a_network_that_is_not_a_chain_has_none():
    network = SimpleNamespace(layers=[SimpleNamespace(name="a", inputs=()), SimpleNamespace(name="b", inputs=("a",))])
    assert stash_depths(SimpleNamespace(stages=[]), network, "1f1b") is None


@pytest.mark.parametrize(("argv", "expected"), [
    (["--method", "gpipe"], [1, 1, 1]),  # GPipe flushes every iteration: one weight version per processor
    # PipeDream's stash depth S − s + 1, but conv1 | conv2 | conv3 conv4 puts conv1 alone on p1 and exact
    # mode gives it no δ: nothing reads its weights after F, one version (tests/test_first_layer_weights.py)
    (["--method", "pipedream"], [1, 2, 1]),
    (["--method", "pipedream", "--microbatches", "4", "--schedule", "gpipe"], [1, 1, 1]),
])
def test_the_column_follows_the_schedule_that_runs(argv, expected, capsys):
    """Failed before for GPipe: without ``--memory`` the table stated PipeDream's stash depths (3, 2, 1) for a
    GPipe plan, which keeps one version (the footprint under ``--memory`` already said 1)."""
    import json

    from archsim.cli import main

    assert main(["pipeline", "layerpipe_sample", "--processors", "3", *argv, "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["weight_versions"] for r in rows] == expected
