"""The one line that says a layout does not fit its memory: ``archsim train`` and ``archsim pipeline
--capacity-gb`` print it as a warning on stderr, :func:`archsim.train` issues it as a
:class:`UserWarning` (a what-if still returns its numbers); likewise the line that says a TP group's
all-reduces cross the network (:func:`tp_span_warning`), and a CP group's all-to-alls (:func:`cp_span_warning`)."""

from __future__ import annotations

from collections.abc import Sequence

from archsim.units import GIB


def memory_warning(needs: Sequence[tuple[str, str, float, float]], plural: str, per: str = "") -> str | None:
    """One line naming the unit furthest over its memory, or None when every one fits: a what-if still prints its
    table (``train``, ``pipeline --capacity-gb``). ``needs``: (unit, its memory's name, bytes needed, bytes it has);
    ``plural`` names the units in the count, ``per`` follows the figure (" per GPU")."""
    over = [need for need in needs if need[2] > need[3]]
    if not over:
        return None
    unit, holder, needed, capacity = max(over, key=lambda need: need[2] / need[3])
    others = f" ({len(over)} of {len(needs)} {plural} do not fit)" if len(over) > 1 else ""
    return f"does not fit: {unit} needs {_gib(needed)} GiB{per}, its {holder} has {_gib(capacity)} GiB{others}"


# The share of a GPU's memory above which a layout that fits is said to leave little headroom: docs/training.md's
# example of the memory a job can allocate on an H100 is 72 of the 79.2 GiB CUDA gives a program (91%), the other
# ~7 GiB for what archsim does not model — the CUDA context, NCCL's buffers, the caching allocator's fragmentation.
HEADROOM_SHARE = 0.9


def headroom_note(subject: str, needed: float, capacity: float, holder: str, gpu: bool = True) -> str:
    """The note that ``subject`` fits but uses more than :data:`HEADROOM_SHARE` of a GPU's whole memory (bytes
    ``needed`` of ``capacity``, the memory of ``holder``: "its NVIDIA H100 SXM5 80GB"): a real run also holds the
    CUDA context, NCCL's buffers and the allocator's fragmentation, which archsim does not model (docs/training.md,
    "What the model assumes"), so it may not fit;
    the cluster file's ``usable_memory_gib`` states the memory a job can allocate, and the checks then use it.
    Said, never refused: ``fits_memory`` and the rankings are unchanged. ``gpu`` False: ``holder`` is a device
    file's chip (no catalog GPU), which holds no CUDA context: its runtime's own memory is named instead."""
    held = ("the CUDA context, NCCL's buffers" if gpu else
            "its runtime's own memory (on a GPU the CUDA context and NCCL's buffers)")
    return (f"{subject} {needed / GIB:.2f} of the {capacity / GIB:.2f} GiB of {holder} "
            f"({100 * needed / capacity:.1f}%, above {100 * HEADROOM_SHARE:.0f}%): it fits states and activations, "
            f"but a real run also needs {held} and the allocator's fragmentation, which "
            "archsim does not model; state the memory a job can allocate as the cluster file's [[servers]] "
            "usable_memory_gib (e.g. 72 of an H100's 79.2) to check against it")


def rank_headroom_note(result, machines) -> str | None:
    """:func:`headroom_note` for a training iteration that fits: its fullest pipeline rank (states and activations
    over its GPU's memory) among those on a GPU's whole memory, where above :data:`HEADROOM_SHARE`; None otherwise,
    and for a rank whose cluster file states ``usable_memory_gib`` (its headroom is the user's already) or a layout
    that does not fit (:func:`rank_memory_warning` says so)."""
    if not all(result.fits):
        return None
    full = [(m.total / result.capacities[r], r) for r, m in enumerate(result.memory)
            if not machines[r].memory_bytes and m.total > HEADROOM_SHARE * result.capacities[r]]
    if not full:
        return None
    _, r = max(full)
    return headroom_note(f"pipeline rank {r} uses", result.memory[r].total, result.capacities[r],
                         f"its {machines[r].gpu.name}", gpu=machines[r].gpu.catalog is not None)


def row_layout(row: dict) -> str:
    """A search row's layout in a few words, as the Pareto block's lines name it: ``TP1 PP4 DP4 mb2 none
    interleaved-1f1b v2`` (CP, EP and ETP where set, ``v`` the chunks a rank runs, ``sp`` with sequence
    parallelism), so a note that counts rows names the one it means (the table prints no row numbers)."""
    more = f" CP{row['cp']} {row['cp_comm']}" if row.get("cp", 1) > 1 else ""
    more += f" {row['cp_hierarchy'].replace(' ', '×')}" if row.get("cp_hierarchy") else ""
    more += f" EP{row['ep']}" if row.get("ep", 1) > 1 else ""
    more += f" ETP{row['etp']}" if row.get("etp", row["tp"]) != row["tp"] else ""
    return (f"TP{row['tp']}{more} PP{row['pp']} DP{row['dp']} mb{row['micro_batch']} {row['recompute']} "
            f"{row['schedule']}{' v' + str(row['interleave']) if row['interleave'] > 1 else ''}"
            f"{' sp' if row['sequence_parallel'] else ''}")


