"""archsim's kernel model beside a GPU's tensor-core kernels as measured by ``gpu_tensor_probe.py`` (a check:
nothing is fitted on the measurements).

    .venv/bin/python benchmarks/bench_tensor_probe.py                  # the H200's file, a few seconds
    .venv/bin/python benchmarks/bench_tensor_probe.py --probe FILE.csv --gpu h200-141gb --md OUT.md --csv OUT.csv

Every row is predicted from its op and shape alone, on the catalog GPU in bf16, exactly as training prices
the same kernel timed alone (``kernel_families(..., alone=True)``: NeuSight's launch, the vTrain A100 fit's
constants, :data:`archsim.training.fitted.A100_KERNELS`):

* ``gemm`` — one :class:`~archsim.lowering.TrainingOp`, the forward op of
  :func:`~archsim.training.op_work.gemm_ops` (``count`` > 1: one batched GEMM), through
  :func:`~archsim.devices.kernel_ops.op_seconds`. The model has no operand layout: nt, nn and tn cost alike.
* ``flash_fwd`` / ``flash_bwd`` — FlashAttention-2's forward and backward ops
  (:func:`~archsim.training.layer_ops.flash_attention_ops` over batch × heads) and, with the backward, its two
  small kernels (:func:`~archsim.training.flash_blocks.flash_backward_kernels`), which the measured backward
  row includes: ``bench_flash_kernel.flash_seconds``, the code the papers' benchmark is priced with.

A measured row is the kernel's GPU time plus one launch gap; the prediction includes one launch per kernel.
Prints per class (GEMMs by name: linear F/D/G, square, odd, skinny, batched; flash by head dim, causal and
dropout) the MAPE of seconds, the signed mean error, the predicted/measured ratio's range and the measured
and predicted TFLOP/s (the probe's FLOP counts over the class's summed seconds); ``--md`` writes that with a
per-row table, ``--csv`` the rows.
"""

from __future__ import annotations

import argparse
import csv
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from archsim.devices.catalog import GPUS, chip_of
from archsim.devices.kernel_constants import energy_per_flop, sustained_flops
from archsim.devices.kernel_ops import kernel_families, op_seconds
from archsim.training.fitted import A100_KERNELS
from archsim.training.op_work import gemm_ops
from benchmarks.bench_flash_kernel import flash_seconds

RESULTS = ROOT / "benchmarks" / "results"
PROBE = RESULTS / "gpu_tensor_probe_h200.csv"
ROW_COLUMNS = ("section", "group", "name", "layout", "m", "k", "n", "count", "batch", "heads", "seq", "head_dim",
               "causal", "dropout", "flops", "measured_s", "predicted_s", "ratio", "measured_tflops",
               "predicted_tflops")


@dataclass(frozen=True)
class Compared:
    """One probe row with archsim's prediction: ``group`` the class it is summarized in; seconds."""

    row: dict[str, str]
    group: str
    measured: float
    predicted: float

    @property
    def flops(self) -> float:
        return float(self.row["flops"])

    @property
    def ratio(self) -> float:
        return self.predicted / self.measured


def read_probe(path: Path) -> tuple[dict[str, str], list[dict[str, str]]]:
    """(meta, rows) of a ``gpu_tensor_probe.py`` CSV (``# key: value`` lines, then the table)."""
    meta, body = {}, []
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            key, _, value = line[1:].partition(":")
            meta[key.strip()] = value.strip()
        elif line.strip():
            body.append(line)
    return meta, list(csv.DictReader(body))


def gemm_group(name: str, count: int) -> str:
    """The summary class of a probe GEMM: linear F/D/G by its op letter, else its name (batched: count > 1)."""
    if count > 1:
        return "batched"
    if "." in name:
        return f"linear {name.rsplit('.', 1)[1]}"
    return name


def predict_gemm(row: dict[str, str], gpu: str, dtype: str = "bf16") -> float:
    """Seconds of the probe's GEMM as training times its forward op alone (module docstring)."""
    device = GPUS[gpu]
    op = gemm_ops(row["name"], int(row["m"]), int(row["k"]), int(row["n"]), int(row["count"]))[0]
    return float(op_seconds([op], device, kernel_families(device, dtype, A100_KERNELS, alone=True), dtype)[0])


def predict_flash(row: dict[str, str], gpu: str, dtype: str = "bf16") -> float:
    """Seconds of the probe's FlashAttention-2 forward or backward (with its two small kernels)."""
    forward, backward = flash_seconds(gpu, int(row["seq"]), int(row["head_dim"]), int(row["batch"]) * int(row["heads"]),
                                      row["causal"] == "true", dtype, dropout=float(row["dropout"]) > 0)
    return forward if row["section"] == "flash_fwd" else backward


