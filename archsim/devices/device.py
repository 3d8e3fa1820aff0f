"""One description of a training device — a catalog GPU or an accelerator's device file — for the
training path (``archsim train``, ``archsim search``).

A device is its compute units, its memories and its links:

* **arrays**: the matrix units as systolic arrays — ``count`` arrays of ``rows × cols`` PEs (one
  multiply-accumulate per PE per clock) with a ``dataflow``, at ``clock_hz``; ``per_core`` arrays
  share one core (a GPU's SM: one GEMM output tile at a time). A GPU's tensor cores are arrays:
  SMs × tensor cores per SM of the MMA shape (:data:`archsim.devices.catalog.TABLE`); a TPU's MXUs
  are 128 × 128 arrays.
* **lanes**: the FP32 vector lanes as arrays of lanes (a GPU's SIMD partitions, where the catalog
  describes them), for fp32 GEMMs on an array device that has them; None when not described.
* **vector**: the vector unit (:class:`VectorUnit`: a TPU's VPU, a GPU SM's FP32 lanes and special-function unit),
  where the non-matmul work of a fused kernel runs (:mod:`archsim.devices.nonmatmul`); None when not stated (the
  lanes then run it); beside it the shared memory a fused kernel's GEMMs read and their share of the GEMM rate.
* **gemm**: how a GEMM is timed — ``tiles`` (a GPU library's output tiles in waves over the cores at
  the dtype's peak, :func:`archsim.devices.kernels.path_gemm_seconds`) or ``arrays`` (the SCALE-Sim-exact
  analytic cost of one array, :func:`archsim.array.analytic.gemm_cost`, its folds dealt in waves
  over the arrays, :func:`archsim.devices.kernel_ops.array_gemm_seconds`; a ws or is GEMM with fewer
  folds than arrays splits its streamed dimension over them); ``split_k`` (off by default, ``arrays``
  only) lets an os GEMM with fewer folds than arrays cut its reduction
  (:func:`archsim.devices.array_waves.array_gemm_cycles`).
* **memories**: SRAM per array and a shared L2/scratchpad (bytes; the L2's read bandwidth in bytes
  per array clock, 0 for unlimited), HBM capacity (bytes) and bandwidth (bytes/s); ``dram_traffic``, how
  an ``arrays`` device counts a GEMM's HBM words (``compulsory``: each operand once, the default;
  ``scalesim``: SCALE-Sim's count for its operand SRAMs, :mod:`archsim.devices.array_dram`).
* **overheads and efficiencies** (:class:`~archsim.devices.kernel_constants.KernelConstants`): seconds per kernel
  launch and per op the host issues, the fraction of peak a full wave of tiles reaches and of HBM
  bandwidth memory-bound kernels reach. A catalog GPU leaves them to :func:`archsim.training.fitted.kernels`
  (``efficiency`` None); a device file states them (defaults: no overheads, full peak and bandwidth).
* **links**, per direction in bytes/s: the intra-node fabric (NVLink, ICI) over ``links`` links,
  switched or not, the host link (PCIe), and the inter-node NIC in Gb/s (0: the cluster file's); the
  latency one ring or tree step pays on the fabric and on the NIC, seconds (None: the fitted link classes'
  α, :mod:`archsim.training.fitted`; a device file may state its own, a catalog GPU never does).
* **energy** (array devices): the energy table and per-event figures of a device file's ``[energy]``
  section (a ``.cfg``'s or a TOML's), as ``archsim energy --config`` reads a ``.cfg``'s (default: the default table's figures).

Peak FLOP/s per dtype are a device's datasheet figures where it has them (a catalog GPU's); a
device file without ``peak_tflops`` gets 2 · count · rows · cols · clock for every dtype its arrays run
(fp32 on its lanes when it has them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from archsim.array.config import DATAFLOWS
from archsim.array.sram_sizes import operand_sram_kib
from archsim.choices.devices import DRAM_TRAFFIC, GEMM_MODELS
from archsim.errors import InputError

if TYPE_CHECKING:  # kernels reads the catalog, which builds its devices from this module
    from archsim.devices.kernel_constants import KernelConstants


@dataclass(frozen=True)
class Arrays:
    """``count`` identical ``rows × cols`` arrays at ``clock_hz``; ``per_core`` of them form one core."""

    count: int
    rows: int
    cols: int
    dataflow: str
    clock_hz: float
    per_core: int = 1

    def __post_init__(self) -> None:
        for name in ("count", "rows", "cols", "per_core"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise InputError(f"must be a positive integer, got {value!r}", field=name)
        if self.count % self.per_core:
            raise InputError(f"{self.per_core} arrays per core do not divide {self.count} arrays", field="per_core")
        if self.dataflow not in DATAFLOWS:
            raise InputError(f"unknown dataflow {self.dataflow!r}; choose one of {', '.join(DATAFLOWS)}",
                             field="dataflow")
        if not (isinstance(self.clock_hz, (int, float)) and 0 < self.clock_hz < math.inf):
            raise InputError(f"must be a positive number of Hz, got {self.clock_hz!r}", field="clock_hz")

    @property
    def cores(self) -> int:
        return self.count // self.per_core

    @property
    def peak_flops(self) -> float:
        """2 FLOPs per PE per clock over all arrays (FLOP/s)."""
        return 2.0 * self.count * self.rows * self.cols * self.clock_hz


@dataclass(frozen=True)
class VectorUnit:
    """A device file's vector unit: ``cores`` × ``lanes`` × ``sublanes`` lanes at ``clock_hz``, each giving
    ``fp32_per_clock`` FP32 results, ``exp_per_clock`` exponentials and ``int_per_clock`` 32-bit integer results a
    clock (an FMA one result; the integer rate a catalog GPU's chip sets, one a lane in a device file); ``cores`` and
    ``clock_hz`` None: the arrays' (read when priced, so a device sweep's arrays and clock carry them as a file
    written with them would). Apart from the ``lanes`` fp32 GEMMs run on (docs/formats.md, "Device files")."""

    lanes: int
    sublanes: int = 1
    cores: int | None = None
    clock_hz: float | None = None
    fp32_per_clock: float = 1.0
    exp_per_clock: float = 1.0
    int_per_clock: float = 1.0  # 32-bit integer results (IMAD, LOP3, shifts, compares) per lane per clock

    def rates(self, arrays: Arrays) -> tuple[float, float]:
        """(exponentials per second, FP32 results per second) beside ``arrays``, the device's."""
        width = (self.cores or arrays.cores) * self.lanes * self.sublanes * (self.clock_hz or arrays.clock_hz)
        return width * self.exp_per_clock, width * self.fp32_per_clock

    def int_rate(self, arrays: Arrays) -> float:
        """32-bit integer results per second beside ``arrays``, the device's."""
        return (self.cores or arrays.cores) * self.lanes * self.sublanes * (self.clock_hz or arrays.clock_hz) * self.int_per_clock


