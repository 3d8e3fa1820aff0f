"""``--unit-costs`` prices a layer on the out-of-order and data-parallel policies but a whole stage on the
published stage schedules, so ffnn16 on 4 devices with 4 micro-batches gave gpipe 83 and zb-h1 15 units with
nothing in the output saying the units differ. The output now says which (meta ``unit_costs``), and
``--help`` says it."""

import archsim
from archsim.cli import build_parser


def test_meta_says_per_layer_or_per_stage():
    """Hand counts: gpipe, 16 layers on 4 devices (4 each), 4 micro-batches, unit F = D = G = 1 a layer;
    zb-h1's 4 stages of F = I = W = 1 each: 3m + (p − 1)(F + I − W) = 12 + 3 = 15."""
    gpipe = archsim.schedule("ffnn16", policy="gpipe", processors=4, microbatches=4, unit_costs=True)
    zb = archsim.schedule("ffnn16", policy="zb-h1", processors=4, microbatches=4, unit_costs=True)
    assert (gpipe.makespan, zb.makespan) == (83, 15)
    assert gpipe.meta["unit_costs"] == "F = D = G = 1 per layer"
    assert zb.meta["unit_costs"].startswith("F = I = W = 1 per stage")
    dp = archsim.schedule("ffnn8", policy="dp-wfbp", processors=2, unit_costs=True)
    assert dp.meta["unit_costs"] == "F = D = G = 1 per layer"
    assert "unit_costs" not in archsim.schedule("ffnn8", policy="gpipe", processors=2).meta  # the array's costs


def test_help_says_both():
    parser = build_parser()
    sub = next(a for a in parser._actions if getattr(a, "choices", None) and "schedule" in a.choices)
    text = " ".join(sub.choices["schedule"].format_help().split())  # argparse wraps lines anywhere
    assert "per layer" in text and "per stage" in text
