"""bf16 training keeps and reduces gradients in fp32, as Megatron-LM does (``--bf16`` sets
``accumulate_allreduce_grads_in_fp32``): the gradient buffer is 4 bytes per parameter, so the model
states are 2 (bf16 weight) + 4 (fp32 gradient) + 12 (fp32 master weight, momentum, variance) = 18 bytes
per parameter, the DP all-reduce and the tied embedding's all-reduce move 4 bytes per parameter, and the
optimizer step and an unfused accumulation pass read (and write) the 4-byte buffer. fp16 keeps its 2-byte
gradient (2-byte all-reduce) and copies it to fp32 at the step (20 bytes per parameter, a 32-byte step:
tests/test_fp16_states.py)."""

from dataclasses import replace
from pathlib import Path

import pytest

from archsim.api import train
from archsim.collectives import collective_seconds
from archsim.devices.device_file import load_device
from archsim.devices.kernels import stream_seconds
from archsim.energy.table import access_energies
from archsim.training.cluster_file import single_node
from archsim.training.energy import array_iteration_joules, device_array
from archsim.training.grad_accumulation import unfused_pass_seconds
from archsim.training.parallel import Parallelism
from archsim.training.search_fit import memory_fits
from archsim.training.search_space import peak_memory_bytes
from archsim.training.stage_split import planned_split
from archsim.workload.layer_parameters import layer_parameters
from archsim.workload.transformer import TransformerConfig

# 4 GPT layers, h = 256, a vocabulary that needs no padding (a multiple of 128), 128 learned positions
GPT = TransformerConfig("gpt-small", "gpt", 4, 256, 4, 1024, 128, 1024, 4, True, 128)
WEIGHT_AND_ADAM = {"fp16": 2 + 12, "bf16": 2 + 12}  # the weight in its dtype; Adam's fp32 master, m, v
GRADIENT = {"fp16": 2, "bf16": 4}  # Megatron's main_grad: fp16 stays fp16, bf16's is fp32
STEP_COPY = {"fp16": 4, "bf16": 0}  # the step's fp32 copy of the gradient: main_grad.float() copies fp16 only


def _run(dtype: str, pp: int):
    cluster = single_node("a100-80gb", 4 * pp)
    result, _ = train(GPT, cluster=cluster, global_batch=8, pp=pp, dp=4, dtype=dtype, recompute="none")
    par = Parallelism(1, pp, 4, 8, 1, "none", attention="flash")
    return result, replace(cluster.machine(par), dtype=dtype)


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_model_states_hold_the_gradient_buffer_at_megatrons_width(dtype):
    result, _ = _run(dtype, 1)
    (memory,) = result.memory
    params = GPT.parameter_count  # one stage, TP 1, no padding: the whole model
    assert memory.parameters == params
    assert memory.states == params * (WEIGHT_AND_ADAM[dtype] + GRADIENT[dtype] + STEP_COPY[dtype])


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_dp_all_reduce_moves_the_gradient_buffer(dtype):
    result, machine = _run(dtype, 2)
    per_stage = 2 * layer_parameters(GPT)
    first = per_stage + GPT.vocab * GPT.hidden + GPT.positions * GPT.hidden  # token table, positions
    last = per_stage + 2 * GPT.hidden + GPT.vocab * GPT.hidden  # final LayerNorm, the tied head's copy
    for post, params in zip(result.post, (first, last)):
        expected = collective_seconds("all-reduce", params * GRADIENT[dtype], 4, machine.links.dp)
        assert post["dp_allreduce"] == pytest.approx(expected, rel=1e-12)
        tied = collective_seconds("all-reduce", GPT.vocab * GPT.hidden * GRADIENT[dtype], 2,
                                  machine.links.embedding or machine.links.pp)
        assert post["embedding_allreduce"] == pytest.approx(tied, rel=1e-12)


