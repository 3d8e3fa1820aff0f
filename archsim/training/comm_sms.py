"""The SMs an overlapped collective takes from the compute beside it: one mechanism for every overlap.

A GPU runs a collective as kernels. NCCL runs one CTA per channel, each on an SM of its own, which it shares with
no compute kernel (NCCL's maintainer: NVIDIA/nccl issues #181, 2020-04-15, and #689, 2023-08-11), and uses "the
minimal number of SMs to achieve the performance of the platform": 2 on a PCI system with one NIC, **16 on a DGX
with 8 NICs** (#689, 2022-06). :data:`~archsim.devices.catalog.NCCL_SMS` is that 16, a catalog GPU's
:attr:`~archsim.devices.device.Device.comm_sms`; a device file's chip holds none unless its ``[links]``
``comm_sms`` states it (its collectives may run on link engines of their own). NCCL picks its channels by topology (NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS bound them), so a run
that knows its own count sets a cluster file's ``[cluster]`` ``comm_sms`` for every GPU of the file
(:attr:`~archsim.training.machine.Machine.comm_sms`). DeepEP's dispatch and combine take a stated count instead
(``Buffer.set_num_sms``; 20 in the DeepSeek-V3 report, §3.2.2, and Megatron-LM's ``--moe-deepep-num-sms``
default): archsim's all-to-alls are NCCL's (Megatron's ``alltoall`` dispatcher), so 20 is not used here.

While a collective holds k of a GPU's N SMs, the compute beside it runs on N − k. Each op's GEMMs are re-timed
as the kernel model times them, tiles in waves over N − k SMs (:func:`slowed_seconds`: the same
:class:`~archsim.devices.kernels.GemmPath` with k fewer cores and the board-power cap scaled by (N − k)/N); a
fused kernel (FlashAttention) is scaled by its main loops' ratio. Memory-bound ops keep their time: the kernel
model prices them by HBM bandwidth alone, with no SM term to re-time, and the share of HBM bandwidth NCCL's
copies take (2–3× its link rate, the same maintainer, NVIDIA/nccl issue #1428) is not modelled. A device of
arrays (no NCCL) keeps its times.

With the compute of C seconds (on N SMs) running at ``share`` = C / C′ of its speed (C′ on N − k) while a
collective of a seconds runs beside it, both starting together, the compute gets a·share seconds' work done
under the collective; the collective hides min(C, a·share) (:func:`hidden_seconds`) and exposes the rest. Where
the collective outlasts the slowed compute (a·share ≥ C) that is a − C, as before; otherwise a·(1 − share), which
is never more than a (the serial sum) nor less than max(0, a − C) (free overlap).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from archsim.choices.devices import ELEMENT_BYTES, GEMM_OPERAND_BYTES
from archsim.devices.device import Device
from archsim.devices.kernel_constants import KernelConstants
from archsim.devices.kernel_ops import gemm_path, path_op_seconds
from archsim.devices.kernels import GemmPath
from archsim.errors import InputError
from archsim.lowering import TrainingOp


def fewer_cores(path: GemmPath, taken: int) -> GemmPath:
    """``path`` with ``taken`` of its SMs held by a collective: k fewer cores, the board-power cap scaled with them
    (the SMs a collective holds keep their share of the board's power; :func:`~archsim.devices.kernels.compute_seconds`
    bounds the kernel's average power by what is left)."""
    if not 0 <= taken < path.cores:
        raise InputError(f"a collective cannot take {taken} of a GPU's {path.cores} SMs: at least one must compute",
                         field="comm-sms")
    left = path.cores - taken
    return replace(path, cores=left, sustained_flops=path.sustained_flops * left / path.cores)


def slowed_seconds(ops: Sequence[TrainingOp], seconds: npt.ArrayLike, device: Device, tiles: KernelConstants,
                   dtype: str, taken: int) -> np.ndarray:
    """Each op's ``seconds`` (on all SMs) re-timed with ``taken`` SMs held by a collective (module docstring): its
    GEMMs' waves on the SMs left, a fused op scaled by its main loops' ratio, memory-bound work as it was."""
    out = np.array(seconds, dtype=np.float64)
    if taken <= 0:
        return out
    for low in sorted({op.gemm_dtype or dtype for op in ops if op.gemms}):
        which = [i for i, op in enumerate(ops) if op.gemms and (op.gemm_dtype or dtype) == low]
        path = gemm_path(device, low, tiles)
        if path is None:  # a device of arrays: no NCCL kernels on it
            continue
        mine = [ops[i] for i in which]
        out_size = ELEMENT_BYTES[dtype] if low != dtype else None
        full = path_op_seconds(mine, path, tiles, GEMM_OPERAND_BYTES[low], out_size)
        left = path_op_seconds(mine, fewer_cores(path, taken), tiles, GEMM_OPERAND_BYTES[low], out_size)
        for j, i in enumerate(which):
            if ops[i].fused:
                out[i] *= left[j] / full[j] if full[j] > 0 else 1.0
            else:
                out[i] += left[j] - full[j]
    return out


def share_of(full: float, slowed: float) -> float:
    """The compute's speed beside a collective, as a fraction of its own: ``full`` seconds on every SM over
    ``slowed`` on the SMs left (1 where nothing is slowed)."""
    return full / slowed if slowed > 0 else 1.0


def hidden_seconds(comm: float, compute: float, share: float = 1.0) -> float:
    """Seconds of a collective of ``comm`` seconds hidden under ``compute`` seconds of compute that runs at ``share``
    of its speed beside it, both starting together: min(compute, comm·share) (module docstring)."""
    return min(compute, comm * share)


def bucket_exposed(buckets: int, bucket_seconds: float, window: float, share: float = 1.0) -> float:
    """Seconds the last of ``buckets`` collectives (``bucket_seconds`` each, one on the wire at a time) ends after a
    compute window of ``window`` seconds (on all SMs) that readies bucket i at (i + 1)/``buckets`` of its work and
    runs at ``share`` of its speed while a bucket is on the wire: bucket by bucket, each one's start the later of its
    gradients and the wire. At ``share`` 1 it is :func:`archsim.training.dp_overlap.exposed_seconds`' closed form."""
    time = work = wire = 0.0  # seconds elapsed, the window's work done (its own seconds), the wire free at
    busy: list[tuple[float, float]] = []  # each bucket's seconds on the wire, in order
    k = 0  # the first of them not yet behind ``time``
    for i in range(buckets):
        target = window * (i + 1) / buckets
        while work < target and k < len(busy):  # the work up to ``target``, slowed where a bucket runs
            start, end = busy[k]
            if time < start:  # alone until the bucket starts
                if start - time >= target - work:
                    time, work = time + target - work, target
                    break
                time, work = start, work + start - time
            if (target - work) / share <= end - time:  # beside it
                time, work = time + (target - work) / share, target
            else:
                time, work, k = end, work + (end - time) * share, k + 1
        if work < target:
            time, work = time + target - work, target
        begin = max(wire, time)
        wire = begin + bucket_seconds
        busy.append((begin, wire))
    return max(wire, time) - window


__all__ = ["bucket_exposed", "fewer_cores", "hidden_seconds", "share_of", "slowed_seconds"]
