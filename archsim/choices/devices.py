"""The flag choices of devices and arrays (:mod:`archsim.devices`, :mod:`archsim.array`)."""

from __future__ import annotations

DTYPES = ("fp32", "fp16", "bf16")  # a GEMM of a dtype runs at the device's peak of that name: on a GPU
# fp16/bf16 on the tensor cores, fp32 on the FP32 lanes (PyTorch's default for fp32 matmuls:
# ``torch.backends.cuda.matmul.allow_tf32`` is False since PyTorch 1.12, so TF32 is not used)
ENGINES = ("analytic", "cycle")  # how an array is costed: closed form, or stepped cycle by cycle
DELTA_OPTIONS = ("transposed", "dense")  # a sparse layer's δ: through the transposed sparse weights, or dense
GRADIENT_OPTIONS = ("dense", "masked")  # a sparse layer's weight gradient: every weight's, or the kept ones'
