"""The link between devices that ``archsim pipeline``'s and ``archsim schedule``'s stage-to-stage hops cross (and
``schedule``'s data-parallel sync), one rule for both commands and for ``archsim.simulate`` and ``archsim.schedule``:

1. ``--link-bandwidth B`` (``link_bandwidth``), bytes per cycle, where given;
2. else a ``--config`` device file's chip-to-chip link, ``[links] intra_gbps`` (GB/s per direction) at the file's
   clock (a TOML's ``[compute] clock_mhz``, a ``.cfg``'s ``[archsim] ClockGHz``), with a note naming the rate;
3. else no link: a hop is free (LayerPipe's and PipeDream's paper model, which times stages alone), and a
   data-parallel sync, which cannot be free, runs at :data:`DEFAULT_SYNC_BYTES_PER_CYCLE`.

A hop of ``b`` bytes then takes ``b / B`` cycles (plus ``--comm``'s latency in ``schedule``), not rounded: the event
simulator times a transfer as latency + bytes / bandwidth in floats (:meth:`archsim.sim.problem.Link.transfer_time`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# bytes per cycle of a data-parallel sync's link where neither the flag nor a device file states one
DEFAULT_SYNC_BYTES_PER_CYCLE = 64.0


@dataclass(frozen=True)
class HopLink:
    """The link's bytes per cycle (None: hops are free) and the note a device file's rate is said with (None where the
    flag set it or no link is priced)."""

    bytes_per_cycle: float | None
    note: str | None = None


def device_link_rate(config: str | Path | None) -> tuple[float, float, float] | None:
    """(bytes/cycle, GB/s, GHz): the chip-to-chip link a ``--config`` device file states, ``[links] intra_gbps``
    (GB/s = 10⁹ bytes/s per direction) at the file's own clock, GB/s / GHz bytes per cycle (not rounded). None for
    no file, a plain SCALE-Sim ``.cfg`` (no ``[links]``) or a file without a clock. The file was read and checked by
    the array's reader before this is asked."""
    if config is None:
        return None
    from archsim.array.device_sections import cfg_device_sections, is_device_toml
    from archsim.validate import read_text

    text = read_text(config, "config file", encoding="utf-8-sig")
    if is_device_toml(config):
        import tomllib

        document = tomllib.loads(text)
        gbps, mhz = document.get("links", {}).get("intra_gbps"), document.get("compute", {}).get("clock_mhz")
        ghz = None if mhz is None else mhz / 1e3
    else:
        import configparser

        checked = cfg_device_sections(text, str(config), required=False)
        gbps = None if checked is None else checked[0].get("links", {}).get("intra_gbps")
        parser = configparser.ConfigParser(interpolation=None)
        parser.read_string(text, source=str(config))
        clock = parser.get("archsim", "ClockGHz", fallback=None)
        ghz = None if clock is None else float(clock)
    if not gbps or not ghz:
        return None
    return float(gbps) / ghz, float(gbps), ghz


def hop_link(link_bandwidth: float | None, config: str | Path | None, *, crossing: str = "stage-to-stage hops",
             flag: str = "link-bandwidth") -> HopLink:
    """The link ``crossing`` (what crosses it, as the note says) runs on: ``link_bandwidth`` bytes per cycle where
    given, else ``config``'s device link (:func:`device_link_rate`) with its note naming ``flag``, else none."""
    from archsim.console import setting

    if link_bandwidth is not None:
        return HopLink(float(link_bandwidth))
    rate = device_link_rate(config)
    if rate is None:
        return HopLink(None)
    per_cycle, gbps, ghz = rate
    return HopLink(per_cycle, f"{config}: {crossing} ran at {per_cycle:g} bytes/cycle, the file's chip-to-chip link "
                              f"[links] intra_gbps = {gbps:g} GB/s at its {ghz:g} GHz clock; "
                              f"{setting(flag, placeholder='BYTES')} overrides it")


def sync_bytes_per_cycle(link: HopLink) -> float:
    """A data-parallel sync's link: the hops' where one is stated, else :data:`DEFAULT_SYNC_BYTES_PER_CYCLE`."""
    return DEFAULT_SYNC_BYTES_PER_CYCLE if link.bytes_per_cycle is None else link.bytes_per_cycle
