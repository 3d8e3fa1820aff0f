"""LayerPipe's borrowing accounting: δ′ (D1) stranded on a processor of its own, a borrowed whole δ,
a reduction split's partial sums.

When δ is split, δ″ (D2) stays on the current processor and δ′ (D1) opens the next one; if the
layer's fixed part (F, G) then does not fit there either, it opens yet another processor and D1
runs away from its layer's weights: it is borrowed and its bytes are additional traffic, exactly
as a borrowed D2's. Expected bytes below are computed by hand from the layers' shapes.
"""

import numpy as np

from archsim.array.config import ArrayConfig
from archsim.lowering import lower_network
from archsim.partition import build_profile, layerpipe_partition
from archsim.partition.coster import DeltaCoster
from archsim.partition.profile import LayerProfile
from archsim.workload import Layer, Network, load_network

BATCH, ELEMENT_BYTES = 8, 2


def fc(name: str, inputs: int, outputs: int, source: str) -> Layer:
    return Layer(name=name, kind="fc", ifmap_h=1, ifmap_w=1, filter_h=1, filter_w=1, channels=inputs,
                 filters=outputs, inputs=(source,))


# l1's δ (batch 8 × 10 inputs × 4 outputs) is what the walk splits; l0 and l2 frame it.
NETWORK = Network("stranded", (fc("l0", 6, 10, "input"), fc("l1", 10, 4, "l0"), fc("l2", 4, 3, "l1")))
LOWERED = lower_network(NETWORK, BATCH, "exact", ELEMENT_BYTES)
NETWORK_NAMES = tuple(layer.name for layer in NETWORK.layers)


