"""A device built of arrays counts a GEMM's cycles as the array model does (SCALE-Sim's count: the
last cycle's index, :mod:`archsim.array.analytic`), so a device file of one array prices every GEMM
exactly as ``archsim cost --config`` does. It priced each GEMM one cycle more (elapsed), a second
count beside the array model's.

References come from :func:`archsim.array.analytic.gemm_cost` (held to SCALE-Sim in
test_scalesim_exact.py) and :func:`archsim.array.costing.op_cycles`, never from the device path.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from archsim.array.analytic import gemm_cost
from archsim.array.config import ArrayConfig
from archsim.array.costing import op_cycles
from archsim.cli import main
from archsim.devices.array_waves import array_gemm_cycles, indexed_cycles
from archsim.devices.device import Arrays, catalog_device
from archsim.devices.kernel_constants import one_fraction
from archsim.devices.kernel_ops import array_gemm_seconds, op_seconds
from archsim.lowering import lower_network
from archsim.workload import load_network

IDEAL = one_fraction(gemm=1.0, memory=1e30, launch_s=0.0)  # no loss, traffic or launch: compute alone
PROFILES = Path(__file__).resolve().parent / "data" / "pipedream" / "profiles"
CLUSTERS = Path(__file__).resolve().parents[1] / "configs" / "clusters"


def _one_array_device(rows: int, cols: int, dataflow: str, clock_ghz: float = 1.0):
    """The catalog V100 rebuilt as ONE rows × cols array of ``dataflow`` at ``clock_ghz``, GEMMs on it."""
    device = catalog_device("v100-32gb")
    arrays = Arrays(1, rows, cols, dataflow, clock_ghz * 1e9)
    return replace(device, gemm="arrays", arrays=arrays, lanes=None, split_k=False)


@given(m=st.integers(1, 300), k=st.integers(1, 300), n=st.integers(1, 300), parts=st.integers(1, 5),
       rows=st.integers(1, 40), cols=st.integers(1, 40), dataflow=st.sampled_from(["os", "ws", "is"]))
def test_one_array_counts_each_gemm_as_the_array_model(m, k, n, parts, rows, cols, dataflow):
    """On one array, ``parts`` GEMMs dealt together cost ``parts`` × the array model's cycles, exactly."""
    got = indexed_cycles(array_gemm_cycles(m, k, n, parts, Arrays(1, rows, cols, dataflow, 1e9)))
    assert int(got[0]) == parts * gemm_cost(m, k, n, rows, cols, dataflow).scalar("cycles")


@pytest.mark.parametrize("dataflow", ["ws", "os", "is"])
def test_a_one_array_device_times_a_network_as_op_cycles_over_the_clock(dataflow):
    """Every op of VGG-16's convolutions and FCs (F, G and D) on a device of one 16 × 32 array at 2 GHz,
    with no loss, traffic or launch: seconds × clock is the array model's cycles, to the cycle."""
    device = _one_array_device(16, 32, dataflow, clock_ghz=2.0)
    ops = [op for item in lower_network(load_network("vgg16").only("conv", "fc"), 2, "exact", 2) for op in item.ops]
    expected = op_cycles(ops, ArrayConfig(16, 32, dataflow, element_bytes=2))
    got = op_seconds(ops, device, IDEAL, "fp16") * 2e9
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0)
    assert (expected > 0).all()


def test_waves_over_several_arrays_count_one_less_per_gemm_run_on_the_busiest_array():
    """ws 4 × 4 arrays, out 8×8 with K = 5: 4 folds of 2R + C + M − 2 = 18 elapsed cycles each (by hand).
    On 3 arrays one GEMM takes 2 waves (one run: 36 − 1); three dealt together 12 folds → 4 waves, one
    GEMM's 4 folds back to back per run: 1 run (72 − 1); on 1 array they are 3 runs of SCALE-Sim's 71."""
    three = Arrays(3, 4, 4, "ws", 1e9)
    assert gemm_cost(8, 5, 8, 4, 4, "ws").scalar("cycles") == 4 * 18 - 1
    assert int(indexed_cycles(array_gemm_cycles(8, 5, 8, 1, three))[0]) == 2 * 18 - 1
    assert int(indexed_cycles(array_gemm_cycles(8, 5, 8, 3, three))[0]) == 4 * 18 - 1
    assert int(indexed_cycles(array_gemm_cycles(8, 5, 8, 3, Arrays(1, 4, 4, "ws", 1e9)))[0]) == 3 * (4 * 18 - 1)
    # one fold per GEMM (out 4×4, K = 4: 2·4 + 4 + 4 − 2 = 14 cycles), 7 GEMMs on 3 arrays: 3 waves, the
    # busiest array runs 3 GEMMs back to back, each one cycle less
    assert int(indexed_cycles(array_gemm_cycles(4, 4, 4, 7, three))[0]) == 3 * (14 - 1)


def test_the_seconds_path_and_the_cycles_path_take_one_count():
    """``array_gemm_seconds`` (train, plan, search) × clock equals the cycles view's count, batched
    parts included, on a many-array device."""
    device = _one_array_device(8, 8, "os")
    device = replace(device, arrays=Arrays(6, 8, 8, "os", 1e9))
    m, k, n, parts = np.array([3, 40, 100, 17]), np.array([9, 64, 7, 300]), np.array([5, 33, 90, 8]), \
        np.array([1, 4, 11, 2])
    seconds = array_gemm_seconds(m, k, n, parts, device, IDEAL)
    cycles = indexed_cycles(array_gemm_cycles(m, k, n, parts, device.arrays))
    np.testing.assert_allclose(seconds * 1e9, cycles, rtol=1e-12, atol=0)


@pytest.mark.long
def test_plan_with_a_graph_txt_says_it_ignores_the_clusters_device(capsys):
    """A PipeDream graph.txt carries measured times: plan takes them and says the servers' device does
    not price them; a cluster that names no device gets no note."""
    profile = str(PROFILES / "alexnet.txt")
    assert main(["plan", profile, "--cluster", str(CLUSTERS / "a100_node.toml"), "--microbatches", "4",
                 "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert "a100_node.toml's servers name a100-80gb" in err and "alexnet.txt measured" in err
    # one note; numba's one-time compile notice (a fresh install's first plan) is not this test's
    assert len([line for line in err.strip().splitlines() if "note: compiling" not in line]) == 1
    with_note = json.loads(out)["meta"]["makespan_seconds"]
    assert main(["plan", profile, "--cluster", str(CLUSTERS / "spp_sim.toml"), "--microbatches", "4",
                 "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert "note" not in err
    assert with_note > 0
