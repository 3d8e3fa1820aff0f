"""The flag choices of devices and arrays (:mod:`archsim.devices`, :mod:`archsim.array`)."""

from __future__ import annotations

DTYPES = ("fp32", "fp16", "bf16")  # a GEMM of a dtype runs at the device's peak of that name: on a GPU
# fp16/bf16 on the tensor cores, fp32 on the FP32 lanes (PyTorch's default for fp32 matmuls:
# ``torch.backends.cuda.matmul.allow_tf32`` is False since PyTorch 1.12, so TF32 is not used)
TRAIN_DTYPE = "fp16"  # train's, search's and plan's --dtype when not given: what a device's chip is charged at
ELEMENT_BYTES = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2}  # bytes per element of every dtype name archsim knows
# Transformer Engine's 8-bit floats (E4M3, E5M2): the operands of a linear layer's GEMMs under train's --fp8, 1 byte
# each, never a training dtype (the higher precision stays --dtype's: training/fp8_ops.py)
FP8 = "fp8"
GEMM_OPERAND_BYTES = {**ELEMENT_BYTES, FP8: 1}  # bytes per GEMM operand element: a training dtype's, or fp8's
TORCH_DTYPES = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}  # PyTorch's dtype names → archsim's
# What the array commands (``archsim cost``, ``energy``) and ``archsim.cost`` take as --dtype: train's
# names, plus the 1-byte word SCALE-Sim counts in (its DRAM and SRAM figures are words), which stays their
# default: the LayerPipe reproduction and the SCALE-Sim exactness checks count in it. The energy tables'
# 1-byte figures are an int8 MAC accumulated in int32, so the word is named int8.
SCALESIM_DTYPE = "int8"
ARRAY_DTYPES = (SCALESIM_DTYPE, *DTYPES)
# What ``cost``, ``energy``, ``gemm``, ``pipeline`` and ``schedule`` (and their API functions) take besides: fp8, one
# GEMM or layer as train --fp8 prices its linear GEMMs on a device's arrays (its macs_per_pe rate, 1-byte words, the
# energy table's fp8 MAC: archsim.energy.table.fp8_mac_pj); plan's, bppsa rnn's and an array sweep's dtypes too
FP8_ARRAY_DTYPES = (*ARRAY_DTYPES, FP8)
ARRAY_ELEMENT_BYTES = {SCALESIM_DTYPE: 1, **{name: ELEMENT_BYTES[name] for name in DTYPES}, FP8: 1}
DEVICE_SUFFIXES = (".toml", ".cfg")  # a device file: a TOML, or a SCALE-Sim .cfg with archsim's device sections
NCCL_FIT = "nccl"  # a device file's [links] efficiency naming NVIDIA's NCCL fit (archsim.links.A100_NVLINK) for its fabric
GEMM_MODELS = ("tiles", "arrays")  # a device's [device] gemm: a GPU library's output tiles, or SCALE-Sim's arrays
# a device file's [memory] dram_traffic: each GEMM's HBM words on a gemm = "arrays" device, operands once each, or
# SCALE-Sim's memory model's count for its SRAMs (archsim.array.dram_traffic); the first is the default
DRAM_TRAFFIC = ("compulsory", "scalesim")
ENGINES = ("analytic", "cycle")  # how an array is costed: closed form, or stepped cycle by cycle
DELTA_OPTIONS = ("transposed", "dense")  # a sparse layer's δ: through the transposed sparse weights, or dense
GRADIENT_OPTIONS = ("dense", "masked")  # a sparse layer's weight gradient: every weight's, or the kept ones'
