"""Numba kernels of the cycle-level engine (:mod:`archsim.array.cycle` explains the model).

Plain integer arrays in, plain integer arrays out: the kernels know nothing of configs or
dataclasses, so they compile once (``cache=True``) and are reused by every caller.

Operands are addressed by flat element index: A (ifmap) is M×K, index i·K + j; B (filter) is
K×N, index i·N + j; out (ofmap) is M×N, index i·N + j — the same words SCALE-Sim's GEMM mode
addresses (offsets aside), and all distinct, which is what lets a word's SRAM line be a lookup.
"""

from __future__ import annotations

import numpy as np

from archsim.array.cycle_order import C_ON, copy_active, line_of, position
from archsim.numba_cache import njit

# Layout of the int64 vector advance() fills when it is done.
OUT_LINES, OUT_TOTAL, OUT_STALLS, OUT_IFMAP_READS, OUT_FILTER_READS, OUT_OFMAP_WRITES = 0, 1, 2, 3, 4, 5
OUT_IFMAP_FIRST, OUT_FILTER_FIRST, OUT_OFMAP_LAST, OUT_ERROR = 6, 7, 8, 9
OUT_SIZE = 10
ERROR_NONE, ERROR_EMPTY_DRAIN = 0, 1

# Layout of one operand's demand description (see _describe).
D_SKEW, D_LO, D_HI, D_CLIMIT, D_BASE, D_A, D_B = 0, 1, 2, 3, 4, 5, 6


@njit(cache=True)
def _describe(df, operand, fr, fc, m, k, n, rows, cols, out):
    """Demand of one operand in one fold: index = base + a·t + b·c for fold cycle t and array lane
    c < climit, valid where lo ≤ t < hi (flat) or lo ≤ t − c < hi (skewed)."""
    kr = min(rows, k - fr * rows)
    if df == 0:  # ws: A streams (skewed), B preloaded (flat, flipped), out drains (skewed)
        nc = min(cols, n - fc * cols)
        if operand == 0:
            skew, lo, hi, climit, base, su, sc = 1, rows, rows + m, kr, -rows * k + fr * rows, k, 1
        elif operand == 1:
            out[:] = (0, rows - kr, rows, nc, (fr * rows + rows - 1) * n + fc * cols, -n, 1)
            return
        else:
            skew, lo, hi, climit, base, su, sc = 1, 2 * rows - 1, 2 * rows - 1 + m, nc, -(2 * rows - 1) * n + fc * cols, n, 1
    elif df == 1:  # os: A and B stream (skewed), out drains flipped (skewed)
        mr = min(rows, m - fr * rows)
        nc = min(cols, n - fc * cols)
        if operand == 0:
            skew, lo, hi, climit, base, su, sc = 1, 0, k, mr, fr * rows * k, 1, k
        elif operand == 1:
            skew, lo, hi, climit, base, su, sc = 1, 0, k, nc, fc * cols, n, 1
        else:
            skew, lo, hi, climit = 1, k - 1 + rows - mr, k - 1 + rows, nc
            base, su, sc = (fr * rows + rows + k - 2) * n + fc * cols, -n, 1
    else:  # is: A preloaded (flat, flipped), B streams (skewed), out drains (skewed)
        mc = min(cols, m - fc * cols)
        if operand == 0:
            out[:] = (0, rows - kr, rows, mc, fc * cols * k + fr * rows + rows - 1, -1, k)
            return
        elif operand == 1:
            skew, lo, hi, climit, base, su, sc = 1, rows, rows + n, kr, fr * rows * n - rows, 1, n
        else:
            skew, lo, hi, climit, base, su, sc = 1, 2 * rows - 1, 2 * rows - 1 + n, mc, fc * cols * n - (2 * rows - 1), 1, n
    out[:] = (skew, lo, hi, climit, base, su, sc - su)


@njit(cache=True)
def _lanes(desc, t):
    """Valid lanes [first, last) of fold cycle t."""
    if desc[D_SKEW] == 1:
        return max(0, t - desc[D_HI] + 1), min(desc[D_CLIMIT], t - desc[D_LO] + 1)
    if desc[D_LO] <= t < desc[D_HI]:
        return 0, desc[D_CLIMIT]
    return 0, 0


