"""archsim's analytic costs equal the scalesim 3.0.0 package's, number for number.

Every expected value comes from running SCALE-Sim itself (``scalesim_reference``), never from
archsim's own earlier output. Integers (compute cycles, folds, SRAM reads and writes, stalls) must
be equal exactly. Ratios (mapping efficiency, compute utilization, overall utilization) must agree
to 1e-12 relative: SCALE-Sim averages its per-fold mapping efficiency and compute utilization by
summing one float per fold in fold order and dividing, while archsim evaluates the same average in
closed form, so the two can differ in the last bits but never more.

The shapes are chosen, not random: all three dataflows; square and non-square arrays; every GEMM
dimension below, equal to and one above the array's rows and columns; primes; M = 1 (a
fully-connected layer at batch 1); conv layers with 1×1 and 7×7 filters and strides 1–3.
"""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archsim.array.analytic import gemm_cost, gemm_cycles
from archsim.array.config import read_scalesim_cfg
from archsim.errors import InputError
from archsim.lowering import lower_layer
from archsim.workload import Layer

scalesim = pytest.importorskip("scalesim")
from scalesim_reference import config_text, scalesim_conv, scalesim_gemm

DATAFLOWS = ["ws", "os", "is"]
ARRAYS = [(4, 4), (8, 4), (3, 5), (16, 16)]
GEMMS = [  # (M, K, N)
    # M = 1: a fully-connected layer at batch 1
    (1, 16, 10), (1, 7, 3), (1, 1, 1), (1, 17, 33),
    # below / equal / one above 3, 4, 5, 8 and 16 (the arrays' rows and columns), mixed per dimension
    (3, 2, 1), (4, 4, 4), (5, 5, 5), (3, 6, 5), (6, 3, 4), (8, 8, 8), (9, 4, 9), (7, 9, 3),
    (15, 16, 17), (16, 16, 16), (17, 17, 17), (9, 17, 16), (17, 16, 15),
    # primes, including ones far from any array size
    (13, 7, 11), (31, 3, 2), (2, 31, 29), (23, 1, 1), (1, 37, 2), (19, 19, 41),
]
CONVS = [  # (H, W, fh, fw, C, M, stride) in SCALE-Sim geometry: no padding
    (6, 6, 1, 1, 3, 5, 1),  # 1×1, stride 1
    (8, 8, 1, 1, 17, 9, 2),  # 1×1, stride 2 (a ResNet projection shortcut)
    (7, 5, 1, 1, 4, 6, 3),  # 1×1, stride 3, non-square map
    (9, 7, 3, 3, 2, 4, 1),  # 3×3, non-square map
    (9, 9, 3, 3, 3, 6, 2),
    (11, 10, 3, 3, 2, 3, 3),  # stride 3; (W − fw) not a multiple of the stride
    (10, 10, 7, 7, 3, 4, 1),  # 7×7
    (13, 13, 7, 7, 2, 3, 2),  # 7×7 stride 2 (a ResNet stem, miniature)
    (7, 7, 7, 7, 4, 5, 3),  # 7×7 filter covering the whole input
    (12, 9, 7, 7, 1, 17, 3),
]
CONV_ARRAYS = [(8, 4), (3, 5), (16, 16)]


def assert_equal(ours, reference):
    """archsim's GemmCost (one GEMM) against SCALE-Sim's Reference (ratios there are ×100)."""
    assert ours.scalar("cycles") == reference.compute_cycles
    assert reference.stall_cycles == 0  # CALC bandwidth mode: SCALE-Sim never stalls the array
    assert ours.scalar("folds") == reference.folds
    assert (ours.scalar("row_folds"), ours.scalar("col_folds")) == (reference.row_folds, reference.col_folds)
    assert ours.scalar("ifmap_sram_reads") == reference.ifmap_sram_reads
    assert ours.scalar("filter_sram_reads") == reference.filter_sram_reads
    assert ours.scalar("ofmap_sram_writes") == reference.ofmap_sram_writes
    # 1e-12 relative: SCALE-Sim sums per-fold floats sequentially; archsim's average is closed-form.
    assert ours.scalar("mapping_efficiency") * 100 == pytest.approx(reference.mapping_efficiency, rel=1e-12)
    assert ours.scalar("compute_utilization") * 100 == pytest.approx(reference.compute_utilization, rel=1e-12)
    assert ours.scalar("utilization") * 100 == pytest.approx(reference.overall_utilization, rel=1e-12)


