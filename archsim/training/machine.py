"""What one pipeline rank trains on: its device, kernel constants, links, op list and precision."""

from __future__ import annotations

from dataclasses import dataclass

from archsim.choices.devices import DTYPES, ELEMENT_BYTES
from archsim.choices.training import IMPLEMENTATIONS
from archsim.collectives import LinkClass, Spanning
from archsim.devices.device import Device
from archsim.devices.kernel_constants import FITTED, KernelConstants
from archsim.devices.kernel_ops import KernelFamilies, kernel_families
from archsim.errors import InputError


@dataclass(frozen=True)
class Links:
    """The link class each parallel group communicates over; ``pp`` the pipeline's slowest hop,
    ``pp_hops`` (when known) each hop's: rank r to rank r + 1, the last rank's to rank 0 (an
    interleaved pipeline's wrap) — NVLink where both ranks' GPUs share a server (on a DGX-1 of V100s,
    the NVLinks of each GPU pair, PCIe where a pair has none). ``embedding`` (when
    known): the tied embedding's gradient all-reduce between GPU g of the first rank and GPU g of the
    last (two GPUs, every g at once; its bandwidth in bytes/s per direction) — NVLink only where the
    two ends share a server, whatever the hops between them; None: priced on ``pp``."""

    tp: LinkClass | Spanning  # a group over servers: NVLink inside each, the network between
    pp: LinkClass | Spanning
    dp: LinkClass | Spanning
    pp_hops: tuple[LinkClass | Spanning, ...] = ()
    embedding: LinkClass | Spanning | None = None
    cp: LinkClass | Spanning | None = None  # the context-parallel group's (None: CP 1, no group)
    cp_hop: LinkClass | Spanning | None = None  # one ring step of it: GPU to GPU, one GPU's share of the NICs
    ep: LinkClass | Spanning | None = None  # the expert-parallel group's (None: EP 1, no group)
    expert_dp: LinkClass | Spanning | None = None  # the expert-data-parallel group's (None: EP 1, the DP group's)
    etp: LinkClass | Spanning | None = None  # the expert-tensor-parallel group's (None: ETP = TP, the TP group's)


HOST_FROM_FIT = "vTrain's A100 fit"  # Machine.host_source of a catalog GPU
HOST_FROM_FILE = "the device file's host_s"  # and of a device file's device


@dataclass(frozen=True)
class Machine:
    """A device (a catalog GPU or a device file, :mod:`archsim.devices.device`), its kernel constants,
    its links, the training implementation whose op list it runs — ``megatron``
    (:mod:`archsim.training.layer_ops`, the default) or ``pytorch-eager``
    (:mod:`archsim.training.eager_ops`: plain PyTorch's AMP GPT on one GPU; in fp32 Hugging Face's GPT-2
    and BERT, :mod:`archsim.training.hf_ops`) — and the ``dtype`` it trains in:
    fp16/bf16 (mixed precision, the default) or fp32 (GEMMs on a GPU's FP32 lanes, every tensor and
    message at 4 bytes per element; :data:`archsim.choices.devices.DTYPES`). Two constants sets, each
    for the kernels it was fitted on: ``efficiency`` (vTrain's A100 fit, or a device file's own: cuBLAS
    tensor-core GEMMs, Megatron's fused kernels, the host's issue time) and ``pytorch_constants``
    (NeuSight's fit of PyTorch's own kernels; a benchmark passes a leave-one-GPU-out fit);
    :attr:`kernels` says which times which."""

    gpu: Device
    efficiency: KernelConstants
    links: Links
    implementation: str = "megatron"
    dtype: str = "fp16"
    pytorch_constants: KernelConstants = FITTED
    memory_bytes: float = 0.0  # what a job may allocate on the GPU, bytes (0: the board's whole memory)
    # SMs an overlapped collective holds while compute runs beside it (comm_sms.py); None: the GPU's own (Device.comm_sms)
    comm_sms: int | None = None

    @property
    def capacity(self) -> float:
        """The bytes a rank's states and activations must fit in: the cluster file's ``usable_memory_gib``, else the
        device's whole memory (the CUDA context, NCCL's buffers and fragmentation are not modelled)."""
        return self.memory_bytes or self.gpu.memory_bytes

    @property
    def collective_sms(self) -> int:
        """The SMs an overlapped collective holds here: the cluster's stated count, else the GPU's own."""
        return self.gpu.comm_sms if self.comm_sms is None else self.comm_sms

    @property
    def kernels(self) -> KernelFamilies:
        """Which constants time which kernel family here: the one rule,
        :func:`archsim.devices.kernel_ops.kernel_families` (``pytorch_constants`` for fp32 on a catalog
        GPU, ``efficiency`` otherwise, in either implementation)."""
        return kernel_families(self.gpu, self.dtype, self.efficiency, self.pytorch_constants)

    @property
    def host_source(self) -> str:
        """Where ``efficiency.host_s`` (the host's seconds per op) came from, as the host-bound note names it: the
        device file's ``[compute] host_s`` where the device states its own constants (``Device.efficiency``, which a
        rank's machine takes, :func:`~archsim.training.group_links.rank_machine`), else vTrain's A100 fit (a catalog
        GPU's, :func:`archsim.training.fitted.kernels`). Read from the device, never from the value: a file may state
        the fit's own 69.4 µs."""
        return HOST_FROM_FILE if self.gpu.efficiency is not None else HOST_FROM_FIT

    @property
    def scale(self) -> float:
        """Bytes per element over fp16's 2: what the op lists' fp16 byte counts are multiplied by."""
        return ELEMENT_BYTES[self.dtype] / 2

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise InputError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}", field="dtype")
        if self.comm_sms is not None and self.comm_sms < 0:
            raise InputError(f"comm_sms must be 0 or more SMs, got {self.comm_sms}", field="comm-sms")
        if self.implementation not in IMPLEMENTATIONS:
            raise InputError(f"implementation must be one of {', '.join(IMPLEMENTATIONS)}, got {self.implementation!r}",
                             field="implementation")


__all__ = ["HOST_FROM_FILE", "HOST_FROM_FIT", "Links", "Machine"]
