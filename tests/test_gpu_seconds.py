"""validate-gpu times measured kernels with the one device model (issue 37, items 1–2): every F/D/G
row gets ``predicted_seconds`` from :mod:`archsim.devices.kernel_ops`, and the statistics give MAPE,
median ratio and ρ of seconds beside the arrays view's.

References: the device model's own public function for the wiring (the same shape handed to
``kernel_ops.op_seconds`` directly), a memory-bound GEMM's bytes at the V100 datasheet's HBM
bandwidth worked by hand, and the statistics recomputed from the joined rows with the standard library.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from archsim.devices.catalog import KNOWN_GPUS
from archsim.devices.device import catalog_device
from archsim.devices.kernel_constants import FITTED
from archsim.devices.kernel_ops import op_seconds, timed_alone
from archsim.devices.kernels import path_gemm_seconds
from archsim.lowering import Gemm, TrainingOp
from archsim.training.fitted import A100_KERNELS, kernels
from archsim.validation.gpu_csv import read_kernel_csv
from archsim.validation.gpu_seconds import kernel_timer, ops_seconds
from archsim.validation.gpu_study import run_study

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
V100_GEMMS = RESULTS / "deepbench_v100_gemm_kernels.csv"


@pytest.fixture(scope="module")
def v100_gemms():
    return run_study([read_kernel_csv(V100_GEMMS)], tensor_constants=kernels).joined


def _row(joined, layer: str, batch: int):
    rows = joined[(joined.layer == layer) & (joined.batch == batch) & (joined.op == "F")]
    assert len(rows) == 1
    return rows.iloc[0]


def test_a_gemm_row_is_timed_by_op_seconds_on_the_catalog_v100(v100_gemms):
    """Wiring: DeepBench's DeepSpeech GEMM M = N = K = 1760 at batch 128 (an fc forward: out[128×1760] =
    in[128×1760]·W[1760×1760]) is the fp16 GEMM op_seconds times on the catalog V100 with the vTrain fit,
    launched as a kernel timed alone (kernel_ops.timed_alone)."""
    row = _row(v100_gemms, "deepspeech_gemm_1_nn", 128)
    op = TrainingOp("gemm", "F", (Gemm(128, 1760, 1760),))
    expected = op_seconds([op], catalog_device("v100-32gb"), timed_alone(A100_KERNELS), "fp16")[0]
    assert row.predicted_seconds == pytest.approx(expected, rel=1e-12)
    assert row.measured_seconds == pytest.approx(row.measured_ms / 1e3)


def test_a_memory_bound_gemm_is_its_bytes_at_the_v100s_hbm_bandwidth(v100_gemms):
    """Independent reference: a 4096 × 4096 weight read by a batch of 16 (fp16) moves
    (16·4096 + 4096·4096 + 16·4096) · 2 = 33,816,576 bytes; the V100 datasheet's HBM2 900 GB/s at the
    fit's achieved fraction (0.808) takes 46.5 µs for them — more than its tensor tiles' main loop (64 tiles
    of 64 × 64, one wave over 80 SMs: 2·64·64·4096 / (1.5625 TFLOP/s · 0.824 · 0.8) ≈ 32.6 µs) — plus
    one launch of a kernel timed alone: NeuSight's 16.0 µs, not the vTrain fit's 32.4 µs in-iteration gap
    (62.5 µs in all, not 78.9). DeepBench measured 51 µs: the bytes alone explain all but 9% of it (the
    A100 fit's fraction is not the V100's; the joint fit's 0.749 gave 50.2 µs)."""
    row = _row(v100_gemms, "deepspeech_gemm_4_nn", 16)
    nbytes = (16 * 4096 + 4096 * 4096 + 16 * 4096) * 2
    assert nbytes == 33_816_576
    assert FITTED.launch_s == pytest.approx(16.0e-6) and A100_KERNELS.launch_s == pytest.approx(32.4e-6)
    expected = nbytes / (900e9 * A100_KERNELS.memory) + 16.0e-6
    assert row.predicted_seconds == pytest.approx(expected, rel=1e-9)
    assert nbytes / (900e9 * A100_KERNELS.memory) == pytest.approx(46.5e-6, rel=1e-3)
    assert nbytes / (900e9 * A100_KERNELS.memory) == pytest.approx(row.measured_seconds, rel=0.10)


def test_a_chip_without_a_board_takes_the_same_path_as_its_catalog_device():
    """The two routes of gpu_seconds agree where both apply: the P100's fp32 SIMT GEMMs through its
    catalog device (op_seconds) and through the chip's own datasheet path."""
    spec = KNOWN_GPUS["p100-pcie"]
    ops = [TrainingOp("a", "F", (Gemm(64, 4608, 512),)), TrainingOp("b", "G", (Gemm(512, 12544 * 8, 4608), Gemm(3, 5, 7, 2)))]
    board = kernel_timer(spec, "p100-pcie", "fp32", None)
    assert board is not None and board.device is not None
    chip = kernel_timer(spec, None, "fp32", None)
    assert chip is not None and chip.device is None
    via_device = ops_seconds(ops, board, [], 4)
    assert np.allclose(via_device, ops_seconds(ops, chip, [], 4), rtol=1e-12)
    assert np.allclose(via_device, op_seconds(ops, catalog_device("p100-pcie-16gb"), FITTED, "fp32"), rtol=1e-12)


def test_an_overridden_gpu_is_timed_on_its_own_figures():
    """--sm-count (a cut-down part) changes the chip, so the catalog device no longer describes it."""
    spec = KNOWN_GPUS["p100-pcie"]
    half = kernel_timer(replace(spec, sm_count=28), "p100-pcie", "fp32", None)
    assert half is not None and half.device is None
    op = [TrainingOp("a", "F", (Gemm(4096, 4096, 4096),))]
    whole = ops_seconds(op, kernel_timer(spec, "p100-pcie", "fp32", None), [], 4)[0]
    assert ops_seconds(op, half, [], 4)[0] > 1.8 * whole  # compute-bound: half the SMs, about twice the time


def test_fp16_rows_are_not_timed_without_tensor_constants_and_tf32_never():
    spec = KNOWN_GPUS["v100"]
    assert kernel_timer(spec, "v100", "fp16", None) is None
    assert kernel_timer(spec, "v100", "tf32", kernels) is None
    timer = kernel_timer(spec, "v100", "fp16", kernels)
    assert timer is not None and timer.constants == A100_KERNELS and timer.device is catalog_device("v100-32gb")
    fp32 = kernel_timer(spec, "v100", "fp32", kernels)
    assert fp32 is not None and fp32.constants == FITTED


def test_fp16_without_tensor_cores_runs_on_the_lanes_and_undescribed_lanes_are_not_timed():
    """DeepBench's P100 "pseudo fp16" (fp16 storage, no tensor cores): SIMT tiles at 2 bytes per element
    with the NeuSight fit, not the catalog board's (which has no fp16 peak). The A10's FP32 lanes are
    not in the catalog: an fp32 table on it is not timed rather than timed on a guess."""
    from archsim.devices.kernels import simt_path

    spec = KNOWN_GPUS["p100-pcie"]
    timer = kernel_timer(spec, "p100-pcie", "fp16", None)
    assert timer is not None and timer.device is None and timer.constants == FITTED
    op = [TrainingOp("a", "F", (Gemm(64, 4608, 512),))]
    expected = float(path_gemm_seconds(1, 64, 512, 4608, simt_path(spec, FITTED), FITTED, 2))
    assert ops_seconds(op, timer, [], 2)[0] == pytest.approx(expected, rel=1e-12)
    assert kernel_timer(KNOWN_GPUS["a10"], "a10", "fp32", kernels) is None
    assert kernel_timer(KNOWN_GPUS["a10"], "a10", "fp16", kernels) is not None


def test_fp16_layers_of_other_shapes_run_on_the_fp32_lanes():
    """A 3-channel first layer (not a tensor-core shape) on the V100 in fp16: the SIMT path at the V100's
    15.7 TFLOP/s FP32 lanes with the NeuSight fit, operands at 2 bytes."""
    spec = KNOWN_GPUS["v100"]
    timer = kernel_timer(spec, "v100", "fp16", kernels)
    assert timer is not None
    op = TrainingOp("stem", "F", (Gemm(8 * 224 * 224, 27, 64),))
    lanes = ops_seconds([op], timer, [True], 2)[0]
    from archsim.devices.kernels import simt_path

    assert lanes == pytest.approx(float(path_gemm_seconds(1, 8 * 224 * 224, 64, 27, simt_path(spec, FITTED), FITTED, 2)))
    assert lanes != pytest.approx(ops_seconds([op], timer, [False], 2)[0])


def test_seconds_statistics_are_recomputed_from_the_rows():
    """MAPE, median ratio and ρ of seconds per op, against the standard library over the joined rows."""
    from test_gpu_validation import independent_spearman

    study = run_study([read_kernel_csv(RESULTS / "deepbench_t4_kernels.csv")], tensor_constants=kernels)
    per_op = study.stats[study.stats.group == "op"].set_index("op")
    for op, part in study.joined[study.joined.op.isin(["F", "D", "G"])].groupby("op"):
        ratios = [p / (m / 1e3) for p, m in zip(part.predicted_seconds, part.measured_ms)]
        assert per_op.loc[op, "seconds_mape"] == pytest.approx(statistics.fmean(abs(r - 1) for r in ratios))
        assert per_op.loc[op, "seconds_median_ratio"] == pytest.approx(statistics.median(ratios))
        assert per_op.loc[op, "seconds_rho"] == pytest.approx(
            independent_spearman(part.predicted_seconds, part.measured_ms))


def test_the_cli_shows_seconds_beside_the_arrays_view(capsys):
    from archsim.cli import main

    assert main(["validate-gpu", "--csv", str(V100_GEMMS), "--show", "kernels", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    rows = rows["rows"] if isinstance(rows, dict) else rows
    assert all(r["predicted_seconds"] > 0 and r["measured_seconds"] > 0 and r["modeled_ms"] > 0 for r in rows)
    assert main(["validate-gpu", "--csv", str(V100_GEMMS), "--format", "csv"]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("group,"))
    assert {"seconds_mape", "seconds_median_ratio", "seconds_rho", "rho", "median_ratio"} <= set(header.split(","))


@pytest.mark.parametrize("dataflow", ["os", "ws", "is"])
@pytest.mark.parametrize("split_k", [False, True])
def test_the_cycles_view_is_the_device_models_arrays_path(dataflow, split_k):
    """The GPU-as-arrays view is the arrays mechanism of the one device model: the catalog V100's
    Device with ``gemm = "arrays"`` (its 640 tensor cores as 8×8 arrays at 1530 MHz) times each
    single-GEMM op, with no efficiency loss, traffic or launch, in exactly the view's cycles (both
    count as SCALE-Sim does, the last cycle's index), split-K on or off — on random shapes, many with fewer
    output tiles than arrays and a long reduction, where split-K cuts the reduction (os) and ws and is
    split their streamed dimension whether split-K is on or not."""
    from archsim.devices.kernel_constants import one_fraction
    from archsim.validation.gpu import gpu_arrays

    device = catalog_device("v100-32gb")
    device = replace(device, gemm="arrays", arrays=replace(device.arrays, dataflow=dataflow), split_k=split_k)
    ideal = one_fraction(gemm=1.0, memory=1e30, launch_s=0.0)
    view = gpu_arrays(KNOWN_GPUS["v100"], dataflow, split_k=split_k)
    rng = np.random.default_rng(37)
    shapes = np.concatenate([rng.integers(1, 4096, size=(60, 3)),
                             np.column_stack([rng.integers(1, 64, 60), rng.integers(1, 200_000, 60),
                                              rng.integers(1, 64, 60)])])
    ops = [TrainingOp("l", "F", (Gemm(int(m), int(k), int(n)),)) for m, k, n in shapes]
    cycles, split = _view_cycles(ops, view)
    seconds = op_seconds(ops, device, ideal, "fp16")
    assert device.arrays.count == view.count == 640
    assert np.allclose(seconds * device.clock_hz, cycles, rtol=1e-12)
    assert (split > 1).any() == (split_k or dataflow != "os")  # the shapes do reach the splits


def _view_cycles(ops, arrays):
    """The cycles view's numbers for GEMM ops (what :func:`archsim.validation.gpu.model_kernels`
    costs its ops with; the next test checks its joined rows against the device path directly)."""
    from archsim.devices.array_waves import op_array_cycles

    costed = op_array_cycles(ops, arrays.units, arrays.split_k)
    return costed.cycles, costed.split


def test_validate_gpus_modeled_cycles_are_the_arrays_devices_seconds(v100_gemms):
    """End to end: every forward row validate-gpu joins for DeepBench's V100 GEMMs (split-K on, its
    default) has modeled_cycles = the seconds the V100-as-arrays device (split-K on, ideal
    constants) gives the same fc forward GEMM, × clock; the split-K rows included."""
    from archsim.devices.kernel_constants import one_fraction
    from archsim.workload import load_network

    device = replace(catalog_device("v100-32gb"), gemm="arrays", split_k=True)
    ideal = one_fraction(gemm=1.0, memory=1e30, launch_s=0.0)
    network = load_network(RESULTS / "deepbench_gemm_layers.csv")
    forward = v100_gemms[v100_gemms.op == "F"]
    ops = []
    for row in forward.itertuples(index=False):
        layer = network.layer(row.layer)
        ops.append(TrainingOp(row.layer, "F", (Gemm(int(row.batch), layer.input_elements, layer.output_elements),)))
    seconds = op_seconds(ops, device, ideal, "fp16")
    assert len(ops) > 50 and (forward.split > 1).sum() > 5
    np.testing.assert_allclose(seconds * device.clock_hz, forward.modeled_cycles.to_numpy(), rtol=1e-12)


@pytest.mark.long
def test_the_report_plots_the_times_beside_the_cycles():
    from archsim.validation.gpu_report import report_sections

    study = run_study([read_kernel_csv(RESULTS / "deepbench_t4_kernels.csv")], tensor_constants=kernels)
    titles = [item.layout.title.text for item, _ in report_sections(study, "cmd") if hasattr(item, "layout")]
    assert sum("device model's seconds" in t for t in titles) == 3
    assert sum("arrays view" in t for t in titles) == 3
    untimed = run_study([read_kernel_csv(RESULTS / "deepbench_t4_kernels.csv")])  # fp16 with no tensor constants
    assert untimed.joined.predicted_seconds.isna().all()
    titles = [item.layout.title.text for item, _ in report_sections(untimed, "cmd") if hasattr(item, "layout")]
    assert not any("device model's seconds" in t for t in titles)


def test_a_chip_without_a_device_streams_elementwise_work_and_refuses_other_kernels():
    """The chip path (no Device) streams an elementwise op's elements through the chip's datasheet HBM
    (P100: 732 GB/s) at NeuSight's elementwise fraction, plus one launch (col2im's scatter is one);
    a softmax or layer-norm kernel it cannot time is refused."""
    from archsim.errors import InputError

    timer = kernel_timer(KNOWN_GPUS["p100-pcie"], "p100-pcie", "fp16", None)
    assert timer is not None and timer.device is None
    by_hand = 1e6 * 2 / (732e9 * 0.769) + 16.0e-6
    assert ops_seconds([TrainingOp("relu", "F", (), vector_elements=10**6)], timer, [], 2)[0] == \
        pytest.approx(by_hand, rel=1e-12)
    with pytest.raises(InputError, match="softmax"):
        ops_seconds([TrainingOp("s", "F", (), vector_elements=100, kernel=("softmax", 10, 10))], timer, [], 2)


V100_CONVS = RESULTS / "deepbench_v100_kernels.csv"


@pytest.fixture(scope="module")
def v100_convs():
    return run_study([read_kernel_csv(V100_CONVS)], tensor_constants=kernels).joined


def test_a_convolutions_weight_gradient_splits_its_long_reduction(v100_convs):
    """DeepBench's V100 ResNet 1×1 64→64 on 112×112 at batch 16 (fp16): G is a 64 × 64 output over an
    N·P·Q = 16·112·112 = 200,704-long reduction. Unsplit, its one 64×64 tile runs on one of 80 SMs:
    2·64·64·200,704 FLOP at one SM's 1.5625 TFLOP/s × 0.824 × its L2 feed 32/39.9 = 1.59 ms, 19× the
    measured 82 µs. Split 64 ways the main loop takes 25 µs and the kernel is its reads through HBM:
    (64·200,704 + 200,704·64 + 64·64) · 2 bytes at 0.808 × 900 GB/s, plus one launch (16.0 µs) = 86.7 µs."""
    rows = v100_convs[(v100_convs.layer == "resnet_42") & (v100_convs.batch == 16) & (v100_convs.op == "G")]
    assert len(rows) == 1
    row = rows.iloc[0]
    assert row.measured_seconds == pytest.approx(82e-6)
    k = 16 * 112 * 112
    unsplit = 2 * 64 * 64 * k / (1.5625e12 * A100_KERNELS.gemm * (32 / 39.892258986928105))
    assert unsplit == pytest.approx(1.59e-3, rel=0.01)
    by_hand = (64 * k + k * 64 + 64 * 64) * 2 / (900e9 * A100_KERNELS.memory) + 16.0e-6
    assert row.predicted_seconds == pytest.approx(by_hand, rel=1e-9)
    assert row.predicted_seconds == pytest.approx(row.measured_seconds, rel=0.15)


def test_only_a_convolutions_weight_gradient_is_a_split_k_op():
    """The training path's GEMMs keep the tensor tiles they were fitted with: an fc layer's G and any F
    or D are not marked, and a marked op on a path that splits already (SIMT) is timed the same."""
    from archsim.validation.gpu_algorithms import kernel_ops
    from archsim.workload.layer import Layer

    conv = Layer(name="c", kind="conv", ifmap_h=56, ifmap_w=56, channels=64, filters=64, filter_h=1, filter_w=1,
                 inputs=("prev",))
    fc = Layer(name="f", kind="fc", ifmap_h=1, ifmap_w=1, channels=1024, filters=1024, filter_h=1, filter_w=1)
    assert {op.kind: op.split_k for op in kernel_ops(conv, 8, "exact", 2, "zero-insertion")} == \
        {"F": False, "G": True, "D": False}
    assert not any(op.split_k for op in kernel_ops(fc, 8, "exact", 2, "zero-insertion"))
    spec = KNOWN_GPUS["v100"]
    from archsim.devices.kernel_ops import path_op_seconds
    from archsim.devices.kernels import simt_path

    g = TrainingOp("c", "G", (Gemm(64, 8 * 56 * 56, 64),))
    path = simt_path(spec, FITTED)
    assert path_op_seconds([replace(g, split_k=True)], path, FITTED, 4)[0] == path_op_seconds([g], path, FITTED, 4)[0]


def test_a_one_channel_layers_delta_runs_by_col2im_not_on_a_32_wide_tile():
    """DeepBench's P100 (fp32) DeepSpeech stem, 161×700×1 → 32 filters of 5×20, stride 2, batch 4: δ
    measured 0.482 ms. Its implicit-GEMM δ is an output 1 column wide on tiles ≥ 32 wide (predicted
    41×). By col2im it is one GEMM columns[C·R·S = 100 × N·P·Q = 4·79·341] = Wᵀ[100 × 32]·δout, then a
    memory-bound kernel reading the 100 · 107,756 columns and writing 4·161·700 δ elements (4 bytes
    each) at the P100 datasheet's 732 GB/s × NeuSight's elementwise fraction, plus its launch. The
    arrays view keeps the implicit GEMM, the padded phases (it has no memory term to price col2im's
    scatter)."""
    joined = run_study([read_kernel_csv(RESULTS / "deepbench_tesla-p100_kernels.csv")]).joined
    row = joined[(joined.layer == "deepspeech_1") & (joined.batch == 4) & (joined.op == "D")].iloc[0]
    assert row.measured_seconds == pytest.approx(0.482e-3)
    spec = KNOWN_GPUS["p100-pcie"]
    assert spec.memory_bytes_per_s == pytest.approx(732e9)
    pixels = 4 * 79 * 341
    stream = (100 * pixels + 4 * 161 * 700) * 4 / (732e9 * FITTED.memory) + FITTED.launch_s
    from archsim.devices.kernels import simt_path

    gemm = float(path_gemm_seconds(1, 100, pixels, 32, simt_path(spec, FITTED), FITTED, 4))
    assert row.predicted_seconds == pytest.approx(gemm + stream, rel=1e-9)
    assert 0.4 < row.predicted_seconds / row.measured_seconds < 1.0
    # the arrays view keeps the implicit GEMM: 4 padded phases of 4·⌈161/2⌉·⌈700/2⌉ pixels, each with
    # the 3×10 sub-kernel of 32 filters, into 1 channel
    assert row.macs == 4 * (4 * 81 * 350) * (3 * 10 * 32) * 1


def test_col2im_does_the_forwards_macs():
    """The data gradient is the forward's transpose: by col2im its GEMM has exactly the forward's
    C·R·S·M·N·P·Q MACs, whatever the stride (no zero insertion)."""
    from archsim.validation.gpu_algorithms import col2im_dgrad, kernel_ops
    from archsim.workload.layer import Layer

    for stride in (1, 2, 3):
        layer = Layer(name="s", kind="conv", ifmap_h=40, ifmap_w=30, channels=3, filters=16, filter_h=5, filter_w=3,
                      stride=stride, padding=1, inputs=("prev",))
        f = next(op for op in kernel_ops(layer, 2, "exact", 4, "zero-insertion") if op.kind == "F")
        d = col2im_dgrad(layer, 2, 4)
        assert d.macs == f.macs == 2 * layer.ofmap_h * layer.ofmap_w * 16 * 3 * 5 * 3
        assert d.vector_elements == 3 * 5 * 3 * 2 * layer.ofmap_h * layer.ofmap_w + 2 * 40 * 30 * 3


def test_winograd_dgrad_saves_the_winograd_factor_on_a_3x3_stride_1_layer():
    """δ of a 3×3 stride-1 layer is itself a 3×3 stride-1 convolution (M → C channels over H×W);
    Winograd F(2×2, 3×3) runs it as 16 GEMMs over N·⌈H/2⌉·⌈W/2⌉ tiles: for even H, W that is
    16 / (4 · 9) = 1/2.25 of the direct MACs (Lavin & Gray 2016). Other shapes are left as they are."""
    from archsim.validation.gpu_algorithms import kernel_ops, timed_op
    from archsim.workload.layer import Layer

    layer = Layer(name="v", kind="conv", ifmap_h=28, ifmap_w=28, channels=64, filters=128, filter_h=3, filter_w=3,
                  padding=1, inputs=("prev",))
    d = next(op for op in kernel_ops(layer, 8, "exact", 4, "zero-insertion") if op.kind == "D")
    assert d.macs == 8 * 28 * 28 * 9 * 128 * 64
    wino = timed_op(d, layer, 8, 4, winograd=True)
    assert wino.gemms == (Gemm(8 * 14 * 14, 128, 64, 16),)
    assert wino.macs * 2.25 == d.macs
    assert timed_op(d, layer, 8, 4, winograd=False) == d  # tensor-core kernels: no Winograd recorded
    strided = replace(layer, stride=2)
    ds = next(op for op in kernel_ops(strided, 8, "exact", 4, "stride-aware") if op.kind == "D")
    assert timed_op(ds, strided, 8, 4, winograd=True) == ds


@pytest.mark.parametrize("gpu", ["tesla-p100", "gtx-1080-ti"])
def test_fp32_3x3_stride_1_deltas_are_no_longer_over_predicted_twice(gpu):
    """DeepBench's FP32 sheets: the 26 δ kernels of 3×3 stride-1 layers of ≥ 32 channels were predicted
    at a median 1.8–1.9× their time by the direct GEMM (their 1×1 layers' δ: 0.9–1.1×); by Winograd
    their median is within 20% of the measured time."""
    joined = run_study([read_kernel_csv(RESULTS / f"deepbench_{gpu}_kernels.csv")]).joined
    part = joined[(joined.op == "D") & (joined.filter_h == 3) & (joined.stride == 1) & (joined.channels >= 32)]
    assert len(part) == 26
    ratio = statistics.median((part.predicted_seconds / part.measured_seconds).tolist())
    assert 0.8 < ratio < 1.2
