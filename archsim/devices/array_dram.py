"""Each GEMM's HBM words on a device's arrays as SCALE-Sim's memory model counts them: a device file's
``[memory] dram_traffic = "scalesim"`` (:attr:`~archsim.devices.device.Device.dram_traffic`; the default,
``"compulsory"``, reads A and B and writes C once each and never comes here).

A GEMM is dealt to the arrays as :func:`archsim.devices.array_waves.gemm_deal` deals it: ``parts`` GEMMs, each split
into s sub-GEMMs (s = 1 unless its folds leave arrays idle), every sub-GEMM run whole on one array. Each array's
sub-GEMM moves what :func:`archsim.array.dram_traffic.gemm_dram_traffic` counts for one array — ifmap and filter reads
(exact against the cycle engine) and ofmap writes (the ofmap demand: every fold's partial outputs, M·N·⌈K/R⌉ under
ws and is) — with

* SRAM words per operand buffer: :attr:`~archsim.devices.device.Device.operand_buffers_kib` (the stated three, or
  one figure split in three whole KiB) in words of the element size, :func:`archsim.array.cycle.sram_words`' rule,
  as ``cost --config`` gives the cycle engine the device's array;
* DRAM words/cycle on each buffer: ``hbm_gbps`` at the arrays' clock in words of the element size,
  :func:`archsim.array.config.dram_words` (:func:`archsim.array.device_rate.device_dram_rate`'s rule), which only rounds
  each request to whole words of that many.

A GEMM's words are the sub-GEMM's × s (each sub-GEMM re-reads the operand it shares: ws's weights, is's inputs).
Not modelled: the os split-K adds' partial outputs (their cycles are counted, their words are not), any sharing of
fetched words between arrays, and an L2; at a dtype's MACs per PE per cycle other than 1 (``[compute] macs_per_pe``,
:mod:`archsim.array.mac_rates`) the split s is op timing's at that rate, each sub-GEMM's words counted for its real
elements as on a one-MAC array (a packed PE's fetch pattern is not modelled). Pure functions of shapes; words, not bytes. Each distinct sub-GEMM is
counted once (:func:`_sub_gemm_words`, cached)."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, partial

import numpy as np
import numpy.typing as npt

from archsim.array.config import ArrayConfig, dram_words
from archsim.choices.devices import GEMM_OPERAND_BYTES
from archsim.devices.device import Arrays, Device

DramWords = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]
"""(m, k, n, count) → each GEMM's (ifmap, filter, ofmap) DRAM words, shape (N, 3): one of ``count`` dealt together."""


def operand_srams(device: Device, units: Arrays, element_bytes: int) -> tuple[int, int, int]:
    """(ifmap, filter, ofmap) SRAM words beside one of ``units``: the device's operand buffers
    (:attr:`~archsim.devices.device.Device.operand_buffers_kib`) in ``element_bytes``-byte words, as the cycle engine
    takes an array's (:func:`archsim.array.cycle.sram_words`)."""
    from archsim.array.cycle import sram_words  # the one KiB → words rule (numba is not loaded by it)

    ifmap, filt, ofmap = device.operand_buffers_kib
    return sram_words(ArrayConfig(rows=units.rows, cols=units.cols, dataflow=units.dataflow, ifmap_sram_kb=ifmap,
                                  filter_sram_kb=filt, ofmap_sram_kb=ofmap, element_bytes=element_bytes))


def operand_rate(device: Device, units: Arrays, element_bytes: int) -> int:
    """DRAM words/cycle on each operand buffer: ``hbm_gbps`` at ``units``' clock in ``element_bytes``-byte words
    (:func:`archsim.array.config.dram_words`, a half up, at least 1)."""
    return dram_words(device.hbm_bytes_per_s / 1e9, units.clock_hz / 1e9, element_bytes)


@lru_cache(maxsize=1 << 16)
def _sub_gemm_words(m: int, k: int, n: int, rows: int, cols: int, dataflow: str, srams: tuple[int, int, int],
                    rate: int) -> tuple[int, int, int]:
    """(ifmap reads, filter reads, ofmap writes) of one GEMM on one array: :func:`gemm_dram_traffic`, cached."""
    from archsim.array.dram_traffic import gemm_dram_traffic

    traffic = gemm_dram_traffic(m, k, n, rows, cols, dataflow, sram_words=srams, bandwidth=(rate, rate, rate))
    return traffic.ifmap_reads, traffic.filter_reads, traffic.ofmap_writes


def gemm_dram_words(m: npt.ArrayLike, k: npt.ArrayLike, n: npt.ArrayLike, count: npt.ArrayLike, device: Device,
                    dtype: str = "fp16", element_bytes: int | None = None) -> np.ndarray:
    """Each GEMM's (ifmap, filter, ofmap) DRAM words, int64 of shape (N, 3) over the broadcast (m, k, n, count)
    flattened, for one of ``count`` GEMMs of a shape dealt together on ``device``'s ``dtype`` arrays (module
    docstring: the dealt sub-GEMM's words × its split s). ``element_bytes``: the word's bytes (default ``dtype``'s
    operand's). Multiply by ``count`` for the batch's."""
    from archsim.array.mac_rates import packed_k
    from archsim.devices.array_waves import SPLIT_AXIS, array_gemm_cycles  # only devices built of arrays

    units = device.gemm_units(dtype)
    size = element_bytes or GEMM_OPERAND_BYTES[dtype]
    srams, rate = operand_srams(device, units, size), operand_rate(device, units, size)
    shapes = np.broadcast_arrays(*(np.asarray(x, dtype=np.int64) for x in (m, k, n, count)))
    m, k, n, count = (np.atleast_1d(x).ravel() for x in shapes)
    # the split op timing deals (its reduction at the dtype's MACs per PE per cycle: array_gemm_seconds), each
    # sub-GEMM's words those of its real elements (at rate 1 the deal's own sub-GEMMs, gemm_deal's)
    macs = device.mac_rate(dtype) if units is device.arrays else 1.0
    split = array_gemm_cycles(m, packed_k(k, macs), n, count, units, device.split_k).split
    sub = [m, k, n]
    axis = SPLIT_AXIS[units.dataflow]
    sub[axis] = -(-sub[axis] // split)
    out = np.zeros((m.size, 3), dtype=np.int64)
    for i, (a, b, c) in enumerate(zip(*(x.tolist() for x in sub), strict=True)):
        out[i] = _sub_gemm_words(a, b, c, units.rows, units.cols, units.dataflow, srams, rate)
    return out * split[:, None]


def device_dram_words(device: Device, dtype: str, element_bytes: int | None = None) -> DramWords | None:
    """The energy model's DRAM count for ``dtype`` GEMMs on ``device`` (:data:`DramWords`: :func:`gemm_dram_words`
    in words of ``element_bytes`` — default the operand's, train's; an array command's width, ``cost``'s and
    ``energy``'s — what op timing charges at that width), or None where the device counts compulsory traffic. The
    one rule ``train``, ``energy`` and ``cost --energy`` price a device file's DRAM words by."""
    if device.gemm != "arrays" or device.dram_traffic == "compulsory":
        return None
    return partial(gemm_dram_words, device=device, dtype=dtype, element_bytes=element_bytes)


__all__ = ["DramWords", "device_dram_words", "gemm_dram_words", "operand_rate", "operand_srams"]
