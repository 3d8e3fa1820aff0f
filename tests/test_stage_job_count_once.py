"""A per-stage schedule job is counted once, by one rule, before and after its profile is built: a zero-bubble
policy without chunks is F, B and W per stage and micro-batch, 3 · p · m ops, whatever ``--chunks`` defaults to
(the second count once multiplied by the default 2 chunks and refused jobs between half the limit and the limit)."""

from __future__ import annotations

import pytest

from archsim import cli

ARGS = ["schedule", "--stages", "4", "--stage-times", "1,1,1", "--microbatches", "10", "--policy", "zb-h1"]


@pytest.mark.parametrize(("max_ops", "accepted"), [(120, True), (150, True), (119, False)])
def test_zb_h1_counts_three_ops_per_stage_and_microbatch(max_ops, accepted, capsys):
    code = cli.main([*ARGS, "--max-ops", str(max_ops), "--format", "json"])
    err = capsys.readouterr().err
    assert (code == 0) is accepted, err
    if not accepted:
        assert "120" in err  # the job's 3 × 4 × 10 ops, named in the refusal
