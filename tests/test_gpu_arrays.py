"""GPU validation's GPU as systolic arrays (issue 9, part 3): datasheet peaks, device names, one
array per tensor core, and the device model's arrays mechanisms it is costed by
(:mod:`archsim.devices.array_waves`: folds dealt in waves, split-K, an op's GEMMs in turn) against
SCALE-Sim's per-fold formula worked by hand and archsim's single-array cost."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from test_gpu_validation import H100

from archsim.array.config import ArrayConfig
from archsim.array.costing import op_cycles as archsim_op_cycles
from archsim.devices.array_waves import array_gemm_cycles, op_array_cycles
from archsim.devices.catalog import KNOWN_GPUS, GpuSpec
from archsim.devices.device import Arrays
from archsim.devices.gpu_lookup import find_gpu, resolve_gpu
from archsim.errors import InputError
from archsim.lowering import lower_network
from archsim.validation.gpu import gpu_arrays
from archsim.workload import load_network


def tiny_spec(sms: int, rows: int, cols: int, clock_hz: float = 1e9) -> GpuSpec:
    return GpuSpec("tiny", sms, 1, rows, cols, clock_hz, 1e12)


@pytest.mark.parametrize("slug_, tflops", [("v100", 125), ("t4", 65), ("a100-40gb", 312), ("a100-40gb-pcie", 312), ("a100-80gb", 312),
                                           ("a10", 125), ("l4", 121), ("h100-sxm", 989.4), ("h100-pcie", 756),
                                           ("h200", 989.4)])
def test_known_gpus_reproduce_datasheet_dense_fp16_peaks(slug_, tflops):
    assert KNOWN_GPUS[slug_].peak_flops / 1e12 == pytest.approx(tflops, rel=0.01)


@pytest.mark.parametrize("name, expected", [
    ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA H100 PCIe", "h100-pcie"), ("NVIDIA H200", "h200"),
    ("NVIDIA A100-SXM4-40GB", "a100-40gb"), ("NVIDIA A100-PCIE-40GB", "a100-40gb-pcie"),
    ("NVIDIA A100-SXM4-80GB", "a100-80gb"), ("NVIDIA A10", "a10"), ("NVIDIA A10G", None),
    ("Tesla V100-SXM2-16GB", "v100-16gb"), ("Tesla V100-SXM2-32GB", "v100"), ("Tesla T4", "t4"), ("NVIDIA L4", "l4"), ("h100-sxm", "h100-sxm"),
    ("NVIDIA GeForce RTX 4090", None)])
def test_device_names_find_their_table_entry(name, expected):
    assert find_gpu(name) == expected


def test_gpu_maps_to_one_array_per_tensor_core_with_overrides():
    spec = resolve_gpu(H100)
    arrays = gpu_arrays(spec)
    assert (arrays.count, arrays.array.rows, arrays.array.cols, arrays.array.dataflow) == (528, 16, 32, "os")
    assert arrays.array.clock_hz == 1.83e9 and arrays.array.element_bytes == 2
    mig = resolve_gpu("NVIDIA A100-SXM4-80GB MIG 3g.40gb", sm_count=42, mma=(8, 32), clock_hz=1.2e9)
    assert (mig.arrays, mig.mma_rows, mig.mma_cols, mig.clock_hz) == (168, 8, 32, 1.2e9)
    assert resolve_gpu("Some future GPU", like="h100-sxm").sm_count == 132
    with pytest.raises(InputError) as info:
        resolve_gpu("NVIDIA GeForce RTX 4090")
    assert info.value.where.field == "gpu" and "--like" in str(info.value)
    with pytest.raises(InputError) as info:
        gpu_arrays(spec, dataflow="xs")
    assert info.value.where.field == "dataflow"
    with pytest.raises(InputError) as info:
        resolve_gpu(H100, sm_count=0)
    assert info.value.where.field == "sm_count"


def test_folds_are_dealt_to_arrays_in_waves():
    # os, 4×4 arrays: out 8×8 → 4 tiles, each R + C + K − 2 = 4 + 4 + 5 − 2 = 11 cycles (elapsed).
    two = gpu_arrays(tiny_spec(2, 4, 4), split_k=True)
    assert two.units == Arrays(2, 4, 4, "os", 1e9)
    got = array_gemm_cycles([8], [5], [8], 1, two.units, split_k=True)
    assert (got.cycles[0], got.busy[0], got.split[0]) == (2 * 11, 4 * 11, 1)
    # ws: folds ⌈K/R⌉·⌈N/C⌉ = 2·2 = 4 of 2R + C + M − 2 = 18 cycles; 3 arrays → 2 waves.
    ws = gpu_arrays(tiny_spec(3, 4, 4), dataflow="ws")
    assert array_gemm_cycles([8], [5], [8], 1, ws.units).cycles[0] == 2 * 18
    # three such GEMMs dealt together: 12 folds on 3 arrays → 4 waves; one after another: 3 × 2 waves
    assert array_gemm_cycles([8], [5], [8], 3, ws.units).cycles[0] == 4 * 18


def test_split_k_picks_the_cheapest_real_sub_gemms():
    # one 2×2 tile (m = n = 2), K = 8, 4 arrays of 2×2. By hand, s parts of ⌈8/s⌉ plus ⌈(s−1)·4 / (4·2)⌉ adds:
    # s=1: 2+2+8−2−1 = 9; s=2: 5+1 = 6; s=3: 4+1 = 5; s=4: 3+2 = 5 → s = 3 (first minimum), 5 cycles.
    # (the sums above are SCALE-Sim's last-cycle index; elapsed is one more)
    units = gpu_arrays(tiny_spec(4, 2, 2)).units
    got = array_gemm_cycles([2], [8], [2], 1, units, split_k=True)
    assert (got.cycles[0] - 1, got.split[0]) == (5, 3)
    assert got.busy[0] == 3 * 5 + math.ceil(2 * 2 * 2 / 2)  # three 5-cycle sub-GEMMs + 8 adds on 2 lanes
    assert array_gemm_cycles([2], [8], [2], 1, units, split_k=False).cycles[0] - 1 == 9
    assert array_gemm_cycles([2], [8], [2], 1, replace(units, dataflow="ws"), split_k=True).split[0] == 1  # os only


def test_one_array_reproduces_archsims_single_array_cost():
    arrays = gpu_arrays(tiny_spec(1, 16, 32), dataflow="os")
    ops = [op for item in lower_network(load_network("vgg16").only("conv", "fc"), 2, "exact", 2) for op in item.ops]
    expected = archsim_op_cycles(ops, ArrayConfig(16, 32, "os", element_bytes=2))
    np.testing.assert_array_equal(op_array_cycles(ops, arrays.units, arrays.split_k).cycles, expected)