def flash_group(row: dict[str, str]) -> str:
    causal = "causal" if row["causal"] == "true" else "full"
    drop = f" dropout {float(row['dropout']):g}" if float(row["dropout"]) > 0 else ""
    return f"{row['section']} d{row['head_dim']} {causal}{drop}"


def compare(rows: list[dict[str, str]], gpu: str) -> list[Compared]:
    """Every probe row beside archsim's prediction."""
    out = []
    for row in rows:
        if row["section"] == "gemm":
            out.append(Compared(row, gemm_group(row["name"], int(row["count"])), float(row["seconds"]),
                                predict_gemm(row, gpu, row["dtype"])))
        else:
            out.append(Compared(row, flash_group(row), float(row["seconds"]), predict_flash(row, gpu, row["dtype"])))
    return out


def mape(rows: list[Compared]) -> float:
    """Mean of |predicted / measured − 1| (a fraction)."""
    return float(np.mean([abs(r.ratio - 1) for r in rows]))


def summary_line(label: str, rows: list[Compared]) -> str:
    ratios = np.array([r.ratio for r in rows])
    flops = sum(r.flops for r in rows)
    measured = flops / sum(r.measured for r in rows) / 1e12
    predicted = flops / sum(r.predicted for r in rows) / 1e12
    return (f"| {label} | {len(rows)} | {100 * mape(rows):.1f}% | {100 * (ratios.mean() - 1):+.1f}% | "
            f"{ratios.min():.3f}–{ratios.max():.3f} | {measured:.0f} | {predicted:.0f} |")


def summary(compared: list[Compared]) -> list[str]:
    """The per-class table (markdown), sections first then their classes in order of appearance."""
    lines = [("| class | rows | MAPE | signed mean | predicted/measured min–max | measured TFLOP/s | "
              "predicted TFLOP/s |"), "| --- | --- | --- | --- | --- | --- | --- |",
             summary_line("all", compared)]
    for section in ("gemm", "flash_fwd", "flash_bwd"):
        pick = [r for r in compared if r.row["section"] == section]
        if pick:
            lines.append(summary_line(f"**{section}**", pick))
            for group in dict.fromkeys(r.group for r in pick):
                lines.append(summary_line(group, [r for r in pick if r.group == group]))
    return lines


def row_fields(r: Compared) -> dict[str, object]:
    keys = ("section", "name", "layout", "m", "k", "n", "count", "batch", "heads", "seq", "head_dim", "causal",
            "dropout", "flops")
    return {**{k: r.row[k] for k in keys}, "group": r.group, "measured_s": f"{r.measured:.6e}",
            "predicted_s": f"{r.predicted:.6e}", "ratio": f"{r.ratio:.4f}",
            "measured_tflops": f"{r.flops / r.measured / 1e12:.1f}",
            "predicted_tflops": f"{r.flops / r.predicted / 1e12:.1f}"}


