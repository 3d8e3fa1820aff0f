"""The link between devices that ``archsim pipeline``'s and ``archsim schedule``'s stage-to-stage hops cross (and
``schedule``'s data-parallel sync), one rule for both commands and for ``archsim.simulate`` and ``archsim.schedule``:

1. ``--link-bandwidth B`` (``link_bandwidth``), bytes per cycle, where given;
2. else no link: a hop is free (LayerPipe's and PipeDream's paper model, which times stages alone), and a
   data-parallel sync, which cannot be free, runs at :data:`DEFAULT_SYNC_BYTES_PER_CYCLE`.

A ``--config`` device file's ``[links] intra_gbps`` is not read here: these commands' processors are the arrays of
that one chip (``--processors`` defaults to its array count), and the file's link joins chips, not the arrays on
one, which share its memory; a stage boundary between arrays of a chip has no stated rate to price it by.

A hop of ``b`` bytes then takes ``b / B`` cycles (plus ``--comm``'s latency in ``schedule``), not rounded: the event
simulator times a transfer as latency + bytes / bandwidth in floats (:meth:`archsim.sim.problem.Link.transfer_time`).
"""

from __future__ import annotations

from dataclasses import dataclass

# bytes per cycle of a data-parallel sync's link where the flag states none (a device file's link joins chips: unread)
DEFAULT_SYNC_BYTES_PER_CYCLE = 64.0


@dataclass(frozen=True)
class HopLink:
    """The link's bytes per cycle (None: hops are free)."""

    bytes_per_cycle: float | None


def hop_link(link_bandwidth: float | None) -> HopLink:
    """The link a hop runs on: ``link_bandwidth`` bytes per cycle where given, else none (free hops)."""
    return HopLink(None if link_bandwidth is None else float(link_bandwidth))


def sync_bytes_per_cycle(link: HopLink) -> float:
    """A data-parallel sync's link: the hops' where one is stated, else :data:`DEFAULT_SYNC_BYTES_PER_CYCLE`."""
    return DEFAULT_SYNC_BYTES_PER_CYCLE if link.bytes_per_cycle is None else link.bytes_per_cycle
