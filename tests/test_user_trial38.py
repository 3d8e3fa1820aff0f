"""User trial 38: a LayerPipe researcher's own sweeps, CNN and hand checks.

Each test marked as a fix failed on the code before it (said in its docstring)."""

import pytest

from archsim.errors import InputError
from archsim.sweep import load_spec

SPEC = """[sweep]
name = "dups"
networks = ["layerpipe_sample"]
arrays = ["8x8"]
dataflows = ["ws"]
batches = [4]
processors = [2]
methods = ["layerpipe", "pipedream"]
mode = "exact"
"""


@pytest.mark.parametrize(("old", "new", "field", "line"), [
    ("batches = [4]", "batches = [4, 16, 4]", "batches", 6),
    ("processors = [2]", "processors = [2, 2]", "processors", 7),
    ('arrays = ["8x8"]', 'arrays = ["8x8", "16x16", "8x8"]', "arrays", 4),
    ('dataflows = ["ws"]', 'dataflows = ["ws", "ws"]', "dataflows", 5),
    ('methods = ["layerpipe", "pipedream"]', 'methods = ["layerpipe", "layerpipe"]', "methods", 8),
    ('networks = ["layerpipe_sample"]', 'networks = ["layerpipe_sample", "layerpipe_sample"]', "networks", 3),
])
def test_a_value_listed_twice_in_a_sweep_axis_is_refused(tmp_path, old, new, field, line):
    """Fix: `batches = [4, 4, 16]` ran each batch-4 point twice, and summary.csv's mean over batches
    then weighted batch 4 twice (LayerPipe's mean speedup at P = 2 read 1.946 instead of the 1.959 of
    batches 4 and 16), with no word said. Failed before the fix: the spec loaded."""
    spec = tmp_path / "dups.toml"
    spec.write_text(SPEC.replace(old, new), encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_spec(spec)
    message = str(info.value)
    assert f"field '{field}'" in message and f"line {line}" in message and "twice" in message


CNN = """Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,
c1, 16, 16, 3, 3, 3, 8, 1,
c2, 14, 14, 3, 3, 8, 16, 2,
fc, 6, 6, 6, 6, 16, 10, 1,
"""


def _versions(tmp_path, capsys, *extra):
    import csv
    import io

    from archsim.cli import main

    (tmp_path / "cnn.csv").write_text(CNN, encoding="utf-8")
    assert main(["pipeline", str(tmp_path / "cnn.csv"), "--processors", "3", "--method", "layerpipe", "--array",
                 "8x8", "--batch", "4", "--format", "csv", *extra]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    return rows, [int(row["weight_versions"]) for row in rows]


def test_a_processor_of_borrowed_delta_parts_alone_counts_as_a_stage_of_the_weight_stash(tmp_path, capsys):
    """Fix: on this 3-layer CNN LayerPipe keeps c1, c2 on processor 1, fc on 2 and puts only fc's δ″ on
    processor 3. That δ″ lies on the backward path (fc's δ feeds c2's), so micro-batches stay in flight
    through three stages: by hand, processor 1 admits 3 forwards before its first backward returns (S − s + 1
    = 3, 2, 1), and processor 3 needs fc's weights for δ″ (one version). The simulated ``--memory`` table
    said 3, 2, 1; the plain table's closed form counted only processors with layers of their own and said
    2, 1, 0 for the same plan. Failed before the fix: [2, 1, 0]."""
    rows, plain = _versions(tmp_path, capsys)
    assert [row["ops"] for row in rows][2] == "D2:fc*"  # the plan this test is about
    _, simulated = _versions(tmp_path, capsys, "--microbatches", "8", "--memory")
    assert plain == [3, 2, 1] == simulated
