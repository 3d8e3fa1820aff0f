"""The fuzzing's acceptance run (issues 19 and 39), the ``slow`` tier only:
``pytest -m slow tests/test_fuzz_acceptance.py -s``.

≥ 10⁴ cases over every reader format (tests/fuzz_cases.py's ``READERS``, drawn as in
tests/test_fuzz_readers.py) and every fuzzed command (as in tests/test_fuzz_cli.py); the tallies
(cases per format, results, clean errors, invalid inputs refused) are printed. Under the default
``deterministic`` hypothesis profile (tests/conftest.py) it replays the same cases on every run.
"""

from __future__ import annotations

import pytest
from fuzz_cases import CLI_BREAKS, READERS
from test_fuzz_cli import _fuzz_cli
from test_fuzz_readers import _fuzz_readers


@pytest.mark.slow
def test_acceptance_fuzz_run(tmp_path, capsys):
    """Issues 19 and 39's acceptance: ≥ 10⁴ cases over every reader format and every fuzzed command,
    0 tracebacks, 0 hangs past 20 s, 0 invalid inputs accepted, 0 negative or NaN outputs."""
    readers, commands = _fuzz_readers(tmp_path, 10_000), _fuzz_cli(capsys, 1_500)
    with capsys.disabled():
        print("\n" + readers.report("readers") + "\n" + commands.report("command lines"))
        print(f"all: {readers.total() + commands.total()} cases, "
              f"{readers.total('invalid refused') + commands.total('invalid refused')} invalid by construction "
              f"(all refused), slowest {max(readers.slowest, commands.slowest):.1f} s")
    readers.check()
    commands.check()
    assert readers.total() + commands.total() >= 10_000
    assert readers.formats() == set(READERS) and len(commands.formats()) == len(CLI_BREAKS)