@njit(cache=True)
def _slide(state, now):
    """A miss: slide the window one prefetch and move ``now`` to the prefetch's cycle — twice the
    overshoot when late (SCALE-Sim adds the potential stall twice), back to it when early (it adds a
    negative stall)."""
    state[0] = (state[0] + state[5]) % state[3]
    state[1] += state[6]
    state[2] += 1
    potential = state[1] - now
    now += potential
    if potential > 0:
        now += potential
    return now


@njit(cache=True)
def _read_line(state, geometry, elems_per_set, desc, t, first, last, now):
    """Serve one demand line's reads of one operand; return the cycle SCALE-Sim says it finishes.

    state: [window start line, last prefetch cycle, prefetches, lines, active lines, prefetch lines,
    cycles per prefetch]. Mirrors read_buffer.service_reads: a word outside the active window slides
    it (:func:`_slide`) until it is in.
    """
    nl, active = state[3], state[4]
    for c in range(first, last):
        line = position(geometry, desc[D_BASE] + desc[D_A] * t + desc[D_B] * c) // elems_per_set
        while (line - state[0] + nl) % nl >= active:
            now = _slide(state, now)
    return now


@njit(cache=True)
def _read_line_conv(state, geometry, elems_per_set, desc, t, first, last, now, conv, taps, table):
    """:func:`_read_line` for a conv's im2col operand (kept apart so the GEMM path stays as fast): a
    word also hits where another window's copy of it is active, and off-edge taps (null addresses,
    ``table`` −1) are skipped (:mod:`archsim.array.cycle_order`)."""
    nl, active = state[3], state[4]
    for c in range(first, last):
        index = desc[D_BASE] + desc[D_A] * t + desc[D_B] * c
        line = line_of(geometry, elems_per_set, table, index)
        if line < 0:
            continue
        while (line - state[0] + nl) % nl >= active:
            if copy_active(state, geometry, elems_per_set, conv, taps, table, index):
                break
            now = _slide(state, now)
    return now


@njit(cache=True)
def _read_line_banked(state, lookup, base, banks, ports, desc, t, first, last, now, seen):
    """_read_line for an operand in a custom layout (read_buffer.service_reads with
    enable_layout_evaluation): the word's line is looked up (``lookup[0]``), a late prefetch moves
    ``now`` to its cycle once and an early one not at all, and the row then waits
    ⌈(most distinct lines one bank serves)/ports⌉ − 1 cycles (bank of a word: ``lookup[1]``)."""
    nl, active, step = state[3], state[4], state[6]
    seen[:banks, 0] = 0  # seen[b, 0]: distinct lines of bank b so far; seen[b, 1:]: those lines
    for c in range(first, last):
        word = base + desc[D_BASE] + desc[D_A] * t + desc[D_B] * c
        line = lookup[0, word]
        while (line - state[0] + nl) % nl >= active:
            state[0] = (state[0] + state[5]) % nl
            state[1] += step
            state[2] += 1
            now = max(now, state[1])
        bank = lookup[1, word]
        found = False
        for x in range(1, seen[bank, 0] + 1):
            if seen[bank, x] == line:
                found = True
                break
        if not found:
            seen[bank, 0] += 1
            seen[bank, seen[bank, 0]] = line
    most = 0
    for bank in range(banks):
        most = max(most, seen[bank, 0])
    return now + (most + ports - 1) // ports - 1


@njit(cache=True)
def _drain(wstate, partial, start_cycle):
    """write_buffer.empty_drain_buf: drain up to one drain buffer of lines; return its last cycle.

    wstate: [free words, drain end, words in the open line, lines stored, first undrained line,
    DRAM writes, lines per drain, bandwidth, partial head, partial tail, first drain cycle,
    last drain cycle, error]. partial: (line, words) of lines flushed part-full, in line order.
    """
    bw = wstate[7]
    first = wstate[4]
    end = min(first + wstate[6], wstate[3])
    lines = end - first
    if lines <= 0:  # SCALE-Sim indexes an empty trace slice here and raises IndexError
        wstate[12] = ERROR_EMPTY_DRAIN
        return start_cycle
    last_words = bw
    while wstate[8] < wstate[9] and partial[wstate[8], 0] < end:
        if partial[wstate[8], 0] == end - 1:
            last_words = partial[wstate[8], 1]
        wstate[8] += 1
    words = (lines - 1) * bw + last_words  # only the last line's nulls are discounted
    wstate[5] += words
    wstate[0] += words
    wstate[4] = end
    stop = start_cycle + lines - 1
    if wstate[10] < 0:
        wstate[10] = start_cycle
    wstate[11] = max(wstate[11], stop)
    return stop