@pytest.mark.parametrize("dataflow", DATAFLOWS)
@pytest.mark.parametrize("rows, cols", ARRAYS)
@pytest.mark.parametrize("m, k, n", GEMMS)
def test_gemm_equals_scalesim(m, k, n, rows, cols, dataflow):
    ours = gemm_cost(m, k, n, rows, cols, dataflow)
    assert_equal(ours, scalesim_gemm(m, k, n, rows, cols, dataflow))
    assert gemm_cycles(m, k, n, rows, cols, dataflow) == ours.scalar("cycles")


def test_vectorized_call_equals_scalar_calls_on_the_fixed_set():
    """One broadcast call over every (shape, array, dataflow) above gives the per-GEMM numbers (those
    are checked against SCALE-Sim by test_gemm_equals_scalesim)."""
    cases = [(g, a, d) for g in GEMMS for a in ARRAYS for d in DATAFLOWS]
    batch = gemm_cost(*zip(*[(*g, *a, d) for g, a, d in cases]))
    for i, (g, a, d) in enumerate(cases):
        one = gemm_cost(*g, *a, d)
        assert int(batch.cycles[i]) == one.scalar("cycles")
        assert int(batch.ofmap_sram_writes[i]) == one.scalar("ofmap_sram_writes")
        assert float(batch.compute_utilization[i]) == one.scalar("compute_utilization")


@pytest.mark.parametrize("dataflow", DATAFLOWS)
@pytest.mark.parametrize("rows, cols", CONV_ARRAYS)
@pytest.mark.parametrize("h, w, fh, fw, c, m, stride", CONVS)
def test_conv_forward_equals_scalesim_conv_mode(h, w, fh, fw, c, m, stride, rows, cols, dataflow):
    """archsim's F GEMM of a conv layer at batch 1 (SCALE-Sim has no batch) costs what SCALE-Sim's
    conv mode reports for the layer, im2col and all."""
    layer = Layer(name="l", kind="conv", ifmap_h=h, ifmap_w=w, filter_h=fh, filter_w=fw, channels=c, filters=m,
                  stride=stride, geometry="scalesim")
    (gemm,) = lower_layer(layer, batch=1).op("F").gemms
    assert (gemm.m, gemm.k, gemm.n) == (layer.ofmap_h * layer.ofmap_w, fh * fw * c, m)
    assert_equal(gemm_cost(gemm.m, gemm.k, gemm.n, rows, cols, dataflow),
                 scalesim_conv(h, w, fh, fw, c, m, stride, rows, cols, dataflow))


@pytest.mark.parametrize("dataflow", DATAFLOWS)
@pytest.mark.parametrize("h, f, stride, pad", [(8, 3, 1, 1), (9, 3, 2, 1), (11, 5, 2, 2), (10, 7, 3, 3)])
def test_padded_conv_equals_scalesim_on_the_padded_input(h, f, stride, pad, dataflow):
    """A padded layer in archsim's own geometry is SCALE-Sim's conv over the zero-padded input (H + 2p),
    whenever the padded input has no unread border (H + 2p − f divisible by the stride)."""
    assert (h + 2 * pad - f) % stride == 0
    layer = Layer(name="l", kind="conv", ifmap_h=h, ifmap_w=h, filter_h=f, filter_w=f, channels=3, filters=5,
                  stride=stride, padding=pad)
    (gemm,) = lower_layer(layer, batch=1).op("F").gemms
    padded = h + 2 * pad
    assert_equal(gemm_cost(gemm.m, gemm.k, gemm.n, 4, 4, dataflow),
                 scalesim_conv(padded, padded, f, f, 3, 5, stride, 4, 4, dataflow))


def test_true_os_ofmap_count_is_m_times_n():
    """SCALE-Sim's os count adds R + C per fold; the true count is M·N (docstring of gemm_cost)."""
    reference = scalesim_gemm(10, 7, 5, 4, 4, "os")
    true = gemm_cost(10, 7, 5, 4, 4, "os", ofmap_count="true").scalar("ofmap_sram_writes")
    assert true == 10 * 5 and reference.ofmap_sram_writes == true + reference.folds * (4 + 4)


def test_degenerate_zero_cycle_gemm():
    """1×1×1 on a 1×1 os array: SCALE-Sim's count is 0 cycles and its report divides by zero."""
    ours = gemm_cost(1, 1, 1, 1, 1, "os")
    assert ours.scalar("cycles") == 0 and ours.scalar("utilization") == 1.0
    with pytest.raises(ZeroDivisionError):
        scalesim_gemm(1, 1, 1, 1, 1, "os")


@pytest.mark.long
@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 40), k=st.integers(1, 40), n=st.integers(1, 40), rows=st.integers(1, 12),
       cols=st.integers(1, 12), dataflow=st.sampled_from(DATAFLOWS))
