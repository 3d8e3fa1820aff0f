"""Every ``archsim schedule`` policy × flush × micro-batch count runs, or is refused in one line."""

import pytest
from conftest import USAGE

from archsim.choices.schedules import DP_POLICIES, LIST_SCHEDULES, OOO_POLICIES, ZB_SCHEDULES
from archsim.cli import main

ALL = OOO_POLICIES + DP_POLICIES + ZB_SCHEDULES + LIST_SCHEDULES + ("looped-bfs", "multistream")


@pytest.mark.parametrize("policy", ALL)
def test_policy_flush_microbatch_matrix(policy, capsys):
    for flush in ([], ["--flush"], ["--no-flush"]):
        for m in ("1", "2", "3"):
            argv = ["schedule", "ffnn8", "--policy", policy, "--processors", "2", "--microbatches", m,
                    "--unit-costs", "--format", "csv", *flush]
            code = main(argv)
            out, err = capsys.readouterr()
            assert code in (0, 2), argv
            if code == 0:
                assert out.startswith("policy,") and err == ""
            else:
                assert len(err.strip().splitlines()) == 1 and USAGE.match(err), err


@pytest.mark.parametrize("microbatches", (2, 3))
def test_mp_with_several_microbatches_runs_them_one_by_one(microbatches, capsys):
    """The reported cycle: mp with ≥ 2 micro-batches now runs, each micro-batch after the previous one's
    backward: microbatches × the 23 units of one (Oh et al., Fig. 5)."""
    assert main(["schedule", "ffnn8", "--policy", "mp", "--processors", "2", "--microbatches", str(microbatches),
                 "--unit-costs", "--format", "csv"]) == 0
    row = capsys.readouterr().out.splitlines()[1].split(",")
    assert float(row[4]) == 23 * microbatches
    assert main(["schedule", "ffnn8", "--policy", "mp", "--processors", "2", "--microbatches", str(microbatches),
                 "--unit-costs", "--flush"]) == 2
    assert "cannot flush" in capsys.readouterr().err


def test_gpipe_without_a_flush_is_refused_alike_from_command_and_library(capsys):
    """gpipe is GPipe's flush (Oh et al., Fig. 12a); --no-flush ranked F first and gave the flushed 41 (ffnn8, 4
    devices, 4 micro-batches), so it is refused in one line, the same from the command and the library; with one
    micro-batch a flush changes nothing and the run goes on (one micro-batch on 4 devices: F 8 + δ 7 + G 8 = 23)."""
    import archsim
    from archsim.errors import InputError

    argv = ["schedule", "ffnn8", "--policy", "gpipe", "--processors", "4", "--microbatches", "4", "--unit-costs"]
    assert main([*argv, "--no-flush"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "gpipe is GPipe's flush" in err
    with pytest.raises(InputError) as refused:
        archsim.schedule("ffnn8", policy="gpipe", processors=4, microbatches=4, unit_costs=True, flush=False)
    assert err.strip().endswith(f"argument --flush/--no-flush: {refused.value.message}")  # argparse names the switch
    assert str(refused.value).startswith("field 'flush': ")  # the library its keyword
    assert archsim.schedule("ffnn8", policy="gpipe", processors=4, microbatches=1, unit_costs=True,
                            flush=False).makespan == 23


@pytest.mark.parametrize("policy", [p for p in ALL if p not in ("looped-bfs", "multistream")])
def test_every_table_row_has_a_value_under_each_header(policy, capsys):
    """A blank cell (flush on policies without one) shifted the row's values under the wrong headers."""
    microbatches = "1" if policy.startswith("dp-") else "4"  # data parallel times one window
    assert main(["schedule", "ffnn8", "--policy", policy, "--processors", "2", "--microbatches", microbatches,
                 "--unit-costs"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("#")]
    assert len({len(line.split()) for line in lines}) == 1, lines


def test_multistream_table_has_a_value_under_each_header(capsys):
    assert main(["schedule", "ffnn8", "--policy", "multistream", "--processors", "1"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("#")]
    assert len({len(line.split()) for line in lines}) == 1, lines


def test_multistream_runs_on_one_device_and_refuses_what_it_would_ignore(capsys):
    """It printed processors 1 and microbatches 1 whatever was asked, and demanded --processors."""
    assert main(["schedule", "ffnn8", "--policy", "multistream", "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("multistream-joint,1,1,")
    for flag, value in (("--processors", "4"), ("--microbatches", "4")):
        assert main(["schedule", "ffnn8", "--policy", "multistream", flag, value]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and USAGE.match(err) and flag.lstrip("-") in err
