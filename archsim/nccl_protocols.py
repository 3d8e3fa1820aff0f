"""NCCL's protocols as its tuner weighs them: beside Simple (a link class's own η, α₀ and α, fitted from 16 MB), the
low-latency LL and LL128, each with its own latency and a fraction of Simple's bandwidth. NCCL prices every
(algorithm, protocol) pair it may run as a base latency, a latency per step and the bytes over that pair's bus
bandwidth, and runs the fastest (NVIDIA/nccl, src/graph/tuning.cc: ``baseLat``, ``hwLat``, ``ncclTopoTuneModel``,
``ncclTopoGetAlgoTime``); :func:`archsim.collectives.collective_seconds` takes that minimum over ring and tree
for each protocol of a link (:attr:`archsim.collectives.LinkClass.protocols`), NVLS on Simple alone (NCCL's NVLS
runs Simple only).

The fractions are NCCL's own: a ring all-reduce on LL at 1/4 of Simple's bus bandwidth (half of each 8-byte line is
its flag, and its tuner counts half again), LL128 at 0.92 (120 of every 128 bytes are data). Both are tuning.cc's
ring figures; the tree here takes the same. The latencies are fitted (:func:`archsim.training.nccl_fit.fit_protocols`,
how: :mod:`archsim.training.fitted`) on nccl-tests' 2-, 4- and 8-GPU all-reduce tables at every size, Simple's
constants held.

Below ``spp/`` and ``training/`` alike, with :mod:`archsim.collectives` (which reads it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from archsim.errors import InputError

if TYPE_CHECKING:
    from archsim.collectives import LinkClass

LL_FRACTION = 0.25  # tuning.cc: a ring LL all-reduce's busBw × 1/4 of Simple's
LL128_FRACTION = 0.92  # tuning.cc: a ring LL128's busBw × 0.92 (120/128) of Simple's
FRACTIONS = {"LL": LL_FRACTION, "LL128": LL128_FRACTION}


@dataclass(frozen=True)
class Protocol:
    """name; fraction: of the link's Simple bus bandwidth η·B it moves bytes at; launch_s: its fixed latency α₀ of one
    collective; alpha_s: its latency per step (seconds)."""

    name: str
    fraction: float
    launch_s: float
    alpha_s: float

    def __post_init__(self) -> None:
        if not (0 < self.fraction <= 1 and self.launch_s >= 0 and self.alpha_s >= 0):
            raise InputError(f"bad protocol {self}", field="protocol")


def protocol_links(link: LinkClass) -> tuple[LinkClass, ...]:
    """``link`` as each protocol NCCL may run on it: itself (Simple) first, then each of ``link.protocols`` at its
    fraction of η, its own α₀ and α, the copy cost γ alike (the same reduce kernel), without NVLS."""
    return (replace(link, protocols=()), *(replace(link, efficiency=link.efficiency * p.fraction, launch_s=p.launch_s, alpha_s=p.alpha_s,
                            nvls=False, protocols=()) for p in link.protocols))


def protocol_names(link: LinkClass) -> tuple[str, ...]:
    """The names of :func:`protocol_links`' links, in its order."""
    return ("Simple", *(p.name for p in link.protocols))


__all__ = ["FRACTIONS", "LL128_FRACTION", "LL_FRACTION", "Protocol", "protocol_links", "protocol_names"]
