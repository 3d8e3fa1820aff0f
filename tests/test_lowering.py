"""Lowering rules checked against brute-force enumeration and hand-derived shapes."""

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archsim.array.analytic import gemm_cost
from archsim.errors import InputError
from archsim.lowering import Gemm, delta_phases, lower_layer, lower_network, split_delta
from archsim.split_axis import split_axes
from archsim.workload import Layer, load_network


def conv(h=8, w=8, r=3, s=3, c=2, m=4, stride=1, pad=1, **kw):
    return Layer(name=kw.pop("name", "c"), kind=kw.pop("kind", "conv"), ifmap_h=h, ifmap_w=w, filter_h=r,
                 filter_w=s, channels=c, filters=m, stride=stride, padding=pad,
                 inputs=kw.pop("inputs", ("previous_layer",)), **kw)


def brute_forward_macs(layer: Layer, batch: int) -> int:
    """Count (output pixel, tap, in-channel, out-channel) products by enumeration, padding included
    (im2col computes the zero-padded taps too)."""
    e = (layer.ifmap_h + 2 * layer.padding - layer.filter_h) // layer.stride + 1
    f = (layer.ifmap_w + 2 * layer.padding - layer.filter_w) // layer.stride + 1
    count = sum(1 for _ in itertools.product(range(e), range(f), range(layer.filter_h), range(layer.filter_w)))
    return batch * count * layer.channels * layer.filters


def brute_delta_taps(size: int, kernel: int, stride: int, padding: int) -> int:
    """Σ over input positions of the taps a stride-aware transposed conv applies there."""
    return sum(1 for h in range(size) for r in range(kernel) if (h + padding - r) % stride == 0)


def test_forward_and_weight_gradient_shapes_hand_derived():
    # LayerPipe conv1: 224×224×3 → 112×112×32, 5×5/2 pad 2, batch 32 (DESIGN.md lowering rule)
    layer = load_network("layerpipe_sample").layer("conv1")
    low = lower_layer(layer, batch=32, mode="paper")
    assert low.op("F").gemms == (Gemm(32 * 112 * 112, 5 * 5 * 3, 32),)
    assert low.op("G").gemms == (Gemm(5 * 5 * 3, 32 * 112 * 112, 32),)
    assert low.op("D").gemms == (Gemm(32 * 224 * 224, 5 * 5 * 32, 3),)  # dense over full resolution
    assert low.tensors.activation_bytes == 32 * 112 * 112 * 32
    assert low.tensors.delta_bytes == 32 * 224 * 224 * 3
    assert low.tensors.weight_bytes == 5 * 5 * 3 * 32


@settings(max_examples=150, deadline=None)
@given(h=st.integers(1, 12), w=st.integers(1, 12), r=st.integers(1, 5), s=st.integers(1, 5),
       stride=st.integers(1, 3), pad=st.integers(0, 2), batch=st.integers(1, 3))
def test_forward_macs_equal_brute_force(h, w, r, s, stride, pad, batch):
    if r > h + 2 * pad or s > w + 2 * pad:
        return
    layer = conv(h, w, r, s, 2, 3, stride, pad)
    low = lower_layer(layer, batch)
    assert low.op("F").macs == brute_forward_macs(layer, batch)
    assert low.op("G").macs == low.op("F").macs  # same products, reduced over pixels instead


@settings(max_examples=150, deadline=None)
@given(size=st.integers(1, 20), kernel=st.integers(1, 7), stride=st.integers(1, 4), pad=st.integers(0, 3))
def test_delta_phases_equal_brute_force(size, kernel, stride, pad):
    phases = delta_phases(size, kernel, stride, pad)
    assert sum(p * t for p, t in phases) == brute_delta_taps(size, kernel, stride, pad)
    assert sum(p for p, _ in phases) <= size


@pytest.mark.parametrize("stride", [1, 2, 3])
def test_exact_delta_macs_equal_forward_macs_when_stride_divides(stride):
    """Stride-aware δ does the forward's work: N·H·W/s²·R·S·M·C = N·E·F·R·S·C·M when E = H/s."""
    layer = conv(h=12, w=12, r=3, s=3, c=4, m=8, stride=stride, pad=1)
    assert layer.ofmap_h * stride == 12
    low = lower_layer(layer, batch=2, mode="exact")
    assert low.op("D").macs == low.op("F").macs
    paper = lower_layer(layer, batch=2, mode="paper")
    assert paper.op("D").macs == low.op("F").macs * stride * stride


def test_stride_one_modes_agree_and_first_layer_delta_only_in_paper_mode():
    net = load_network("layerpipe_sample")
    paper = lower_network(net, 8, "paper")
    exact = lower_network(net, 8, "exact")
    assert paper[0].op("D") is not None and exact[0].op("D") is None
    assert paper[3].op("D").gemms == exact[3].op("D").gemms  # conv4 has stride 1


def test_fc_delta_is_a_dense_matrix_product():
    fc6 = Layer(name="fc6", kind="fc", ifmap_h=7, ifmap_w=7, filter_h=7, filter_w=7, channels=512, filters=4096,
                inputs=("x",))
    low = lower_layer(fc6, batch=16, mode="paper")
    assert low.op("F").gemms == (Gemm(16, 7 * 7 * 512, 4096),)
    assert low.op("G").gemms == (Gemm(7 * 7 * 512, 16, 4096),)
    assert low.op("D").gemms == (Gemm(16, 4096, 7 * 7 * 512),)


