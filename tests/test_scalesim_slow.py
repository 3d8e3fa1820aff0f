"""Larger cross-checks against the scalesim package (about 21 CPU-minutes; CI runs them, see the README).

Deselected by default; run with ``python -m pytest -m slow``. Same assertions as
test_scalesim_exact (integers exact, ratios to 1e-12 relative), on shapes nobody chose: seeded random
GEMMs up to ~200 per dimension on arrays up to 32×32, seeded random conv layers, and LayerPipe's
sample network's first convolutions at batch 1 on its 32×32 array. Then the cycle-level engine against
SCALE-Sim's USER bandwidth mode on seeded random GEMMs, SRAMs and bandwidths (as test_cycle_engine_scalesim).
"""

import numpy as np
import pytest

from archsim.array.analytic import gemm_cost
from archsim.array.cycle import simulate_gemm
from archsim.lowering import lower_layer
from archsim.workload import Layer, load_network

pytest.importorskip("scalesim")
from scalesim_reference import scalesim_gemm, scalesim_input_size, scalesim_layer
from test_scalesim_exact import assert_equal

pytestmark = pytest.mark.slow

RNG = np.random.default_rng(2026)
SIDES = [4, 8, 16, 32, 7, 13, 5, 11]
GEMM_CASES = [(int(RNG.integers(1, 201)), int(RNG.integers(1, 201)), int(RNG.integers(1, 201)),
               int(RNG.choice(SIDES)), int(RNG.choice(SIDES)), str(RNG.choice(["ws", "os", "is"])))
              for _ in range(150)]


