"""What a borrowed non-GEMM δ (elementwise, pool, batch-norm) moves between processors.

The rule a conv's borrowed δ follows (archsim/partition/layerpipe.py's third note, docs/concepts.md): the δ
receives what it reads that sits with its layer (a conv: its weights; δ of its output is made where it runs)
and sends its result, δ of the layer's input, back to a producer sitting with the layer. A ReLU's δ reads its
mask (the saved input), a max pool's the argmax of each window, a batch-norm's x̂, γ and 1/σ. LayerPipe counts
only conv/fc δs (its layers are conv or fc, its additional overhead "layer weights"): ``paper`` mode keeps that,
``exact`` mode counts the rule. Expected bytes are counted by hand from the shapes below.
"""

import pytest

from archsim.array.config import ArrayConfig
from archsim.errors import InputError
from archsim.footprint import lent_slice_bytes
from archsim.lowering import lower_layer, whole_delta_bytes
from archsim.partition import build_profile
from archsim.partition.layerpipe import to_partition
from archsim.workload import Layer, Network

BATCH, EB = 4, 2
# every layer below reads a 6 × 6 × 3 input: 108 elements a sample, 4 · 108 · 2 = 864 bytes a batch
INPUT_BYTES = BATCH * 6 * 6 * 3 * EB


def vector(name: str, kind: str, inputs=("c0",), **shape) -> Layer:
    return Layer(name=name, kind=kind, ifmap_h=6, ifmap_w=6, filter_h=shape.get("k", 1), filter_w=shape.get("k", 1),
                 channels=3, filters=3, stride=shape.get("k", 1), inputs=inputs)


CASES = {
    # ReLU: δ_in = δ_out ⊙ 1[x > 0]: the saved input, one element per input element
    "relu": (vector("r", "elementwise"), INPUT_BYTES),
    # add: δ passes through to each input, nothing saved is read
    "add": (vector("a", "elementwise", inputs=("c0", "c1")), 0),
    # 2 × 2 max pool, stride 2: 3 × 3 × 3 outputs, one argmax each: 4 · 27 · 2 = 216
    "maxpool": (vector("p", "pool", k=2), BATCH * 3 * 3 * 3 * EB),
    # batch-norm: x̂ (864) and γ, 1/σ per channel (2 · 3 · 2 = 12)
    "batchnorm": (vector("b", "batchnorm"), INPUT_BYTES + 2 * 3 * EB),
}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_exact_mode_counts_the_result_and_the_saved_tensors_a_borrowed_vector_delta_reads(kind):
    layer, received = CASES[kind]
    lowered = lower_layer(layer, BATCH, "exact", EB)
    assert whole_delta_bytes(lowered, EB, "exact") == (INPUT_BYTES, received)


@pytest.mark.parametrize("kind", sorted(CASES))
def test_paper_mode_counts_only_gemm_deltas_as_layerpipe_does(kind):
    layer, _ = CASES[kind]
    assert whole_delta_bytes(lower_layer(layer, BATCH, "paper", EB), EB, "paper") == (0, 0)
    assert whole_delta_bytes(lower_layer(layer, BATCH, "paper", EB), EB) == (0, 0)  # the default is paper's


def test_a_conv_delta_moves_the_same_in_both_modes():
    # 3 × 3 conv, padding 1, 3 → 5 channels: its result (864) back and its weights 3 · 3 · 3 · 5 · 2 = 270 in
    conv = Layer(name="c", kind="conv", ifmap_h=6, ifmap_w=6, filter_h=3, filter_w=3, channels=3, filters=5,
                 padding=1, inputs=("c0",))
    for mode in ("paper", "exact"):
        assert whole_delta_bytes(lower_layer(conv, BATCH, mode, EB), EB, mode) == (INPUT_BYTES, 270)


def test_a_layer_without_delta_moves_nothing():
    first = vector("r", "elementwise", inputs=("input",))  # exact mode: no δ for a layer fed by the network input
    assert whole_delta_bytes(lower_layer(first, BATCH, "exact", EB), EB, "exact") == (0, 0)


def test_an_unknown_mode_is_refused():
    with pytest.raises(InputError, match="fast"):
        whole_delta_bytes(lower_layer(CASES["relu"][0], BATCH, "exact", EB), EB, "fast")


@pytest.mark.parametrize("kind", ["relu", "maxpool", "batchnorm"])
@pytest.mark.parametrize("mode", ["paper", "exact"])
def test_a_plan_borrowing_a_vector_delta_counts_its_bytes_in_exact_mode_only(kind, mode):
    # c0 (3 × 3 conv, 3 → 3 channels, padding 1) → the vector layer v → c1 (3 × 3 conv on v's output).
    # Processor 1 runs c0 and v's F and G; processor 0 runs c1 and, borrowed, v's δ. v's producer c0
    # sits with v, so v's result (864) comes back; v's saved tensors go out. The edge v → c1 crosses:
    # mandatory, v's activation forward and its δ back.
    layer, received = CASES[kind]
    c0 = Layer(name="c0", kind="conv", ifmap_h=6, ifmap_w=6, filter_h=3, filter_w=3, channels=3, filters=3,
               padding=1, inputs=("input",))
    side = 3 if kind == "maxpool" else 6
    c1 = Layer(name="c1", kind="conv", ifmap_h=side, ifmap_w=side, filter_h=3, filter_w=3, channels=3, filters=3,
               padding=1, inputs=(layer.name,))
    profile = build_profile(Network("tiny", (c0, layer, c1)), ArrayConfig(8, 8, "ws", element_bytes=EB), BATCH,
                            mode)
    f, g, d = (profile.forward.tolist(), profile.weight_grad.tolist(), profile.delta.tolist())
    last = [(2, 0, "F", f[2], None, 0), (2, 1, "G", g[2], None, 0), (2, 2, "D", d[2], None, 0),
            (1, 2, "D", d[1], None, 0)]
    first = [(0, 0, "F", f[0], None, 0), (0, 1, "G", g[0], None, 0), (1, 0, "F", f[1], None, 0),
             (1, 1, "G", g[1], None, 0)] + ([(0, 2, "D", d[0], None, 0)] if mode == "paper" else [])
    plan = to_partition(profile, None, [last, first], ())
    assert [(op.layer, op.kind) for stage in plan.stages for op in stage.ops if op.borrowed] == [(layer.name, "D")]
    activation = BATCH * side * side * 3 * EB
    assert plan.mandatory_bytes == 2 * activation
    assert plan.additional_bytes == (INPUT_BYTES + received if mode == "exact" else 0)
    # what it receives is one micro-batch's saved tensors, not weights: the footprint lends it none
    (borrowed,) = [op for stage in plan.stages for op in stage.ops if op.borrowed]
    assert lent_slice_bytes(borrowed, profile) == 0