def test_matmul_gradients_have_the_operand_shapes():
    scores = Layer(name="qk", kind="matmul", ifmap_h=512, ifmap_w=64, filter_h=1, filter_w=64, channels=1,
                   filters=512, repeat=16, inputs=("x",))
    low = lower_layer(scores, batch=2)
    assert low.op("F").gemms == (Gemm(512, 64, 512, 32),)
    assert low.op("D").gemms == (Gemm(512, 512, 64, 32),)  # ∂A = dOut·Bᵀ
    assert low.op("G").gemms == (Gemm(64, 512, 512, 32),)  # ∂B = Aᵀ·dOut
    assert low.tensors.weight_bytes == 0


def test_vector_layers_cost_something():
    pool = Layer(name="p", kind="pool", ifmap_h=4, ifmap_w=4, filter_h=2, filter_w=2, channels=3, filters=3,
                 stride=2, inputs=("x",))
    low = lower_layer(pool, batch=2)
    assert low.op("F").vector_elements == 2 * 2 * 2 * 3 * 4  # outputs × window
    assert low.op("G") is None  # no weights, so no weight gradient (documented, not an accident)


@pytest.mark.parametrize("axis", ["channels", "reduction"])
def test_delta_split_parts_are_real_sub_gemms(axis):
    low = lower_layer(load_network("layerpipe_sample").layer("conv2"), batch=32, mode="paper")
    total = 32 if axis == "channels" else 64
    for part in (0, 1, 11, total - 1, total):
        split = split_delta(low, part, axis)
        d1_units = sum(g.n if axis == "channels" else g.k // 25 for g in (split.d1.gemms if split.d1 else ()))
        d2_units = sum(g.n if axis == "channels" else g.k // 25 for g in (split.d2.gemms if split.d2 else ()))
        assert (d1_units, d2_units) == (total - part, part)
        if split.d2 is not None:
            g = split.d2.gemms[0]
            cost = gemm_cost(g.m, g.k, g.n, 32, 32, "ws")
            assert split.d2.macs == low.op("D").macs * part // total
            assert cost.scalar("cycles") > 0
            weight_slice = 5 * 5 * (64 * part if axis == "channels" else 32 * part)
            psums = low.op("D").out_bytes if axis == "reduction" else 0
            assert split.d2.extra_bytes == weight_slice + psums
    with pytest.raises(InputError):
        split_delta(low, total + 1, axis)


def test_an_unknown_split_axis_reads_the_same_from_the_flag_and_split_delta():
    """One check, one message: ``--split-axes``' reading and :func:`split_delta` refuse an axis LayerPipe has
    not alike, naming it and the three it has (before, split_delta said "choose one of")."""
    low = lower_layer(load_network("layerpipe_sample").layer("conv2"), batch=2, mode="paper")
    with pytest.raises(InputError) as flag:
        split_axes("channels,cols")
    with pytest.raises(InputError) as call:
        split_delta(low, 1, "cols")
    assert flag.value.message == call.value.message == "unknown split axis 'cols'; choose from channels, reduction, rows"

def test_split_cycles_are_not_a_linear_share():
    """A δ″ of 1 channel costs a whole fold pass: far more than 1/C of δ's cycles.

    By hand (conv4: 28 × 28, 3 × 3, 128 → 128, stride 1, pad 1; batch 32; 32 × 32 ws, where a fold costs
    2R + C + T − 2 with Sr = K, Sc = N, T = M, less 1 overall): δ is M = 32 · 28 · 28 = 25,088 positions,
    K = 3 · 3 · 128 = 1,152, N = 128 channels; a fold is 64 + 32 + 25,088 − 2 = 25,182 cycles. All of δ:
    ⌈1152/32⌉ · ⌈128/32⌉ = 36 · 4 = 144 folds, 144 · 25,182 − 1 = 3,626,207. One channel (N = 1): 36 · 1
    folds, 36 · 25,182 − 1 = 906,551 — a quarter of δ (one column fold of four), not 1/128 of it.
    (Before, this test asserted only one > 10 · full / 128.)"""
    low = lower_layer(load_network("layerpipe_sample").layer("conv4"), batch=32, mode="paper")
    g_full = low.op("D").gemms[0]
    g_one = split_delta(low, 1, "channels").d2.gemms[0]
    assert (g_full.m, g_full.k, g_full.n) == (32 * 28 * 28, 3 * 3 * 128, 128)
    assert (g_one.m, g_one.k, g_one.n) == (32 * 28 * 28, 3 * 3 * 128, 1)
    full = gemm_cost(g_full.m, g_full.k, g_full.n, 32, 32, "ws").scalar("cycles")
    one = gemm_cost(g_one.m, g_one.k, g_one.n, 32, 32, "ws").scalar("cycles")
    assert (full, one) == (144 * 25_182 - 1, 36 * 25_182 - 1) == (3_626_207, 906_551)


@settings(max_examples=60, deadline=None)
@given(part_fraction=st.floats(0, 1), stride=st.integers(1, 3))
def test_rows_split_partitions_every_row_exactly_once(part_fraction, stride):
    layer = conv(h=11, w=9, r=3, s=3, c=3, m=5, stride=stride, pad=1)
    low = lower_layer(layer, batch=3, mode="exact")
    total = sum(g.m * g.count for g in low.op("D").gemms)
    part = round(part_fraction * total)
    split = split_delta(low, part, "rows")
    d1 = split.d1.macs if split.d1 else 0
    d2 = split.d2.macs if split.d2 else 0
    assert d1 + d2 == low.op("D").macs
    assert sum(g.m * g.count for g in (split.d2.gemms if split.d2 else ())) == part
    assert sum(g.m * g.count for g in (split.d1.gemms if split.d1 else ())) == total - part
    if split.d2:
        assert split.d2.extra_bytes == layer.weight_elements  # rows need all the weights
