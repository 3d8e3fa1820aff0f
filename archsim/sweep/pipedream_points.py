"""An array sweep's PipeDream points its straight pipeline cannot take: a (network, processors, pipedream) point of
more processors than the network has layer groups (antichain states: every stage holds whole layers). Such a point
is skipped and counted (:func:`skipped_line`: one line on stderr, a UserWarning from :func:`archsim.run_sweep`, and
in the report), as a device sweep skips the layouts train refuses (:mod:`archsim.sweep.device_layouts`); results.csv
holds only what ran, and the folder's spec.json records the skipped points (``skipped_points``). A spec none of whose
points is left is refused, saying which counts PipeDream takes.

Why skipped, not refused: a spec is a product of axes, so a sweep of LayerPipe over more processors than layer
groups (δ splits fill them: the paper's point) could not list PipeDream beside it at the counts it does take, and
the comparison needed two specs, two folders and two reports. Why apart from :mod:`archsim.sweep.runner`: the
command, the library and the report say the skipped points from a spec.json, without the runner's models.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from archsim.errors import InputError
from archsim.sweep.network_names import display_names

WHY = "straight pipeline puts whole layers on every processor"  # PipeDream's (archsim's short form of it)
KEY = "skipped_points"  # spec.json's record of them


def skipped_points(groups: dict[str, int], processors: Sequence[int]) -> list[dict[str, object]]:
    """The skipped points, as spec.json records them: one per (network, processors) above the network's
    ``groups`` (layer groups, by network as the spec names it; only networks PipeDream runs on), in the spec's
    order."""
    return [{"network": network, "processors": p, "method": "pipedream", "layer_groups": count}
            for network, count in groups.items() for p in processors if p > count]


def check_left(groups: dict[str, int], processors: Sequence[int], methods: Sequence[str]) -> None:
    """Refuse a spec none of whose points would run: PipeDream alone, on counts above every network's layer
    groups (naming the first network and the counts it takes)."""
    if list(methods) != ["pipedream"] or not groups or any(p <= n for n in groups.values() for p in processors):
        return
    network, count = next(iter(groups.items()))
    raise InputError(f"network {Path(network).name!r}: PipeDream's {WHY}: it has {_groups(count)}, so pipedream takes "
                     f"{_counts(count)}, not {_listed(processors)}, and no point of the sweep is left: list a count "
                     "it takes, or another method beside it (gpipe and ooo leave extra processors idle; layerpipe "
                     "splits δs over them)", field="processors")


def skipped_line(record: dict) -> str | None:
    """The one line counting the points a sweep skipped (from its spec.json ``record``), per network the counts
    skipped and those PipeDream takes; None when none was (or the record is an older version's)."""
    skipped = record.get(KEY)
    if not isinstance(skipped, list) or not skipped or not all(isinstance(entry, dict) for entry in skipped):
        return None
    axes = [len(value) if isinstance(value := record.get(key), list) else 0
            for key in ("networks", "processors", "methods")]
    points = axes[0] * axes[1] * axes[2]
    listed = record.get("networks")
    names = display_names(map(str, [*(listed if isinstance(listed, list) else ()),
                                    *(entry.get("network") for entry in skipped)]))
    networks: dict[str, tuple[object, list]] = {}
    for entry in skipped:
        name = names[str(entry.get("network"))]  # its stem, unless another network shares it (a/net, b/net)
        networks.setdefault(name, (entry.get("layer_groups"), []))[1].append(entry.get("processors"))
    said = "; ".join(f"{name} has {_groups(count)}, so it takes {_counts(count)}, not {_spans(counts)}"
                     if isinstance(count, int) else name for name, (count, counts) in networks.items())
    rows = skipped_rows(record)
    return (f"skipped {len(skipped):,} of {points:,} (network, processors, method) points ({rows:,} of "
            f"{points * rows // len(skipped):,} configurations) that pipedream cannot take: its {WHY}, and {said}; "
            "results.csv holds the rest")


def unit_skipped(skipped: Sequence[dict], network: str, clocks: int) -> int:
    """The rows of results.csv one unit of ``network`` does not give: one per clock (``clocks``: the design's, 1
    without them) of each of the network's ``skipped`` points (at the spec's processor counts, every unit's). The
    one count of them: the runner's bar and stop message, and :func:`skipped_rows` (the note, the report and the
    results check) all take it from here."""
    return max(1, clocks) * sum(isinstance(point, dict) and point.get("network") == network for point in skipped)


def skipped_rows(record: dict) -> int:
    """The rows of results.csv the skipped points of a spec.json ``record`` would have been: :func:`unit_skipped`
    of each unit, one per network, array, dataflow, batch and design (0 for a record of none, or an older
    version's)."""
    skipped = record.get(KEY)
    if not isinstance(skipped, list) or not skipped:
        return 0
    designs = record.get("designs") or []
    clocks = len(designs[0].get("clocks_ghz") or []) if designs and isinstance(designs[0], dict) else 0
    lengths = [len(value) if isinstance(value := record.get(key), list) else 0 for key in ("arrays", "batches")]
    units = lengths[0] * max(1, len(record.get("dataflows") or [])) * lengths[1] * max(1, len(designs))
    networks = dict.fromkeys(str(point.get("network")) for point in skipped if isinstance(point, dict))
    return units * sum(unit_skipped(skipped, network, clocks) for network in networks)


def _groups(count: int) -> str:
    return f"{count} layer {'group' if count == 1 else 'groups'}"


def _counts(count: int) -> str:
    return "1 processor" if count == 1 else f"1–{count} processors"


def _spans(values: Sequence[object]) -> str:
    """``values`` in their order, a run of three or more consecutive integers written as its ends ("14–1000"):
    a spec of 1…1000 processors otherwise printed a line of 987 numbers."""
    runs: list[list[object]] = []
    for value in values:
        last = runs[-1][-1] if runs else None
        if isinstance(value, int) and isinstance(last, int) and value == last + 1:
            runs[-1].append(value)
        else:
            runs.append([value])
    return ", ".join(f"{run[0]}–{run[-1]}" if len(run) >= 3 else ", ".join(map(str, run)) for run in runs)


def _listed(processors: Sequence[object]) -> str:
    counts = list(processors)
    return f"{_spans(counts)} processor{'' if counts == [1] else 's'}"


__all__ = ["KEY", "WHY", "check_left", "skipped_line", "skipped_points", "skipped_rows", "unit_skipped"]
