"""Hostile inputs to recent features, each refused in one line where before it ran on or crashed:

* a ``--link-bandwidth`` so slow that the simulated times pass 2^53 (1e-9 bytes/cycle on layerpipe_sample: an
  AssertionError traceback from the timeline validator, an op of 5,022,299 cycles having "lasted" 5,022,300);
* a runs file's integer and time cells that Python's int() and float() read but no other archsim reader does
  (``1_6``, full-width ``１６``, Arabic-Indic ``١٦``: read as 16);
* ``train --runs --schedule X`` on a file whose every row names its own schedule (the flag ignored, unsaid);
* a device TOML's ``[[memory]]`` (an array of tables), told "a key before the first section header"."""

from __future__ import annotations

import pytest
from strict_cli import refused

import archsim
from archsim.errors import InputError
from archsim.sim.engine import check_makespan

SLOW = ["--processors", "4", "--microbatches", "4", "--link-bandwidth", "1e-9"]


def test_the_makespan_bound_is_2_to_the_53():
    # the documented exact range of archsim's counts (validate.EXACT_LIMIT): one below it passes, it does not
    check_makespan(2**53 - 1)
    with pytest.raises(InputError, match=r"^the simulated makespan would reach 9\.01e\+15, beyond the 2\^53"):
        check_makespan(2**53)


@pytest.mark.parametrize("command", [["schedule", "layerpipe_sample", "--policy", "1f1b"],
                                     ["pipeline", "layerpipe_sample"]])
def test_a_link_too_slow_for_exact_times_is_one_line(capsys, command):
    # a hop of a micro-batch's activation (megabytes at int8) takes about 10^15 cycles at 1e-9 bytes/cycle: a
    # few in a row pass 2^53 ≈ 9.0e15 (the schedule's makespan was 8.99e15 at 1e-8 and ran)
    err = refused(capsys, [*command, *SLOW])
    assert "the simulated makespan would reach" in err and "give a faster link (--link-bandwidth)" in err


def test_the_library_names_its_keyword():
    with pytest.raises(InputError, match=r"makespan would reach .*\(link_bandwidth\)"):
        archsim.schedule("layerpipe_sample", policy="1f1b", processors=4, microbatches=4, link_bandwidth=1e-9)