@njit(cache=True)
def _flush_open_line(wstate, partial):
    """append_to_trace_mat(force=True): the open line joins the trace, nulls and all. ``partial`` has room: :func:`advance`
    steps a line only with room for one flush per word it writes (and the final one)."""
    if wstate[2] > 0:
        partial[wstate[9], 0] = wstate[3]
        partial[wstate[9], 1] = wstate[2]
        wstate[9] += 1
        wstate[3] += 1
        wstate[2] = 0


# Layout of the cursor a run of :func:`advance` resumes from: the next line's fold column, fold row and fold cycle,
# the sums so far, and whether every line and the final drain are done.
CUR_FC, CUR_FR, CUR_T, CUR_STALLS, CUR_LINES, CUR_TOTAL, CUR_SERVICED, CUR_DONE = 0, 1, 2, 3, 4, 5, 6, 7
CUR_SIZE = 8


def start(rows, cols, read_consts, write_consts, banked):
    """The state :func:`advance` steps from (plain numpy, no compile): the read buffers', the write buffer's,
    the partial lines', the banks' and the cursor's arrays, before the first demand line."""
    states = np.zeros((2, 7), dtype=np.int64)
    for op in range(2):
        states[op, 1] = -1  # the first fill is served before cycle 0
        states[op, 3:7] = read_consts[op, 1:5]
    wstate = np.zeros(13, dtype=np.int64)
    wstate[0] = write_consts[0]
    wstate[6] = write_consts[2]
    wstate[7] = write_consts[3]
    wstate[10] = -1
    wstate[11] = -(2 ** 62)
    partial = np.empty((2 * (max(rows, cols) + 1), 2), dtype=np.int64)  # room for a line's flushes (advance)
    seen = np.zeros((max(1, int(banked[0, 1]), int(banked[1, 1])), max(rows, cols) + 1), dtype=np.int64)
    return states, wstate, partial, seen, np.zeros(CUR_SIZE, dtype=np.int64)


