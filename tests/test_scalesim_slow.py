"""Larger cross-checks against the scalesim package (minutes): ``python -m pytest -m slow``."""

import numpy as np
import pytest

from archsim.array.analytic import gemm_cost
from archsim.lowering import lower_layer
from archsim.workload import load_network

pytest.importorskip("scalesim")
from scalesim_reference import scalesim_conv, scalesim_gemm  # noqa: E402
from test_scalesim_exact import assert_equal  # noqa: E402

pytestmark = pytest.mark.slow
RNG = np.random.default_rng(2026)
CASES = [(int(RNG.integers(1, 200)), int(RNG.integers(1, 200)), int(RNG.integers(1, 200)),
          int(RNG.choice([4, 8, 16, 32, 7, 13])), int(RNG.choice([4, 8, 16, 32, 5, 11])),
          str(RNG.choice(["ws", "os", "is"]))) for _ in range(150)]


@pytest.mark.parametrize("m, k, n, rows, cols, dataflow", CASES)
def test_random_larger_gemms(m, k, n, rows, cols, dataflow):
    assert_equal(gemm_cost(m, k, n, rows, cols, dataflow), scalesim_gemm(m, k, n, rows, cols, dataflow))


@pytest.mark.parametrize("dataflow", ["ws", "os", "is"])
def test_layerpipe_sample_conv2_forward_at_batch_1(dataflow):
    """conv2 of LayerPipe's sample network (112×112×32, 5×5/2, pad 2) in SCALE-Sim geometry: padding
    folded into the input. SCALE-Sim's E = ⌈(H − fh + s)/s⌉ would make a 116-wide input 57 wide, so the
    input is 115 (the last padded column is never read) and the output 56×56 as in the paper."""
    layer = load_network("layerpipe_sample").layer("conv2")
    from dataclasses import replace

    scalesim_layer = replace(layer, ifmap_h=115, ifmap_w=115, padding=0, geometry="scalesim", inputs=("x",))
    (gemm,) = lower_layer(scalesim_layer, batch=1).op("F").gemms
    assert gemm.m == 56 * 56
    assert_equal(gemm_cost(gemm.m, gemm.k, gemm.n, 32, 32, dataflow),
                 scalesim_conv(115, 115, 5, 5, 32, 64, 2, 32, 32, dataflow))