def test_random_shapes_nobody_chose_equal_scalesim(m, k, n, rows, cols, dataflow):
    ours = gemm_cost(m, k, n, rows, cols, dataflow)
    if ours.scalar("cycles") == 0:  # see test_degenerate_zero_cycle_gemm
        return
    assert_equal(ours, scalesim_gemm(m, k, n, rows, cols, dataflow))


# -- SCALE-Sim .cfg files -----------------------------------------------------------------------

# Written exactly as SCALE-Sim 3.0.0 ships its configs (configs/google.cfg): every section, its
# spacing around ':' and '=', and values archsim ignores (offsets, buffers, layout).
SHIPPED_FORMAT = """[general]
run_name = archsim_cfg_check

[architecture_presets]
ArrayHeight:    12
ArrayWidth:     20
IfmapSramSzkB:    128
FilterSramSzkB:   96
OfmapSramSzkB:    32
IfmapOffset:    0
FilterOffset:   10000000
OfmapOffset:    20000000
Dataflow : os
Bandwidth : 5
ReadRequestBuffer: 128
WriteRequestBuffer: 128

[layout]
IfmapCustomLayout: False
IfmapSRAMBankBandwidth: 10
IfmapSRAMBankNum: 10
IfmapSRAMBankPort: 2
FilterCustomLayout: False
FilterSRAMBankBandwidth: 10
FilterSRAMBankNum: 10
FilterSRAMBankPort: 2

[sparsity]
SparsitySupport : false
SparseRep : ellpack_block
OptimizedMapping : false
BlockSize : 8
RandomNumberGeneratorSeed : 40

[run_presets]
InterfaceBandwidth: USER
UseRamulatorTrace: False
"""


def scalesims_reading(path: Path):
    from scalesim.scale_config import scale_config

    theirs = scale_config()
    theirs.read_conf_file(str(path))
    return theirs


def assert_same_config(ours, theirs):
    assert (ours.rows, ours.cols) == tuple(theirs.get_array_dims())
    assert ours.dataflow == theirs.get_dataflow()
    assert (ours.ifmap_sram_kb, ours.filter_sram_kb, ours.ofmap_sram_kb) == tuple(theirs.get_mem_sizes())
    assert ours.user_bandwidth == theirs.use_user_dram_bandwidth()
    if theirs.use_user_dram_bandwidth():  # SCALE-Sim reads Bandwidth only in USER mode
        assert list(ours.bandwidth) == theirs.get_bandwidths_as_list()
        # ... and reads ifmap/filter from DRAM at the [layout] bank rates (single_layer_sim.run)
        assert ours.dram_bandwidths == (theirs.get_ifmap_sram_bandwidth(), theirs.get_filter_sram_bandwidth(),
                                        theirs.get_bandwidths_as_list()[0])
    assert ours.name == theirs.get_run_name()


@pytest.mark.parametrize("mode", ["USER", "CALC"])
def test_cfg_reader_agrees_with_scalesims_own_parser(tmp_path, mode):
    path = tmp_path / "shipped_format.cfg"
    text = SHIPPED_FORMAT.replace("InterfaceBandwidth: USER", f"InterfaceBandwidth: {mode}")
    # SCALE-Sim's own configs/scale.cfg has values with trailing blanks ("IfmapSramSzkB:   64 ").
    path.write_text(text.replace("IfmapSramSzkB:    128\n", "IfmapSramSzkB:    128 \n"))
    ours = read_scalesim_cfg(path)
    assert_same_config(ours, scalesims_reading(path))
    assert (ours.rows, ours.cols, ours.dataflow) == (12, 20, "os")
    assert (ours.ifmap_sram_kb, ours.filter_sram_kb, ours.ofmap_sram_kb) == (128, 96, 32)
    assert ours.user_bandwidth == (mode == "USER") and ours.bandwidth == (5,)
    assert ours.read_bandwidth == ((10, 10) if mode == "USER" else None)


def test_cfg_the_harness_writes_reads_the_same_in_both(tmp_path):
    path = tmp_path / "harness.cfg"
    path.write_text(config_text(3, 5, "is", ifmap_kb=16, filter_kb=8, ofmap_kb=4, bandwidth=7))
    assert_same_config(read_scalesim_cfg(path), scalesims_reading(path))


SHIPPED_CONFIGS = {  # file → (rows, cols, dataflow, ifmap/filter/ofmap KiB)
    "scalesim_32x32_ws.cfg": (32, 32, "ws", 64, 64, 64),
    "tpu_like_256x256_ws.cfg": (256, 256, "ws", 6144, 6144, 2048),
}