def test_search_sizes_bf16_states_as_train_does():
    par = Parallelism(1, 1, 4, 8, 1, "none", attention="flash")
    bf16, fp16 = (peak_memory_bytes(GPT, par, dtype) for dtype in ("bf16", "fp16"))
    # bf16's gradient buffer is 2 bytes wider; fp16's step holds a 4-byte fp32 copy of its buffer
    assert bf16 - fp16 == pytest.approx(-2 * GPT.parameter_count, rel=1e-12)
    result, _ = _run("bf16", 1)
    assert result.memory[0].total == pytest.approx(bf16, rel=1e-12)
    fp16_cluster = single_node("a100-80gb", 4)
    cluster = replace(fp16_cluster, dtype="bf16")  # a search's check reads the cluster's dtype
    assert memory_fits(GPT, cluster, par, [bf16]) == (pytest.approx(bf16, rel=1e-12), True)
    assert memory_fits(GPT, fp16_cluster, par, [bf16]) == (pytest.approx(fp16, rel=1e-12), False)


def test_planned_split_sizes_bf16_states():
    """A GPU exactly as large as the bf16 run's memory: the bf16 plan fits, the fp16 one (2 bytes more per
    parameter: its step's fp32 gradient copy, less bf16's wider buffer) does not."""
    par = Parallelism(1, 1, 4, 8, 1, "none", attention="flash")
    machine = single_node("a100-80gb", 4).machine(par)
    capacity = peak_memory_bytes(GPT, par, "bf16")
    assert planned_split(GPT, par, [replace(machine, dtype="bf16")], [capacity]) is not None
    assert planned_split(GPT, par, [machine], [capacity]) is None


# Megatron's optimizer step per parameter: fp32 master, m, v read and written (24), the weight written in its
# dtype (2), and the gradient buffer read by Adam and the norm, and in fp16 by the loss scaler's unscale and
# overflow check too (bf16 has no grad scaler in Megatron-LM without --loss-scale)
STEP = {"fp16": 24 + 2 + 3 * 2, "bf16": 24 + 2 + 2 * 4}
# one unfused accumulation add: the held gradient read and written at the buffer's width, the new one read (2)
ACCUMULATE = {"fp16": 2 * 2 + 2, "bf16": 2 * 4 + 2}


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_optimizer_step_reads_the_gradient_buffer(dtype):
    result, machine = _run(dtype, 1)
    moved = GPT.parameter_count * STEP[dtype]  # one stage, TP 1, no padding: the whole model
    expected = stream_seconds(moved, machine.gpu.hbm_bytes_per_s, machine.efficiency, kernels=4)
    assert result.post[0]["optimizer"] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_unfused_accumulation_adds_into_the_gradient_buffer(dtype):
    par = Parallelism(1, 1, 4, 8, 1, "none", attention="flash", grad_accumulation="unfused")  # m = 2
    machine = replace(single_node("a100-80gb", 4).machine(par), dtype=dtype)
    moved = GPT.parameter_count * ACCUMULATE[dtype]
    expected = stream_seconds(moved, machine.gpu.hbm_bytes_per_s, machine.kernels.memory_bound, kernels=0)
    assert unfused_pass_seconds(GPT, par, machine, GPT.layers, True, True) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_array_energy_prices_the_optimizer_steps_bytes(dtype):
    """An array device's optimizer step costs its bytes at the DRAM read energy per word (2-byte words)."""
    device = load_device(Path(__file__).resolve().parents[1] / "configs" / "devices" / "tpu_v4_like.toml")
    par = Parallelism(1, 1, 4, 8, 1, "none", attention="flash")
    params = 1e6
    step = (array_iteration_joules(GPT, par, device, dtype, parameters=params)
            - array_iteration_joules(GPT, par, device, dtype, parameters=0.0))
    per_word = access_energies(device_array(device, dtype)).dram_read_pj
    assert step == pytest.approx(params * STEP[dtype] / 2 * per_word * 1e-12, rel=1e-9)
