"""``bppsa``'s three studies from their flags' values, once for the command and ``archsim.bppsa_rnn`` /
``archsim.bppsa_pruned_vgg11`` / ``archsim.bppsa_network``: the RNN rows (Fig. 8), the pruned VGG-11's FLOPs per scan
step (Fig. 10) and a network's own chain scanned step by step and checked against BP, each with the meta the command
prints and its page. The RNN's array is built by the caller (the command's flags, or
:func:`archsim.api_inputs.array_config`); FLOPs are counted, cycles are array clock cycles."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archsim.errors import InputError

if TYPE_CHECKING:
    from archsim.array.config import ArrayConfig
    from archsim.workload.layer import Network

PAPER_SEQ_LENS = "10,30,100,300,1000,3000,10000,30000"  # §4.1, Table 4


@dataclass(frozen=True)
class StudyRun:
    """One study: the ``table`` the command prints, its ``meta`` and the ``page_frame`` its page draws beside the
    table: the pruned VGG-11's summary per up-sweep depth, a network's every ◇ of the scan and of BP (None for the
    RNN, whose page draws its table)."""

    table: Any  # Rows (the RNN's) or a DataFrame (the pruned VGG-11's steps, a network's sequential steps)
    meta: dict
    page_frame: Any = field(default=None, repr=False)


def without_repeats(values: list[int], field: str, speak: Callable[[str], None]) -> list[int]:
    """A list setting's values each once, in order: a repeat would print the same row again; the repeated values
    said in one line naming ``field`` as the caller spells it (``--seq-len`` from the command, ``seq_len`` from
    Python), through ``speak`` (the command's stderr warning, the API's UserWarning)."""
    from archsim.console import setting

    once = list(dict.fromkeys(values))
    if len(once) < len(values):
        repeated = list(dict.fromkeys(v for n, v in enumerate(values) if v in values[:n]))
        speak(f"{setting(field)} repeats {', '.join(map(str, repeated))}: each value runs once")
    return once


def rnn_study(seq_lens: list[int], processors: list[int], *, hidden: int, batch: int, array: ArrayConfig,
              dtype: str | None) -> StudyRun:
    """``bppsa rnn``'s rows (each T × p: BP's and the scan's cycles, the speedup) and meta."""
    from archsim.array.options import dtype_meta
    from archsim.bppsa.rnn_cost import rnn_records
    from archsim.rows import Rows

    rows = Rows.of(rnn_records(seq_lens, processors, hidden=hidden, batch=batch, array=array))  # no pandas
    meta = {"study": "bppsa rnn", "hidden": hidden, "batch": batch,
            "array": f"{array.rows}x{array.cols} {array.dataflow}", "dtype": dtype_meta(dtype, array),
            "element_bytes": array.element_bytes}
    return StudyRun(rows, meta)


