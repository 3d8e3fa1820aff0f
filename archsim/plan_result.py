"""What a ``plan`` run returns (:class:`PlanRun`), apart from the run itself: :mod:`archsim.plan_run` chooses SPP's
run (:mod:`archsim.plan_spp`) or PipeDream's (:mod:`archsim.plan_pipedream`), and both build this record, so it
lives below all three and none of them imports the module that calls it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from archsim.sim.timeline import Timeline

STAGE_ROWS = "stage / channel"  # a plan's Gantt rows: PE's resources, not GPUs


@dataclass(frozen=True)
class PlanRun:
    """One plan run: the ``rows`` and ``meta`` the command prints; the ``timeline`` (SPP's, or PipeDream's plan
    run when ``drawn``; a gpipe, pipedream-prm or layerpipe plan's PE schedule; None for dp and hetpipe), its ``title`` and ``caption`` and the Gantt's ``rows_title``; and the
    cluster file's ``warnings`` and ``notes``, said once the run has succeeded."""

    rows: list[dict]
    meta: dict
    timeline: Timeline | None = field(default=None, repr=False)
    title: str = ""
    caption: str = ""
    rows_title: str = STAGE_ROWS
    unit: str = "seconds"
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


__all__ = ["STAGE_ROWS", "PlanRun"]