def rows_headroom_note(rows: Sequence[dict], cluster) -> str | None:
    """:func:`headroom_note` for a search's shown ``rows`` (each fits): how many use more than
    :data:`HEADROOM_SHARE` of a GPU's memory, and the first's figures; None when none does or the cluster file
    states ``usable_memory_gib`` (its headroom is the user's already). A mixed cluster's rows are compared with its
    largest GPU's memory: a row above that share of it is above it on its own fullest GPU too (which holds its peak),
    so the note is never wrong, though it may miss a row fullest on a smaller GPU."""
    if cluster.usable:
        return None
    gpu = max({*cluster.servers, cluster.gpu}, key=lambda device: device.memory_bytes)
    full = [row for row in rows if row["peak_memory_gib"] * GIB > HEADROOM_SHARE * gpu.memory_bytes]
    if not full:
        return None
    first = next(i for i, row in enumerate(rows, 1) if row is full[0])
    named = f"row {first} ({row_layout(full[0])})"
    gpus = all(device.catalog is not None for device in {*cluster.servers, cluster.gpu})  # no device file's chip
    if len(full) > 1:
        subject = (f"{len(full)} of the {len(rows)} rows shown use more than {100 * HEADROOM_SHARE:.0f}% of "
                   f"{'a GPU' if gpus else 'a device'}'s memory; the first, {named}, uses")
    else:
        subject = (f"{named} of the {len(rows)} shown uses" if len(rows) > 1
                   else f"the row shown ({row_layout(full[0])}) uses")
    holder = f"the cluster's largest GPU, the {gpu.name}" if cluster.heterogeneous else f"its {gpu.name}"
    return headroom_note(subject, full[0]["peak_memory_gib"] * GIB, gpu.memory_bytes, holder, gpu=gpus)


def rows_tp_span_note(rows: Sequence[dict]) -> str | None:
    """:func:`tp_span_warning` for a search's shown ``rows``, once: how many have a TP group across servers
    (``tp_spans_servers``: search keeps them, priced over the network) and the first's TP; None when none does.
    ``archsim train`` warns of such a layout, and search said nothing of it beyond a column."""
    spanning = [i for i, row in enumerate(rows, 1) if row.get("tp_spans_servers")]
    if not spanning:
        return None
    first = rows[spanning[0] - 1]
    kinds = "all-gathers and reduce-scatters" if first.get("sequence_parallel") else "all-reduces"
    if len(spanning) > 1:
        subject = f"{len(spanning)} of the {len(rows)} rows shown have"
    else:
        subject = f"row {spanning[0]} of the {len(rows)} shown has" if len(rows) > 1 else "the row shown has"
    return (f"{subject} a TP group that spans servers (tp_spans_servers): in row {spanning[0]} ({row_layout(first)}), "
            f"TP {first['tp']}, its {kinds} cross the network")


def tp_span_warning(cluster, par) -> str | None:
    """One line when a TP group of ``par`` spans servers of ``cluster`` (a
    :class:`~archsim.training.cluster.GpuCluster`): it runs, but its all-reduces cross the NICs, which is
    rarely what a user meant; None when every TP group sits in one server (or one NVLink domain). Under sequence
    parallelism the group's collectives are all-gathers and reduce-scatters, and the line names those."""
    spans = cluster.tp_servers(par)
    kinds = "all-gathers and reduce-scatters" if par.sequence_parallel else "all-reduces"
    return f"a TP group spans {spans} servers: its {kinds} cross the network" if spans > 1 else None