@dataclass(frozen=True)
class Device:
    """A training device (module docstring). Bytes, bytes/s, seconds, watts; ``peaks``: (dtype,
    dense FLOP/s) pairs; ``efficiency`` None: a catalog GPU's fitted kernels apply. ``catalog``: the catalog board
    it was built from (None: a device file's chip), kept by ``dataclasses.replace``: a catalog GPU with a figure
    changed is still that chip, the changed figure in effect (:func:`archsim.devices.catalog.chip_of`)."""

    name: str
    arrays: Arrays
    lanes: Arrays | None
    gemm: str
    peaks: tuple[tuple[str, float], ...]
    memory_bytes: float
    hbm_bytes_per_s: float
    sram_bytes_per_array: float = 0.0
    l2_bytes: float = 0.0
    l2_bytes_per_clock: float = 0.0
    efficiency: KernelConstants | None = None
    nvlink_bytes_per_s: float = 0.0
    nvlinks: int = 1
    nvswitch: bool = True
    nvls: bool = False  # its NVSwitch can reduce in the switch (NVLink SHARP: the catalog's Hopper boards)
    pcie_bytes_per_s: float = 0.0
    inter_node_gbps: float = 0.0
    intra_latency_s: float | None = None  # a collective step on the in-server fabric (None: fitted NVLink α)
    inter_node_latency_s: float | None = None  # a collective step through the NIC (None: the fitted NIC α)
    # η of the in-server fabric as a device file states it ([links] efficiency: no launch or copy cost beside it);
    # None: NVIDIA's NCCL fit (archsim.links.A100_NVLINK), a catalog GPU's and a file's naming "nccl"
    link_efficiency: float | None = None
    board_watts: float | None = None
    split_k: bool = False
    static_watts: float = 0.0  # W per chip of an array device: leakage the energy model's dynamic joules leave out
    # the three operand SRAMs as stated, (key, KiB) each, ifmap/filter/ofmap: a .cfg's SramSzkB keys
    # (archsim.array.sram_sizes.cfg_sram_keys) or a TOML's three-value sram_kib_per_array, summing to
    # sram_bytes_per_array; empty where one figure is stated (split in three). The energy model prices each at it
    sram_keys: tuple[tuple[str, int], ...] = ()
    # a device file's [energy] section (a .cfg's or a TOML's): the energy table it names (None: the default) and its per-event
    # figures (name, pJ per word), what train's energy model prices an array device with, as archsim energy does
    energy_table: str | None = None
    energy_figures: tuple[tuple[str, float], ...] = ()
    # where a fused kernel's non-matmul work runs (archsim.devices.nonmatmul): a device file's [vector], a catalog GPU's
    # SM (its FP32 lanes and special-function unit); None: its lanes. Shared-memory bytes per core per clock a fused
    # kernel's GEMMs read (0: no bound) and the share of the GEMM rate a fused kernel's GEMMs reach (mma.sync on Hopper)
    vector: VectorUnit | None = None
    smem_bytes_per_clock: float = 0.0
    fused_gemm_fraction: float = 1.0
    # SMs (cores) an overlapped collective's kernels hold while compute runs beside it (archsim.training.comm_sms):
    # NCCL's CTAs on a catalog GPU (NCCL_SMS); 0 on a device file's chip unless its [links] comm_sms states it (its
    # collectives may run on link engines of their own; the A100 file states NCCL's 16)
    comm_sms: int = 0
    # energy a byte costs on the chip's links, pJ per bit (a device file's [links] pj_per_bit; 0: links unpriced): train's
    # energy adds it on the bytes the iteration's collectives and pipeline hops send (archsim.training.link_energy)
    link_pj_per_bit: float = 0.0
    # the catalog board it was built from (archsim.devices.catalog.device; None: a device file's chip): its identity,
    # which dataclasses.replace keeps, so a catalog GPU with a figure changed is still that chip, the figure in effect
    # (archsim.devices.catalog.chip_of)
    catalog: str | None = None
    # how a gemm = "arrays" device counts each GEMM's HBM words (a device file's [memory] dram_traffic, one of
    # archsim.choices.devices.DRAM_TRAFFIC): "compulsory", each operand once; "scalesim", SCALE-Sim's memory model's
    # count for the arrays' operand SRAMs (archsim.devices.array_dram), in op timing and the energy model alike
    dram_traffic: str = "compulsory"
    # MACs per PE per cycle by dtype on its arrays (a device file's [compute] macs_per_pe, archsim.array.mac_rates):
    # a GEMM of such a dtype runs its reduction that many times deeper a step; empty (and any dtype not named): 1
    macs_per_pe: tuple[tuple[str, float], ...] = ()

    def __post_init__(self) -> None:
        if self.sram_keys and sum(kib for _, kib in self.sram_keys) * 1024 != self.sram_bytes_per_array:
            raise ValueError("sram_keys must sum to sram_bytes_per_array: clear them where the SRAM is replaced")
        if self.gemm not in GEMM_MODELS:
            raise InputError(f"unknown GEMM model {self.gemm!r}; choose one of {', '.join(GEMM_MODELS)}",
                             field="gemm")
        if not self.peaks:
            raise InputError("a device needs at least one dtype's peak", field="peak_tflops")
        if self.dram_traffic not in DRAM_TRAFFIC:
            raise InputError(f"unknown DRAM traffic {self.dram_traffic!r}; choose one of {', '.join(DRAM_TRAFFIC)}",
                             field="dram_traffic")

    @cached_property
    def _peaks(self) -> dict[str, float]:
        return dict(self.peaks)

    @property
    def sms(self) -> int:
        """Cores (a GPU's SMs): the units GEMM tiles are dealt to in waves."""
        return self.arrays.cores

    @property
    def clock_hz(self) -> float:
        return self.arrays.clock_hz

    @property
    def fabric_bytes_per_s(self) -> float:
        """Its in-server link per direction, bytes/s: NVLink, or PCIe on a board without NVLink (what a
        cluster file's ``intra_server_gbps`` defaults to beside ``gpu = NAME``: twice this, both directions, Gbit/s
        × 10⁹ / 8; plan and train read it back as this)."""
        return self.nvlink_bytes_per_s or self.pcie_bytes_per_s

    @property
    def nvlink_link_bytes_per_s(self) -> float:
        """One intra-node link's bandwidth per direction."""
        return self.nvlink_bytes_per_s / self.nvlinks

    def peak(self, precision: str = "fp16") -> float:
        """Dense peak FLOP/s at ``precision`` (a training dtype: refused under its user-facing name, ``dtype``)."""
        if precision not in self._peaks:
            raise InputError(f"{self.name} has no {precision} peak; it has {', '.join(self._peaks)}",
                             field="dtype")
        return self._peaks[precision]

    @property
    def operand_buffers_kib(self) -> tuple[int, int, int]:
        """The energy model's (ifmap, filter, ofmap) SRAMs beside one array, KiB: the three stated sizes (a .cfg's
        SramSzkB keys, a TOML's three values), else the one figure split in three whole KiB (at least 1)."""
        if self.sram_keys:
            ifmap, filt, ofmap = (kib for _, kib in self.sram_keys)
            return ifmap, filt, ofmap
        kib = operand_sram_kib(self.sram_bytes_per_array / 1024)
        return kib, kib, kib

    def mac_rate(self, dtype: str) -> float:
        """MACs per PE per cycle of a ``dtype`` GEMM on the arrays (:attr:`macs_per_pe`; 1 where not stated)."""
        return dict(self.macs_per_pe).get(dtype, 1.0)

    def gemm_units(self, dtype: str) -> Arrays:
        """The arrays a GEMM of ``dtype`` runs on: the lanes for fp32 where the device has them."""
        return self.lanes if dtype == "fp32" and self.lanes is not None else self.arrays


def catalog_device(name: str) -> Device:
    """The catalog GPU ``name`` (a key of :data:`archsim.devices.catalog.GPUS` or an alias) as a device
    (one object per GPU: :func:`archsim.devices.gpu_lookup.gpu`)."""
    from archsim.devices.gpu_lookup import gpu  # the catalog builds its devices from this module's types

    return gpu(name)


__all__ = ["Arrays", "Device", "VectorUnit", "catalog_device"]
