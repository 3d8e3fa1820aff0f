"""One GPU table: every catalog GPU's datasheet figures are stated in archsim/devices/catalog.py alone.

The scan reads every numeric literal of the library's source with :mod:`ast` and flags one that
restates a figure of :data:`archsim.devices.catalog.TABLE` in the table's unit or in SI units (a clock
in MHz or Hz, HBM/NVLink/PCIe bandwidth in GB/s or bytes/s, a peak in TFLOP/s or FLOP/s, memory in GiB
or bytes, board power in watts). Figures under 1000 or whole hundreds (300, 4800) would match
unrelated constants (a timeout, a plot's height); they are flagged only in SI units (300e9, 4800e9),
where such a constant can only be a datasheet figure — except powers of two (16 GB/s PCIe is also
16e9 bytes of memory).
"""

import ast
from pathlib import Path

import pytest

from archsim.devices.catalog import GPUS, TABLE
from archsim.devices.device import catalog_device
from archsim.devices.gpu_lookup import find_gpu, gpu
from archsim.units import GIB

ROOT = Path(__file__).resolve().parents[1] / "archsim"
TABLE_MODULE = ROOT / "devices" / "catalog.py"


def _power_of_two(value: float) -> bool:
    return value == int(value) and int(value) > 0 and int(value) & (int(value) - 1) == 0


def _distinctive(value: float) -> bool:
    """A raw figure unlikely to be anything else: a fraction over 10, or from 1000 on, not a whole
    hundred nor a power of two."""
    if value != int(value):
        return value > 10
    return value > 1000 and value % 100 != 0 and not _power_of_two(value)


def datasheet_figures() -> dict[float, str]:
    """Each literal a restatement would use → the figure it restates."""
    found: dict[float, str] = {}

    def add(raw: float, scale: float, what: str) -> None:
        if not raw:  # 0: the board has none (a PCIe card's NVLink), not a figure
            return
        if not _power_of_two(raw):
            found[float(raw) * scale] = what
        if _distinctive(raw):
            found[float(raw)] = what

    for row in TABLE:
        chip = row.chip
        add(round(chip.clock_hz / 1e6, 3), 1e6, f"{row.slug} clock")
        add(round(chip.memory_bytes_per_s / 1e9, 3), 1e9, f"{row.slug} HBM bandwidth")
        if chip.tdp_w and _distinctive(chip.tdp_w):
            found[float(chip.tdp_w)] = f"{row.slug} TDP"
        board = row.board
        if board is None:
            continue
        add(board.memory_gb, GIB, f"{board.key} memory")
        for precision, tflops in board.peaks_tflops.items():
            add(tflops, 1e12, f"{board.key} {precision} peak")
        add(board.nvlink_gbs, 1e9, f"{board.key} NVLink")
        add(board.pcie_gbs, 1e9, f"{board.key} PCIe")
    return found


def restatements(source: str, figures: dict[float, str]) -> list[tuple[int, float, str]]:
    """(line, literal, figure) for each numeric literal of ``source`` that restates a figure."""
    hits = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            value = float(node.value)
            if value in figures:
                hits.append((node.lineno, node.value, figures[value]))
    return hits


@pytest.mark.long
def test_no_module_states_a_gpu_figure_a_second_time():
    figures = datasheet_figures()
    broken = [f"{path.relative_to(ROOT.parent)}:{line}: {value!r} restates the {what}"
              for path in sorted(ROOT.rglob("*.py")) if path != TABLE_MODULE
              for line, value, what in restatements(path.read_text(encoding="utf-8"), figures)]
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("source", ["clock_hz = 1410e6", "CLOCK = 1.41e9", "hbm = 2039e9", "BW = 2039",
                                    "peak = 312e12", "PEAK = {'fp16': 989.4}", "memory = 80 * 2**30 or 85899345920",
                                    "L4_MHZ = 2040", "nvlink = 450e9"])
def test_the_scan_catches_a_restated_figure(source):
    """The scan can fail: each line restates one catalog figure."""
    assert restatements(source, datasheet_figures())


@pytest.mark.parametrize("source", ["hidden = 2048", "timeout = 300", "seq = 4800", "x = 1e-9",
                                    "height = 320", "memory = 16e9"])
def test_the_scan_passes_constants_that_are_not_figures(source):
    assert not restatements(source, datasheet_figures())


def test_the_table_is_the_only_gpu_table():
    """:data:`KNOWN_GPUS` and :data:`GPUS` are views of the one table: the training device of a GPU is
    built from the very chip record the kernel model and validate-gpu read."""
    from archsim.devices.catalog import KNOWN_GPUS

    assert len(KNOWN_GPUS) == len(TABLE)
    for row in TABLE:
        assert KNOWN_GPUS[row.slug] is row.chip and find_gpu(row.slug) == row.slug
        if row.board is None:
            continue
        device = gpu(row.board.key)
        assert catalog_device(row.board.key) is device
        chip = row.chip
        assert (device.sms, device.arrays.count, device.arrays.rows, device.arrays.cols) == (
            chip.sm_count, chip.arrays, chip.mma_rows, chip.mma_cols)
        assert (device.name, device.clock_hz, device.hbm_bytes_per_s, device.board_watts) == (
            chip.name, chip.clock_hz, chip.memory_bytes_per_s,
            chip.tdp_w or None)
        assert device.memory_bytes == row.board.memory_gb * GIB
    assert set(GPUS) == {row.board.key for row in TABLE if row.board is not None}
