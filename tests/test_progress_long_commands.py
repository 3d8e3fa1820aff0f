"""The bars of ``archsim plan`` (SPP) and ``archsim bppsa pruned-vgg11`` count the work that takes the time.

Failed before: SPP's bar counted stage counts, all priced after the PRM tables were built, so it sat at 0 for the
whole search (10 s on the ResNet-50 profile of docs/papers/spp.md); the pruned VGG-11's counted whole scans, at 0/2
for 37 of `--sparsity 0.9 --compare-levels 2`'s 42 s. Drawn on a terminal (a pseudo-tty here), never on a pipe."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import sys
import termios
import threading
from pathlib import Path

from recorded_bars import RecordingBar, record_bars

from archsim.cli import main

ROOT = Path(__file__).resolve().parent.parent
PLAN = ["plan", "vgg16", "--only", "conv", "--array", "128x128", "--cluster",
        str(ROOT / "configs" / "clusters" / "testbed_1080ti.toml"), "--microbatches", "8", "--baselines", "none"]
VGG = ["bppsa", "pruned-vgg11", "--width-divisor", "16", "--compare-levels", "2"]


def _recorded(monkeypatch) -> list[RecordingBar]:
    return record_bars(monkeypatch)


def test_spps_bar_counts_the_prm_levels_as_they_are_built(monkeypatch, capsys):
    """testbed_1080ti is 4 servers × 2 GPUs and vgg16's conv stack 13 layers, so SPP tries 1…8 stages: its PRM
    tables have levels ξ = 2…8 (7, each a stage more), then 8 stage counts are priced: 15 steps. All 7 levels are
    counted before the first plan is read back from the tables (before: 0)."""
    from archsim.spp import prm

    bars = _recorded(monkeypatch)
    counted_at_readback = []
    read_back = prm.prm_plans

    def spy(*args, **kwargs):
        counted_at_readback.append(sum(bars[-1].updates))
        return read_back(*args, **kwargs)

    monkeypatch.setattr(prm, "prm_plans", spy)
    assert main([*PLAN, "--format", "json"]) == 0
    capsys.readouterr()
    assert [bar.total for bar in bars] == [7 + 8] and counted_at_readback == [7]
    assert bars[0].updates == [1] * 15


def test_the_pruned_vgg11_bar_counts_every_scan_step(monkeypatch, capsys):
    """VGG-11's conv stack is n = 21 operators, 22 scan elements. BP is 21 ◇ (one per operator). BPPSA at up-sweep
    depth 2 (the default) is 11 + 5 up-sweep pairs, ⌈22/4⌉ − 1 = 5 linear steps over the block roots and 5 + 11
    down-sweep pairs: 37; depth 0 (always compared) is the 21 of a linear scan. 37 + 21 + 21 + 21 = 100 steps,
    each drawn as it ends (before: 2 scans), and the network and its Jacobians are built once (before: twice)."""
    from archsim.bppsa import vgg

    bars = _recorded(monkeypatch)
    built = []
    stack = vgg.vgg11_conv_stack
    monkeypatch.setattr(vgg, "vgg11_conv_stack", lambda **kwargs: built.append(kwargs) or stack(**kwargs))
    assert main([*VGG, "--format", "json"]) == 0
    capsys.readouterr()
    assert [bar.total for bar in bars] == [100] and bars[0].updates == [1] * 100
    assert len(built) == 1


def _on_a_pty(argv: list[str], monkeypatch, capsys) -> tuple[str, str]:
    """``argv`` run with stderr on a fresh pseudo-tty of 120 columns: (its stdout, what the tty showed)."""
    main_fd, side_fd = pty.openpty()
    fcntl.ioctl(side_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    shown: list[bytes] = []

    def read() -> None:  # drained as it is drawn: a full pty buffer would block the bar's writes
        while True:
            try:
                chunk = os.read(main_fd, 65536)
            except OSError:  # the other side closed
                return
            if not chunk:
                return
            shown.append(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        with os.fdopen(side_fd, "w", closefd=False) as stream:
            monkeypatch.setattr(sys, "stderr", stream)
            assert main(argv) == 0
            stream.flush()
            monkeypatch.undo()
    finally:
        os.close(side_fd)
        reader.join(5)
        os.close(main_fd)
    return capsys.readouterr().out, b"".join(shown).decode(errors="replace")


def test_the_bars_draw_on_a_pseudo_tty_and_nothing_on_a_pipe(monkeypatch, capsys):
    """On a pipe stderr stays empty; on a terminal the bars are drawn there, and stdout is the same either way."""
    main(PLAN)  # on a fresh install the first run also says, once, that numba is compiling SPP's PRM tables
    capsys.readouterr()
    for argv, drawn in ((PLAN, "/15 ["), (VGG, "/100 [")):
        assert main(argv) == 0
        piped = capsys.readouterr()
        assert piped.err == ""
        out, shown = _on_a_pty(argv, monkeypatch, capsys)
        assert out == piped.out
        assert drawn in shown and "step" in shown, shown


def test_a_product_in_row_blocks_has_the_dense_products_pattern_and_flops(monkeypatch):
    """A long ◇ product reports its row blocks as they end; its pattern and FLOPs are the dense product's, counted
    here by numpy: multiplies = Σ_k colnnz(X)[k]·rownnz(Y)[k], adds = multiplies − nnz(X·Y)."""
    import numpy as np
    import scipy.sparse as sp

    from archsim.bppsa import sparse_cost

    rng = np.random.default_rng(3)
    dense_x = (rng.random((300, 200)) < 0.05).astype(np.float32)
    dense_x[10:40] = 0  # empty rows: a block may hold none
    dense_y = (rng.random((200, 250)) < 0.08).astype(np.float32)
    x, y = (sparse_cost.Pattern(sp.csr_array(m)) for m in (dense_x, dense_y))
    multiplies = int(dense_x.sum(axis=0) @ dense_y.sum(axis=1))
    product = dense_x @ dense_y > 0
    monkeypatch.setattr(sparse_cost, "PART_MULTIPLIES", multiplies // 7)
    done: list[float] = []
    flops, dense, pattern = sparse_cost.product_flops(x, y, on_part=done.append)
    assert pattern.matrix is not None
    assert (pattern.matrix.toarray() > 0).tolist() == product.tolist() and set(pattern.matrix.data) == {1.0}
    assert flops == 2 * multiplies - int(product.sum()) and dense == 300 * 250 * (2 * 200 - 1)
    assert len(done) >= 5 and done == sorted(done) and done[-1] == 1.0
