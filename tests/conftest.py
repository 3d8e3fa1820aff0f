"""Every timeline the simulator produces during the tests passes the independent validator and
equals the reference engine's.

The fixture wraps ``archsim.sim.engine.simulate`` wherever archsim's modules imported it, so a test
cannot forget to validate: an invalid timeline fails the test that produced it, and so does one
that differs, slot for slot or transfer for transfer, from the original pure-Python engine kept in
``sim_reference.py`` (on problems of up to REFERENCE_OPS ops, to keep the suite fast).

The test extra's packages are the references many checks compare against (SCALE-Sim, torch's
pipelining reader and simulator, Dask, mkdocs, openpyxl); their tests skip without them, so a run that lacks
one would pass with hundreds of checks silently gone. The session refuses to start instead, unless
``ARCHSIM_TESTS_WITHOUT`` names the missing packages (comma-separated, e.g. ``scalesim,torch``).

Property tests draw the same examples on every run: the default hypothesis profile, ``deterministic``,
is derandomized (a fixed seed per test) and keeps no example database between runs, so a run passes or
fails the same way on every clone. The ``explore`` profile draws afresh (and keeps hypothesis' database):
``ARCHSIM_HYPOTHESIS_PROFILE=explore pytest`` or ``pytest --hypothesis-profile=explore``; a failure it
finds becomes an explicit ``@example`` in the test. A collection check refuses to run a default-profile
session in which some test would still draw randomly (its own ``@settings`` undoing the profile).
"""

import gc
import importlib.util
import os
import re
import sys
from pathlib import Path

import pytest
from hypothesis import settings

from archsim.sim import engine
from archsim.sim.validate import assert_valid

sys.path.insert(0, str(Path(__file__).parent))
import sim_reference
from device_files import scalesim_chip_cfg
from fuzz_tally import alarm_paused

# archsim's one error line, named after the command as argparse names it ("archsim train: error: …",
# "archsim bppsa rnn: error: …"), or "archsim: error: …" when no command was chosen
USAGE = re.compile(r"archsim(?: [a-z][a-z0-9-]*)*: error: ")

_ORIGINAL = engine.simulate
VALIDATED = {"count": 0, "compared": 0}
REFERENCE_OPS = 20_000
WITHOUT = "ARCHSIM_TESTS_WITHOUT"
# The test extra's packages whose absence turns checks into skips: import name → what is lost.
REFERENCES = {
    "scalesim": "the SCALE-Sim comparisons",
    "torch": "the torch.distributed.pipelining and from_torch checks",
    "distributed": "the Dask sweep checks",
    "mkdocs": "the user's guide build",
    "openpyxl": "the DeepBench converter's workbook tests",
}


PROFILE_VARIABLE = "ARCHSIM_HYPOTHESIS_PROFILE"
DEFAULT_PROFILE = "deterministic"
# No deadline in either profile: a per-example time limit is a timed test, and on a shared, loaded machine a
# correct example can take several times its usual 0.2 s (speed belongs in benchmarks/).
settings.register_profile(DEFAULT_PROFILE, derandomize=True, database=None, print_blob=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None)
settings.load_profile(os.environ.get(PROFILE_VARIABLE, DEFAULT_PROFILE))


def draws_randomly(test_settings) -> bool:
    """Whether a hypothesis test with these settings would draw different examples on another run."""
    return not test_settings.derandomize or test_settings.database is not None


def random_drawing_tests(items) -> list[str]:
    """The collected hypothesis tests whose settings are not derandomized (or keep a database)."""
    found = []
    for item in items:
        function = getattr(item, "function", None)
        test_settings = getattr(function, "_hypothesis_internal_use_settings", None)
        if getattr(function, "is_hypothesis_test", False) and test_settings is not None \
                and draws_randomly(test_settings):
            found.append(item.nodeid)
    return found


def pytest_sessionstart(session):
    """No cyclic garbage collection while the tests are collected: importing ~700 test modules (their asserts
    rewritten) and making ~14,000 items set off dozens of full collections, each over every object made so
    far, seconds in all."""
    gc.disable()


