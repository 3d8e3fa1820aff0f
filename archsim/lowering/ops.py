"""What lowering produces: a layer's training ops (F, G, D and δ's parts) as GEMMs and vector work,
with the bytes they move (:mod:`archsim.lowering.lower` builds them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, cast

from archsim.errors import InputError
from archsim.modes import MODES, Mode  # one definition, imported from archsim.modes by every user
from archsim.value_parsers import check_choice

if TYPE_CHECKING:  # in annotations only
    from archsim.workload.layer import Layer

OpKind = Literal["F", "G", "D", "D1", "D2"]


@dataclass(frozen=True)
class Gemm:
    """``count`` independent GEMMs out[m×n] = A[m×k]·B[k×n], run one after another."""

    m: int
    k: int
    n: int
    count: int = 1

    def __post_init__(self) -> None:
        for name in ("m", "k", "n", "count"):
            if getattr(self, name) <= 0:
                raise InputError(f"GEMM dimension must be positive, got {getattr(self, name)}", field=name)

    @property
    def macs(self) -> int:
        return self.m * self.k * self.n * self.count


@dataclass(frozen=True)
class TrainingOp:
    """One training operation of one layer.

    gemms: the systolic-array work (empty for vector-unit layers).
    vector_elements: element operations on the vector unit (non-GEMM layers); on a GPU the HBM traffic of the
        op's memory-bound kernels, elements read plus written, in elements of the training dtype (bytes ÷ its
        element size, which prices them: a 1-byte mask is ½ element in fp16/bf16 and ¼ in fp32, an fp32 value
        2 and 1) — one unit for every op list (:mod:`archsim.training.kernel_bytes`).
    out_bytes: bytes of the tensor the op produces (activation, weight gradient, δ or its part).
    extra_bytes: bytes a split op must receive beyond the unsplit op's inputs (weight slice,
        partial sums to merge) — LayerPipe's "additional communication".
    fused: the GEMMs run in one kernel that keeps their intermediates on chip (FlashAttention): on a
        GPU its time is the larger of the GEMMs' compute (with its non-matmul work) and ``vector_elements``' HBM
        traffic, one launch.
    exps, lane_ops: a fused op's non-matmul work inside the kernel — special-function results (exponentials,
        logarithms, reciprocals) and FP32 row-wise operations (an FMA one) — which it runs beside its GEMMs
        (:mod:`archsim.devices.nonmatmul`); 0 for every other op.
    int_ops: a fused op's 32-bit integer instructions, one per result (its attention dropout's
        Philox random numbers and masks, :func:`archsim.training.flash_blocks.dropout_int_ops`); 0 else.
    int_mults: of ``int_ops``, the 32-bit multiplies (Philox's ``mul.wide.u32``), which the energy model prices
        above the rest (:func:`archsim.energy.model.nonmatmul_picojoules`); 0 else.
    smem_bytes: a fused op's shared-memory bytes, read and written, which its GEMMs wait on where the SMs'
        shared memory is slower than their tensor cores (:func:`archsim.devices.nonmatmul.smem_seconds`); 0 else.
    kernel: for a memory-bound op that is one softmax or layer-norm kernel, (op, rows, row) — the kernel
        model's name (``softmax`` or ``ln``) and the B × H tensor it works on
        (:mod:`archsim.devices.kernel_ops`); empty: an elementwise kernel moving ``vector_elements``.
    kernel_dtype: the dtype that kernel runs in when it is not the training dtype (eager AMP's fp32
        log-softmax of fp16 training); empty: the training dtype.
    split_k: the library's kernel for these GEMMs cuts their reduction into parts where that finishes
        first (split-K), on a GPU tile path that does not already (the tensor tiles): a convolution's
        weight gradient in cuDNN, whose N·P·Q reduction dwarfs its C·R·S × M output
        (:func:`archsim.validation.gpu_algorithms.kernel_ops`). Ignored by the array cost models.
    streamed_elements: the HBM elements the op's unfused kernel reads plus writes where they differ from
        ``vector_elements`` (the array lowering's element operations, which price the vector unit's cycles and
        energy: :func:`archsim.lowering.streamed.layer_streamed`), what a device's op timing streams
        (:func:`archsim.chip_time.chip_seconds`); None: ``vector_elements`` are those elements (train's op lists).
    gemm_dtype: the format of the GEMMs' operands A and B when it is not the training dtype — ``fp8``, a linear
        layer's GEMMs under Transformer Engine's recipe (:mod:`archsim.training.fp8_ops`), at the device's fp8
        peak, 1 byte an operand, C still the training dtype's; empty: the training dtype. Ignored by the array
        cost models.
    """

    layer: str
    kind: str
    gemms: tuple[Gemm, ...]
    vector_elements: int = 0
    out_bytes: int = 0
    extra_bytes: int = 0
    fused: bool = False
    exps: int = 0
    lane_ops: int = 0
    int_ops: int = 0
    int_mults: int = 0
    smem_bytes: int = 0
    kernel: tuple[str, int, int] | tuple[()] = ()
    kernel_dtype: str = ""
    split_k: bool = False
    gemm_dtype: str = ""
    streamed_elements: int | None = None

    @property
    def macs(self) -> int:
        return sum(g.macs for g in self.gemms)


@dataclass(frozen=True)
class LayerTensors:
    """Bytes a pipeline stage boundary moves around one layer (LayerPipe Table II)."""

    activation_bytes: int  # layer output, sent forward if a stage ends after the layer
    delta_bytes: int  # δ of the layer input, sent backward if a stage starts at the layer
    weight_bytes: int  # the layer's weights (bias excluded)


@dataclass(frozen=True)
class LoweredLayer:
    layer: Layer
    ops: tuple[TrainingOp, ...]
    tensors: LayerTensors

    def op(self, kind: str) -> TrainingOp | None:
        return next((op for op in self.ops if op.kind == kind), None)

    def required_op(self, kind: str) -> TrainingOp:
        """The op of ``kind``, where the caller only reaches layers that have one."""
        op = self.op(kind)
        if op is None:
            raise InputError(f"layer {self.layer.name!r} has no {kind} op")
        return op


def check_mode(mode: str) -> Mode:
    """``mode`` as a :data:`Mode`, or an error naming it."""
    check_choice(mode, MODES, "mode")  # --mode's line
    return cast(Mode, mode)