def random_conv(rng):
    f = int(rng.choice([1, 3, 5, 7]))
    stride = int(rng.integers(1, 4))
    padding = int(rng.integers(0, f // 2 + 1))
    h = int(rng.integers(max(1, f - 2 * padding), 24))
    w = int(rng.integers(max(1, f - 2 * padding), 24))
    return (h, w, f, stride, padding, int(rng.integers(1, 17)), int(rng.integers(1, 41)),
            int(rng.choice(SIDES)), int(rng.choice(SIDES)), str(rng.choice(["ws", "os", "is"])))


CONV_RNG = np.random.default_rng(7)
CONV_CASES = [random_conv(CONV_RNG) for _ in range(30)]


@pytest.mark.parametrize("m, k, n, rows, cols, dataflow", GEMM_CASES)
def test_random_larger_gemms(m, k, n, rows, cols, dataflow):
    assert_equal(gemm_cost(m, k, n, rows, cols, dataflow), scalesim_gemm(m, k, n, rows, cols, dataflow))


@pytest.mark.parametrize("h, w, f, stride, padding, c, m, rows, cols, dataflow", CONV_CASES)
def test_random_padded_convs(h, w, f, stride, padding, c, m, rows, cols, dataflow):
    """archsim-geometry conv layers (with padding) against SCALE-Sim's conv mode on the padded input."""
    layer = Layer(name="l", kind="conv", ifmap_h=h, ifmap_w=w, filter_h=f, filter_w=f, channels=c, filters=m,
                  stride=stride, padding=padding)
    (gemm,) = lower_layer(layer, batch=1).op("F").gemms
    assert_equal(gemm_cost(gemm.m, gemm.k, gemm.n, rows, cols, dataflow), scalesim_layer(layer, rows, cols, dataflow))


def sample_layer(name: str) -> Layer:
    return load_network("layerpipe_sample").layer(name)


@pytest.mark.parametrize("dataflow", ["ws", "os", "is"])
def test_layerpipe_sample_conv1_forward_at_batch_1(dataflow):
    """conv1 of LayerPipe's sample network (224×224×3, 5×5/2, pad 2 → 112×112×32) as archsim lowers it
    at batch 1, against SCALE-Sim's conv mode on the padded input. SCALE-Sim's E = ⌈(H − fh + s)/s⌉ would
    make the 228-wide padded input 113 wide, so SCALE-Sim gets the 227 columns the layer reads."""
    layer = sample_layer("conv1")
    assert scalesim_input_size(layer.ifmap_h, layer.filter_h, layer.stride, layer.padding) == 227
    (gemm,) = lower_layer(layer, batch=1).op("F").gemms
    assert (gemm.m, gemm.k, gemm.n) == (112 * 112, 5 * 5 * 3, 32)
    assert_equal(gemm_cost(gemm.m, gemm.k, gemm.n, 32, 32, dataflow), scalesim_layer(layer, 32, 32, dataflow))


@pytest.mark.parametrize("dataflow", ["ws", "os", "is"])
def test_layerpipe_sample_conv2_forward_at_batch_1(dataflow):
    """conv2 (112×112×32, 5×5/2, pad 2 → 56×56×64): SCALE-Sim gets the 115 padded columns it reads."""
    layer = sample_layer("conv2")
    assert scalesim_input_size(layer.ifmap_h, layer.filter_h, layer.stride, layer.padding) == 115
    (gemm,) = lower_layer(layer, batch=1).op("F").gemms
    assert (gemm.m, gemm.k, gemm.n) == (56 * 56, 5 * 5 * 32, 64)
    assert_equal(gemm_cost(gemm.m, gemm.k, gemm.n, 32, 32, dataflow), scalesim_layer(layer, 32, 32, dataflow))


def random_user_case(rng):
    m, k, n = (int(x) for x in rng.integers(1, 161, 3))
    return (m, k, n, int(rng.choice(SIDES[:-1])), int(rng.choice(SIDES[:-1])), str(rng.choice(["ws", "os", "is"])),
            tuple(int(x) for x in rng.integers(1, 5, 3)), int(rng.integers(1, 11)), int(rng.integers(1, 11)))


USER_RNG = np.random.default_rng(99)
USER_CASES = [random_user_case(USER_RNG) for _ in range(40)]


@pytest.mark.parametrize("m, k, n, rows, cols, dataflow, kib, bandwidth, read_bandwidth", USER_CASES)
def test_cycle_engine_random_user_mode(m, k, n, rows, cols, dataflow, kib, bandwidth, read_bandwidth):
    """Stalls, cycles and DRAM traffic of random GEMMs on 1–4 KiB SRAMs, the ofmap writing at one
    bandwidth and ifmap/filter reading at another (SCALE-Sim's USER mode takes them from different keys)."""
    reference = scalesim_gemm(m, k, n, rows, cols, dataflow, ifmap_kb=kib[0], filter_kb=kib[1], ofmap_kb=kib[2],
                              bandwidth=bandwidth, read_bandwidth=read_bandwidth)
    ours = simulate_gemm(m, k, n, rows, cols, dataflow, sram_words=tuple(1024 * x for x in kib),
                         bandwidth=(read_bandwidth, read_bandwidth, bandwidth))
    assert (ours.cycles, ours.stall_cycles, ours.ifmap_dram_reads, ours.filter_dram_reads, ours.ofmap_dram_writes,
            ours.cycles_incl_prefetch) == (reference.compute_cycles, reference.stall_cycles,
                                           reference.ifmap_dram_reads, reference.filter_dram_reads,
                                           reference.ofmap_dram_writes, reference.cycles_incl_prefetch)


@pytest.mark.parametrize("dataflow", ["ws", "os", "is"])
def test_cycle_engine_layerpipe_sample_conv4_user_mode(dataflow):
    """A real layer (LayerPipe sample conv4 forward at batch 1: 784×1152×128) on the 32×32 array with
    SCALE-Sim's default 64 KiB SRAMs and 10 words/cycle."""
    layer = sample_layer("conv4")
    (gemm,) = lower_layer(layer, batch=1).op("F").gemms
    reference = scalesim_gemm(gemm.m, gemm.k, gemm.n, 32, 32, dataflow, bandwidth=10)
    ours = simulate_gemm(gemm.m, gemm.k, gemm.n, 32, 32, dataflow, sram_words=(65536,) * 3, bandwidth=(10,) * 3)
    assert (ours.cycles, ours.stall_cycles, ours.ifmap_dram_reads, ours.filter_dram_reads,
            ours.ofmap_dram_writes) == (reference.compute_cycles, reference.stall_cycles, reference.ifmap_dram_reads,
                                        reference.filter_dram_reads, reference.ofmap_dram_writes)


def random_overlapping_conv(rng):
    """A conv layer whose windows overlap (f > stride) and all lie inside the ifmap, with small SRAMs."""
    f = int(rng.choice([2, 3, 5, 7]))
    stride = int(rng.integers(1, min(f, 4)))
    eh, ew = (int(x) for x in rng.integers(1, 12, 2))
    return ((eh - 1) * stride + f, (ew - 1) * stride + f, f, int(rng.integers(1, 7)), int(rng.integers(1, 25)), stride,
            int(rng.choice(SIDES[:-1])), int(rng.choice(SIDES[:-1])), tuple(int(x) for x in rng.integers(1, 3, 3)),
            int(rng.integers(1, 11)), int(rng.integers(1, 11)))


def random_edge_conv(rng):
    """A conv layer in SCALE-Sim's geometry, any size and stride (1–4, also above f): its ⌈(H − f + s)/s⌉
    outputs often put the last windows past the ifmap's edge (null taps)."""
    f = int(rng.choice([1, 2, 3, 5, 7]))
    return (int(rng.integers(f, 24)), int(rng.integers(f, 24)), f, int(rng.integers(1, 7)), int(rng.integers(1, 25)),
            int(rng.integers(1, 5)), int(rng.choice(SIDES[:-1])), int(rng.choice(SIDES[:-1])),
            tuple(int(x) for x in rng.integers(1, 3, 3)), int(rng.integers(1, 11)), int(rng.integers(1, 11)))


CONV_USER_RNG = np.random.default_rng(31)
CONV_USER_CASES = [random_overlapping_conv(CONV_USER_RNG) for _ in range(24)] + \
    [random_edge_conv(CONV_USER_RNG) for _ in range(24)]


@pytest.mark.parametrize("dataflow", ["ws", "os", "is"])
@pytest.mark.parametrize("h, w, f, c, filters, stride, rows, cols, kib, bandwidth, read_bandwidth", CONV_USER_CASES)
def test_cycle_engine_conv_mode_user_mode(h, w, f, c, filters, stride, rows, cols, kib, bandwidth, read_bandwidth,
                                          dataflow):
    """SCALE-Sim's conv mode in USER mode — its im2col operand repeats the ifmap words of overlapping
    windows and holds nulls for off-edge taps: the engine given the windows (``conv=``) equals its stalls,
    cycles and DRAM counts, on 1–2 KiB SRAMs."""
    from scalesim_reference import scalesim_conv

    from archsim.array.cycle import ConvWindows

    eh, ew = -(-(h - f + stride) // stride), -(-(w - f + stride) // stride)
    reference = scalesim_conv(h, w, f, f, c, filters, stride, rows, cols, dataflow, ifmap_kb=kib[0],
                              filter_kb=kib[1], ofmap_kb=kib[2], bandwidth=bandwidth, read_bandwidth=read_bandwidth)
    ours = simulate_gemm(eh * ew, f * f * c, filters, rows, cols, dataflow, sram_words=tuple(1024 * x for x in kib),
                         bandwidth=(read_bandwidth, read_bandwidth, bandwidth),
                         conv=ConvWindows(eh, ew, f, f, c, stride, ifmap_h=h, ifmap_w=w))
    assert (ours.cycles, ours.stall_cycles, ours.ifmap_dram_reads, ours.filter_dram_reads, ours.ofmap_dram_writes,
            ours.cycles_incl_prefetch) == (reference.compute_cycles, reference.stall_cycles,
                                           reference.ifmap_dram_reads, reference.filter_dram_reads,
                                           reference.ofmap_dram_writes, reference.cycles_incl_prefetch)


def test_fc_dram_reads_grow_with_the_sram_as_scalesims_do(capsys):
    """docs/scalesim.md's table: tiny_resnet's fc at batch 4 reads more DRAM words on 1 MiB SRAMs than
    on 64 KiB ones, in SCALE-Sim itself (pads of the fetch matrix counted, buffer-sized chunks), and
    ``archsim cost --engine cycle`` reports SCALE-Sim's sum over the layer's GEMMs at both sizes."""
    import json
    from pathlib import Path

    from archsim.cli import main
    from archsim.lowering import lower_network
    from archsim.workload import load_network as load

    path = str(Path(__file__).resolve().parents[1] / "docs" / "examples" / "tiny_resnet.csv")
    (lowered,) = lower_network(load(path).only("fc"), 4, "exact", 1)
    totals = {}
    for kib in (64, 1024):
        reads = 0
        for op in lowered.ops:
            for gemm in op.gemms:
                ref = scalesim_gemm(gemm.m, gemm.k, gemm.n, 32, 32, "ws", ifmap_kb=kib, filter_kb=kib, ofmap_kb=kib,
                                    bandwidth=10)
                reads += ref.ifmap_dram_reads + ref.filter_dram_reads
        capsys.readouterr()
        assert main(["cost", path, "--only", "fc", "--batch", "4", "--engine", "cycle", "--sram-kb", str(kib),
                     "--format", "json"]) == 0
        row = json.loads(capsys.readouterr().out)["rows"][0]
        assert row["dram_read_bytes"] == reads  # 1-byte words
        totals[kib] = reads
    assert totals == {64: 114_830, 1024: 278_680}  # the figures docs/scalesim.md states