def pytest_collection_finish(session):
    """Collect once, then set the collected tree aside (:func:`gc.freeze`: it lives until the session ends)
    so the collections during the run scan only what the tests make."""
    gc.collect()
    gc.freeze()
    gc.enable()


def pytest_collection_modifyitems(config, items):
    if draws_randomly(settings.default):  # the explore profile: drawing afresh is its purpose
        return
    offenders = random_drawing_tests(items)
    if offenders:
        raise pytest.UsageError("these tests draw randomly in the default (derandomized) hypothesis profile; "
                                "drop derandomize=False / database= from their @settings: " + ", ".join(offenders))


def _installed(name: str) -> bool:
    """Whether ``import name`` would find the package, without importing it (torch takes seconds)."""
    if name in sys.modules:
        return sys.modules[name] is not None  # None: a test harness hid it
    return importlib.util.find_spec(name) is not None


def pytest_configure(config):
    allowed = {name.strip() for name in os.environ.get(WITHOUT, "").split(",") if name.strip()}
    missing = [name for name in REFERENCES if name not in allowed and not _installed(name)]
    if missing:
        lost = "; ".join(f"{name}: {REFERENCES[name]}" for name in missing)
        raise pytest.UsageError(
            f"the tests need the test extra's packages, missing here ({lost}); install it "
            f"(pip install -e '.[test]'), or set {WITHOUT}={','.join(missing)} to run without them")


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
    with alarm_paused():  # a fuzz case's time limit is on archsim's time, not on these checks'
        assert_valid(problem, timeline)
        VALIDATED["count"] += 1
        if len(problem.ops) <= REFERENCE_OPS:
            assert_same_as_reference(problem, policy, timeline)
            VALIDATED["compared"] += 1
    return timeline


# The module names already looked at, and the archsim modules among them (name -> module object).
_SEEN: set[str] = set()
_ARCHSIM: dict = {}


def archsim_modules() -> list:
    """The archsim modules now in ``sys.modules``, as a scan of all of it would find them. A scan of
    its thousands of entries before each of the suite's ~13,000 tests cost about a minute; this looks only at
    names not seen before, and re-checks the archsim ones it knows (one dropped or re-imported since is
    forgotten or taken anew)."""
    for name, module in list(_ARCHSIM.items()):
        now = sys.modules.get(name)
        if now is None:
            del _ARCHSIM[name]
            _SEEN.discard(name)
        elif now is not module:
            _ARCHSIM[name] = now
    for name in sys.modules.keys() - _SEEN:
        _SEEN.add(name)
        if name.startswith("archsim"):
            module = sys.modules.get(name)
            if module is None:
                _SEEN.discard(name)
            else:
                _ARCHSIM[name] = module
    return list(_ARCHSIM.values())


@pytest.fixture(autouse=True)
def validate_every_timeline(monkeypatch):
    for module in archsim_modules():
        if getattr(module, "simulate", None) is _ORIGINAL:
            monkeypatch.setattr(module, "simulate", _validated_simulate)
    yield


@pytest.fixture
def chip_cfg():
    """:func:`device_files.scalesim_chip_cfg`, the one SCALE-Sim ``.cfg`` device file the tests write."""
    return scalesim_chip_cfg


@pytest.fixture
def simulated_actions(monkeypatch) -> list[int]:
    """The schedule actions of each stage order the event simulator is handed
    (:func:`archsim.policies.stage_run.run_order`), one entry a run, as the test's calls make them."""
    from archsim.policies import stage_run

    handed: list[int] = []
    original = stage_run.run_order

    def counting(order, *args, **kwargs):
        handed.append(sum(len(rank) for rank in order.ranks))
        return original(order, *args, **kwargs)

    monkeypatch.setattr(stage_run, "run_order", counting)
    return handed


@pytest.fixture
def unread_key_chip(tmp_path: Path) -> Path:
    """The shipped 16-array .cfg device with ``board_watts = 50`` added: a key an array device does not read
    (the unread-key note's tests)."""
    path = tmp_path / "chip.cfg"
    text = (Path(__file__).resolve().parents[1] / "configs" / "devices" / "scalesim_32x32_device.cfg").read_text()
    path.write_text(text.replace("arrays = 16", "arrays = 16\nboard_watts = 50"))
    return path