def vgg_study(*, sparsity: float, seed: int, up_levels: int | None, compare: list[int], width_divisor: int,
              zeros: str, max_mflops: int) -> StudyRun:
    """``bppsa pruned-vgg11``'s FLOPs per step (``kind`` printed as ``product``), its meta and the summary per
    up-sweep depth in ``compare`` (0 among them); refused before any Jacobian is built above ``max_mflops``."""
    from archsim.bppsa.vgg import critical_path, scan_flops, scan_steps, scan_work_estimate, vgg_elements
    from archsim.console import setting
    from archsim.progress import progress
    from archsim.validate import check_job_size

    depths = [up_levels, *(levels for levels in compare if levels != up_levels)]  # the depths scanned, each once
    # before any Jacobian is built: the scans' work grows with the square of the unpruned fraction
    mflops = math.ceil(scan_work_estimate(sparsity, width_divisor, depths) / 1e6)
    check_job_size(mflops, max_mflops, "--max-mflops",
                   "counts about {:,} M FLOPs in its scans (estimated from " + setting("sparsity") + ", "
                   + setting("width-divisor") + " and the up-sweep depths)")
    # the bar counts every scan's ◇ steps, a long product's share done beside it: a depth-2 up-sweep's products of
    # denser convolutions can take minutes (a bar over whole scans sat at 0 meanwhile); the elements are built
    # once, every depth scanning the same
    with progress(sum(map(scan_steps, depths)), "pruned VGG-11", "step") as bar:
        bar.set_postfix_str("Jacobians")
        elements = vgg_elements(sparsity=sparsity, seed=seed, width_divisor=width_divisor, zeros=zeros)
        frames = {}
        for levels in depths:
            scan = f"scan, up-sweep depth {'full' if levels is None else levels}"
            bar.set_postfix_str(scan)
            frames[levels] = scan_flops(elements, levels, on_step=bar.update,
                                        on_part=lambda done, scan=scan: bar.set_postfix_str(f"{scan}, product {done:.0%}"))
    frame = frames[up_levels]
    summaries = [critical_path(frames[levels]).query("method == 'bppsa'").assign(up_levels=levels)
                 for levels in compare]
    import pandas as pd  # the pruned-VGG study's tables are DataFrames

    summary = pd.concat(summaries, ignore_index=True)[["up_levels", "steps", "critical_path_flops", "work_flops"]]
    meta: dict[str, object] = {"study": "bppsa pruned-vgg11", "sparsity": sparsity, "seed": seed,
                               "up_levels": "full" if up_levels is None else up_levels, "zeros": zeros,
                               **_scan_against_bp(frame, ("steps", "critical_path_flops"))}
    # each compared depth (0: the linear scan, BP's steps) as a list of {"up_levels", column}, as plan's stage_counts:
    # the summary the page draws, printed too (it was computed for every --compare-levels depth and shown on the page
    # alone); csv and the table write each as one depth:value line (archsim.outputs.PAIRS)
    for column in ("steps", "critical_path_flops", "work_flops"):
        meta[f"{column}_by_up_levels"] = [{"up_levels": int(d), column: int(v)}
                                          for d, v in zip(summary.up_levels, summary[column])]
    # a step's `kind` is printed as `product`: `kind` and `type` name a layer's kind elsewhere
    return StudyRun(frame.rename(columns={"kind": "product"}), meta, summary)


def _scan_against_bp(frame: Any, columns: tuple[str, ...]) -> dict[str, int]:
    """The meta's scan-against-BP figures of a scan's ◇ ``frame`` (as :func:`~archsim.bppsa.vgg.scan_flops`): each
    of :func:`~archsim.bppsa.vgg.critical_path`'s ``columns`` (steps, FLOPs) as ``scan_<column>`` then
    ``bp_<column>``, for the pruned VGG-11 and a network alike."""
    from archsim.bppsa.vgg import critical_path

    totals = critical_path(frame).set_index("method")
    return {f"{who}_{column}": int(totals[column][method])
            for column in columns for who, method in (("scan", "bppsa"), ("bp", "bp"))}


def width_flag(dtype: str | None, array: ArrayConfig) -> str:
    """The width flag that reproduces a run on its page's command line ("" at the default 1 byte)."""
    if dtype is not None:
        return f" --dtype {dtype}"
    return f" --element-bytes {array.element_bytes}" if array.element_bytes != 1 else ""


def rnn_page(report: str, done: StudyRun, *, seq_lens: list[int], processors: list[int], hidden: int, batch: int,
             array: ArrayConfig, dtype: str | None, config: str | None = None) -> Path:
    """``bppsa rnn --report``'s page of ``done`` at ``report``, for the command and ``archsim.bppsa_rnn(report=…)``
    alike, with the command line that regenerates it (``--config`` the ``.cfg`` whose ``[macs_per_pe]`` rate the
    array ran at, where not 1: ``--array`` alone would run one MAC per PE per cycle); returns the path written."""
    from archsim.bppsa.report import write_rnn_page  # plotly: only when a page is asked for
    from archsim.bppsa.rnn_cost import speedup_bound
    from archsim.console import shell_word

    rated = f"--config {shell_word(config)} " if config is not None and array.mac_rate != 1 else ""
    command = (f"archsim bppsa rnn --seq-len {','.join(map(str, seq_lens))} --hidden {hidden} --batch {batch} "
               f"--processors {','.join(map(str, processors))} {rated}--array {array.rows}x{array.cols} "
               f"--dataflow {array.dataflow}{width_flag(dtype, array)} --report {report}")
    bounds = {p: speedup_bound(p, hidden=hidden, batch=batch, array=array) for p in processors}  # the caption's
    return write_rnn_page(report, done.table.frame(), command, done.meta["array"], bounds)


