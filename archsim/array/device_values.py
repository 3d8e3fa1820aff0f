"""A device file's shares, link figures, static power and DRAM-traffic rule read from their text, one check each: a fraction of a peak
(``gemm_efficiency``, ``memory_efficiency``, ``fused_gemm_fraction``), ``[links] efficiency`` (a fraction or NCCL's
fit) and the NIC's Gbit/s (``[links] inter_node_gbps``); each a ValueError in one line, which
:mod:`archsim.array.device_sections` names with the file and key."""

from __future__ import annotations

import math

from archsim.choices.devices import DRAM_TRAFFIC, NCCL_FIT
from archsim.cluster_keys import MAX_GBPS, MIN_GBPS, is_gbps
from archsim.validate import MIN_MAGNITUDE, did_you_mean, shown, shown_number
from archsim.value_parsers import below_floor, parse_float


def gbps0(value: object) -> float:
    """A device file's NIC, Gbit/s (``[links] inter_node_gbps``): 0 (none stated) or a figure within the one bound of
    a cluster file's link figures (:func:`archsim.cluster_keys.is_gbps`), since it stands in for ``inter_server_gbps``;
    else ValueError in one line, so the device file's own key is named, not the cluster file's."""
    gbps = parse_float(value, what="a non-negative number")
    if gbps and not is_gbps(gbps):
        raise ValueError(f"expected 0 (none) or a number in [{MIN_GBPS:g}, {MAX_GBPS:g}], got {shown(value)}")
    return gbps


def link_efficiency(value: object, typed: bool) -> float | str:
    """``[links] efficiency``: the share of ``intra_gbps`` a collective's ring reaches, a fraction in (0, 1], or
    :data:`~archsim.choices.devices.NCCL_FIT` (NVIDIA's NCCL fit, a catalog GPU's); else ValueError in one line. A
    TOML's number takes no quotes (``typed``); a .cfg's text is read as a number where it is one."""
    if isinstance(value, str) and value.strip() == NCCL_FIT:
        return NCCL_FIT
    what = f'a fraction in (0, 1] or "{NCCL_FIT}"'
    numeric = not math.isnan(_number(value))
    if isinstance(value, str) and (typed or not numeric):  # a number in a TOML's quotes, or a misspelt "nccl"
        raise ValueError(f"expected {what}, got {shown_number(value) if numeric else shown(value)}"
                         f"{'' if numeric else did_you_mean(value.strip(), (NCCL_FIT,))}")
    return fraction(value, what)


def _number(value: object) -> float:
    """``value`` read as a finite number, any sign, else NaN."""
    try:
        return parse_float(value, low=-math.inf)
    except ValueError:
        return math.nan


def fraction(value: object, what: str = "a fraction in (0, 1]") -> float:
    """A share of a peak in (0, 1], else ValueError in one line, naming the fraction where the figure in (1, 100]
    looks like a percentage (``gemm_efficiency = 85``: write 0.85)."""
    try:
        return parse_float(value, low_open=True, high=1.0, what="a positive number")
    except ValueError:
        number = _number(value)
        percent = f": if it is a percentage, write {number / 100:g}" if 1 < number <= 100 else ""
        tiny = f": below {MIN_MAGNITUDE:g}, the least number archsim reads" if below_floor(value) else ""  # in (0, 1]
        raise ValueError(f"expected {what}, got {shown(value)}{percent}{tiny}") from None


def comm_sms(links: dict, cores: int, file: str) -> int:
    """``[links] comm_sms`` (read as a non-negative integer by the sections' check; absent: 0, a chip whose collectives
    hold no core) against the chip's ``cores``: at least one must compute beside a collective; else InputError
    naming the file and key."""
    from archsim.errors import InputError

    taken = links.get("comm_sms", 0)
    if taken >= cores:
        raise InputError(f"expected a whole number of cores from 0 to {cores - 1} (one fewer than its {cores}), got "
                         f"{taken}", file=file, field="links.comm_sms")
    return taken


def link_seconds(links: dict, key: str) -> float | None:
    """A ``[links]`` latency key (µs) in seconds; None when unstated (the fitted link class's α prices it)."""
    return None if key not in links else links[key] / 1e6


MAX_STATIC_WATTS = 1e6


def static_watts(value: object) -> float:
    """A chip's static power, W, as a device file's ``[device] static_watts`` or a device sweep's spec states it
    (a .cfg's text too): in [0, :data:`MAX_STATIC_WATTS`), else ValueError in one line. The one check of it, on
    :func:`~archsim.value_parsers.parse_float`'s reading of a number."""
    try:
        watts = parse_float(value)
    except ValueError:
        watts = math.inf
    if watts >= MAX_STATIC_WATTS:
        raise ValueError(f"expected watts per chip in [0, 10⁶), got {shown(value)}")
    return watts


def dram_traffic(value: object) -> str:
    """``[memory] dram_traffic``: how a ``gemm = "arrays"`` device counts each GEMM's HBM words, one of
    :data:`~archsim.choices.devices.DRAM_TRAFFIC` (a TOML's string, a .cfg's text), else ValueError in one line."""
    text = value.strip() if isinstance(value, str) else None
    if text is None or text not in DRAM_TRAFFIC:
        given = repr(value) if text is None else shown(value)
        raise ValueError(f"expected one of {', '.join(repr(c) for c in DRAM_TRAFFIC)} (each GEMM's operands once, or "
                         f"SCALE-Sim's count for the arrays' SRAMs), got {given}")
    return text
