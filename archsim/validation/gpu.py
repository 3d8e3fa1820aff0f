"""A GPU as a set of archsim arrays, and archsim's modeled time for every measured GPU kernel.

What the model assumes (the report and ``archsim validate-gpu`` print this):

* **Tensor core = one R×C systolic array**, R·C = its dense FP16 multiply-accumulates per clock
  (V100/T4: 64 → 8×8; A10/L4: 128 → 8×16; A100: 256 → 16×16; H100/H200: 512 → 16×32),
  output-stationary by default: a GPU keeps the accumulator tile in registers while K streams.
* **GPU = P = sm_count × tensor_cores_per_sm such arrays** (:attr:`GpuArrays.units`, a
  :class:`archsim.devices.device.Arrays`). Every cycle is the device model's arrays mechanism
  (:mod:`archsim.devices.array_waves`; nothing here re-implements it): a GEMM's folds (output tiles,
  for ``os``) are dealt to the P arrays in waves: cycles = ⌈folds / P⌉ · (cycles per fold) − 1, each
  fold costed exactly as SCALE-Sim costs it; an op's GEMMs run one after another. With P = 1 this is
  archsim's single-array cost. The clock is the boost clock at which P · R·C · 2 · clock equals the
  vendor's dense-FP16 peak.
* **Split-K** (on by default, ``os`` only): a GEMM with fewer output tiles than arrays cuts its
  reduction into s real sub-GEMMs (the cheapest s) plus the adds that merge their partial outputs,
  as cuBLAS/cuDNN do for weight gradients and small-batch layers.
* **Ops** lower by im2col (:mod:`archsim.lowering`); δ (D) is costed for every layer, the first
  included, because the GPU run times it there. A strided layer's δ runs as s² padded phase
  sub-convolutions (``dgrad="phase-padded"``; ``zero-insertion`` and ``stride-aware`` bound it); fp16
  layers whose channels or filters are not multiples of 8 run on the FP32 lanes
  (:mod:`archsim.validation.gpu_algorithms`).
* **Not modeled**: memory stalls, kernel launch, layout transforms, the FFT/Winograd choice. ``memory_ms`` — the op's three tensors moved once at DRAM bandwidth — is a
  separate floor shown beside the model, never folded into it.
* **D ∥ G on two streams** share the P arrays: concurrent = max(D, G, (busy cycles of D and G) / P)
  (:func:`archsim.devices.array_waves.two_stream_cycles`), serial = D + G.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from archsim.array.config import DATAFLOWS, ArrayConfig
from archsim.devices.array_waves import op_array_cycles, two_stream_cycles
from archsim.devices.catalog import (  # the catalog is exported here too
    GpuSpec,
)
from archsim.devices.device import Arrays
from archsim.errors import InputError
from archsim.lowering import TrainingOp, check_mode
from archsim.validate import is_file
from archsim.validation.gpu_algorithms import (
    DGRAD,
    STRIDED_DGRAD,
    check_dgrad,
    cuda_core_arrays,
    kernel_ops,
    runs_winograd,
    tensor_core_shape,
    timed_op,
    winograd_forward,
)
from archsim.validation.gpu_csv import KernelTable
from archsim.validation.gpu_seconds import KernelTimer, ops_seconds
from archsim.workload import load_network
from archsim.workload.layer import NETWORK_INPUT, Layer, Network
from archsim.workload.layer_types import CONV_FC_KINDS


@dataclass(frozen=True)
class GpuArrays:
    """The GPU as ``count`` identical archsim arrays (one per tensor core).

    split_k: an ``os`` GEMM with fewer output tiles than arrays may split its reduction
    (:func:`archsim.devices.array_waves.array_gemm_cycles`), as GPU GEMM/convolution libraries do; off,
    only output tiles are dealt out. (A ``ws`` or ``is`` GEMM of fewer folds than arrays splits its
    streamed dimension either way: no reduction.) The configuration ``validate-gpu``'s flags override; the cycles are
    the device model's (:attr:`units`).
    """

    spec: GpuSpec
    array: ArrayConfig
    count: int
    split_k: bool = True
    dgrad: str = DGRAD[0]
    cuda_core_fallback: bool = True
    winograd: bool = True

    @property
    def units(self) -> Arrays:
        """These arrays as the device model's compute units (one core per SM), which cost every GEMM
        here (:mod:`archsim.devices.array_waves`)."""
        return Arrays(self.count, self.array.rows, self.array.cols, self.array.dataflow, self.spec.clock_hz,
                      self.spec.tensor_cores_per_sm)


def gpu_arrays(spec: GpuSpec, dataflow: str = "os", element_bytes: int = 2, split_k: bool = True,
               dgrad: str = DGRAD[0], cuda_core_fallback: bool = True, winograd: bool = True) -> GpuArrays:
    """Map a GPU to archsim arrays: one ``mma_rows × mma_cols`` array per tensor core at the GPU clock.

    The array's SRAM sizes keep ArrayConfig's defaults: the analytic cost (compute cycles) does not read them.
    """
    if dataflow not in DATAFLOWS:
        raise InputError(f"unknown dataflow {dataflow!r}; choose one of {', '.join(DATAFLOWS)}", field="dataflow")
    array = ArrayConfig(rows=spec.mma_rows, cols=spec.mma_cols, dataflow=dataflow, element_bytes=element_bytes,
                        clock_hz=spec.clock_hz, name=spec.name)
    return GpuArrays(spec=spec, array=array, count=spec.arrays, split_k=split_k, dgrad=check_dgrad(dgrad),
                     cuda_core_fallback=cuda_core_fallback, winograd=winograd)


def measured_layer(layer: Layer) -> Layer:
    """The layer as the GPU run sees it: δ is timed even for a layer fed by the network input."""
    if layer.takes_network_input:
        return replace(layer, inputs=tuple("previous" if name == NETWORK_INPUT else name for name in layer.inputs))
    return layer


def model_kernels(table: KernelTable, arrays: GpuArrays, mode: str = "exact",
                  timer: KernelTimer | None = None) -> pd.DataFrame:
    """Every row of a measured table with archsim's cost beside it.

    Adds ``kind`` (conv/fc), ``tensor_core_shape`` (:func:`tensor_core_shape`), ``macs``, ``modeled_cycles``, ``modeled_ms``, ``memory_ms`` and
    ``roofline_ms`` = max(modeled, memory) — the arrays view — and ``measured_seconds`` and
    ``predicted_seconds``: the same ops timed by the one device model, with the δ the libraries run
    where the arrays view cannot price it (:func:`~archsim.validation.gpu_algorithms.timed_op`: col2im
    for narrow layers, Winograd for 3×3 stride-1 layers on the FP32 lanes)
    (:mod:`archsim.validation.gpu_seconds`; NaN without a ``timer``, and for ``DG_concurrent``, which
    that model has no two-stream mechanism for; ``DG_serial`` is D + G). Rows are joined to the shipped network by name, or to a
    topology file of that name beside the CSV (measurements of other layers, such as DeepBench's); a layer
    that is missing, not a conv/fc, or has another shape than the CSV says is an error naming the line.
    """
    lowering = check_mode(mode)
    frame = table.frame.copy()
    eb = arrays.array.element_bytes
    layers: dict[tuple[str, str], Layer] = {}
    networks: dict[str, Network] = {}
    for row in frame.itertuples(index=False):
        key = (row.network, row.layer)
        if key in layers:  # every row's recorded shape must match, not only the layer's first row's
            _check_shape(row._asdict(), layers[key], table.source)
            continue
        if row.network not in networks:
            beside = Path(table.source).parent / row.network  # a topology file next to the CSV
            try:
                networks[row.network] = load_network(beside if is_file(beside) else row.network)
            except InputError as exc:
                raise InputError(exc.message, file=table.source, line=row.line, field="network") from None
        try:
            layer = networks[row.network].layer(row.layer)
        except KeyError:
            raise InputError(f"network {row.network!r} has no layer {row.layer!r}", file=table.source,
                             line=row.line, field="layer") from None
        if layer.kind not in CONV_FC_KINDS:
            raise InputError(f"{row.network}/{row.layer} is a {layer.kind} layer; only conv and fc kernels are "
                             "compared", file=table.source, line=row.line, field="layer")
        _check_shape(row._asdict(), layer, table.source)
        layers[key] = layer
    units = sorted({(r.network, r.layer, int(r.batch)) for r in frame.itertuples(index=False)})
    winograd = {(r.network, r.layer, int(r.batch)) for r in frame.itertuples(index=False)
                if arrays.winograd and r.op == "F" and runs_winograd(getattr(r, "algorithm", None))}
    ops: list[TrainingOp] = []
    timed: list[TrainingOp] = []  # the same ops as the device model times them (gpu_algorithms.timed_op)
    simt = timer is not None and timer.simt
    lanes = cuda_core_arrays(arrays)
    on_lanes: list[bool] = []
    where: dict[tuple[str, str, int, str], int] = {}
    bytes_of: dict[tuple[str, str, int], int] = {}
    for network, name, batch in units:
        layer = layers[(network, name)]
        for op in kernel_ops(measured_layer(layer), batch, lowering, eb, arrays.dgrad):
            if (network, name, batch) in winograd:
                op = winograd_forward(op, layer, batch)
            where[(network, name, batch, op.kind)] = len(ops)
            ops.append(op)
            on_lanes.append(lanes is not None and layer.kind == "conv" and not tensor_core_shape(layer))
            timed.append(timed_op(op, measured_layer(layer), batch, eb, arrays.winograd and (simt or on_lanes[-1])))
        bytes_of[(network, name, batch)] = (batch * (layer.input_elements + layer.output_elements)
                                            + layer.weight_elements) * eb
    costed = op_array_cycles(ops, arrays.units, arrays.split_k)
    cycles, busy, split = costed.cycles, costed.busy, costed.split
    if lanes is not None and any(on_lanes):  # same clock: cycles compare; busy rescaled to P tensor cores
        fallback = np.flatnonzero(on_lanes)
        on = op_array_cycles([ops[i] for i in fallback], lanes.units, lanes.split_k)
        cycles[fallback], split[fallback] = on.cycles, on.split
        busy[fallback] = -(-on.busy * arrays.count // lanes.count)
    seconds = np.full(len(ops), np.nan)
    if timer is not None:
        seconds = ops_seconds(timed, timer, on_lanes, eb)
    macs = np.asarray([op.macs for op in ops], dtype=np.int64)
    P = arrays.count
    out_cycles, out_macs, out_bytes, out_split, out_seconds = [], [], [], [], []
    for row in frame.itertuples(index=False):
        unit = (row.network, row.layer, int(row.batch))
        if row.op in ("F", "D", "G"):
            i = where[(*unit, row.op)]
            out_cycles.append(int(cycles[i]))
            out_macs.append(int(macs[i]))
            out_bytes.append(bytes_of[unit])
            out_split.append(int(split[i]))
            out_seconds.append(float(seconds[i]))
            continue
        d, g = where[(*unit, "D")], where[(*unit, "G")]
        if row.op == "DG_serial":
            out_cycles.append(int(cycles[d] + cycles[g]))
            out_seconds.append(float(seconds[d] + seconds[g]))
        else:
            out_cycles.append(int(two_stream_cycles(cycles[d], cycles[g], busy[d], busy[g], P)))
            out_seconds.append(float("nan"))
        out_macs.append(int(macs[d] + macs[g]))
        out_bytes.append(2 * bytes_of[unit])
        out_split.append(int(max(split[d], split[g])))
    frame["kind"] = [layers[(r.network, r.layer)].kind for r in frame.itertuples(index=False)]
    frame["tensor_core_shape"] = [tensor_core_shape(layers[(r.network, r.layer)]) for r in frame.itertuples(index=False)]
    frame["macs"] = np.asarray(out_macs, dtype=np.int64)
    frame["modeled_cycles"] = np.asarray(out_cycles, dtype=np.int64)
    # the ways s its GEMM was cut over the arrays (1: none): the reduction under os (split-K), the streamed
    # dimension under ws (M) and is (N) (devices/array_waves.SPLIT_AXIS); a D ∥ G row the larger of the two
    frame["split"] = np.asarray(out_split, dtype=np.int64)
    frame["modeled_ms"] = frame["modeled_cycles"] / arrays.spec.clock_hz * 1e3
    frame["memory_ms"] = np.asarray(out_bytes, dtype=np.float64) / arrays.spec.memory_bytes_per_s * 1e3
    frame["roofline_ms"] = np.maximum(frame["modeled_ms"], frame["memory_ms"])
    frame["measured_seconds"] = frame["measured_ms"] / 1e3
    frame["predicted_seconds"] = np.asarray(out_seconds, dtype=np.float64)
    return frame


def _check_shape(row: dict[str, Any], layer: Layer, source: str) -> None:  # a gpu_csv record
    for name in ("ifmap_h", "ifmap_w", "channels", "filters", "filter_h", "filter_w", "stride", "padding", "kind"):
        value = row.get(name)
        if value is None or value == "" or (isinstance(value, float) and np.isnan(value)):
            continue
        expected = getattr(layer, name)
        if (int(value) if name != "kind" else value) != expected:
            raise InputError(f"CSV has {name}={value} but the shipped {layer.name} has {expected}: the file was "
                             "measured on other layer definitions", file=source, line=int(row["line"]),
                             field=name)


def assumptions(arrays: GpuArrays, mode: str, measured_sm_count: str | None = None) -> list[tuple[str, str]]:
    """The model's assumptions as (item, value) pairs, for tables and report captions."""
    spec, a = arrays.spec, arrays.array
    sms = f"{spec.sm_count}" + (" (from the measured CSV)" if measured_sm_count else " (table)")
    cuda = cuda_core_arrays(arrays)
    streamed = (f"fewer {a.dataflow} folds than arrays → the streamed {'M' if a.dataflow == 'ws' else 'N'} cut "
                "into the cheapest s sub-GEMMs, each array holding the same fold")
    return [
        ("GPU", spec.name),
        ("arrays P", f"{arrays.count} = {sms} SMs × {spec.tensor_cores_per_sm} {spec.array_unit}s"),
        (f"array per {spec.array_unit}", f"{a.rows}×{a.cols} PEs ({a.rows * a.cols} MAC/clock), dataflow {a.dataflow}"),
        ("clock", f"{spec.clock_hz / 1e6:.0f} MHz (peak {spec.peak_flops / 1e12:.1f} dense TFLOP/s)"),
        ("GEMM on P arrays", "folds dealt in waves: ⌈folds/P⌉ × SCALE-Sim cycles per fold − 1"),
        ("split-K", "on: fewer os tiles than arrays → reduction cut into the cheapest s sub-GEMMs + merge adds"
         if arrays.split_k and a.dataflow == "os" else "off"),
        *([("streamed split", streamed)] if a.dataflow != "os" else []),
        ("lowering", f"im2col, {mode} mode; δ costed for every layer (the first too)"),
        ("strided δ", STRIDED_DGRAD[arrays.dgrad]),
        ("other shapes", f"channels or filters not multiples of 8 run on {cuda.count} FP32 "
         "SIMD partitions" if cuda is not None else "on the same arrays"),
        ("Winograd", "forwards the CSV records as Winograd: F(2×2, r×r) batched GEMMs, transforms not costed"
         if arrays.winograd else "off: every forward as its im2col GEMM"),
        ("not modeled", "memory stalls, launch overhead, layout transforms, FFT, algorithms the CSV does not record"),
        ("memory floor", f"input + weights + output once at {spec.memory_bytes_per_s / 1e9:.0f} GB/s (separate column)"),
        ("D ∥ G", "concurrent = max(D, G, (D + G busy array-cycles) / P); serial = D + G"),
        ("element size", f"{a.element_bytes} bytes"),
    ]


__all__ = ["GpuArrays", "assumptions", "gpu_arrays",
           "measured_layer", "model_kernels",]
