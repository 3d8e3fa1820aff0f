"""A device file's figures judged against one another, where each alone is within its bounds
(:func:`archsim.devices.device_file.implausible_figures` holds those): its HBM bandwidth against its compute peak
(a Gbit/s figure is 8× its GB/s, inside the GB/s bounds for most chips, and named
so where the bounds' line would suggest MB/s); its static power against any chip's whole power and its own
``board_watts`` (W).

Figures, bytes of memory per FLOP of the dense 16-bit peak: Google's TPU v2 0.0152 (700 GB/s, 46 TFLOP/s; Jouppi et
al., CACM 2020), the best-fed matrix chip found; NVIDIA's V100 SXM2 0.0072 (900 GB/s, 125 TFLOP/s), the catalog's
best-fed; AMD's Instinct MI250X 0.0086 (3,276.8 GB/s, 383 TFLOP/s); the shipped
configs/devices/scalesim_32x32_device.cfg 0.0122. Power: AMD's Instinct MI355X board, 1,400 W (AMD's product page),
is as much as any one accelerator package draws."""

from __future__ import annotations

from archsim.devices.device import Device
from archsim.errors import InputError

# bytes of HBM per FLOP of the 16-bit peak: above the best-fed chips' (≤ 0.0152, module docstring),
# and below a Gbit/s figure's 8× on any of them (the L4's 300 GB/s and 121 TFLOP/s give 0.0198 so written)
MAX_PLAUSIBLE_BYTES_PER_FLOP = 0.016
# GB/s: 8 × the least memory of a catalog chip with a 16-bit peak (the L4's 300): below it a figure is no such
# chip's in Gbit/s, and a small array beside a fast memory (one 64 × 64 array at 400 GB/s) is a design, not a slip
MIN_GBIT_SLIP_GBPS = 8 * 300.0
# W per chip: static power is a part of a chip's whole power, and no package draws above 1.4 kW (module docstring);
# 50 W written in mW (50,000) is far above it
MAX_PLAUSIBLE_STATIC_WATTS = 2000.0
# pJ per bit on a chip's links: NVLink-C2C 1.3 (NVIDIA Grace Hopper whitepaper, 2022), off-package SerDes several
# times that; an assumption: 100, ten times the ~10 pJ/bit scale of off-package electrical links, so that 540 fJ/bit
# written as 540 or 1.3 nJ per 64-bit word written as 1300 is said, and no real link is
MAX_PLAUSIBLE_LINK_PJ_PER_BIT = 100.0


def hbm_per_flop_line(device: Device, dtype: str | None = None) -> str | None:
    """The warning for an HBM bandwidth that feeds the device's 16-bit peak (fp16 or bf16, the larger) at more
    bytes per FLOP than any matrix chip, where an eighth of it would not, at :data:`MIN_GBIT_SLIP_GBPS` or more: a
    Gbit/s figure written as GB/s (inside the GB/s bounds for most chips, above them for the fastest). ``dtype``:
    the one the run's GEMMs run in (train's --fp8: fp8), whose peak the bandwidth feeds where it is the faster (fp8
    at 2 MACs per PE doubles it; a slower fp32 peak is not judged). None where it is not that, or the device states
    no 16-bit peak."""
    peaks = dict(device.peaks)
    peak, name = max((peaks.get("fp16", 0.0), "16-bit"), (peaks.get("bf16", 0.0), "16-bit"))
    if dtype is not None and peak and peaks.get(dtype, 0.0) > peak:
        peak, name = peaks[dtype], dtype
    per_flop = device.hbm_bytes_per_s / peak if peak else 0.0
    gbps = device.hbm_bytes_per_s / 1e9
    if gbps < MIN_GBIT_SLIP_GBPS or not MAX_PLAUSIBLE_BYTES_PER_FLOP < per_flop <= 8 * MAX_PLAUSIBLE_BYTES_PER_FLOP:
        return None
    return (f"{device.name}: [memory] hbm_gbps = {gbps:g} GB/s is {per_flop:.3g} bytes per FLOP of its "
            f"{peak / 1e12:.4g} TFLOP/s {name} peak, above any matrix chip's (≤ {MAX_PLAUSIBLE_BYTES_PER_FLOP:g}; a "
            f"V100's 0.0072): if it is in Gbit/s, write hbm_gbps = {gbps / 8:g}")


def static_watts_line(device: Device) -> str | None:
    """The warning for a static power above :data:`MAX_PLAUSIBLE_STATIC_WATTS` (a unit slipped: mW written as W),
    naming the key and the range; None otherwise."""
    watts = device.static_watts
    if watts <= MAX_PLAUSIBLE_STATIC_WATTS:
        return None
    return (f"{device.name}: [device] static_watts = {watts:g} W per chip is above any chip's whole power, of which "
            f"static power is a part (0 … {MAX_PLAUSIBLE_STATIC_WATTS:g} W; AMD's MI355X board draws 1,400 W): if it "
            f"is in mW, write static_watts = {watts / 1000:g}")


def link_pj_line(device: Device) -> str | None:
    """The warning for a ``[links] pj_per_bit`` above :data:`MAX_PLAUSIBLE_LINK_PJ_PER_BIT` (a unit slipped: fJ per
    bit, or pJ per 64-bit word, written as pJ per bit), naming the key, the figure and both readings; None otherwise."""
    pj = device.link_pj_per_bit
    if pj <= MAX_PLAUSIBLE_LINK_PJ_PER_BIT:
        return None
    return (f"{device.name}: [links] pj_per_bit = {pj:g} pJ per bit is above any chip link's (≤ "
            f"{MAX_PLAUSIBLE_LINK_PJ_PER_BIT:g}; NVLink-C2C 1.3): if it is in fJ per bit, write pj_per_bit = "
            f"{pj / 1000:g}; if pJ per 64-bit word, {pj / 64:g}")


def check_static_below_board(static_watts: float, board_watts: float | None, file: str) -> None:
    """Refuse a static power above the chip's own ``board_watts``, its whole power (W): static power is a part of
    it, so one of the two figures is wrong. InputError naming the file and key."""
    if board_watts is not None and static_watts > board_watts:
        raise InputError(f"{static_watts:g} W of static power is above the chip's board_watts = {board_watts:g} W, "
                         "its whole power, of which static power is a part: check both figures",
                         file=file, field="device.static_watts")


__all__ = ["MAX_PLAUSIBLE_BYTES_PER_FLOP", "MAX_PLAUSIBLE_LINK_PJ_PER_BIT", "MAX_PLAUSIBLE_STATIC_WATTS",
           "MIN_GBIT_SLIP_GBPS", "check_static_below_board", "hbm_per_flop_line", "link_pj_line", "static_watts_line"]
