"""User trial 38: a LayerPipe researcher's own sweeps, CNN and hand checks.

Each test marked as a fix failed on the code before it (said in its docstring)."""

import math

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
    then weighted batch 4 twice (on this trial's 3-layer CNN, 8×8, LayerPipe's mean speed-up at P = 2 read
    1.946, (2 × 1.921 + 1.996) / 3, instead of the 1.959 of batches 4 and 16), with no word said. Failed before the fix: the spec loaded."""
    spec = tmp_path / "dups.toml"
    spec.write_text(SPEC.replace(old, new), encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_spec(spec)
    message = str(info.value)
    assert f"field '{field}'" in message and f"line {line}" in message and "twice" in message


CNN = """Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,
c1, 16, 16, 3, 3, 3, 8, 1,
c2, 14, 14, 3, 3, 8, 16, 2,
fc, 6, 6, 6, 6, 16, 10, 1,
"""


def _versions(tmp_path, capsys, *extra):
    import csv
    import io

    from archsim.cli import main

    (tmp_path / "cnn.csv").write_text(CNN, encoding="utf-8")
    assert main(["pipeline", str(tmp_path / "cnn.csv"), "--processors", "3", "--method", "layerpipe", "--array",
                 "8x8", "--batch", "4", "--format", "csv", *extra]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    return rows, [int(row["weight_versions"]) for row in rows]


def test_a_processor_of_borrowed_delta_parts_alone_counts_as_a_stage_of_the_weight_stash(tmp_path, capsys):
    """Fix: on this 3-layer CNN LayerPipe keeps c1, c2 on processor 1, fc on 2 and puts only fc's δ″ on
    processor 3. That δ″ lies on the backward path (fc's δ feeds c2's), so micro-batches stay in flight
    through three stages: by hand, processor 1 admits 3 forwards before its first backward returns (S − s + 1
    = 3, 2, 1), and processor 3 needs fc's weights for δ″ (one version). The simulated ``--memory`` table
    said 3, 2, 1; the plain table's closed form counted only processors with layers of their own and said
    2, 1, 0 for the same plan. Failed before the fix: [2, 1, 0]."""
    rows, plain = _versions(tmp_path, capsys)
    assert [row["ops"] for row in rows][2] == "D2:fc*"  # the plan this test is about
    _, simulated = _versions(tmp_path, capsys, "--microbatches", "8", "--memory")
    assert plain == [3, 2, 1] == simulated


# Hand checks (references computed by hand, not read from archsim's output).

def test_c2_gemm_shapes_by_im2col_by_hand():
    """c2: 14×14×8 → 6×6×16, 3×3 at stride 2, batch 4 (E = ⌊(14 − 3)/2⌋ + 1 = 6). im2col: F = X·W is
    (N·E·F) × (R·S·C) · (R·S·C) × M = 144 × 72 · 72 × 16; G = Xᵀ·δY is 72 × 144 · 144 × 16; paper-mode δ is
    δY padded and convolved at full input resolution, (N·H·W) × (R·S·M) · (R·S·M) × C = 784 × 144 · 144 × 8."""
    from archsim.lowering import lower_layer
    from archsim.lowering.ops import Gemm
    from archsim.workload.layer import Layer

    c2 = Layer(name="c2", kind="conv", ifmap_h=14, ifmap_w=14, filter_h=3, filter_w=3, channels=8, filters=16,
               stride=2, inputs=("c1",))
    paper = lower_layer(c2, batch=4, mode="paper")
    assert paper.op("F").gemms == (Gemm(144, 72, 16),)
    assert paper.op("G").gemms == (Gemm(72, 144, 16),)
    assert paper.op("D").gemms == (Gemm(784, 144, 8),)


@pytest.mark.parametrize(("dataflow", "cycles"), [
    ("ws", 5 * 6 * (2 * 8 + 8 + 64 - 2) - 1),  # Sr = K = 40, Sc = N = 48, T = M = 64
    ("os", 8 * 6 * (8 + 8 + 40 - 2) - 1),      # Sr = M = 64, Sc = N = 48, T = K = 40
    ("is", 5 * 8 * (2 * 8 + 8 + 48 - 2) - 1),  # Sr = K = 40, Sc = M = 64, T = N = 48
])
def test_one_gemm_on_one_array_by_scalesims_analytic_formula(dataflow, cycles):
    """out[64×48] = A[64×40]·B[40×48] on an 8×8 array. Samajdar et al., "A Systematic Methodology for
    Characterizing Scalability of DNN Accelerators using SCALE-Sim" (ISPASS 2020), §IV: a fold takes
    2·R + C + T − 2 cycles (weight and input stationary; R + C + T − 2 output stationary) and there are
    ⌈Sr/R⌉·⌈Sc/C⌉ folds, with (Sr, Sc, T) = (K, N, M) for ws, (M, N, K) for os, (K, M, N) for is; SCALE-Sim
    3.0.0 reports one cycle less (its last cycle index, docs/concepts.md's table)."""
    import archsim

    assert int(archsim.gemm_cost(64, 40, 48, 8, 8, dataflow).cycles) == cycles


def test_a_3_stage_pipelines_makespan_by_brute_force(tmp_path):
    """PipeDream's split of the CNN at 8×8, batch 4: one layer per processor, F/B (B = G then δ) in cycles
    c1 3223/4801, c2 2987/7303, fc 3743/16134 (F, G, δ by the formula above: c1's F 4 folds × 806 − 1,
    G 98 × 49 − 1). 1F1B, m = 4, listed by hand: processor s runs 3 − s forwards, then one forward and one
    backward alternately; each op starts when its processor is free and its input is there (F after the
    previous stage's F, B after the next stage's B). The list below runs that order to its makespan."""
    import archsim

    f, b = [3223, 2987, 3743], [4801, 3383 + 3920, 1195 + 14939]
    stages, m = 3, 4
    orders = []
    for s in range(stages):
        warm = min(stages - 1 - s, m)
        order = [("F", i) for i in range(warm)]
        for i in range(m):
            if warm + i < m:
                order.append(("F", warm + i))
            order.append(("B", i))
        orders.append(order)
    end: dict[tuple[str, int, int], int] = {}
    free, at = [0] * stages, [0] * stages
    while any(at[s] < len(orders[s]) for s in range(stages)):
        for s in range(stages):
            if at[s] == len(orders[s]):
                continue
            kind, i = orders[s][at[s]]
            need = (("F", s - 1, i) if s else None) if kind == "F" else (("B", s + 1, i) if s < stages - 1 else ("F", s, i))
            if need is not None and need not in end:
                continue
            start = max(free[s], end[need] if need else 0)
            free[s] = end[(kind, s, i)] = start + (f[s] if kind == "F" else b[s])
            at[s] += 1
    assert max(free) == 97822  # the brute force's answer, kept as a figure to compare with

    (tmp_path / "cnn.csv").write_text(CNN, encoding="utf-8")
    profile = archsim.profile(str(tmp_path / "cnn.csv"), array="8x8", batch=4, mode="exact")
    assert [int(x) for x in profile.total] == [f[s] + b[s] for s in range(stages)]
    plan = archsim.pipeline(profile, processors=3, method="pipedream")
    assert archsim.simulate(plan, profile, microbatches=m, schedule="1f1b").makespan == max(free)


def test_layerpipe_over_pipedream_on_the_cnn_by_hand(tmp_path):
    """Per-layer totals F + G + δ (exact mode, 8×8, batch 4): c1 8024, c2 10290, fc 19877; one processor
    38191. PipeDream cuts whole layers: fc alone bounds every split, 19877, speed-up 1.921 on 2 or 3
    processors. LayerPipe on 3 keeps c1 and c2's F and G on processor 1 (8024 + 2987 + 3383 = 14394) and
    moves c2's δ and fc's split δ later: 38191 / 14394 = 2.653, 38.1% over PipeDream."""
    import archsim

    (tmp_path / "cnn.csv").write_text(CNN, encoding="utf-8")
    profile = archsim.profile(str(tmp_path / "cnn.csv"), array="8x8", batch=4, mode="exact")
    pipedream = archsim.pipeline(profile, processors=3, method="pipedream")
    layerpipe = archsim.pipeline(profile, processors=3, method="layerpipe")
    assert pipedream.max_stage_cost == 19877 and layerpipe.max_stage_cost == 8024 + 2987 + 3383
    assert layerpipe.speedup(38191) / pipedream.speedup(38191) == pytest.approx(19877 / 14394)


def test_a_conv_row_whose_filter_covers_its_whole_input_is_noted(tmp_path, capsys):
    """Fix: SCALE-Sim's format has no layer types, so a topology written for it gives a classifier as a conv
    row whose filter covers its whole input (here ``fc, 6, 6, 6, 6, 16, 10, 1``). Read as a conv
    and costs its δ as a transposed convolution over the zero-padded 1×1 output: by hand, fc here
    (6×6×16 → 10, batch 4) has δ = δY·W, 4 × 10 · 10 × 576 = 23,040 MACs, and the transposed conv
    is (4·36) × 360 · 360 × 16 = 829,440, 36 times as many (D_cycles 14,939 where the dense product takes
    3,743). Nothing said so. Failed before the fix: no note on stderr."""
    from archsim.cli import main

    (tmp_path / "cnn.csv").write_text(CNN, encoding="utf-8")
    assert main(["cost", str(tmp_path / "cnn.csv"), "--array", "8x8", "--batch", "4"]) == 0
    err = capsys.readouterr().err
    (note,) = [line for line in err.splitlines() if "whole" in line]
    assert note.startswith("archsim cost: note: ") and "line 4" in note and "'fc'" in note and "Type fc" in note
    typed = CNN.replace("Strides,\n", "Strides, Padding, Type,\n").replace("fc, 6, 6, 6, 6, 16, 10, 1,",
                                                                         "fc, 6, 6, 6, 6, 16, 10, 1, 0, fc,")
    (tmp_path / "typed.csv").write_text(typed, encoding="utf-8")
    assert main(["cost", str(tmp_path / "typed.csv"), "--array", "8x8", "--batch", "4", "--format", "csv"]) == 0
    out, err = capsys.readouterr()
    assert "whole" not in err
    fc_row = next(line for line in out.splitlines() if line.startswith("fc,")).split(",")
    assert int(fc_row[4]) == 2 * 72 * (2 * 8 + 8 + 4 - 2) - 1  # δ (4, 10, 576): Sr 10, Sc 576, T 4 on 8×8 ws


def test_the_library_refuses_the_processor_counts_the_command_refuses():
    """Fix: ``archsim pipeline --processors 4097`` is refused (processors ≤ 4096, README's input limits;
    partitioners are O(layers² · P)), but ``archsim.pipeline(profile, processors=100000)``, documented as taking
    the command's flags as keywords, ran. Failed before the fix: no InputError."""
    import archsim
    from archsim.cli import main

    profile = archsim.profile("layerpipe_sample", array="8x8", batch=4)
    with pytest.raises(InputError, match="1…4096"):
        archsim.pipeline(profile, processors=4097, method="gpipe")
    assert main(["pipeline", "layerpipe_sample", "--processors", "4097", "--method", "gpipe"]) == 2


def test_the_library_refuses_a_simulation_over_max_ops_up_front():
    """Fix: ``archsim pipeline … --microbatches 100000000`` is refused before anything is built (over
    ``--max-ops``, default 10⁶ ops, with its estimate), but ``archsim.simulate(plan, profile,
    microbatches=10**8)`` started building 10⁸ × 6 ops and was killed for memory. ``archsim.schedule`` and
    ``archsim.train`` take ``max_ops``; ``simulate`` now does too. Failed before the fix: it ran out of memory
    (here a smaller count that fits is used, so the old code ran it where it must now refuse)."""
    import archsim

    profile = archsim.profile("layerpipe_sample", array="8x8", batch=4, mode="paper")
    plan = archsim.pipeline(profile, processors=3, method="layerpipe")
    ops = sum(len(stage.ops) for stage in plan.stages)  # 4 layers × F, G, δ with one δ split in two: 13
    assert ops == 13
    with pytest.raises(InputError, match=r"max_ops=1300"):
        archsim.simulate(plan, profile, microbatches=100, max_ops=1299)
    assert archsim.simulate(plan, profile, microbatches=100, max_ops=1300).makespan > 0
    with pytest.raises(InputError, match="max_ops"):
        archsim.simulate(plan, profile, microbatches=10**8)


@pytest.mark.parametrize("alpha", [1e308, 2e6, math.nan])
def test_layerpipes_alpha_has_the_commands_range_in_a_spec_and_the_library(tmp_path, alpha):
    """Fix: ``archsim pipeline --alpha`` takes 1 < α ≤ 10⁶, but a sweep spec's ``alpha = 1e308`` ran (Algorithm 1's
    first target is then the whole network: every row one stage, speed-up 1.0, said nowhere) and so did
    ``archsim.pipeline(…, alpha=1e308)``; NaN passed the library's ``alpha <= 1`` check. Failed before the fix:
    the spec loaded and the library planned."""
    import archsim

    if not math.isnan(alpha):  # TOML has nan too, but the spec's own check already refused it
        spec = tmp_path / "alpha.toml"
        spec.write_text(SPEC + f"alpha = {alpha:g}\n", encoding="utf-8")
        with pytest.raises(InputError, match=r"line 10, field 'alpha'.*1e\+06"):
            load_spec(spec)
    profile = archsim.profile("layerpipe_sample", array="8x8", batch=4)
    with pytest.raises(InputError, match="alpha"):
        archsim.pipeline(profile, processors=3, method="layerpipe", alpha=alpha)


def test_a_sweep_says_what_its_network_files_notes_say(tmp_path, capsys):
    """Fix: ``archsim cost cnn.csv`` notes on stderr what it read differently from the file (a repeated layer
    name renamed, a conv row that is a flattening fc), but ``archsim sweep`` over the same file said nothing.
    Failed before the fix: no such line from the sweep (nor a UserWarning from ``archsim.run_sweep``)."""
    import warnings

    import archsim
    from archsim.cli import main

    (tmp_path / "cnn.csv").write_text(CNN.replace("c2, 14", "c1, 14"), encoding="utf-8")
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.replace('"layerpipe_sample"', '"cnn.csv"'), encoding="utf-8")
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "cnn.csv" in line]
    assert len(notes) == 2 and all(line.startswith("archsim sweep: note: ") for line in notes)
    assert "renamed c1_2" in notes[0] and "flattening fc" in notes[1]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        archsim.run_sweep(spec, out=tmp_path / "api")
    assert sum("cnn.csv" in str(w.message) for w in caught) == 2


