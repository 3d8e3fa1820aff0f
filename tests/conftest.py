"""Every timeline the simulator produces during the tests passes the independent validator.

The fixture wraps ``archsim.sim.engine.simulate`` wherever archsim's modules imported it, so a test
cannot forget to validate: an invalid timeline fails the test that produced it.
"""

import sys

import pytest

from archsim.sim import engine
from archsim.sim.validate import assert_valid

_ORIGINAL = engine.simulate
VALIDATED = {"count": 0}


def _validated_simulate(problem, policy=None):
    timeline = _ORIGINAL(problem, policy)
    assert_valid(problem, timeline)
    VALIDATED["count"] += 1
    return timeline


@pytest.fixture(autouse=True)
def validate_every_timeline(monkeypatch):
    for name, module in list(sys.modules.items()):
        if name.startswith("archsim") and getattr(module, "simulate", None) is _ORIGINAL:
            monkeypatch.setattr(module, "simulate", _validated_simulate)
    yield
