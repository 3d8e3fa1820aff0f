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