class TenCycleChannels(DeltaCoster):
    """l1's δ splits along its 10 input channels at 10 cycles a channel (chosen, not modelled);
    bytes stay the real coster's (the lowered layers')."""

    def fitting_split(self, index, axis, budget):
        if index != 1 or axis != "channels":
            return 0, 0, 0
        part = min(9, int(budget // 10))
        return (part, 10 * (10 - part), 10 * part) if part else (0, 0, 0)


def chosen_profile(delta: list[float]) -> LayerProfile:
    """The three fc layers with F = G = 5, 45, 30 cycles (l0, l1, l2), the given δ cycles, and the
    lowered layers' own bytes."""
    forward = weight_grad = np.array([5.0, 45.0, 30.0])
    tensors = [item.tensors for item in LOWERED]
    return LayerProfile(NETWORK_NAMES, forward, weight_grad, np.array(delta),
                        np.array([t.activation_bytes for t in tensors]), np.array([t.delta_bytes for t in tensors]),
                        np.array([t.weight_bytes for t in tensors]), np.array([t.delta_bytes for t in tensors]),
                        lowered=LOWERED,
                        array=ArrayConfig(8, 8, "ws", element_bytes=ELEMENT_BYTES))


def stranded_profile() -> LayerProfile:
    """F + G and δ cycles per layer (l0, l1, l2): (10, 0), (90, 100), (60, 20); 280 in all."""
    return chosen_profile([0.0, 100.0, 20.0])


def test_stranded_d1_is_borrowed_and_its_bytes_are_additional():
    # 3 processors, alpha 1.1: T = 280/3 fails (4 processors); T = 280/3 · 1.1 ≈ 102.67 walks as
    # l2: δ 20 + F/G 60 → idle 22.67; l1: δ 100 does not fit, δ″ = 2 channels (20 cycles) stays,
    # δ′ = 8 channels (80) opens processor 2 (idle 22.67 < F/G 90), so F/G open processor 3
    # (idle 12.67), where l0's F/G (10) also fit.
    profile = stranded_profile()
    coster = TenCycleChannels(LOWERED, profile.array)
    plan = layerpipe_partition(profile, 3, coster=coster, alpha=1.1)
    assert [[(op.layer, op.kind, op.borrowed) for op in stage.ops] for stage in plan.stages] == [
        [("l0", "F", False), ("l0", "G", False), ("l1", "F", False), ("l1", "G", False)],
        [("l1", "D1", True)],
        [("l1", "D2", True), ("l2", "F", False), ("l2", "G", False), ("l2", "D", False)],
    ]
    assert plan.to_rows()[1]["ops"] == "D1:l1*"
    assert plan.stages[1].borrowed_cost == 80 and plan.stages[1].assigned_cost == 0
    # By hand, 2-byte elements. l1's δ output (δ of l0's output) is 8 × 10 × 2 = 160 bytes; its
    # weights 10 × 4 × 2 = 80 bytes, 4 × 2 = 8 bytes per input channel.
    # D2 (2 channels): weight slice 2 × 8 = 16, its part of δ 160 · 2/10 = 32.
    # D1 (8 channels): weight slice 8 × 8 = 64, its part of δ 160 · 8/10 = 128.
    # l0 sits with l1's F/G, so both parts of δ travel back there beyond the mandatory traffic.
    assert plan.additional_bytes == 16 + 32 + 64 + 128
    assert plan.stages[1].ops[0].extra_bytes == 64


def test_split_d1_bytes_are_the_complementary_part_by_hand():
    coster = DeltaCoster(LOWERED, ArrayConfig(8, 8, "ws", element_bytes=ELEMENT_BYTES))
    # channels, part 2 of 10: D1 takes 8 channels: 8 × 4 outputs × 2 bytes, and 8/10 of δ's 160 bytes.
    assert coster.split_d1_bytes(1, "channels", 2) == (128, 64)
    # reduction, part 1 of 4 outputs: D1 reduces over 3 of them: weights 3 × 10 × 2 = 60 plus
    # partial sums of all of δ (160) sent back; its output is partial sums of all of δ (160).
    assert coster.split_d1_bytes(1, "reduction", 1) == (160, 60 + 160)
    # rows, part 3 of 8 batch rows: D1 takes 5 rows (5/8 of 160 = 100) and needs all weights (80).
    assert coster.split_d1_bytes(1, "rows", 3) == (100, 80)
    # D2's bytes of the same splits are different: D1's are not D2's.
    assert coster.split_bytes(1, "channels", 2) == (32, 16)


def test_layerpipe_sample_on_six_processors_borrows_the_stranded_d1():
    profile = build_profile(load_network("layerpipe_sample"), ArrayConfig(32, 32, "ws"), batch=32, mode="exact")
    plan = layerpipe_partition(profile, 6)
    pieces = {op.kind: (stage.index, op) for stage in plan.stages for op in stage.ops
              if op.layer == "conv2" and op.kind in ("D1", "D2")}
    home = next(stage.index for stage in plan.stages if "conv2" in stage.layers)
    (d1_stage, d1), (d2_stage, d2) = pieces["D1"], pieces["D2"]
    assert home not in (d1_stage, d2_stage) and d1.borrowed and d2.borrowed
    assert plan.to_rows()[d1_stage]["ops"] == "D1:conv2*"
    # The walk splits conv2's δ by rows: each part needs all of conv2's weights on a processor
    # that does not hold them, 5 × 5 × 32 × 64 × 1 byte = 51200 each. conv1 (the layer δ flows
    # to) is on another processor than conv2, so δ's parts are mandatory traffic already. The
    # rest of the additional bytes is conv4's borrowed whole δ (3 · 3 · 128 · 128, tested below).
    assert d1.split_axis == d2.split_axis == "rows"
    assert next(stage.index for stage in plan.stages if "conv1" in stage.layers) != home
    assert plan.additional_bytes == 2 * 5 * 5 * 32 * 64 + 3 * 3 * 128 * 128


def whole_borrow_profile() -> LayerProfile:
    """F + G and δ cycles per layer (l0, l1, l2): (10, 0), (90, 10), (60, 20); 190 in all."""
    return chosen_profile([0.0, 10.0, 20.0])


def test_borrowed_whole_delta_ships_the_layers_weights_by_hand():
    # 2 processors, alpha 1.1: T = 95 walks l2 (δ 20, F/G 60: idle 15), l1's δ (10) fits there, l1's
    # F/G (90) opens processor 2 (idle 5) and l0's F/G (10) a third: too many. T = 104.5: idle 24.5
    # after l2, 14.5 after l1's δ; l1's F/G open processor 2 (idle 14.5), where l0's F/G fit.
    plan = layerpipe_partition(whole_borrow_profile(), 2, alpha=1.1)
    assert [[(op.layer, op.kind, op.borrowed) for op in stage.ops] for stage in plan.stages] == [
        [("l0", "F", False), ("l0", "G", False), ("l1", "F", False), ("l1", "G", False)],
        [("l1", "D", True), ("l2", "F", False), ("l2", "G", False), ("l2", "D", False)],
    ]
    # By hand, 2-byte elements: the whole δ of l1 runs away from l1's weights, 10 × 4 × 2 = 80
    # bytes; its result (δ of l0's output, 8 × 10 × 2 = 160 bytes) goes back to l0, which sits
    # with l1's F/G: additional too.
    assert plan.stages[1].ops[0].extra_bytes == 80
    assert plan.additional_bytes == 80 + 160


def test_whole_delta_bytes_are_a_rows_split_of_the_whole_layer():
    from archsim.lowering import delta_split_units, split_d2_bytes, whole_delta_bytes

    # l1: all 8 batch rows moved: its whole δ output (8 × 10 × 2 = 160) and all weights (10 × 4 × 2 = 80).
    rows = delta_split_units(LOWERED[1], "rows")
    assert rows == BATCH
    assert whole_delta_bytes(LOWERED[1], ELEMENT_BYTES) == split_d2_bytes(LOWERED[1], rows, "rows", ELEMENT_BYTES)
    assert whole_delta_bytes(LOWERED[1], ELEMENT_BYTES) == (160, 80) == (160, LOWERED[1].tensors.weight_bytes)


def test_profile_in_seconds_has_no_bytes_for_a_borrowed_whole_delta():
    from archsim.partition import profile_from_costs

    profile = profile_from_costs(NETWORK_NAMES, [5.0, 45.0, 30.0], [5.0, 45.0, 30.0], [0.0, 10.0, 20.0],
                                 unit="seconds")
    plan = layerpipe_partition(profile, 2, alpha=1.1)
    borrowed = [op for stage in plan.stages for op in stage.ops if op.borrowed]
    assert [(op.layer, op.kind, op.extra_bytes) for op in borrowed] == [("l1", "D", 0)]


def test_layerpipe_sample_on_six_processors_counts_conv4s_weights_for_its_borrowed_delta():
    profile = build_profile(load_network("layerpipe_sample"), ArrayConfig(32, 32, "ws"), batch=32, mode="exact")
    plan = layerpipe_partition(profile, 6)
    rows = plan.to_rows()
    assert rows[5]["ops"] == "D:conv4*" and rows[4]["layers"] == "conv4"
    (d_conv4,) = plan.stages[5].ops
    # conv4 is a 3 × 3 conv, 128 in, 128 out, 1-byte elements: 3 · 3 · 128 · 128 = 147456 bytes of
    # weights for the processor running its δ. conv3 (where δ goes) sits apart from conv4, so the
    # δ result is mandatory traffic. conv2's two rows pieces add 2 · 5 · 5 · 32 · 64 = 102400.
    assert d_conv4.extra_bytes == 3 * 3 * 128 * 128
    assert plan.additional_bytes == 2 * 5 * 5 * 32 * 64 + 3 * 3 * 128 * 128


class QuarterReduction(DeltaCoster):
    """l1's δ splits only along its reduction, l1's 4 outputs, at 25 cycles an output (chosen, not
    modelled); bytes stay the real coster's (the lowered layers')."""

    def fitting_split(self, index, axis, budget):
        if index != 1 or axis != "reduction":
            return 0, 0, 0
        part = min(3, int(budget // 25))
        return (part, 25 * (4 - part), 25 * part) if part else (0, 0, 0)


def test_reduction_split_partial_sums_cross_once_by_hand():
    # 2 processors, alpha 1.1, F + G and δ cycles (l0, l1, l2): (10, 0), (90, 100), (60, 20). T = 140
    # needs 3 processors (l1: δ″ 2 outputs, δ′ 50 + F/G 90 fill processor 2, l0 opens a third);
    # T = 154: idle 74 after l2, δ″ = 2 outputs (50) stays, δ′ (50) opens processor 2 with l1's
    # F/G (idle 14), where l0's F/G (10) fit too.
    profile = stranded_profile()
    plan = layerpipe_partition(profile, 2, coster=QuarterReduction(LOWERED, profile.array), alpha=1.1)
    assert [[(op.layer, op.kind, op.borrowed) for op in stage.ops] for stage in plan.stages] == [
        [("l0", "F", False), ("l0", "G", False), ("l1", "F", False), ("l1", "G", False), ("l1", "D1", False)],
        [("l1", "D2", True), ("l2", "F", False), ("l2", "G", False), ("l2", "D", False)],
    ]
    # Every byte that crosses, by hand, 2-byte elements, batch 8. l1 is fc 10 → 4.
    # Mandatory, the l1 | l2 boundary: l1's activation 8 × 4 × 2 = 64 forward, its δ 64 back.
    assert plan.mandatory_bytes == 64 + 64
    # δ″ reduces over 2 of l1's 4 outputs on processor 2, away from l1's weights: it receives their
    # slice, 2 × 10 × 2 = 40 bytes (its δ columns are made there, by l2's δ). It yields partial sums
    # of all of l0's δ, 8 × 10 × 2 = 160 bytes, which go once to processor 1, where δ′'s partial
    # sums are added and l0 reads the sum. Nothing else crosses.
    (d2,) = [op for op in plan.stages[1].ops if op.kind == "D2"]
    assert (d2.split_axis, d2.split_part) == ("reduction", 2)
    assert plan.additional_bytes == 40 + 160


def test_borrowed_whole_delta_bytes_by_hand_for_a_conv_and_an_fc_layer():
    from archsim.partition.coster import borrowed_delta_bytes

    # 3 × 3 convs with padding 1: 12 × 12 × 3 → 5 channels, then 5 → 7; then an fc 12 · 12 · 7 → 6.
    # Batch 4, 2-byte elements. The first layer computes no δ (its input is the network's).
    first = Layer(name="c0", kind="conv", ifmap_h=12, ifmap_w=12, filter_h=3, filter_w=3, channels=3, filters=5,
                  padding=1, inputs=("input",))
    conv = Layer(name="c", kind="conv", ifmap_h=12, ifmap_w=12, filter_h=3, filter_w=3, channels=5, filters=7,
                 padding=1, inputs=("c0",))
    dense = fc("f", 12 * 12 * 7, 6, "c")
    profile = build_profile(Network("conv_fc", (first, conv, dense)), ArrayConfig(8, 8, "ws", element_bytes=2),
                            batch=4)
    # Each borrowed whole δ sends back its result, the δ of its layer's input, and receives its weights.
    conv_bytes = (4 * 12 * 12 * 5 * 2, 3 * 3 * 5 * 7 * 2)  # (5760, 630)
    fc_bytes = (4 * 12 * 12 * 7 * 2, 12 * 12 * 7 * 6 * 2)  # (8064, 12096)
    assert borrowed_delta_bytes(profile) == ((0, 0), conv_bytes, fc_bytes)
    # The profile's own δ sizes agree with that one source.
    assert profile.delta_bytes.tolist() == [0, conv_bytes[0], fc_bytes[0]]


def test_borrowed_whole_deltas_result_comes_from_the_lowering():
    # The whole-borrow plan of above with the profile's copy of δ sizes zeroed: the lowered layers
    # are the one source of a borrowed δ's bytes, its result (160) as its weights (80).
    base = whole_borrow_profile()
    profile = LayerProfile(base.names, base.forward, base.weight_grad, base.delta, base.activation_bytes,
                           np.zeros(3, dtype=np.int64), base.weight_bytes, base.stash_bytes, lowered=LOWERED,
                           array=base.array)
    plan = layerpipe_partition(profile, 2, alpha=1.1)
    assert [(op.layer, op.kind) for stage in plan.stages for op in stage.ops if op.borrowed] == [("l1", "D")]
    assert plan.additional_bytes == 80 + 160


def reduction_profile(fixed_l0: float, delta_l2: float) -> LayerProfile:
    """The three fc layers with F = G = fixed_l0 / 2, 45, 30 cycles and δ 0, 100, ``delta_l2``."""
    tensors = [item.tensors for item in LOWERED]
    forward = weight_grad = np.array([fixed_l0 / 2, 45.0, 30.0])
    return LayerProfile(NETWORK_NAMES, forward, weight_grad, np.array([0.0, 100.0, delta_l2]),
                        np.array([t.activation_bytes for t in tensors]), np.array([t.delta_bytes for t in tensors]),
                        np.array([t.weight_bytes for t in tensors]), np.array([t.delta_bytes for t in tensors]),
                        lowered=LOWERED,
                        array=ArrayConfig(8, 8, "ws", element_bytes=ELEMENT_BYTES))


def test_both_reduction_pieces_borrowed_one_partial_sum_crosses_by_hand():
    # 4 processors, F + G (l0, l1, l2) = 120, 90, 60, δ = 0, 100, 10: 380 cycles, T = 95 at once. Walk:
    # l2: δ 10 and F/G 60 leave idle 25; l1's δ (100) does not fit: δ″ = 1 output (25 cycles) stays,
    # δ′ = 3 outputs (75) opens processor 2 (idle 20 < F/G 90), l1's F/G open processor 3 (idle 5),
    # l0's F/G (120) a fourth. Both pieces run away from l1's weights, on two different processors.
    profile = reduction_profile(120.0, 10.0)
    plan = layerpipe_partition(profile, 4, coster=QuarterReduction(LOWERED, profile.array), alpha=1.1)
    assert [[(op.layer, op.kind, op.borrowed) for op in stage.ops] for stage in plan.stages] == [
        [("l0", "F", False), ("l0", "G", False)],
        [("l1", "F", False), ("l1", "G", False)],
        [("l1", "D1", True)],
        [("l1", "D2", True), ("l2", "F", False), ("l2", "G", False), ("l2", "D", False)],
    ]
    # By hand, 2-byte elements, batch 8; l0 fc 6 → 10, l1 fc 10 → 4. Mandatory: l0 | l1, l0's output
    # 8 × 10 × 2 = 160 forward and its δ 160 back; l1 | l2, 64 and 64.
    assert plan.mandatory_bytes == 160 + 160 + 64 + 64
    # δ″ receives 1 of l1's 4 weight rows, 10 × 2 = 20 bytes; δ′ 3 of them, 60 bytes. Each yields partial
    # sums of all of l0's δ (160 bytes). δ″'s cross once, to δ′'s processor, where they are added; the sum
    # is l0's δ, which crosses to l0 as the mandatory δ of the l0 | l1 boundary. One partial sum crosses.
    assert plan.additional_bytes == 20 + 60 + 160


def test_both_reduction_pieces_borrowed_with_the_producer_home_by_hand():
    # 3 processors, F + G = 10, 90, 60, δ = 0, 100, 10: 270 cycles; T = 90 and 99 need 4 processors, T = 108.9
    # walks l2 (idle 38.9), δ″ = 1 output (25) stays, δ′ (75) opens processor 2 (idle 33.9 < 90), l1's F/G
    # open processor 3 (idle 18.9), where l0's F/G (10) fit: l0 sits with l1's weights.
    profile = reduction_profile(10.0, 10.0)
    plan = layerpipe_partition(profile, 3, coster=QuarterReduction(LOWERED, profile.array), alpha=1.1)
    assert [[(op.layer, op.kind, op.borrowed) for op in stage.ops] for stage in plan.stages] == [
        [("l0", "F", False), ("l0", "G", False), ("l1", "F", False), ("l1", "G", False)],
        [("l1", "D1", True)],
        [("l1", "D2", True), ("l2", "F", False), ("l2", "G", False), ("l2", "D", False)],
    ]
    assert plan.mandatory_bytes == 64 + 64  # l1 | l2 only
    # Weights 20 + 60; δ″'s partial sums (160) cross to δ′'s processor; the sum, l0's δ (160), comes back
    # to l0 on processor 1, where no mandatory traffic carries it.
    assert plan.additional_bytes == 20 + 60 + 160 + 160


def test_both_reduction_pieces_on_one_borrowing_stage_send_no_partial_sum():
    """Algorithm 1's walk never places δ′ with δ″ (δ″ fills the current processor, δ′ opens the next),
    but the count holds for such a placement too: the partial sums are added where both pieces run,
    and only the sum, l0's δ, travels, back to l0 which sits with l1's weights."""
    from archsim.partition.layerpipe import to_partition

    profile = reduction_profile(10.0, 10.0)
    coster = QuarterReduction(LOWERED, profile.array)
    placed = [[(2, 0, "F", 30.0, None, 0), (2, 1, "G", 30.0, None, 0), (2, 2, "D", 10.0, None, 0),
               (1, 3, "D1", 75.0, "reduction", 1), (1, 4, "D2", 25.0, "reduction", 1)],
              [(1, 0, "F", 45.0, None, 0), (1, 1, "G", 45.0, None, 0), (0, 0, "F", 5.0, None, 0),
               (0, 1, "G", 5.0, None, 0)]]
    plan = to_partition(profile, coster, placed, ())
    assert plan.mandatory_bytes == 64 + 64
    assert plan.additional_bytes == 20 + 60 + 160  # both weight slices and the sum; no partial sum


def test_a_layer_sits_where_its_fixed_part_is_not_where_its_delta_runs():
    """The layer → processor map keep_gainful and to_partition both read, by hand on a walk's placement
    (processor 0 holds the last layer): l1's δ″ on 0 and l0's borrowed δ on 1 move no layer."""
    from archsim.partition.layerpipe import layer_processors

    placed = [[(2, 0, "F", 1.0, None, 0), (2, 1, "G", 1.0, None, 0), (1, 4, "D2", 1.0, "channels", 3)],
              [(1, 3, "D1", 1.0, "channels", 3), (1, 0, "F", 1.0, None, 0), (1, 1, "G", 1.0, None, 0),
               (0, 2, "D", 1.0, None, 0)],
              [(0, 0, "F", 1.0, None, 0), (0, 1, "G", 1.0, None, 0)]]
    assert layer_processors(placed) == {2: 0, 1: 1, 0: 2}
    assert layer_processors(list(reversed(placed))) == {2: 2, 1: 1, 0: 0}  # forward order, as to_partition reads
