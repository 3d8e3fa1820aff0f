"""A device sweep's results folder (:mod:`archsim.sweep.device_points`) as an HTML report: its time/energy scatter
with the front and its rows, after the folder's model and device files are checked unchanged; and its rows as a
markdown table.

Why apart from :mod:`archsim.sweep.report`: a device sweep's rows share nothing with an array sweep's per-layer
costs and LayerPipe schedule; both read the folder's results.csv and spec.json through that module.
"""

from __future__ import annotations

from pathlib import Path

from archsim.errors import InputError
from archsim.sweep.report import read_results_csv, spec_record
from archsim.sweep.results_check import DEVICE_NUMBERS, check_cells, check_device_rows


def _check_device_files(first, record: dict) -> None:
    """A device sweep's model and device files must still be those its rows costed (``model_sha256``,
    ``device_sha256``), found where the folder's spec.json says the sweep read them."""
    import os

    from archsim.sweep.spec_files import check_unchanged

    found = record.get("setup")
    setup = found if isinstance(found, dict) else {}
    for what in ("model", "device"):
        path, recorded = setup.get(f"{what}_path"), first.get(f"{what}_sha256")
        if isinstance(path, str) and path and isinstance(recorded, str):
            check_unchanged(os.path.abspath(path), recorded, "since the sweep ran", what)


def is_device_folder(folder: Path) -> bool:
    """Whether ``folder``'s results.csv (the run's own, while a sweep writes its report) is a device sweep's."""
    from archsim.output_files import pending
    from archsim.validate import is_file, read_text

    path = pending(folder / "results.csv")
    if not is_file(path):
        return False
    header = read_text(path, "results file").partition("\n")[0].split(",")
    return "hbm_gbps" in header and "pareto_optimal" in header and "network" not in header


def write_device_report(folder: Path, target: str | Path, *, spec_command: str) -> Path:
    """The HTML report of a device sweep's folder (:mod:`archsim.sweep.device_points`): the time/energy
    scatter with its front and the rows."""
    from archsim.report.html_page import esc
    from archsim.report.page import write_page
    from archsim.report.pareto import device_pareto_figure
    from archsim.sweep.device_points import AREA_COLUMN, CLOCK_COLUMN, COLUMNS, LAYOUT_COLUMNS, SRAM_COLUMN

    path = folder / "results.csv"
    text, results = read_results_csv(path)
    missing = [c for c in COLUMNS if c not in results.columns]
    if missing or results.empty:
        raise InputError("missing column" if missing else "no rows", file=str(path), line=1,
                         field=missing[0] if missing else None, missing=bool(missing))
    sram, clock, area = ([c] if c in results.columns else [] for c in (SRAM_COLUMN, CLOCK_COLUMN, AREA_COLUMN))
    layout = LAYOUT_COLUMNS if set(LAYOUT_COLUMNS) <= set(results.columns) else []
    check_cells(text, results, path, [*DEVICE_NUMBERS, *sram, *clock, *layout, *area],
                flags=("fits_memory", "pareto_optimal"))
    record = spec_record(folder)
    check_device_rows(results, record, path, spec_command)
    _check_device_files(results.iloc[0], record)
    command = esc(f"{spec_command} && archsim report {folder} --out {target}")
    rows = results[["arrays", *sram, *clock, "hbm_gbps", "gpus", *layout, "iteration_seconds", "energy_j", *area,
                    "peak_memory_gib", "fits_memory", "pareto_optimal"]]
    first = results.iloc[0]
    parallel = "TP × PP × DP over the chips" if layout else "data parallel over the chips"
    setting = esc(f"{first['model']} on {first['gpu']}: global batch {first['global_batch']}, micro-batch "
                  f"{first['micro_batch']}, recompute {first['recompute']}, {first['dtype']}"
                  f"{'' if 'fp8' not in results.columns else ' with fp8 ' + str(first['fp8'])}, "
                  f"{first['attention']} "
                  f"attention, {parallel}, {_energy_words(first)}{_skipped(record)}{_empty_front(results)}")
    sections = [(device_pareto_figure(results), f"{setting}. Reproduce: <code>{command}</code>"),
                (rows, (f"All {len(results)} designs (seconds and joules per iteration"
                        f"{'; area_mm2: one chip' + chr(39) + 's arrays and SRAMs' if area else ''}; pareto: on the front)"))]
    return write_page(target, f"Device sweep: {first['model']} on {first['gpu']}", sections)


def _energy_words(first) -> str:
    """What each point's joules hold: the energy model's dynamic joules, plus the static power per chip the spec or
    device file states (one figure for the sweep: ``static_watts``), which shifts every point's energy."""
    watts = float(first["static_watts"])
    if not watts:
        return "energy: the energy model's dynamic joules (no static power)"
    return f"energy: the energy model's dynamic joules plus {watts:g} W of static power per chip over the iteration"


def _skipped(record: dict) -> str:
    """". " and the line counting the layouts the sweep skipped as train refuses them, from its spec.json ("" for
    none, or a record from before the tp and pp axes)."""
    from archsim.sweep.device_layouts import skipped_line

    skipped = record.get("skipped")
    axes = [axis for key in ("arrays", "sram_kib_per_array", "clocks_ghz", "hbm_gbps", "chips", "tp", "pp")
            if isinstance(axis := record.get(key), list)]
    if not skipped or len(axes) < 7:
        return ""
    arrays, sram, clocks, hbm, chips, tp, pp = (len(axis) for axis in axes)
    line = skipped_line([tuple(entry) for entry in skipped], chips * tp * pp, arrays * sram * clocks * hbm)
    return f". {line[0].upper()}{line[1:]}" if line else ""


def _empty_front(results) -> str:
    """". " and the line saying the time/energy front is empty, when no design fits memory (the stderr warning's
    count and need, :func:`~archsim.sweep.device_points.unfit_points_line`); "" when one fits."""
    from archsim.sweep.device_points import unfit_points_line

    if results["fits_memory"].astype(bool).any():
        return ""
    return f". No design fits memory, so the time/energy front is empty: {unfit_points_line(results)}"


def device_markdown(rows: list[dict]) -> str:
    """A device sweep's rows (:func:`archsim.sweep.device_points.sweep_rows`) as a markdown table, energies in
    joules as the report plots them (until 2026-12-05 kJ) to four significant figures at least (a small model's
    designs differ in the third: :func:`_joules`); a clock column and TP, PP and DP columns where the rows have them."""
    clock = any("clock_ghz" in r for r in rows)
    layout = any("tp" in r for r in rows)
    head = ["arrays", *(["GHz"] if clock else []), "HBM GB/s", "chips", *(["TP", "PP", "DP"] if layout else []),
            "iteration s", "energy J", "peak GiB", "fits", "Pareto"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["arrays"], *([f"{r['clock_ghz']:g}"] if clock else []), f"{r['hbm_gbps']:g}", r["gpus"],
                 *([r["tp"], r["pp"], r["dp"]] if layout else []), f"{r['iteration_seconds']:.3f}",
                 _joules(r["energy_j"]), f"{r['peak_memory_gib']:.1f}", "yes" if r["fits_memory"] else "no",
                 "**front**" if r["pareto_optimal"] else ""]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(lines)


def _joules(joules: float) -> str:
    """An iteration's joules as the table prints them: four significant figures (``28.00``, ``66.10``), whole
    joules from 1,000 (``4216``, not ``4.216e+03``)."""
    return f"{joules:.0f}" if joules >= 1e3 else f"{joules:#.4g}".rstrip(".")  # 999.96: 1000, not 1000.


__all__ = ["device_markdown", "is_device_folder", "write_device_report"]
