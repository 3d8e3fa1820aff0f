"""archsim's analytic costs equal the scalesim 3.0.0 package's, number for number.

Integers (cycles, SRAM reads and writes, stalls) must be equal; ratios equal to 1e-12 relative,
because SCALE-Sim averages its per-fold mapping efficiency and utilization by summing floats in
fold order, while archsim evaluates the same average in closed form.
"""

import pytest

from archsim.array.analytic import gemm_cost, gemm_cycles
from archsim.array.config import read_scalesim_cfg
from archsim.errors import InputError
from archsim.lowering import lower_layer
from archsim.workload import Layer

scalesim = pytest.importorskip("scalesim")
from scalesim_reference import config_text, scalesim_conv, scalesim_gemm  # noqa: E402

ARRAYS = [(4, 4), (8, 4), (3, 5), (16, 16)]
GEMMS = [  # (M, K, N): below / equal / one above the array, primes, FC with M = 1
    (1, 16, 10), (1, 7, 3), (4, 4, 4), (5, 5, 5), (3, 2, 1), (8, 8, 8), (9, 17, 16), (16, 16, 16),
    (17, 16, 17), (13, 7, 11), (31, 3, 2), (2, 31, 29), (23, 1, 1), (1, 1, 1),
]
CONVS = [  # (H, W, fh, fw, C, M, stride): 1×1 and 7×7 filters, strides 1–3, non-square maps
    (6, 6, 1, 1, 3, 5, 1), (9, 7, 3, 3, 2, 4, 1), (9, 9, 3, 3, 3, 6, 2), (11, 10, 3, 3, 2, 3, 3),
    (10, 10, 7, 7, 3, 4, 1), (13, 13, 7, 7, 2, 3, 2), (8, 8, 1, 1, 17, 9, 2), (7, 7, 7, 7, 4, 5, 3),
]


def assert_equal(ours, reference):
    assert ours.scalar("cycles") == reference.compute_cycles
    assert reference.stall_cycles == 0
    assert ours.scalar("ifmap_sram_reads") == reference.ifmap_sram_reads
    assert ours.scalar("filter_sram_reads") == reference.filter_sram_reads
    assert ours.scalar("ofmap_sram_writes") == reference.ofmap_sram_writes
    assert ours.scalar("mapping_efficiency") * 100 == pytest.approx(reference.mapping_efficiency, rel=1e-12)
    assert ours.scalar("compute_utilization") * 100 == pytest.approx(reference.compute_utilization, rel=1e-12)
    assert ours.scalar("utilization") * 100 == pytest.approx(reference.overall_utilization, rel=1e-12)


@pytest.mark.parametrize("dataflow", ["ws", "os", "is"])
@pytest.mark.parametrize("rows, cols", ARRAYS)
@pytest.mark.parametrize("m, k, n", GEMMS)
def test_gemm_equals_scalesim(m, k, n, rows, cols, dataflow):
    ours = gemm_cost(m, k, n, rows, cols, dataflow)
    assert_equal(ours, scalesim_gemm(m, k, n, rows, cols, dataflow))
    assert gemm_cycles(m, k, n, rows, cols, dataflow) == ours.scalar("cycles")


@pytest.mark.parametrize("dataflow", ["ws", "os", "is"])
@pytest.mark.parametrize("h, w, fh, fw, c, m, stride", CONVS)
def test_conv_forward_equals_scalesim_conv_mode(h, w, fh, fw, c, m, stride, dataflow):
    layer = Layer(name="l", kind="conv", ifmap_h=h, ifmap_w=w, filter_h=fh, filter_w=fw, channels=c, filters=m,
                  stride=stride, geometry="scalesim")
    (gemm,) = lower_layer(layer, batch=1).op("F").gemms
    assert_equal(gemm_cost(gemm.m, gemm.k, gemm.n, 8, 4, dataflow), scalesim_conv(h, w, fh, fw, c, m, stride, 8, 4,
                                                                                  dataflow))