def vgg_page(report: str, done: StudyRun, *, compare_levels: list, width_divisor: int) -> Path:
    """``bppsa pruned-vgg11 --report``'s page of ``done`` at ``report`` (``compare_levels`` as given), for the command
    and ``archsim.bppsa_pruned_vgg11(report=…)`` alike, with the command line that regenerates it (the other settings
    read from the study's meta); returns the path written."""
    from archsim.bppsa.report import write_vgg_page  # plotly: only when a page is asked for

    meta, divisor = done.meta, width_divisor
    sparsity = meta["sparsity"]
    command = (f"archsim bppsa pruned-vgg11 --sparsity {sparsity} --seed {meta['seed']} --zeros {meta['zeros']} "
               f"--up-levels {meta['up_levels']} --compare-levels {','.join(map(str, compare_levels))} "
               f"{f'--width-divisor {divisor} ' if divisor != 1 else ''}--report {report}")
    # the page's table of steps has the command's columns (it named `product` `kind` until 2026-12-06)
    return write_vgg_page(report, done.table, done.page_frame, sparsity, command)


def parse_up_levels(text: object, flag: str = "--up-levels", *, full: bool = True, field: str | None = None,
              operators: tuple[str, int] | None = None) -> int | None:
    """An up-sweep depth (None: ``full``, Algorithm 1, where ``full``), checked before any Jacobian is built; an
    error names ``flag`` (the command's), or ``field`` where given (the keyword, as the API's other errors do).
    ``operators``: the (name, n) of the chain scanned (default VGG-11's 21), which bounds the depth."""
    from archsim.bppsa.scan import max_up_levels
    from archsim.bppsa.vgg import VGG11_OPERATORS
    from archsim.value_parsers import parse_int

    def refused(message: str) -> InputError:
        return InputError(message, field=field) if field else InputError(f"{flag}: {message}")

    name, n = operators or ("VGG-11", VGG11_OPERATORS)
    top = max_up_levels(n)
    if text == "full":
        if full:
            return None
        algorithm = "up_levels='full'" if field else "--up-levels full"
        raise refused(f"takes depths in 0…{top} (Algorithm 1 is {algorithm}), got 'full'")
    what = f"an up-sweep depth ({name} is {n} operators)" + (" or 'full'" if full else "")
    try:
        return parse_int(text, low=0, high=top, what=what)
    except ValueError as exc:
        raise refused(str(exc)) from None


MAX_STORED_ENTRIES = 40_000_000  # a chain's Jacobians, or one product, per sample: 30 M built in 2.2 GB (measured)
BYTES_PER_ENTRY = 2.2e9 / 30e6  # what building one stored entry took, all of it (the measurement above), bytes


def _check_stored_entries(what: str, entries: int, fits: str) -> None:
    """The cap on ``entries`` stored entries per sample (:data:`MAX_STORED_ENTRIES`), for the chain's Jacobians and
    each scan product alike: above it, the one line refusing ``what``, with the figure it would need (GB at the
    measured rate), the limit, and how far below it a run that ``fits`` must come."""
    if entries <= MAX_STORED_ENTRIES:
        return
    need = entries * BYTES_PER_ENTRY / 1e9
    factor = entries / MAX_STORED_ENTRIES
    raise InputError(f"{what} up to {entries / 1e6:,.0f} M entries per sample, about {need:,.{0 if need >= 10 else 1}f} "
                     f"GB to build (2.2 GB per 30 M measured), above the {MAX_STORED_ENTRIES / 1e6:,.0f} M (about "
                     f"{MAX_STORED_ENTRIES * BYTES_PER_ENTRY / 1e9:.0f} GB) archsim builds: "
                     f"{factor:,.{0 if factor >= 10 else 1}f}× fewer entries fit: {fits}")