def row_table(compared: list[Compared]) -> list[str]:
    lines = [("| section | name | shape | measured µs | predicted µs | predicted/measured | measured TFLOP/s | "
              "predicted TFLOP/s |"), "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in compared:
        f = r.row
        if f["section"] == "gemm":
            batched = f" ×{f['count']}" if int(f["count"]) > 1 else ""
            shape = f"{f['m']}×{f['k']}×{f['n']}{batched} {f['layout']}"
        else:
            shape = (f"b{f['batch']} h{f['heads']} s{f['seq']} d{f['head_dim']}" + (" causal" if f["causal"] == "true"
                     else "") + (f" drop {f['dropout']}" if float(f["dropout"]) else ""))
        lines.append(f"| {f['section']} | {f['name']} | {shape} | {1e6 * r.measured:.1f} | {1e6 * r.predicted:.1f} | "
                     f"{r.ratio:.3f} | {r.flops / r.measured / 1e12:.0f} | {r.flops / r.predicted / 1e12:.0f} |")
    return lines


def ratio_notes(compared: list[Compared]) -> list[str]:
    """Backward / forward time, and dropout's cost, measured and predicted, where the probe has both rows."""
    by = {(r.row["section"], r.row["name"]): r for r in compared}
    lines = []
    bwd_fwd = [(by["flash_bwd", n], f) for (s, n), f in by.items() if s == "flash_fwd" and ("flash_bwd", n) in by]
    if bwd_fwd:
        m = np.array([b.measured / f.measured for b, f in bwd_fwd])
        p = np.array([b.predicted / f.predicted for b, f in bwd_fwd])
        lines.append(f"- flash backward / forward seconds: measured {m.min():.2f}–{m.max():.2f} (median "
                     f"{np.median(m):.2f}), predicted {p.min():.2f}–{p.max():.2f} (median {np.median(p):.2f})")
    for section in ("flash_fwd", "flash_bwd"):
        pairs = [(r, by[section, r.row["name"].split("_drop")[0]]) for (s, _), r in by.items()
                 if s == section and float(r.row["dropout"]) > 0 and (section, r.row["name"].split("_drop")[0]) in by]
        if pairs:
            m = ", ".join(f"{100 * (d.measured / p.measured - 1):+.0f}%" for d, p in pairs)
            q = ", ".join(f"{100 * (d.predicted / p.predicted - 1):+.0f}%" for d, p in pairs)
            lines.append(f"- dropout's cost, {section} (s " + ", ".join(d.row["seq"] for d, _ in pairs)
                         + f"): measured {m}; predicted {q}")
    return lines


def gemm_notes(compared: list[Compared], gpu: str, dtype: str = "bf16") -> list[str]:
    """The GEMM mechanisms the data speak to: the launch the model charges beside the smallest measured GEMM,
    the board power cap the model applies beside its tile rate, the energy per FLOP at which the longest GEMMs'
    measured rate would sit at the board's watts, and the predicted/measured ratio by kernel duration."""
    device = GPUS[gpu]
    chip = chip_of(device)
    constants = kernel_families(device, dtype, A100_KERNELS, alone=True).gemm
    gemms = [r for r in compared if r.row["section"] == "gemm"]
    if not gemms or chip is None:
        return []
    smallest = min(gemms, key=lambda r: r.flops)
    watts = device.board_watts or chip.tdp_w
    cap = sustained_flops(chip, constants, dtype, watts) / 1e12
    rate = constants.gemm * device.peak(dtype) / 1e12
    shape = "×".join(smallest.row[x] for x in "mkn")
    lines = [(f"- launch: the model charges {1e6 * constants.launch_s:.1f} µs a kernel timed alone; the whole "
              f"{shape} GEMM measured {1e6 * smallest.measured:.1f} µs (kernel + one launch gap)"),
             (f"- power cap: applied ({watts:.0f} W / {1e12 * energy_per_flop(chip, constants, dtype):.3f} pJ per FLOP "
              f"= {cap:.0f} TFLOP/s), above the tiles' {constants.gemm} × {device.peak(dtype) / 1e12:.1f} = "
              f"{rate:.0f} "
              f"TFLOP/s, so it binds no GEMM here")]
    long = [r for r in gemms if r.measured >= 5e-3]
    if long:
        measured = sum(r.flops for r in long) / sum(r.measured for r in long)
        pj = watts / measured / (chip.process_nm / 12.0 * chip.clock_hz / 1e9) * 1e12
        lines.append(f"- the {len(long)} GEMMs of ≥ 5 ms run at {measured / 1e12:.0f} TFLOP/s together: were the "
                     f"board at its {watts:.0f} W, that is {1e12 * watts / measured:.3f} pJ per FLOP, a tensor energy "
                     f"of {pj:.2f} pJ at 12 nm and "
                     f"1 GHz (archsim's: {constants.tensor_energy_pj})")
    for low, high in ((0, 2e-5), (2e-5, 1e-4), (1e-4, 5e-3), (5e-3, np.inf)):
        pick = [r.ratio for r in gemms if low <= r.measured < high]
        if pick:
            lines.append(f"- GEMMs measured {1e6 * low:.0f}–{1e6 * high:.0f} µs: predicted/measured median "
                         f"{np.median(pick):.3f} ({len(pick)} GEMMs)".replace("–inf µs", " µs and longer"))
    return lines


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probe", type=Path, default=PROBE, help="gpu_tensor_probe.py CSV (default: the H200's)")
    parser.add_argument("--gpu", default="h200-141gb", help="catalog GPU to predict on (default h200-141gb)")
    parser.add_argument("--md", type=Path, help="write the summary and per-row table here (markdown)")
    parser.add_argument("--csv", type=Path, help="write the per-row comparison here")
    args = parser.parse_args(argv)
    if args.gpu not in GPUS:
        parser.error(f"unknown GPU {args.gpu!r}; choose one of {', '.join(GPUS)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    meta, rows = read_probe(args.probe)
    compared = compare(rows, args.gpu)
    head = [f"# archsim vs {meta.get('gpu', args.probe.name)}'s tensor-core kernels ({meta.get('date', '')[:10]})",
            "", (f"`benchmarks/bench_tensor_probe.py` on `{args.probe.name}` ({len(rows)} rows; catalog "
            f"{args.gpu}, bf16, each kernel timed alone with the A100 (vTrain) fit's constants; nothing fitted)"), ""]
    lines = [*head, *summary(compared), "", *gemm_notes(compared, args.gpu), *ratio_notes(compared)]
    print("\n".join(lines))
    if args.md:
        args.md.write_text("\n".join([*lines, "", "## Per row", "", *row_table(compared)]) + "\n")
    if args.csv:
        with args.csv.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=ROW_COLUMNS)
            writer.writeheader()
            writer.writerows(row_fields(r) for r in compared)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