def test_true_os_ofmap_count_is_m_times_n():
    """SCALE-Sim's os count adds R + C per fold; the true count is M·N (docstring of gemm_cost)."""
    reference = scalesim_gemm(10, 7, 5, 4, 4, "os")
    true = gemm_cost(10, 7, 5, 4, 4, "os", ofmap_count="true").scalar("ofmap_sram_writes")
    folds = gemm_cost(10, 7, 5, 4, 4, "os").scalar("folds")
    assert true == 10 * 5 and reference.ofmap_sram_writes == true + folds * (4 + 4)


def test_cfg_reader_agrees_with_scalesims_own_parser(tmp_path):
    from scalesim.scale_config import scale_config

    path = tmp_path / "mine.cfg"
    path.write_text(config_text(12, 20, "os", ifmap_kb=128, filter_kb=96, ofmap_kb=32, bandwidth=5))
    theirs = scale_config()
    theirs.read_conf_file(str(path))
    ours = read_scalesim_cfg(path)
    assert (ours.rows, ours.cols) == tuple(theirs.get_array_dims())
    assert ours.dataflow == theirs.get_dataflow()
    assert (ours.ifmap_sram_kb, ours.filter_sram_kb, ours.ofmap_sram_kb) == tuple(theirs.get_mem_sizes())
    assert ours.user_bandwidth == theirs.use_user_dram_bandwidth() and list(ours.bandwidth) == theirs.bandwidths


@pytest.mark.parametrize("name", ["scalesim_32x32_ws.cfg", "tpu_like_256x256_ws.cfg"])
def test_shipped_configs_load_in_both(name):
    from pathlib import Path

    from scalesim.scale_config import scale_config

    path = Path(__file__).resolve().parents[1] / "configs" / "arrays" / name
    theirs = scale_config()
    theirs.read_conf_file(str(path))
    assert (read_scalesim_cfg(path).rows, read_scalesim_cfg(path).cols) == tuple(theirs.get_array_dims())


@pytest.mark.parametrize("edit, line, field", [
    (lambda t: t.replace("ArrayWidth:     20", "ArrayWidth:     twenty"), 6, "ArrayWidth"),
    (lambda t: t.replace("Dataflow : os", "Dataflow : rs"), 14, "Dataflow"),
    (lambda t: t.replace("ArrayHeight:    12\n", ""), None, "ArrayHeight"),
    (lambda t: t.replace("ArrayHeight:    12", "ArrayHeight:    0"), 5, "ArrayHeight"),
])
def test_cfg_errors_name_file_line_and_field(tmp_path, edit, line, field):
    path = tmp_path / "bad.cfg"
    path.write_text(edit(config_text(12, 20, "os")))
    with pytest.raises(InputError) as error:
        read_scalesim_cfg(path)
    assert error.value.where.file.endswith("bad.cfg")
    assert (error.value.where.line, error.value.where.field) == (line, field)


def test_missing_cfg_file(tmp_path):
    with pytest.raises(InputError):
        read_scalesim_cfg(tmp_path / "none.cfg")


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 40), k=st.integers(1, 40), n=st.integers(1, 40), rows=st.integers(1, 12),
       cols=st.integers(1, 12), dataflow=st.sampled_from(["ws", "os", "is"]))
def test_random_shapes_nobody_chose_equal_scalesim(m, k, n, rows, cols, dataflow):
    ours = gemm_cost(m, k, n, rows, cols, dataflow)
    if ours.scalar("cycles") == 0:  # see test_degenerate_zero_cycle_gemm
        return
    assert_equal(ours, scalesim_gemm(m, k, n, rows, cols, dataflow))


def test_degenerate_zero_cycle_gemm():
    """1×1×1 on a 1×1 os array: SCALE-Sim's count is 0 cycles and its report divides by zero."""
    ours = gemm_cost(1, 1, 1, 1, 1, "os")
    assert ours.scalar("cycles") == 0 and ours.scalar("utilization") == 1.0
    with pytest.raises(ZeroDivisionError):
        scalesim_gemm(1, 1, 1, 1, 1, "os")
