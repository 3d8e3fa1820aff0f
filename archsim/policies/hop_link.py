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

# bytes per cycle of a data-parallel sync's link where the flag states none (a device file's link joins chips: unread)
DEFAULT_SYNC_BYTES_PER_CYCLE = 64.0


def sync_bytes_per_cycle(link: float | None) -> float:
    """A data-parallel sync's link: the hops' bytes per cycle where ``--link-bandwidth`` states one (None: hops are
    free), else :data:`DEFAULT_SYNC_BYTES_PER_CYCLE`."""
    return DEFAULT_SYNC_BYTES_PER_CYCLE if link is None else float(link)
