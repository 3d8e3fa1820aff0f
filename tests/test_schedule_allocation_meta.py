"""``schedule`` on a NETWORK says how its layers were dealt to the devices, so policies are compared knowing
their splits differ: vgg16's 13 conv layers on 4 devices ran gpipe on 4/4/4/1 layers (⌈13/4⌉ = 4 a device,
by count) and 1f1b on PipeDream's DP split, with a bubble of 0.43 against 0.33 and nothing saying why."""

import archsim


def test_ooo_allocations_by_the_rule():
    # ffnn8 on 3 devices: contiguous ⌈8/3⌉ = 3 a device → 3, 3, 2; modulo, group 1: l mod 3 → layers 0,3,6 / 1,4,7 /
    # 2,5 → 3, 3, 2 too; group 2: ⌊l/2⌋ mod 3 → blocks 0,3 / 1 / 2 → 4, 2, 2
    for policy, group, counts in (("gpipe", None, "3,3,2"), ("ooo-pipe1", None, "3,3,2"), ("mp", None, "3,3,2"),
                                  ("ooo-pipe2", None, "3,3,2"), ("ooo-pipe2", 2, "4,2,2")):
        meta = archsim.schedule("ffnn8", policy=policy, processors=3, unit_costs=True, group=group).meta
        assert meta["layers_per_device"] == counts, (policy, group)
        assert meta["allocation"].startswith("modulo" if policy == "ooo-pipe2" else "contiguous")
    # 13 layers on 4 devices: ⌈13/4⌉ = 4 → 4, 4, 4, 1 (the paper's rule, not a balance of costs)
    assert archsim.schedule("vgg16", only="conv", policy="gpipe", processors=4).meta["layers_per_device"] == "4,4,4,1"


def test_stage_schedules_state_their_dp_split_and_dp_none():
    meta = archsim.schedule("vgg16", only="conv", policy="1f1b", processors=4, microbatches=4).meta
    counts = [int(c) for c in meta["layers_per_device"].split(",")]
    assert len(counts) == 4 and sum(counts) == 13 and min(counts) >= 1 and meta["allocation"].startswith("PipeDream")
    assert "layers_per_device" not in archsim.schedule("ffnn8", policy="dp-wfbp", processors=2, unit_costs=True).meta
    assert "layers_per_device" not in archsim.schedule("ffnn8", policy="1f1b", processors=2, unit_costs=True).meta


def test_the_two_gpipes_name_their_schedule_and_split():
    """`pipeline --method gpipe` and `schedule --policy gpipe` on vgg16's 13 conv layers on 4 devices are two
    schedules (4.75e9 and 5.18e9 cycles at 8 micro-batches) and neither said which. By hand: pipeline's gpipe
    plan gives equal layer counts, earlier stages the remainder (13 = 4 + 3 + 3 + 3), and runs the stage-wise
    fill-drain; schedule's gpipe deals ⌈13/4⌉ = 4 layers a device (4, 4, 4, 1) and orders layer-wise ops."""
    import io
    from contextlib import redirect_stdout

    from archsim.cli import main

    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["pipeline", "vgg16", "--only", "conv", "--processors", "4", "--method", "gpipe",
                     "--microbatches", "2", "--format", "json"])
    import json

    variant = json.loads(out.getvalue())["meta"]["schedule_variant"]
    assert code == 0 and variant.startswith("gpipe: stage-wise fill-drain") and "stages of 4,3,3,3 layers" in variant
    meta = archsim.schedule("vgg16", only="conv", policy="gpipe", processors=4, microbatches=2).meta
    assert meta["schedule_variant"].startswith("gpipe: layer-wise") and "on 4,4,4,1 layers a device" in \
        meta["schedule_variant"]
