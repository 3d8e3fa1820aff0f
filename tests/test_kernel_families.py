"""Which constants time which kernel family (archsim.devices.kernel_ops.kernel_families), and eager
PyTorch's memory-bound kernels timed as PyTorch's kernels of their class.

References: the H200's datasheet (4.8 TB/s HBM3e, 132 SMs, 256 KiB of L1/shared memory per SM,
2,048 threads per SM), NeuSight's fitted fractions and launch time (kernels.FITTED), PyTorch's softmax
kernels (warp softmax for rows of at most 1,024 elements: one read, one write; block softmax with
16-byte loads and at most 1,024 threads) — each expected time below is worked out by hand from them.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from archsim.devices.catalog import chip_of
from archsim.devices.device import catalog_device
from archsim.devices.kernel_constants import FITTED
from archsim.devices.kernel_ops import KernelFamilies, kernel_families, op_seconds
from archsim.devices.kernels import memory_bound_seconds
from archsim.lowering import TrainingOp
from archsim.training.cluster_file import single_node
from archsim.training.eager_ops import eager_block_work, eager_head_work
from archsim.training.fitted import A100_KERNELS
from archsim.training.iteration import machine_op_seconds
from archsim.training.parallel import Parallelism
from archsim.workload.transformer import TransformerConfig

H200 = catalog_device("h200-141gb")
HBM = 4.8e12  # bytes/s, the H200's datasheet
PYTORCH = KernelFamilies(A100_KERNELS, FITTED, pytorch=True)  # kernel_families(..., pytorch_memory_bound=True)


def test_the_h200_datasheet_figures_the_hand_sums_use():
    chip = chip_of(H200)
    assert chip is not None
    assert (H200.hbm_bytes_per_s, chip.sm_count, chip.l1_bytes, chip.threads_per_sm) == (HBM, 132, 256 * 1024, 2048)


def test_an_eager_fp16_warp_softmax_is_timed_by_its_class_on_rows_times_row():
    # gpu_train_measure.py's GPT, micro-batch 1: 16 heads × 1,024 query rows of 1,024 fp16 scores each
    rows, row = 16 * 1024, 1024
    op = TrainingOp("softmax", "F", (), vector_elements=2 * rows * row, kernel=("softmax", rows, row))
    by_hand = 2 * rows * row * 2 / (HBM * 0.646) + 16.0e-6  # warp softmax: read + write at NeuSight's 0.646
    got = op_seconds([op], H200, PYTORCH, "fp16")[0]
    assert got == pytest.approx(by_hand, rel=1e-12)
    assert got == pytest.approx(float(memory_bound_seconds("softmax", rows, row, chip_of(H200), FITTED, "fp16")),
                                rel=1e-12)
    assert PYTORCH == kernel_families(H200, "fp16", A100_KERNELS, pytorch_memory_bound=True)


def test_the_fp32_log_softmax_of_fp16_training_is_a_block_softmax_at_fp32():
    tokens, vocab = 8 * 1024, 50304
    op = TrainingOp("log_softmax", "F", (), vector_elements=4 * tokens * vocab, kernel=("softmax", tokens, vocab),
                    kernel_dtype="fp32")
    # block softmax: min(50,304 / 4 per 16-byte load, 1,024) / 2 = 512 threads, 2,048 / 512 = 4 rows per SM
    # (fewer than the 63 rows each of 132 SMs gets), 4 × 50,304 × 4 bytes against 256 KiB of L1
    missed = 1 - 256 * 1024 / (4 * vocab * 4)
    by_hand = (2 + 2 * missed) * tokens * vocab * 4 / (HBM * 0.646) + 16.0e-6
    assert op_seconds([op], H200, PYTORCH, "fp16")[0] == pytest.approx(by_hand, rel=1e-12)
    fp16 = replace(op, kernel_dtype="")
    assert op_seconds([fp16], H200, PYTORCH, "fp16")[0] < by_hand  # half the bytes: the dtype is the kernel's


def test_backward_and_elementwise_kernels_stream_at_their_class_fraction():
    x = 1024 * 2048
    ops = [TrainingOp("norm", "D", (), vector_elements=3 * x, kernel=("ln", 1024, 2048)),
           TrainingOp("dropout", "F", (), vector_elements=5 * x)]
    by_hand = [3 * x * 2 / (HBM * 0.791) + 16.0e-6, 5 * x * 2 / (HBM * 0.769) + 16.0e-6]
    assert list(op_seconds(ops, H200, PYTORCH, "fp16")) == pytest.approx(by_hand, rel=1e-12)


def _machine(implementation: str, dtype: str = "fp16", name: str = "h200"):
    par = Parallelism(1, 1, 1, 1, 1, "none")
    return replace(single_node(name, 1).machine(par), implementation=implementation, dtype=dtype)


@pytest.mark.parametrize("implementation", ["megatron", "pytorch-eager"])
def test_fp16_kernels_keep_the_training_fit_in_either_implementation(implementation):
    machine = _machine(implementation)
    assert machine.kernels == KernelFamilies(machine.efficiency, machine.efficiency, pytorch=False)
    rows, row = 16 * 1024, 1024
    op = TrainingOp("softmax", "F", (), vector_elements=2 * rows * row, kernel=("softmax", rows, row))
    by_hand = 2 * rows * row * 2 / (HBM * 0.808) + 32.4e-6  # vTrain's one fraction and per-kernel gap
    assert machine_op_seconds([op], machine)[0] == pytest.approx(by_hand, rel=1e-12)


def test_fp32_on_a_catalog_gpu_takes_pytorchs_kernels_and_a_device_file_its_own():
    machine = _machine("pytorch-eager", "fp32", "Tesla_V100-PCIE-32GB")
    queued = replace(machine.pytorch_constants, launch_s=0.0)  # inside a training step kernels queue
    assert machine.kernels == KernelFamilies(queued, queued, pytorch=True)
    own = replace(A100_KERNELS, launch_s=1e-6)
    device = replace(H200, gemm="arrays")
    assert kernel_families(device, "fp32", own) == kernel_families(device, "fp16", own, pytorch_memory_bound=True) \
        == KernelFamilies(own, own)


def test_an_fp32_kernel_pays_its_launch_alone_and_none_queued_inside_a_step():
    """The same V100 fp32 layer norm: timed alone (validate-gpu) it pays NeuSight's 16.0 µs launch;
    inside a training step it queues behind the kernel before it and pays none."""
    v100 = catalog_device("v100-pcie-32gb")
    op = TrainingOp("norm", "F", (), vector_elements=2 * 512 * 1024, kernel=("ln", 512, 1024))
    alone = op_seconds([op], v100, kernel_families(v100, "fp32", A100_KERNELS, FITTED, alone=True), "fp32")[0]
    in_step = op_seconds([op], v100, kernel_families(v100, "fp32", A100_KERNELS, FITTED), "fp32")[0]
    assert alone - in_step == pytest.approx(16.0e-6, rel=1e-9)
    assert in_step > 0


def test_a_kernel_timed_alone_pays_the_launch_fitted_on_kernels_timed_alone():
    """A kernel benchmark (DeepBench, validate-gpu) runs kernels back to back: an fp16 H200 softmax
    streams at vTrain's one fraction as in training, plus NeuSight's 16.0 µs launch (fitted on kernels
    timed alone) instead of the 32.4 µs in-iteration gap; a device file keeps its own launch."""
    rows, row = 16 * 1024, 1024
    op = TrainingOp("softmax", "F", (), vector_elements=2 * rows * row, kernel=("softmax", rows, row))
    alone = kernel_families(H200, "fp16", A100_KERNELS, FITTED, alone=True)
    by_hand = 2 * rows * row * 2 / (HBM * 0.808) + 16.0e-6
    assert op_seconds([op], H200, alone, "fp16")[0] == pytest.approx(by_hand, rel=1e-12)
    own = replace(A100_KERNELS, launch_s=1e-6)
    device = replace(H200, gemm="arrays")
    assert kernel_families(device, "fp16", own, alone=True) == KernelFamilies(own, own)


def test_the_eager_op_list_names_pytorchs_kernels():
    c = TransformerConfig("t", "gpt", 2, 64, 4, 1000, 32, 256, 4, True, 32)  # s 32, h 64, a 4
    b = 3
    work = eager_block_work(c, b)
    named = {(op.layer, op.kind): op.kernel for op in (*work.forward, *work.backward) if op.kernel}
    norm, softmax = ("ln", 32 * 3, 64), ("softmax", 3 * 4 * 32, 32)
    assert named == {("norm1", "F"): norm, ("norm1", "D"): norm, ("norm1.dgamma", "D"): norm,
                     ("norm2", "F"): norm, ("norm2", "D"): norm, ("norm2.dgamma", "D"): norm,
                     ("softmax", "F"): softmax, ("softmax", "D"): softmax}
    head = eager_head_work(c, b)
    log_softmax = [op for op in (*head.forward, *head.backward) if op.layer == "log_softmax"]
    assert {(op.kernel, op.kernel_dtype) for op in log_softmax} == {(("softmax", 32 * 3, 1024), "fp32")}