def _past_the_flop_limit(counted: int, limit: int, dense: int) -> InputError:
    """The one line stopping a scan whose products passed ``limit`` M FLOPs after ``counted`` M: a product's FLOPs
    are known only once its pattern is formed, so the whole count is named by its bound ``dense`` (every product
    dense), which a limit of that size runs for certain (until 2026-12-05 the line offered ``counted``, which
    the next product could pass again)."""
    from archsim.console import setting
    from archsim.validate import INT32_MAX

    lift = (f"give {setting('max-mflops', dense)} to run it whole" if dense <= INT32_MAX
            else f"give a larger {setting('max-mflops')} (up to {INT32_MAX:,}), a shallower {setting('up-levels')} "
                 "or a smaller network")
    return InputError(f"this job counts over {counted:,} M FLOPs in its scans (stopped before the product that passes "
                      f"the limit) and at most {dense:,} M (every product dense), above the limit of {limit:,}; {lift}",
                      field="max-mflops")


def network_study(network: Network, *, batch: int, depth_text: object, seed: int, max_mflops: int,
                  field: str | None = None) -> StudyRun:
    """``bppsa network``'s rows, one per sequential step of the scan (its ◇ count, the FLOPs of all of them, of
    the largest: the critical path's, and dense), and meta: BP's steps and FLOPs against the scan's, the
    gradient check, max |scan − BP| over every ∇x_i of one random input (``seed``: the weights' and the
    input's), and each operator's Jacobian density (:func:`jacobian_density`). ``depth_text``: the up-sweep depth or ``"full"`` as the flag gives it (``field``: the API's keyword
    name in its error). FLOPs are per mini-batch: a batch is ``batch`` independent chains (a block-diagonal
    Jacobian), so every step's FLOPs are one sample's times ``batch`` and its step count one sample's. Refused
    above ``max_mflops`` million FLOPs (BP's, about twice the Jacobians' entries, before any Jacobian is built;
    the scan's before any product that would pass it), and above MAX_STORED_ENTRIES stored entries per sample
    (the Jacobians together, or one product's bound: the fewer of its multiplies and its rows × columns), whatever
    the limit, the refusal naming the GB it would take at the measured BYTES_PER_ENTRY."""
    import numpy as np
    import pandas as pd

    from archsim.bppsa.chain import jacobian_entries, network_chain
    from archsim.bppsa.jacobians import scan_input
    from archsim.bppsa.layers import forward_chain
    from archsim.bppsa.plain_bp import backprop
    from archsim.bppsa.scan import blelloch_scan, diamond
    from archsim.bppsa.sparse_cost import dense_multiplies
    from archsim.bppsa.steps import level_census, linear_census, work
    from archsim.bppsa.vgg import scan_flops
    from archsim.progress import progress
    from archsim.validate import check_job_size

    network_chain(network, None)  # a kind without a Jacobian, a join: refused before the size
    entries = jacobian_entries(network)
    _check_stored_entries(f"{network.name}'s transposed Jacobians hold", entries, "a smaller input or fewer channels")
    check_job_size(math.ceil(2 * entries * batch / 1e6), max_mflops, "--max-mflops",
                   "counts about {:,} M FLOPs in BP alone (twice its Jacobians' entries, times the batch)")
    layers, in_shape = network_chain(network, seed)
    depth = parse_up_levels(str(depth_text).strip(), full=True, field=field,
                            operators=(repr(network.name), len(layers)))
    spent = [0]

    def budget(multiplies: int, entries: int) -> None:  # a product's FLOPs are at most twice its multiplies
        _check_stored_entries(f"a product of {network.name}'s scan would hold", entries,
                              "a shallower --up-levels (0: BP's own products) or a smaller network")
        spent[0] += 2 * multiplies * batch
        if math.ceil(spent[0] / 1e6) > max_mflops:
            raise _past_the_flop_limit(math.ceil(spent[0] / 1e6), max_mflops,
                                       math.ceil(2 * dense_multiplies(elements, depth) * batch / 1e6))

    # the bar counts every ◇: the FLOP count's (the scan's and BP's, on patterns) then the gradient check's scan
    # (on values); each phase of a dense chain can take seconds (ffnn8: 2, 10 and 11 s), and none drew a bar before
    operators = len(layers)
    scan_ops = sum(work(level_census(operators, depth)).values())
    with progress(2 * scan_ops + sum(work(linear_census(operators)).values()), f"BPPSA on {network.name}",
                  "step") as bar:
        bar.set_postfix_str("Jacobians")
        rng = np.random.default_rng(seed + 1)
        activations = forward_chain(layers, rng.standard_normal(in_shape))
        grad = rng.standard_normal(activations[-1].size)
        elements = scan_input(layers, activations, grad)
        bar.set_postfix_str("FLOPs")
        frame = scan_flops(elements, depth, budget=budget, on_step=bar.update,  # patterns first: the budget is
                           on_part=lambda done: bar.set_postfix_str(f"FLOPs, product {done:.0%}"))  # checked first
        bar.set_postfix_str("gradient check")

        def counted(a, b):
            product = diamond(a, b)
            bar.update()
            return product

        scanned = blelloch_scan(elements, up_levels=depth, op=counted).gradients()
    error = max(float(np.max(np.abs(np.ravel(a) - b))) for a, b in zip(scanned, backprop(layers, activations, grad),
                                                                         strict=True))
    frame[["flops", "dense_flops"]] *= batch
    ours = frame[frame.method == "bppsa"]
    rows = pd.DataFrame([{"step": int(step), "phase": part.phase.iloc[0], "level": int(part.level.iloc[0]),
                          "operations": len(part), "flops": int(part.flops.sum()), "critical_flops": int(part.flops.max()),
                          "dense_flops": int(part.dense_flops.sum())}
                         for step, part in ours.groupby("seq_step", sort=True)])
    meta = {"study": "bppsa network", "network": network.name, "operators": len(layers), "batch": batch,
            "seed": seed, "up_levels": "full" if depth is None else depth,
            **_scan_against_bp(frame, ("steps", "work_flops", "critical_path_flops")), "gradient_max_abs_diff": error,
            "jacobian_density": jacobian_density([row.name for row in network.layers], elements[1:])}
    return StudyRun(rows, meta, frame)