def cp_span_warning(cluster, par) -> str | None:
    """One line when a CP group of ``par`` that exchanges by all-to-all (``cp_comm`` a2a; a2a+p2p's inner group of
    A) spans servers of ``cluster``: its all-to-alls of Q, K, V and the output, in series with attention, then
    cross the NICs (TransformerEngine's hierarchical a2a+p2p exists to keep them in a server). None otherwise: p2p and all_gather
    across servers are how long-context runs are laid out (Llama 3's TP 8 × CP 16), shown by ``crossed_by``."""
    if par.cp == 1 or par.cp_exchange not in ("a2a", "a2a+p2p"):
        return None
    cluster.check_gpus(par)
    most, a = 1, par.cp_a2a  # the all-to-all's ranks: the CP group (a2a), or a2a+p2p's inner group of A
    for start in range(0, par.gpus, par.tp * par.cp):  # Megatron's order tp-cp-dp-pp: GPU t of CP TP groups
        for first in (f + j * a * par.tp for f in range(start, start + par.tp) for j in range(par.cp // a)):
            last = first + par.tp * (a - 1)
            if not cluster.one_domain(first, last, par.tp):
                most = max(most, cluster.server_of(last) - cluster.server_of(first) + 1)
    group = "a CP group" if par.cp_exchange == "a2a" else f"an all-to-all group of a2a+p2p (A = {a})"
    return f"{group} spans {most} servers: its all-to-alls (a2a) cross the network" if most > 1 else None


def tp_span_points_warnings(spans: Sequence[tuple[str | None, tuple[int, ...]]]) -> tuple[str, ...]:
    """:func:`tp_span_warning` (or :func:`cp_span_warning`) for a ``train --sweep``: ``spans`` holds each point's
    line (None: its groups stay in a server, or it did not run) and layout (tp, pp, dp, and cp where above 1); one
    line per distinct line, saying how many of the sweep's points it holds for and their layouts, as the idle-GPU
    note counts them (not a line per point)."""
    cases: dict[str, list[tuple[int, ...]]] = {}
    for text, layout in spans:
        if text:
            cases.setdefault(text, []).append(layout)
    lines = []
    for text, layouts in cases.items():
        subject = ("the sweep's one point" if len(spans) == 1 else f"all {len(layouts)} points of the sweep"
                   if len(layouts) == len(spans) else f"{len(layouts)} of the sweep's {len(spans)} points")
        distinct = list(dict.fromkeys(layouts))
        named = ", ".join(_layout_words(*layout) for layout in distinct[:3])
        more = f" and {len(distinct) - 3} more" if len(distinct) > 3 else ""
        lines.append(f"{subject} ({named}{more}): {text}")
    return tuple(lines)


def unfit_points_warning(points: Sequence[tuple[str | None, tuple[int, ...]]]) -> str | None:
    """:func:`rank_memory_warning` for a ``train --sweep``, as ``train`` and ``--runs`` warn of a layout over its memory:
    ``points`` holds each point's line (None: it fits, or did not run) and layout (tp, pp, dp, and cp where above 1);
    one line saying how many of the sweep's points do not fit and their layouts, with the first one's line, or None when
    every point that ran fits (its ``fits_memory`` column alone was easy to miss beside a point's better MFU)."""
    over = [(text, layout) for text, layout in points if text]
    if not over:
        return None
    one = len(over) == 1
    subject = ("the sweep's one point" if len(points) == 1 else f"all {len(over)} points of the sweep"
               if len(over) == len(points) else f"{len(over)} of the sweep's {len(points)} points")
    distinct = list(dict.fromkeys(layout for _, layout in over))
    named = ", ".join(_layout_words(*layout) for layout in distinct[:3])
    more = f" and {len(distinct) - 3} more" if len(distinct) > 3 else ""
    first = over[0][0].removeprefix("does not fit: ")
    return (f"{subject} ({named}{more}) {'does' if one else 'do'} not fit in memory (fits_memory false on "
            f"{'its row' if one else 'their rows'}){'' if one else '; the first'}: {first}")


def points_note(points: Sequence[tuple[str | None, tuple[int, ...]]]) -> str | None:
    """One note for a ``train --sweep``'s points of a per-point line whose figures differ (a short pipeline's
    micro-batches): ``points`` holds each point's line (None: none, or it did not run) and layout (tp, pp, dp, and cp
    where above 1); how many points it holds for and their layouts, counted as :func:`unfit_points_warning` counts
    points out of memory, with the first one's line; None when none."""
    held = [(text, layout) for text, layout in points if text]
    if not held:
        return None
    subject = ("the sweep's one point" if len(points) == 1 else f"all {len(held)} points of the sweep"
               if len(held) == len(points) else f"{len(held)} of the sweep's {len(points)} points")
    distinct = list(dict.fromkeys(layout for _, layout in held))
    named = ", ".join(_layout_words(*layout) for layout in distinct[:3])
    more = f" and {len(distinct) - 3} more" if len(distinct) > 3 else ""
    return f"{subject} ({named}{more}){'' if len(held) == 1 else '; the first'}: {held[0][0]}"


def _layout_words(tp: int, pp: int, dp: int, cp: int = 1) -> str:
    """``tp 2 × cp 8 × pp 1 × dp 1``: a sweep point's layout in a warning (cp named where above 1)."""
    return f"tp {tp} × " + (f"cp {cp} × " if cp > 1 else "") + f"pp {pp} × dp {dp}"


def _gib(size: float) -> str:
    """Bytes as GiB (2³⁰ bytes): one decimal, or three significant digits under 1 GiB (a test's tiny limits)."""
    gib = size / GIB
    return f"{gib:.1f}" if gib >= 1 else f"{gib:.3g}"


def rank_memory_warning(result, machines) -> str | None:
    """:func:`memory_warning` for a training iteration: each pipeline rank's memory per chip (a
    :class:`~archsim.training.run.TrainResult`'s) against its chip's (``machines``, one per rank): "per GPU" where
    every chip is a catalog GPU, "per device" where a device file's chip (an accelerator of one's own) is among them."""
    from archsim.devices.catalog import chip_of

    per = " per GPU" if all(chip_of(machine.gpu) is not None for machine in machines) else " per device"
    named = [m.gpu.name + (" (usable_memory_gib)" if m.memory_bytes else "") for m in machines]  # the cluster's cap
    return memory_warning([(f"pipeline rank {r}", named[r], m.total, result.capacities[r])
                           for r, m in enumerate(result.memory)], "pipeline ranks", per)