@njit(cache=True)
def advance(limit, m, k, n, rows, cols, df, per_fold, row_folds, col_folds, geometry, read_consts, write_consts,
            banked, lookup, conv, taps, table, states, wstate, partial, seen, cursor, out):
    """Step at most ``limit`` demand lines of every fold through SCALE-Sim's double-buffered memory model, from
    ``cursor`` on (:func:`start`'s state, which it updates); after the last line, the final drain, and ``out``
    filled (the OUT_* vector) with ``cursor[CUR_DONE]`` set. It stops early, at a line's end, when ``partial`` has
    room for no more than ``max(rows, cols)`` flushes (one per ofmap word a line writes): the caller grows it
    (:func:`grown`) and calls again. Why in runs of lines: the caller gets control back between them (Ctrl-C),
    where one call would step 10⁹ cycles unbroken; why it returns nothing: numba boxes a returned array through a
    Python call, where a Ctrl-C that came meanwhile would be raised inside numba (a SystemError), not to the caller.

    geometry: 2×8 prefetch_geometry of A and B. read_consts: 2×7 [words per set, lines, active lines, prefetch lines, cycles per prefetch,
    first-fill lines, bandwidth] for ifmap and filter. write_consts: [words, active words,
    lines per drain, bandwidth]. banked: 2×4 [custom layout on, banks, ports, first column in
    lookup] for ifmap and filter; lookup: 2×(words) line and bank of each word of the operands in a
    custom layout, A's then B's. conv, taps, table: A's conv descriptor, tap table and null line table (cycle_order; C_ON 0: a GEMM,
    no repeated words; table empty: no nulls).
    """
    active_words = write_consts[1]
    bw_out = write_consts[3]
    desc = np.zeros((3, 7), dtype=np.int64)
    fc, fr, t = cursor[CUR_FC], cursor[CUR_FR], cursor[CUR_T]
    stalls, line_index, total, serviced = cursor[CUR_STALLS], cursor[CUR_LINES], cursor[CUR_TOTAL], cursor[CUR_SERVICED]
    steps = 0
    room = max(rows, cols)  # the most ofmap words a line writes (an array edge's lanes): the most lines it flushes
    while fc < col_folds and steps < limit and partial.shape[0] - wstate[9] > room:
        for op in range(3):
            _describe(df, op, fr, fc, m, k, n, rows, cols, desc[op])
        while t < per_fold and steps < limit and partial.shape[0] - wstate[9] > room:
            cycle = line_index + stalls
            worst = 0
            for op in range(2):
                first, last = _lanes(desc[op], t)
                if first < last and banked[op, 0] == 1:
                    done = _read_line_banked(states[op], lookup, banked[op, 3], banked[op, 1], banked[op, 2],
                                             desc[op], t, first, last, cycle + 1, seen)
                    worst = max(worst, done - cycle - 1)
                elif first < last and op == 0 and conv[C_ON] == 1:
                    done = _read_line_conv(states[op], geometry[op], read_consts[op, 0], desc[op], t, first,
                                           last, cycle + 1, conv, taps, table)
                    worst = max(worst, done - cycle - 1)
                elif first < last:
                    done = _read_line(states[op], geometry[op], read_consts[op, 0], desc[op], t, first, last,
                                      cycle + 1)
                    worst = max(worst, done - cycle - 1)
            first, last = _lanes(desc[2], t)
            now = cycle
            for _ in range(first, last):
                wstate[2] += 1
                wstate[0] -= 1
                if wstate[2] == bw_out:
                    wstate[3] += 1
                    wstate[2] = 0
                if now < wstate[1]:
                    if wstate[0] <= 0:
                        now = wstate[1]
                elif wstate[0] < active_words:
                    _flush_open_line(wstate, partial)
                    wstate[1] = _drain(wstate, partial, now)
            worst = max(worst, now - cycle)
            serviced = now
            total = max(total, now)
            stalls += worst
            line_index += 1
            t += 1
            steps += 1
        if t == per_fold:  # the fold is done: the next one (row folds within a column fold)
            t = 0
            fr += 1
            if fr == row_folds:
                fr = 0
                fc += 1
    cursor[CUR_FC], cursor[CUR_FR], cursor[CUR_T] = fc, fr, t
    cursor[CUR_STALLS], cursor[CUR_LINES], cursor[CUR_TOTAL], cursor[CUR_SERVICED] = stalls, line_index, total, serviced
    if fc < col_folds or partial.shape[0] - wstate[9] <= room:
        return
    # empty_all_buffers: drain what is left, starting at the last line's cycle, back to back
    _flush_open_line(wstate, partial)
    cycle = serviced
    while wstate[4] < wstate[3]:
        cycle = _drain(wstate, partial, cycle) + 1
    out[OUT_LINES] = line_index
    out[OUT_TOTAL] = total
    out[OUT_STALLS] = stalls
    for op in range(2):
        out[OUT_IFMAP_READS + op] = (read_consts[op, 5] + states[op, 2] * (read_consts[op, 4] - 1)) * read_consts[op, 6]
        out[OUT_IFMAP_FIRST + op] = -read_consts[op, 5]
    out[OUT_OFMAP_WRITES] = wstate[5]
    out[OUT_OFMAP_LAST] = wstate[11]
    out[OUT_ERROR] = wstate[12]
    cursor[CUR_DONE] = 1


def grown(partial, wstate, rows, cols):
    """``partial`` with room for :func:`advance` to step a line (twice its rows when it had too little)."""
    if partial.shape[0] - wstate[9] > max(rows, cols):
        return partial
    bigger = np.empty((2 * partial.shape[0], 2), dtype=np.int64)
    bigger[: partial.shape[0]] = partial
    return bigger


@njit(cache=True)
def fill_demand(m, k, n, rows, cols, df, per_fold, row_folds, col_folds, widths):
    """The three demand matrices (word index per lane, −1 idle), materialized: small GEMMs only."""
    lines = per_fold * row_folds * col_folds
    mats = [np.full((lines, widths[op]), -1, dtype=np.int64) for op in range(3)]
    desc = np.zeros(7, dtype=np.int64)
    line = 0
    for fc in range(col_folds):
        for fr in range(row_folds):
            for op in range(3):
                _describe(df, op, fr, fc, m, k, n, rows, cols, desc)
                for t in range(per_fold):
                    first, last = _lanes(desc, t)
                    for c in range(first, last):
                        mats[op][line + t, c] = desc[D_BASE] + desc[D_A] * t + desc[D_B] * c
            line += per_fold
    return mats[0], mats[1], mats[2]
