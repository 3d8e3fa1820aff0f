"""A device sweep's array shapes at the device file's PE budget: ``array_sides`` as square arrays, and the lines that
say where a side's squares leave PEs unused."""

from __future__ import annotations

from typing import TYPE_CHECKING

from archsim.errors import InputError

if TYPE_CHECKING:
    from archsim.devices.device import Device


def square_arrays(device: Device, sides: tuple[int, ...]) -> tuple[tuple[int, int, int], ...]:
    """(count, side, side) for each side: as many side² arrays as the device's PEs make (its arrays'
    count × rows × cols, rounded down), so every shape spends the same silicon on PEs."""
    pes = device.arrays.count * device.arrays.rows * device.arrays.cols
    large = [s for s in sides if s * s > pes]
    if large:
        raise InputError(f"one {large[0]}² array has more PEs than the device's {pes}", field="array_sides")
    return tuple((pes // (s * s), s, s) for s in sides)


def unused_pe_lines(device: Device, sides: tuple[int, ...]) -> tuple[str, ...]:
    """One line per side whose square does not divide the device's PEs (:func:`square_arrays` rounds the count
    down): the fraction of the PE budget its arrays use, since its points then spend less silicon on PEs than
    the file's chip, and a front across sides compares chips of different sizes."""
    pes = device.arrays.count * device.arrays.rows * device.arrays.cols
    lines = []
    for count, side, _ in square_arrays(device, sides):
        used = count * side * side
        if used < pes:
            lines.append(f"array_sides {side}: {used:,} of the device's {pes:,} PEs used ({used / pes:.1%}: "
                         f"{count} array{'s' * (count > 1)} of {side} × {side}, the count rounded down); a side "
                         f"whose square divides {pes:,} uses them all")
    return tuple(lines)


__all__ = ["square_arrays", "unused_pe_lines"]