def test_an_onnx_conv_whose_kernel_covers_its_whole_input_is_noted_as_the_csv_row_is(tmp_path, capsys):
    """Fix: the same CNN built with ``onnx.helper`` (its classifier a 6×6 Conv over the 6×6 map) costs as
    the CSV does, δ 14,939 cycles where the dense product takes 3,743, and the CSV now says why; the ONNX
    file said nothing. Failed before the fix: no note."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from archsim.cli import main

    weights = [numpy_helper.from_array(np.zeros(shape, np.float32), name)
               for name, shape in (("W1", (8, 3, 3, 3)), ("W2", (16, 8, 3, 3)), ("W3", (10, 16, 6, 6)))]
    nodes = [helper.make_node("Conv", ["x", "W1"], ["y1"], name="c1", kernel_shape=[3, 3]),
             helper.make_node("Conv", ["y1", "W2"], ["y2"], name="c2", kernel_shape=[3, 3], strides=[2, 2]),
             helper.make_node("Conv", ["y2", "W3"], ["y3"], name="fc", kernel_shape=[6, 6])]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y3", TensorProto.FLOAT, [1, 10, 1, 1])], weights)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "cnn.onnx")
    assert main(["cost", str(tmp_path / "cnn.onnx"), "--array", "8x8", "--batch", "4", "--format", "csv"]) == 0
    out, err = capsys.readouterr()
    (note,) = [line for line in err.splitlines() if "whole" in line]
    assert note.startswith("archsim cost: note: node 'fc' is a conv whose 6x6 filter")
    fc_row = next(line for line in out.splitlines() if line.startswith("fc,")).split(",")
    assert int(fc_row[4]) == 90 * (2 * 8 + 8 + 144 - 2) - 1  # (144, 360, 16): Sr 360, Sc 16, T 144 on 8×8 ws
