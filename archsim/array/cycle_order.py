"""Where an operand's words sit in SCALE-Sim's prefetch order, for the cycle engine's kernels.

SCALE-Sim fills its read SRAM's lines from a prefetch matrix: the operand's fold tiles stacked
(``systolic_compute_*.create_*_prefetch_mat``), read row by row or anti-diagonal by anti-diagonal.
:func:`position` gives a word's place there in closed form (the matrix is never built). A conv's
ifmap operand repeats words (overlapping windows); :func:`copy_active` finds the other copies.
"""

from __future__ import annotations

import numpy as np

from archsim.numba_cache import njit

# Layout of one read operand's prefetch geometry (see prefetch_geometry).
P_NC, P_WIDTH, P_TRANSPOSED, P_DIAGONAL, P_HEIGHT, P_STACKED_ROWS, P_LAST_ROW0, P_LAST_WIDTH = range(8)


def prefetch_geometry(nr: int, nc: int, width: int, transposed: bool, diagonal: bool) -> list[int]:
    """How SCALE-Sim lays an nr×nc operand out for prefetching, as eight integers.

    It stacks the operand's fold tiles (``width`` columns each, the last one padded with nulls) into
    one matrix — tiles of columns X[:, b·w:(b+1)·w] (``transposed`` False) or of rows
    X[b·w:(b+1)·w, :]ᵀ (True) — and reads it row by row, or anti-diagonal by anti-diagonal from the
    bottom-left (``diagonal``, its fix for skewed demand).
    """
    limit = nr if transposed else nc
    height = nc if transposed else nr
    blocks = -(-limit // width)
    return [nc, width, int(transposed), int(diagonal), height, blocks * height, (blocks - 1) * height,
            limit - (blocks - 1) * width]


@njit(cache=True)
def _triangle(x):
    return x * (x + 1) // 2 if x > 0 else 0


@njit(cache=True)
def _below_diagonal(d, height, width):
    """Cells (r, c) of a height×width rectangle with r + c < d."""
    return (_triangle(d) - _triangle(d - height) - _triangle(d - width)
            + _triangle(d - height - width))


@njit(cache=True)
def position(geometry, index):
    """Place of word ``index`` among the operand's non-null words in prefetch order (closed form:
    the stacked matrix is never built). Nulls sit only in the last tile's columns ≥ last width."""
    nc, width, height = geometry[P_NC], geometry[P_WIDTH], geometry[P_HEIGHT]
    stacked, row0, last_width = geometry[P_STACKED_ROWS], geometry[P_LAST_ROW0], geometry[P_LAST_WIDTH]
    i = index // nc
    j = index - i * nc
    h, w = (j, i) if geometry[P_TRANSPOSED] else (i, j)
    block = w // width
    col = w - block * width
    row = block * height + h
    if geometry[P_DIAGONAL] == 0:
        return row * width - max(0, row - row0) * (width - last_width) + col
    d = row + col
    before = _below_diagonal(d, stacked, width) + min(d, stacked - 1) - row
    nulls = _below_diagonal(d - row0 - last_width, stacked - row0, width - last_width)
    lo = max(row + 1, row0, d - width + 1)  # nulls later on the same diagonal (rows > row)
    hi = min(stacked - 1, d - last_width)
    if hi >= lo:
        nulls += hi - lo + 1
    return before - nulls


# Layout of the conv descriptor of A (see copy_active): A is the im2col matrix of a convolution.
C_ON, C_EH, C_EW, C_STRIDE, C_FH, C_FW, C_CHANNELS, C_KEPT, C_IH, C_IW = range(10)
C_SIZE = 10


@njit(cache=True)
def line_of(geometry, elems_per_set, table, index):
    """SRAM line of A's word ``index``: closed form, or from ``table`` when it has entries (−1: a null)."""
    if table.size > 0:
        return table[index]
    return position(geometry, index) // elems_per_set


@njit(cache=True)
def _tap_pixel(conv, taps, index):
    """(oy, ox, y, x, ch) of A's word ``index``: its window and the ifmap pixel and channel it reads."""
    ew, stride, fw, channels = conv[C_EW], conv[C_STRIDE], conv[C_FW], conv[C_CHANNELS]
    k = conv[C_KEPT]
    pixel = index // k
    tap = taps[0, index - pixel * k]
    oy = pixel // ew
    ox = pixel - oy * ew
    r = tap // (fw * channels)
    rest = tap - r * fw * channels
    s = rest // channels
    return oy, ox, oy * stride + r, ox * stride + s, rest - s * channels


@njit(cache=True)
def null_line_table(geometry, elems_per_set, words, conv, taps):
    """Lines of A's words when windows run past the ifmap's edge (SCALE-Sim's ⌈(H − f + s)/s⌉ outputs):
    an off-edge tap is a null (−1) address, which SCALE-Sim's prefetch skips when filling lines
    (``prepare_hashed_buffer``) and its demand skips; −1 marks it here. Returns (table, non-null words)."""
    valid_at = np.zeros(words, dtype=np.int64)
    place = np.empty(words, dtype=np.int64)
    for index in range(words):
        _, _, y, x, _ = _tap_pixel(conv, taps, index)
        place[index] = position(geometry, index)
        if y < conv[C_IH] and x < conv[C_IW]:
            valid_at[place[index]] = 1
    before = 0
    rank = np.empty(words, dtype=np.int64)
    for p in range(words):
        rank[p] = before
        before += valid_at[p]
    table = np.empty(words, dtype=np.int64)
    for index in range(words):
        table[index] = rank[place[index]] // elems_per_set if valid_at[place[index]] == 1 else -1
    return table, before


@njit(cache=True)
def copy_active(state, geometry, elems_per_set, conv, taps, table, index):
    """Whether another im2col copy of A's word ``index`` (the same ifmap pixel and channel, seen by an
    overlapping window) sits in a line of the active window: SCALE-Sim's ``active_buffer_hit`` looks
    the *address* up in every active line, and a conv's prefetch matrix holds each address once per
    window that reads it (its lines count the repeats: ``prepare_hashed_buffer`` counts elements).

    A's columns are the kept taps ``taps[0, :conv[C_KEPT]]`` (all of them, unless layer-wise N:M sparsity
    dropped some); ``taps[1, tap]`` is a tap's column, −1 when dropped. Rows are ofmap pixels, row-major.
    ``table``: the lines of :func:`null_line_table`, or empty (every window inside the ifmap)."""
    ew, stride, fh, fw, channels = conv[C_EW], conv[C_STRIDE], conv[C_FH], conv[C_FW], conv[C_CHANNELS]
    k = conv[C_KEPT]
    oy, ox, y, x, ch = _tap_pixel(conv, taps, index)
    nl, active = state[3], state[4]
    for oy2 in range(max(0, (y - fh + stride) // stride), min(conv[C_EH] - 1, y // stride) + 1):
        for ox2 in range(max(0, (x - fw + stride) // stride), min(ew - 1, x // stride) + 1):
            if oy2 == oy and ox2 == ox:
                continue
            column = taps[1, ((y - oy2 * stride) * fw + x - ox2 * stride) * channels + ch]
            if column < 0:
                continue
            other = (oy2 * ew + ox2) * k + column
            line = line_of(geometry, elems_per_set, table, other)
            if (line - state[0] + nl) % nl < active:
                return True
    return False
