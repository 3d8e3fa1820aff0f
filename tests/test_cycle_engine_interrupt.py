"""The cycle engine steps a GEMM in runs of lines (archsim.array.cycle.LINES_PER_RUN), so Ctrl-C ends a long one
at once: one line, exit 130, nothing written. Until 2026-12-05 one numba call stepped the whole GEMM (up to 10⁹
cycles) and a Ctrl-C waited for it.

The figures of a GEMM stepped a few lines a run are checked against independent references: the analytic
model's compute cycles (itself checked against SCALE-Sim) and SCALE-Sim's own USER-bandwidth runs."""

import subprocess
import sys
import time

import pytest
from cycle_figures import DATAFLOWS, figures, reference_figures

from archsim.array import cycle
from archsim.array.analytic import gemm_cost


@pytest.mark.parametrize("dataflow", DATAFLOWS)
def test_a_few_lines_a_run_keep_the_analytic_cycles(monkeypatch, dataflow):
    """Ample memory: no stall, and the lines stepped are the analytic cycles + 1, however the GEMM is cut."""
    monkeypatch.setattr(cycle, "LINES_PER_RUN", 3)
    result = cycle.simulate_gemm(37, 19, 23, 4, 5, dataflow, sram_words=(2**16,) * 3, bandwidth=(64,) * 3)
    assert (result.compute_cycles, result.stall_cycles) == (int(gemm_cost(37, 19, 23, 4, 5, dataflow).cycles), 0)


@pytest.mark.long
@pytest.mark.parametrize("dataflow", DATAFLOWS)
@pytest.mark.parametrize("m, k, n, rows, cols, kib, bandwidth", [
    (45, 45, 45, 4, 4, (1, 1, 1), 5),  # stalls, and (ws, is) enough part-full ofmap lines that their table grows
    (31, 29, 67, 7, 5, (1, 1, 1), 10),
])
def test_runs_of_a_few_lines_equal_scalesim(monkeypatch, m, k, n, rows, cols, kib, bandwidth, dataflow):
    """Cut every 5 lines (inside folds, inside drains), the six figures still equal SCALE-Sim's."""
    pytest.importorskip("scalesim")
    from scalesim_reference import scalesim_gemm

    monkeypatch.setattr(cycle, "LINES_PER_RUN", 5)
    reference = scalesim_gemm(m, k, n, rows, cols, dataflow, ifmap_kb=kib[0], filter_kb=kib[1], ofmap_kb=kib[2],
                              bandwidth=bandwidth)
    ours = cycle.simulate_gemm(m, k, n, rows, cols, dataflow, sram_words=tuple(1024 * x for x in kib),
                               bandwidth=(bandwidth,) * 3)
    assert figures(ours) == reference_figures(reference)


# The child takes Python's SIGINT handler (a shell's background job starts with SIGINT ignored) and is sent SIGINT
# one second after the cycle engine starts stepping (check_steps runs just before it).
INTERRUPTED_RUN = """
import os, signal, sys, threading
signal.signal(signal.SIGINT, signal.default_int_handler)
from archsim.array import cycle
real = cycle.check_steps
def check_steps(cycles):
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    return real(cycles)
cycle.check_steps = check_steps
from archsim.cli import command_line
sys.argv = ["archsim", "gemm", "--m", "60000000", "--k", "32", "--n", "32", "--engine", "cycle", "--out", "o.txt"]
sys.exit(command_line())
"""


@pytest.mark.long
def test_ctrl_c_ends_a_long_cycle_engine_gemm_at_once(tmp_path):
    """A 6·10⁷-cycle GEMM (about 45 s of stepping) interrupted after 1 s ends within seconds: exit 130, one line,
    nothing on stdout, no file. Failed before: the run stepped the whole GEMM first (timed out here)."""
    cycle.simulate_gemm(8, 8, 8, 4, 4)  # compiled (or loaded) here, so the child only loads it
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", INTERRUPTED_RUN], cwd=tmp_path, capture_output=True, text=True,
                          timeout=30, check=False)
    assert time.monotonic() - start < 20
    assert (done.returncode, done.stdout) == (130, ""), done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1] == "archsim gemm: error: interrupted"
    assert list(tmp_path.iterdir()) == []