@pytest.mark.parametrize("name", sorted(SHIPPED_CONFIGS))
def test_shipped_configs_load_in_both(name):
    path = Path(__file__).resolve().parents[1] / "configs" / "arrays" / name
    ours = read_scalesim_cfg(path)
    assert_same_config(ours, scalesims_reading(path))
    rows, cols, dataflow, *sram = SHIPPED_CONFIGS[name]
    assert (ours.rows, ours.cols, ours.dataflow) == (rows, cols, dataflow)
    assert [ours.ifmap_sram_kb, ours.filter_sram_kb, ours.ofmap_sram_kb] == sram


def test_shipped_32x32_config_costs_like_scalesim_with_it():
    """The shipped 32×32 ws config, handed to SCALE-Sim unchanged, gives archsim's cycles."""
    path = Path(__file__).resolve().parents[1] / "configs" / "arrays" / "scalesim_32x32_ws.cfg"
    array = read_scalesim_cfg(path)
    reference = scalesim_gemm(40, 33, 65, array.rows, array.cols, array.dataflow)
    assert_equal(gemm_cost(40, 33, 65, array.rows, array.cols, array.dataflow), reference)


@pytest.mark.parametrize("edit, line, field", [
    (lambda t: t.replace("ArrayWidth:     20", "ArrayWidth:     twenty"), 6, "ArrayWidth"),
    (lambda t: t.replace("OfmapSramSzkB:    32", "OfmapSramSzkB:    3.5"), 9, "OfmapSramSzkB"),
    (lambda t: t.replace("Dataflow : os", "Dataflow : rs"), 13, "Dataflow"),
    (lambda t: t.replace("ArrayHeight:    12\n", ""), None, "ArrayHeight"),
    (lambda t: t.replace("Dataflow : os\n", ""), None, "Dataflow"),
    (lambda t: t.replace("ArrayHeight:    12", "ArrayHeight:    0"), 5, "ArrayHeight"),
    (lambda t: t.replace("Bandwidth : 5", "Bandwidth : fast"), 14, "Bandwidth"),
    (lambda t: t.replace("InterfaceBandwidth: USER", "InterfaceBandwidth: MAX"), 36, "InterfaceBandwidth"),
    (lambda t: t.replace("FilterSRAMBankBandwidth: 10", "FilterSRAMBankBandwidth: 0"), 24,
     "FilterSRAMBankBandwidth"),
], ids=["non-integer", "non-integer-float", "unknown-dataflow", "missing-key", "missing-dataflow",
        "non-positive", "non-integer-bandwidth", "unknown-bandwidth-mode", "non-positive-read-rate"])
def test_cfg_errors_name_file_line_and_field(tmp_path, edit, line, field):
    path = tmp_path / "bad.cfg"
    text = edit(SHIPPED_FORMAT)
    assert text != SHIPPED_FORMAT
    path.write_text(text)
    with pytest.raises(InputError) as error:
        read_scalesim_cfg(path)
    where = error.value.where
    assert where.file == str(path)
    assert (where.line, where.field) == (line, field)
    assert str(path) in str(error.value) and field in str(error.value)


def test_missing_cfg_file_names_the_file(tmp_path):
    path = tmp_path / "none.cfg"
    with pytest.raises(InputError) as error:
        read_scalesim_cfg(path)
    assert error.value.where.file == str(path) and str(path) in str(error.value)


def test_missing_section_names_the_file(tmp_path):
    path = tmp_path / "no_arch.cfg"
    path.write_text("[general]\nrun_name = x\n")
    with pytest.raises(InputError) as error:
        read_scalesim_cfg(path)
    assert error.value.where.file == str(path) and "architecture_presets" in str(error.value)


def test_error_edits_still_parse_in_scalesim_where_it_is_lenient(tmp_path):
    """SCALE-Sim itself accepts a dataflow it cannot run ('rs') without complaint; archsim refuses it
    at load time, naming the line, instead of failing later (or silently running os)."""
    path = tmp_path / "rs.cfg"
    path.write_text(SHIPPED_FORMAT.replace("Dataflow : os", "Dataflow : rs"))
    assert scalesims_reading(path).get_dataflow() == "rs"
    with pytest.raises(InputError):
        read_scalesim_cfg(path)



def test_a_wide_ws_gemm_counts_exactly_without_an_overflow_warning():
    """Under ws the filter is read once (K·N words) and the ifmap once per column fold (M·K·⌈N/C⌉);
    the other dataflows' formulas, evaluated alongside, would pass int64 here and must not warn."""
    import warnings

    from archsim.array.analytic import gemm_cost

    n = 2**31 - 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        cost = gemm_cost(1156, 288, n, 128, 128, "ws")
    assert int(cost.filter_sram_reads) == 288 * n
    assert int(cost.ifmap_sram_reads) == 1156 * 288 * -(-n // 128)
