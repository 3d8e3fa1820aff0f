"""The flag choices of GPU training (``archsim train``, ``archsim search``, :mod:`archsim.training`)."""

from __future__ import annotations

RECOMPUTE = ("none", "selective", "full")
# the longest sequence (tokens per sample) --seq, a device sweep's seq and a transformer config take (workload LIMITS)
MAX_SEQ = 2**20
ATTENTIONS = ("standard", "flash")  # attention's kernels: Megatron's unfused core, or FlashAttention-2
# What `archsim train`, `search` and the API run unless told: what Megatron-LM runs today (Megatron Core
# with Transformer Engine: a fused flash or cuDNN attention). Parallelism's own default stays "standard",
# the measured Megatron-DeepSpeed runs' attention, which the library's checks against them rely on.
DEFAULT_ATTENTION = "flash"
# how the data-parallel group holds the training states: replicated with an all-reduce, Megatron-LM's distributed
# optimizer (ZeRO-1), PyTorch FSDP's full sharding (ZeRO-3) (Parallelism.sharding, training/dp_sharding.py)
SHARDINGS = ("none", "distributed-optimizer", "fsdp")
# when FSDP frees a unit's gathered parameters: after its forward (FULL_SHARD, gathered again for the backward) or
# after its backward only (Llama 3's: "we do not reshard after forward computation", training/fsdp.py)
FSDP_RESHARDS = ("after-forward", "none")
# when FSDP reduce-scatters the gradients: after each micro-batch's backward (FSDP's own, into sharded gradients) or
# once a step per pipeline stage after its last backward (PyTorch's pipeline runtime: set_requires_gradient_sync
# False in each backward, its REDUCE_GRAD action after the last; training/fsdp.py)
FSDP_GRAD_SYNCS = ("micro-batch", "step")
# whether a pipeline rank's next pass waits for its p2p sends: overlapped (the transfers run beside it), blocking
# (Megatron-LM's non-interleaved 1F1B, _communicate(wait_on_reqs=True); 2021's Megatron every schedule) or megatron
# (blocking on 1f1b and on interleaved-1f1b of one chunk, which Megatron-LM runs as 1f1b; overlapped elsewhere: today's
# interleaved schedule's overlap_p2p_comm) (Parallelism.p2p_blocking)
P2P_MODES = ("overlapped", "blocking", "megatron")
# train's and search's --p2p default, every signature's p2p= and a row's unsaid p2p: as Megatron-LM runs the schedule
# (issue #40), since 2026-12-05; overlapped until then
DEFAULT_P2P = "megatron"
P2P_HELP = ("pipeline hops: a rank's next pass runs while its send is in flight (overlapped), "
            "waits for it to end (blocking: Megatron-LM's non-interleaved 1F1B, wait_on_reqs), or "
            "as Megatron-LM runs the schedule (megatron: blocking on 1f1b and on interleaved-1f1b of one chunk, "
            "overlapped elsewhere); "
            f"default {DEFAULT_P2P}; docs/training.md")  # train's and search's --p2p help, one text
DP_OVERLAPS = ("none", "bucketed")  # the DP all-reduce after the backward, or bucketed under it (dp_overlap.py)
# how context parallelism exchanges K/V: TransformerEngine's cp_comm_type p2p (a ring overlapped with attention,
# Megatron-LM's default), all_gather (Llama 3's) (training/context_parallel.py) or a2a (DeepSpeed-Ulysses: Q, K, V
# and the output all-to-all'd between sequence and head sharding, training/context_parallel_a2a.py) or a2a+p2p (an
# all-to-all inside groups of A ranks, p2p's ring over P of them: training/context_parallel_hierarchy.py)
CP_COMMS = ("p2p", "all_gather", "a2a", "a2a+p2p")
# search's --etp word beside its integers: each candidate's experts split over its own TP (Megatron-LM's default
# --expert-tensor-parallel-size), the one value a search tries unless told (training/search_experts.py)
ETP_TP = "tp"
# train's and search's --fp8: Megatron-LM's --fp8-format under Transformer Engine's delayed scaling, hybrid (E4M3
# forward, E5M2 gradients) or e4m3 (E4M3 both ways); off unless given (training/fp8_ops.py)
FP8_RECIPES = ("hybrid", "e4m3")
IMPLEMENTATIONS = ("megatron", "pytorch-eager")  # whose op list runs (training/eager_ops.py)
# train's --attention unless given, per implementation: plain PyTorch's op list runs the standard core unless told
# flash (F.scaled_dot_product_attention's FlashAttention-2 backend, fp16/bf16: training/eager_ops.py)
IMPLEMENTATION_ATTENTION = {"megatron": DEFAULT_ATTENTION, "pytorch-eager": "standard"}
# the weight gradient added into the held one inside its GEMM (Megatron-LM's --gradient-accumulation-fusion,
# 2022), or by a separate pass after each micro-batch's backward but the first (training/grad_accumulation.py)
GRAD_ACCUMULATIONS = ("fused", "unfused")
OBJECTIVES = ("time", "cost", "energy")  # what search minimises per iteration (training/objectives.py)
PLACEMENTS = ("file", "planned")  # which servers run which pipeline ranks (training/placement.py)
BALANCES = ("even", "planned")  # layers per pipeline stage (training/stage_split.py)
# schedule name → whether it runs v > 1 chunks per rank (interleaved) — the orders the training model times
# (the schedules train and search time, TRAINING_SCHEDULES, are archsim/choices/schedules.py's, with every other)
# Schedule actions search's --refine may simulate (counted before the first): measured about 2.5 µs each
# (17·10⁶ estimated took 46 s on gpt_1024h_24l.json, 3·10⁶ the 1T GPT's default re-timing 4.8 s in all)
MAX_REFINE_ACTIONS = 5_000_000
# the Hugging Face config.json model_types the loader reads (archsim/workload/hf_config.py; docs/formats.md lists
# the fields of each): the array commands refuse the mixtures and Switch, search Switch (one GPU, train's alone)
HF_MODEL_TYPES = ("gpt2", "opt", "llama", "mistral", "qwen2", "qwen3", "gemma", "bert", "switch_transformers",
                  "mixtral", "qwen3_moe", "qwen2_moe", "deepseek_v2", "deepseek_v3")