def jacobian_density(names: list[str], transposed: list) -> dict[str, float]:
    """Each operator's stored fraction of its transposed Jacobian, nnz / (rows·cols): 1 − Table 1's sparsity of
    guaranteed zeros (a ReLU's or a pooling window's zeros that depend on the input are stored: pattern, §3.3).
    ``transposed`` in the scan's order, J_nᵀ … J_1ᵀ; ``names`` in the chain's, first operator first."""
    return {name: matrix.nnz / (matrix.shape[0] * matrix.shape[1])
            for name, matrix in zip(names, reversed(transposed), strict=True)}


def network_page(report: str, done: StudyRun, *, network: str) -> Path:
    """``bppsa network --report``'s page of ``done`` at ``report``, for the command and ``archsim.bppsa_network``
    alike, with the command line that regenerates it (``network`` as given); returns the path written."""
    from archsim.bppsa.report import write_network_page  # plotly: only when a page is asked for

    meta = done.meta
    command = (f"archsim bppsa network {network} --batch {meta['batch']} --up-levels {meta['up_levels']} "
               f"--seed {meta['seed']} --report {report}")
    return write_network_page(report, done.page_frame, done.table, meta["network"], command)


__all__ = ["PAPER_SEQ_LENS", "StudyRun", "network_study", "parse_up_levels", "rnn_study", "vgg_study"]
