"""How ``archsim train``'s and ``archsim search``'s table and CSV write their meta: a figure by part as one
``part: value, …`` cell, the energy, host-floor and compute-split lines, parameter counts and network links as one line
each (the JSON documents themselves are :mod:`archsim.training.train_json`'s)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping


def figure(value: float, digits: int) -> str:
    """A figure in one of the table's lines as the table's cells write it (:func:`archsim.outputs.format_number`):
    ``digits`` significant digits, but to the unit where those would take a positive exponent (``--precision 2``:
    443 J, not ``4.4e+02``), so a line and the cells under the same ``--precision`` read alike."""
    from archsim.outputs import format_number

    return format_number(value, f"{{:.{digits}g}}")


def energy_line(meta: dict, digits: int | None = None) -> str | None:
    """The line under ``archsim train``'s table saying where an array device's joules go: ``energy_j`` and each
    nonzero part of ``energy_breakdown_j`` as its share, the largest first (``energy: 1616 J — mac 46%, dram 31%,
    …``); None where the meta has no breakdown (catalog GPUs, priced at board power × time). ``digits``
    (``train --precision``, as the table's other figures): the joules' and the shares' significant digits; None: 4
    and 2."""
    parts = meta.get("energy_breakdown_j")
    if not parts or not meta["energy_j"]:
        return None
    joules, share_digits = (4, 2) if digits is None else (digits, digits)
    shares = sorted(((value / meta["energy_j"], name) for name, value in parts.items() if value), reverse=True)
    return (f"energy: {figure(meta['energy_j'], joules)} J — "
            + ", ".join(f"{name} {percent(share, share_digits)}" for share, name in shares))


def percent(share: float, digits: int = 2) -> str:
    """``share`` (a fraction of a whole) as the table's lines of parts write it: a percentage to ``digits``
    significant figures, written out (99.7% is "100%", never ``:.2g``'s "1e+02%"; a millionth "0.0001%")."""
    import numpy as np

    return f"{np.format_float_positional(float(f'{100 * share:.{digits}g}'), trim='-')}%"


HOST_NOTE_SHARE = 0.1  # the table says what the host floor sets above this share of the iteration


def host_note(host: float, total: float, per_op: Iterable[tuple[float, str]], digits: int = 3) -> str | None:
    """The line saying ``host`` of ``total`` seconds is the host issuing ops beyond the GPU's work (``0.882 s of 2.47 s
    is …``), when it is more than :data:`HOST_NOTE_SHARE` of them, else None: that part rests on a per-op host time
    (``per_op``: (seconds, where they came from: :attr:`~archsim.training.machine.Machine.host_source`) of each of the
    run's machines) fitted on other machines or stated by a device file, and a larger micro-batch shortens it (more work
    per op), CUDA graphs too (one launch for many ops, which archsim does not model); each source is named beside its
    own figures (a range where several); ``digits``: the seconds' and the microseconds' significant digits
    (``train --precision``; 3 without it)."""
    if not host > HOST_NOTE_SHARE * total:
        return None
    by_source: dict[str, set[float]] = {}
    for seconds, source in per_op:
        by_source.setdefault(source, set()).add(seconds)
    each = "; ".join(f"{'–'.join(figure(s * 1e6, digits) for s in sorted(values))} µs per op, {source}"
                     for source, values in sorted(by_source.items(), key=lambda item: (min(item[1]), item[0])))
    return (f"{figure(host, digits)} s of {figure(total, digits)} s is the host issuing ops ({each}) beyond "
            "the GPU's work: a faster host CPU, a larger micro-batch or CUDA graphs shorten it")


def table_host_note(meta: dict, source: str, digits: int = 3) -> dict:
    """``meta`` with a ``host_bound`` line after ``host_seconds_per_op`` when more than :data:`HOST_NOTE_SHARE` of
    the iteration is the host issuing ops beyond the GPU's work (:func:`host_note`, its figures to ``digits``), as the
    table prints it; ``source``: where ``host_seconds_per_op`` came from (the finishing rank's machine's
    :attr:`~archsim.training.machine.Machine.host_source`); unchanged otherwise."""
    line = host_note(meta["host_bound_seconds"], meta["iteration_seconds"], ((meta["host_seconds_per_op"], source),),
                     digits)
    return meta if line is None else inserted_after(meta, "host_seconds_per_op", "host_bound", line)


def table_gradient_note(meta: dict) -> dict:
    """``meta`` as the table prints it: a ``gradient_dtype`` wider than the run's ``dtype`` (bf16's fp32, as Megatron-LM
    reduces it: docs/training.md, "Gradients in bf16") with why and what it costs, so twice fp16's DP all-reduce time
    is said where it is assumed; unchanged otherwise (csv and JSON keep the bare name)."""
    grad, dtype = meta.get("gradient_dtype"), meta.get("dtype")
    if grad != "fp32" or dtype in (None, "fp32"):
        return meta
    return meta | {"gradient_dtype": f"fp32 (Megatron-LM keeps {dtype} runs' gradients in fp32: the DP all-reduce "
                                     "moves 4 bytes per parameter)"}


def inserted_after(mapping: Mapping, key: str, new_key: str, value: object) -> dict:
    """``mapping`` with ``new_key`` set to ``value`` right after ``key`` (a row's or a meta's columns in the order a
    table prints them); unchanged, but copied, where ``key`` is absent."""
    out: dict = {}
    for name, held in mapping.items():
        out[name] = held
        if name == key:
            out[new_key] = value
    return out


def search_host_note(meta: dict, rows: list[dict], per_op: Iterable[tuple[float, str]], digits: int = 3) -> dict:
    """``archsim search``'s table meta with a ``host_bound`` line last when the first row's ``host_bound_seconds`` are
    more than :data:`HOST_NOTE_SHARE` of its iteration (:func:`host_note`, its figures to ``digits``: ``search
    --precision``, 3 without it, as train's line; ``per_op``: (host seconds per op, their source) of the first row's
    own machines, the GPUs it runs on): its rank rests on the host floor, a per-op constant (a fit on other machines,
    or a device file's), on which small micro-batches win or lose; unchanged otherwise."""
    line = host_note(rows[0]["host_bound_seconds"], rows[0]["iteration_seconds"], per_op, digits) if rows else None
    return meta if line is None else {**meta, "host_bound": f"the first row's rank rests on the host floor: {line}"}


def parameters_line(count: int, digits: int | None = None) -> str:
    """The table's one line of a parameter count: billions (millions under 10⁹) to ``digits`` significant
    figures (``--precision``; None: 3), then the exact count ("8.03 B (8,030,261,248)", "124 M (124,439,808)")."""
    scale, unit = (1e9, "B") if count >= 1e9 else (1e6, "M")
    return f"{figure(count / scale, 3 if digits is None else digits)} {unit} ({count:,})"


def table_parameters(meta: dict, digits: int | None = None) -> dict:
    """``meta`` with its parameter counts as the table prints them (:func:`parameters_line`, to ``digits``)."""
    return meta | {k: parameters_line(meta[k], digits) for k in ("parameters", "active_parameters") if k in meta}


def network_lines(meta: dict, digits: int | None = None) -> dict[str, str]:
    """:func:`network_meta`'s two entries as the table's and csv's one line each, each figure per GPU on catalog
    GPUs and per device where a server's chip is a device file's (``fabric``), which need be no GPU; its figures
    (GB/s, Gb/s) to ``digits`` significant digits (the table's ``--precision``; None: 4, as csv's)."""
    intra, inter = meta["intra_server"], meta["inter_server"]
    unit = "device" if intra["link"] == "fabric" else "GPU"
    significant = 4 if digits is None else digits  # the figures' significant digits
    intra_gb = figure(intra["gb_per_s_per_gpu"], significant)
    lines = {"intra_server": f"{intra_gb} GB/s per direction per {unit} ({intra['link']}), "
                             f"NVLS {'on' if intra['nvls'] else 'off'}"}
    if "torus" in intra:  # chips on a torus: each ring two of its links
        lines["intra_server"] += (f", torus {' × '.join(map(str, intra['torus']))} of "
                                  f"{figure(intra['link_gb_per_s'], significant)} GB/s links")
    if inter["gb_per_s_per_gpu"] is None:
        lines["inter_server"] = "none (one server)"
        return lines
    nics = "" if inter["nics_per_server"] is None else \
        f"{inter['nics_per_server']} NIC{'s' if inter['nics_per_server'] > 1 else ''} × " \
        f"{figure(inter['nic_gbps'], significant)} Gb/s " \
        "per server, " \
        f"{inter['gpus_per_nic']} {unit}{'s' if inter['gpus_per_nic'] > 1 else ''} per NIC: "
    crossed = ", ".join(inter["crossed_by"]) or "no group"
    leaves = ""
    if "oversubscription" in inter:  # servers under several leaves of an oversubscribed fabric
        over = inter["oversubscription"]
        across = figure(inter["gb_per_s_per_gpu"] / over, significant)
        leaves = f", down to {across} across leaves (uplinks {over:g}× oversubscribed)"  # all its bytes crossing
        slowed = inter.get("leaves_slowdown", {})  # each group's 1 GiB collectives' time over the non-blocking one's
        named = [name if name not in slowed else f"{name} not slowed" if slowed[name] <= 1 else
                 f"{name} {figure(slowed[name], 2)}× slower" for name in inter["leaves_crossed_by"]]
        crossed += f" (across leaves: {', '.join(named) or 'no group'})"
    inter_gb = figure(inter["gb_per_s_per_gpu"], significant)
    lines["inter_server"] = f"{nics}{inter_gb} GB/s per direction per {unit}{leaves}; crossed by {crossed}"
    return lines


def parts_text(parts: Mapping[str, float], show: Callable[[float], str]) -> str:
    """A figure by part (a JSON object: ``breakdown_seconds``, ``compute_split_seconds``, ``energy_breakdown_j``) as
    ``archsim train``'s CSV and table write it in one cell: ``part: value, …`` in the object's order, each value
    written by ``show`` (the CSV: ``repr``, full precision, so a reader gets JSON's floats back)."""
    return ", ".join(f"{k}: {show(v)}" for k, v in parts.items())


# a --runs row's and a --sweep point's figures by part (objects in JSON, train's meta's): one cell each in csv; the
# energy's parts on array devices alone (until 2026-12-05 a --runs csv wrote the object's Python text, no sweep had it)
ROW_PARTS = ("compute_split_seconds", "energy_breakdown_j")


def csv_rows(rows: list[dict]) -> list[dict]:
    """``train --runs`` and ``--sweep`` rows as their csv writes them (and their results' ``to_frame()``): each of
    :data:`ROW_PARTS` (an object in JSON, as train's meta has it) one ``part: value, …`` cell at full precision, as
    train's csv writes its meta's (:func:`parts_text`); None (a point that cannot run) stays None, an empty cell."""
    return [row | {k: parts_text(row[k], repr) for k in ROW_PARTS if row.get(k) is not None} for row in rows]


def table_rows(rows: list[dict]) -> list[dict]:
    """``train --runs`` and ``--sweep`` rows as their table prints them: without :data:`ROW_PARTS`, whose parts
    line would be wider than the rest of a row (csv and JSON carry them; train's own table its shares' line)."""
    return [{k: v for k, v in row.items() if k not in ROW_PARTS} for row in rows]


def text_meta(meta: dict, breakdown: dict[str, float], show: Callable[[float], str], digits: int | None = None) -> dict:
    """``archsim train``'s meta as its table and its CSV print it: the single values, the network's two entries as
    one line each (:func:`network_lines`, to ``digits``: the table's ``--precision``), ``breakdown`` (seconds by category), the compute split (seconds) and, on
    array devices, ``energy_breakdown_j`` (joules) as one line each (:func:`parts_text`), each figure written by
    ``show`` (the CSV: ``repr``, full precision; the table: its digits); the per-rank lists are JSON's alone."""
    out = {k: v for k, v in meta.items() if not isinstance(v, (list, dict))} | network_lines(meta, digits)
    out["breakdown_seconds"] = parts_text(breakdown, show)
    split = meta.get("compute_split_seconds")  # after the breakdown whose compute and recompute it splits
    energy = meta.get("energy_breakdown_j")  # last: a column only array devices' runs have
    return (out | ({"compute_split_seconds": parts_text(split, show)} if split else {})
            | ({"energy_breakdown_j": parts_text(energy, show)} if energy else {}))


def split_line(split: dict[str, float], digits: int | None = None) -> str | None:
    """The table's line of ``compute_split_seconds``: compute and recompute's seconds, then each part's share of them
    (``0.3 s — gemm 41%, memory-bound 22%, kernel gaps 21%, host floor 16%``; the recompute's communication and
    ``other`` only where they are not 0); None
    where there is no split or nothing to split. ``digits`` (``train --precision``): the seconds' and the shares'
    significant digits; None: 3 and 2. The parts' names and order are :data:`~archsim.training.compute_classes.SPLIT_PARTS`, the
    list :func:`~archsim.training.run.compute_split` keys its seconds by."""
    from archsim.training.compute_classes import SPLIT_PARTS

    whole = sum(split.values())
    if not split or not whole > 0:
        return None
    seconds, share = (3, 2) if digits is None else (digits, digits)
    shares = ", ".join(f"{part.label} {percent(split[part.key] / whole, share)}" for part in SPLIT_PARTS
                       if split[part.key] or part.shown_at_zero)
    return f"{figure(whole, seconds)} s of compute and recompute — {shares}"


def table_split(meta: dict, split: dict[str, float], digits: int | None = None) -> dict:
    """``meta`` as the table prints it: its ``compute_split_seconds`` line the shares of :func:`split_line`."""
    line = split_line(split, digits)
    if "compute_split_seconds" not in meta or line is None:
        return meta
    return meta | {"compute_split_seconds": line}
