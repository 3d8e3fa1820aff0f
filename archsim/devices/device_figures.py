"""A device file's figures judged against one another, where each alone is within its bounds
(:func:`archsim.devices.device_file.implausible_figures` holds those): its HBM bandwidth against its compute peak
(a Gbit/s figure is 8× its GB/s, inside the GB/s bounds for most chips, and named
so where the bounds' line would suggest MB/s).

Figures, bytes of memory per FLOP of the dense 16-bit peak: Google's TPU v2 0.0152 (700 GB/s, 46 TFLOP/s; Jouppi et
al., CACM 2020), the best-fed matrix chip found; NVIDIA's V100 SXM2 0.0072 (900 GB/s, 125 TFLOP/s), the catalog's
best-fed; AMD's Instinct MI250X 0.0086 (3,276.8 GB/s, 383 TFLOP/s); the shipped
configs/devices/scalesim_32x32_device.cfg 0.0122."""

from __future__ import annotations

from archsim.devices.device import Device

# bytes of HBM per FLOP of the 16-bit peak: above the best-fed chips' (≤ 0.0152, module docstring),
# and below a Gbit/s figure's 8× on any of them (the L4's 300 GB/s and 121 TFLOP/s give 0.0198 so written)
MAX_PLAUSIBLE_BYTES_PER_FLOP = 0.016
# GB/s: 8 × the least memory of a catalog chip with a 16-bit peak (the L4's 300): below it a figure is no such
# chip's in Gbit/s, and a small array beside a fast memory (one 64 × 64 array at 400 GB/s) is a design, not a slip
MIN_GBIT_SLIP_GBPS = 8 * 300.0


def hbm_per_flop_line(device: Device) -> str | None:
    """The warning for an HBM bandwidth that feeds the device's 16-bit peak (fp16 or bf16, the larger) at more
    bytes per FLOP than any matrix chip, where an eighth of it would not, at :data:`MIN_GBIT_SLIP_GBPS` or more: a
    Gbit/s figure written as GB/s (inside the GB/s bounds for most chips, above them for the fastest). None where
    it is not that, or the device states no 16-bit peak."""
    peak = max((flops for dtype, flops in device.peaks if dtype in ("fp16", "bf16")), default=0.0)
    per_flop = device.hbm_bytes_per_s / peak if peak else 0.0
    gbps = device.hbm_bytes_per_s / 1e9
    if gbps < MIN_GBIT_SLIP_GBPS or not MAX_PLAUSIBLE_BYTES_PER_FLOP < per_flop <= 8 * MAX_PLAUSIBLE_BYTES_PER_FLOP:
        return None
    return (f"{device.name}: [memory] hbm_gbps = {gbps:g} GB/s is {per_flop:.3g} bytes per FLOP of its "
            f"{peak / 1e12:.4g} TFLOP/s 16-bit peak, above any matrix chip's (≤ {MAX_PLAUSIBLE_BYTES_PER_FLOP:g}; a "
            f"V100's 0.0072): if it is in Gbit/s, write hbm_gbps = {gbps / 8:g}")


__all__ = ["MAX_PLAUSIBLE_BYTES_PER_FLOP", "MIN_GBIT_SLIP_GBPS", "hbm_per_flop_line"]
