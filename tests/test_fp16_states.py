"""Model states per parameter in fp16, from the optimizers' own source.

Megatron-LM (``megatron/core/optimizer/optimizer.py``, ``Float16OptimizerWithFloat16Params``): the fp16
weight (2) and its fp16 ``main_grad`` buffer (2: ``--fp16`` leaves ``accumulate_allreduce_grads_in_fp32``
off), the fp32 main weight made by ``param.detach().clone().float()`` (4), Adam's fp32 m and v (8), and at
the step ``_copy_model_grads_to_main_grads``'s ``main_param.grad = model_param.main_grad.float()``, a new
fp32 gradient (4; the contiguous buffer is not freed): 20, the fp16 row of Megatron-LM's
``docs/api-guide/dist_optimizer.md`` table. In bf16 the buffer is already fp32 and ``.float()`` copies
nothing: 2 + 4 + 4 + 8 = 18, the table's bf16 row.

``benchmarks/train_step.py`` (``--implementation pytorch-eager`` in fp16) does the same with fp16 params and
no persistent buffer: once copied, each fp16 gradient is freed (``p.grad = None``), so at its step 2 + 4 +
4 + 8 = 18 are held.
"""

from archsim.api import train
from archsim.training.cluster_file import single_node
from archsim.training.memory import state_bytes
from archsim.workload.transformer import TransformerConfig

# 4 GPT layers, h = 256, a vocabulary that needs no padding (a multiple of 128), 128 learned positions
GPT = TransformerConfig("gpt-small", "gpt", 4, 256, 4, 1024, 128, 1024, 4, True, 128)

MEGATRON_FP16_STATES = 2 + 2 + 4 + 4 + 8  # fp16 weight, fp16 main_grad, fp32 main weight, fp32 grad copy, m, v
MEGATRON_BF16_STATES = 2 + 4 + 4 + 8  # bf16 weight, fp32 main_grad (.float() aliases it), main weight, m, v
EAGER_FP16_STATES = 2 + 4 + 4 + 8  # fp16 weight, fp32 master grad (the fp16 one freed), master weight, m, v


def test_state_bytes_follow_megatrons_and_train_steps_optimizers():
    assert state_bytes("fp16") == MEGATRON_FP16_STATES == 20
    assert state_bytes("bf16") == MEGATRON_BF16_STATES == 18
    assert state_bytes("fp16", "pytorch-eager") == EAGER_FP16_STATES == 18


def test_train_holds_megatrons_fp16_bytes():
    cluster = single_node("a100-80gb", 4)
    result, _ = train(GPT, cluster=cluster, global_batch=8, pp=1, dp=4, dtype="fp16", recompute="none")
    (memory,) = result.memory
    params = GPT.parameter_count  # one stage, TP 1, no padding: the whole model
    assert memory.parameters == params
    assert memory.states == params * MEGATRON_FP16_STATES


def test_eager_train_holds_train_steps_fp16_bytes():
    result, _ = train(GPT, cluster=single_node("a100-80gb", 1), global_batch=8, micro_batch=4, dtype="fp16",
                      implementation="pytorch-eager", attention="standard", recompute="none")
    (memory,) = result.memory
    assert memory.states == GPT.parameter_count * EAGER_FP16_STATES
