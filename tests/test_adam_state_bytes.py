"""Adam's fp32 state bytes per parameter (main weight, momentum, variance: 3 × 4) have one home,
archsim.training.memory.ADAM_STATE_BYTES, read by the memory a GPU holds and by the bytes the optimizer step moves;
the figures are Megatron-LM's docs/api-guide/dist_optimizer.md table and the step's reads and writes, by hand."""

from __future__ import annotations

import pytest

from archsim.training.iteration import FP32_OPTIMIZER_BYTES_PER_PARAMETER, optimizer_step_bytes
from archsim.training.memory import (
    ADAM_STATE_BYTES,
    FP32_STATE_BYTES,
    FSDP_STATE_BYTES,
    gradient_bytes,
    main_grad_copy_bytes,
    state_bytes,
    unsharded_state_bytes,
)


def test_the_constants_by_hand():
    assert ADAM_STATE_BYTES == 3 * 4  # fp32 main weight, momentum, variance
    assert FP32_STATE_BYTES == FSDP_STATE_BYTES == 16  # fp32 weight (or parameter), gradient, m, v
    assert FP32_OPTIMIZER_BYTES_PER_PARAMETER == 16 + 12  # all four read, all but the gradient written


@pytest.mark.parametrize(("dtype", "held", "moved"), [("fp16", 20, 32), ("bf16", 18, 34), ("fp32", 16, 28)])
def test_held_and_moved_per_parameter(dtype, held, moved):
    assert state_bytes(dtype) == held  # the table's first column
    assert optimizer_step_bytes(dtype) == moved


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_the_step_reads_and_writes_each_adam_state_the_memory_holds(dtype):
    """What a GPU holds beyond the weight, its gradient buffer and the step's fp32 gradient copy is Adam's states;
    the step reads and writes each of those once, besides writing the weight and reading the gradient."""
    adam = state_bytes(dtype) - unsharded_state_bytes(dtype) - main_grad_copy_bytes(dtype)
    reads = 3 if dtype == "fp16" else 2
    assert optimizer_step_bytes(dtype) == 2 * adam + 2 + reads * gradient_bytes(dtype)  # the 16-bit weight written: 2
