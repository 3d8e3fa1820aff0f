"""Every timeline the simulator produces during the tests passes the independent validator and
equals the reference engine's.

The fixture wraps ``archsim.sim.engine.simulate`` wherever archsim's modules imported it, so a test
cannot forget to validate: an invalid timeline fails the test that produced it, and so does one
that differs, slot for slot or transfer for transfer, from the original pure-Python engine kept in
``sim_reference.py`` (on problems of up to REFERENCE_OPS ops, to keep the suite fast).

The SCALE-Sim comparisons skip without the ``scalesim`` package, so a run that lacks it would pass with
hundreds of checks silently gone: the session refuses to start instead, unless
``ARCHSIM_TESTS_WITHOUT_SCALESIM=1`` says the gap is meant.
"""

import os
import sys
from pathlib import Path

import pytest

from archsim.sim import engine
from archsim.sim.validate import assert_valid

sys.path.insert(0, str(Path(__file__).parent))
import sim_reference  # noqa: E402

_ORIGINAL = engine.simulate
VALIDATED = {"count": 0, "compared": 0}
REFERENCE_OPS = 20_000
WITHOUT_SCALESIM = "ARCHSIM_TESTS_WITHOUT_SCALESIM"


def pytest_configure(config):
    if os.environ.get(WITHOUT_SCALESIM) == "1":
        return
    try:
        import scalesim  # noqa: F401
    except ImportError as error:
        raise pytest.UsageError(
            f"the SCALE-Sim comparisons need the scalesim package ({error}); install the test extra "
            f"(pip install -e '.[test]'), or set {WITHOUT_SCALESIM}=1 to run without them") from error


def assert_same_as_reference(problem, policy, timeline) -> None:
    expected = sim_reference.simulate(problem, policy)
    assert tuple(timeline.slots) == expected.slots, "slots differ from the reference engine's"
    assert tuple(timeline.transfers) == expected.transfers, "transfers differ from the reference engine's"
    assert timeline.policy == expected.policy
    assert timeline.makespan == expected.makespan
    assert timeline.peak_memory() == expected.peak_memory()
    assert timeline.utilization() == expected.utilization()


def _validated_simulate(problem, policy=None):
    timeline = _ORIGINAL(problem, policy)
    assert_valid(problem, timeline)
    VALIDATED["count"] += 1
    if len(problem.ops) <= REFERENCE_OPS:
        assert_same_as_reference(problem, policy, timeline)
        VALIDATED["compared"] += 1
    return timeline


@pytest.fixture(autouse=True)
def validate_every_timeline(monkeypatch):
    for name, module in list(sys.modules.items()):
        if name.startswith("archsim") and getattr(module, "simulate", None) is _ORIGINAL:
            monkeypatch.setattr(module, "simulate", _validated_simulate)
    yield
