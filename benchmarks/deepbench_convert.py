"""Turn DeepBench's published training-convolution timings into archsim's measured-kernel CSV.

    pip install openpyxl   # only this converter reads .xlsx
    # the xlsx files: git show <DeepBench commit>:results/train/DeepBench_NV_V100.xlsx > .deepbench/…
    python benchmarks/deepbench_convert.py .deepbench/DeepBench_NV_V100.xlsx … --gpu "NVIDIA V100" \\
        --sm-count 80 --source "baidu-research/DeepBench results/train/DeepBench_NV_V100.xlsx at da81ba7" …

(one ``--gpu``, ``--sm-count`` and ``--source`` per file, in order; the full command for all ten GPUs
is in each committed CSV's ``# command:`` line). Convert every file in one run: a layer shape keeps
the name of the first file that lists it.

DeepBench (Baidu Research, Apache-2.0) timed cuDNN's (AMD: MIOpen's) forward, input-gradient ("wrt
Inputs") and weight-gradient ("wrt Parameters") convolution kernels of layers from speech, OCR, face
recognition, vision (VGG- and GoogLeNet-like) and ResNet models, at batch 4–32, on real GPUs. Those
are the F, D and G kernels archsim costs, measured by someone else: an independent check of archsim's
GPU model (``archsim validate-gpu``) that needs no GPU here. This script reads the sheet with 16-bit
inputs and mixed-precision math where the file has one (V100, T4), else its FP32 sheet (Maxwell,
Pascal, AMD), in either layout DeepBench used (2019: application names, output sizes; 2017: neither),
keeps the layers archsim can describe (the same stride and padding both ways: all of them), and writes

* ``benchmarks/results/deepbench_conv_layers.csv`` — one topology row per distinct layer shape
  (each taking the network input, so the measured CSV joins to it like to a shipped network);
* ``benchmarks/results/deepbench_<gpu>_kernels.csv`` — one row per (layer, batch, op) with the
  milliseconds DeepBench reports and, for F, the forward algorithm the sheet records; "N/A*" (no
  input gradient for a first layer) is left out; the header names the sheet and the Specs sheet;
* ``benchmarks/results/deepbench_gemm_layers.csv`` and ``deepbench_<gpu>_gemm_kernels.csv`` — the
  sheet's dense GEMMs C[M×N] = A[M×K]·B[K×N] (cuBLAS) as the forward op of a fully-connected layer
  of K inputs and M outputs at batch N (the same M·N·K MACs); the transposes name the layer.

The output sizes DeepBench lists (P, Q) are checked against archsim's on every row that lists them
as integers.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from archsim.outputs import atomic_write_text
from archsim.validation.gpu_csv import format_kernel_csv
from archsim.validation.gpu_study import slug
from archsim.workload.layer import Layer

ROOT = Path(__file__).resolve().parents[1]
SHEET = "Results - FP16 ip, Mixed math"
LAYERS_FILE = "deepbench_conv_layers.csv"
GEMM_LAYERS_FILE = "deepbench_gemm_layers.csv"
COLUMNS = {"w": "w", "h": "h", "c": "c", "n": "batch", "k": "k", "s": "s", "r": "r", "pad_w": "pad_w",
           "pad_h": "pad_h", "horizontal stride": "stride_w", "vertical stride": "stride_h", "forward (msec)": "F",
           "wrt inputs (msec)": "D", "wrt parameters (msec)": "G", "p": "p", "q": "q"}
TOPOLOGY_HEADER = ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
                   "Strides, Padding, Type, Inputs, Bias, Repeat,")


def _header_name(text: str) -> str:
    """A DeepBench column title in one spelling: sheets of different years write "S (Filter width)",
    "S (Fitler width)" or "S", "Horizontal Stride" or "Horizontal stride"."""
    name = str(text).strip()
    name = name.split(" (")[0] if name[:2] in ("S ", "R ") else name
    return " ".join(name.split()).lower()


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not pd.isna(value)


def _block(path: Path, sheet_name: str, title: str, header_offset: int) -> tuple[list[str], list[tuple[str, dict]]]:
    """(normalized header, [(application, {column: value})]) of one titled block of a results sheet.

    A data row is one whose first header column holds a number (blank rows separate groups; the
    block ends at the next title in column 0). Older sheets (Maxwell/Pascal/AMD) leave the
    application column empty: those rows are named "deepbench"."""
    sheet = pd.read_excel(path, sheet_name=sheet_name, header=None, dtype=object)
    first = sheet.index[sheet[0].astype(str).str.strip() == title][0]
    header = [_header_name(v) for v in sheet.iloc[first + header_offset]]
    lead = next(i for i, name in enumerate(header) if name not in ("nan", _header_name(title)))
    rows = []
    for i in range(first + header_offset + 1, len(sheet)):
        if not pd.isna(sheet.iloc[i, 0]):  # the next block's title
            break
        if not _is_number(sheet.iloc[i, lead]):
            continue
        app = sheet.iloc[i, 1]
        rows.append((str(app).strip() if isinstance(app, str) else "deepbench", dict(zip(header, sheet.iloc[i]))))
    return header, rows


def read_conv_rows(path: Path, sheet_name: str = SHEET) -> pd.DataFrame:
    """The Convolution block of a DeepBench results sheet, one row per benchmark."""
    _, found = _block(path, sheet_name, "Convolution", 1)
    rows = []
    for app, values in found:
        row = {"app": app}
        row.update({ours: values[theirs] for theirs, ours in COLUMNS.items()})
        algorithm = values.get("forward algorithm")
        row["algorithm"] = str(algorithm).strip() if isinstance(algorithm, str) else ""
        rows.append(row)
    return pd.DataFrame(rows)


def read_gemm_rows(path: Path, sheet_name: str = SHEET) -> pd.DataFrame:
    """The Dense Matrix Multiplication block: application, M, N, K, transposes and milliseconds."""
    _, found = _block(path, sheet_name, "Dense Matrix Multiplication", 0)
    return pd.DataFrame([{"app": app, "m": int(v["m"]), "n": int(v["n"]), "k": int(v["k"]),
                          "ta": str(v["a transpose"]).strip(), "tb": str(v["b transpose"]).strip(),
                          "ms": float(v["time (msec)"])} for app, v in found])


def convert_gemm(gemm: pd.DataFrame, layers: dict[tuple, Layer]) -> tuple[list[dict], list[float]]:
    """Measured F rows of the GEMMs as fc layers (added to ``layers``), and repeated listings as in
    :func:`convert`."""
    rows: list[dict] = []
    first: dict[tuple, float] = {}
    repeats: list[float] = []
    for row in gemm.itertuples(index=False):
        key = (row.m, row.k, row.ta, row.tb)
        if key not in layers:
            name = f"{slug(row.app).replace('-', '_')}_gemm_{len(layers) + 1}_{row.ta}{row.tb}".lower()
            layers[key] = Layer(name, "fc", 1, 1, 1, 1, row.k, row.m)
        layer = layers[key]
        unit = (key, row.n)
        if unit in first:
            repeats.append(abs(row.ms / first[unit] - 1))
            continue
        first[unit] = row.ms
        rows.append({"network": GEMM_LAYERS_FILE, "layer": layer.name, "kind": "fc", "batch": row.n, "op": "F",
                     "measured_ms": row.ms, "ifmap_h": 1, "ifmap_w": 1, "channels": row.k, "filters": row.m,
                     "filter_h": 1, "filter_w": 1, "stride": 1, "padding": 0, "same_as": "", "repeats": "",
                     "inner": ""})
    return rows, repeats


def to_layer(name: str, row) -> Layer:
    return Layer(name, "conv", int(row.h), int(row.w), int(row.r), int(row.s), int(row.c), int(row.k),
                 stride=int(row.stride_h), padding=int(row.pad_h))


def _output_checked(layer: Layer, p: object, q: object) -> bool:
    """Whether DeepBench's listed output size (P, Q) could be checked against archsim's: the 2019
    sheets list (width, height) as integers; older ones list fractional sizes such as 78.5×340.5
    (height first), which are not output sizes and are left unchecked. A mismatch is an error."""
    if not (_is_number(p) and _is_number(q) and float(p).is_integer() and float(q).is_integer()):
        return False
    if {int(p), int(q)} != {layer.ofmap_w, layer.ofmap_h}:
        raise SystemExit(f"{layer.name}: DeepBench lists output {p}×{q}, archsim computes "
                         f"{layer.ofmap_w}×{layer.ofmap_h}")
    return True


def convert(conv: pd.DataFrame, layers: dict[tuple, Layer]) -> tuple[list[dict], int, list[float], int]:
    """(measured rows, rows skipped for unequal stride/padding, for each (shape, batch, op) DeepBench
    lists again — under another application — its relative difference from the first listing, which
    is the one kept, and how many rows' output sizes could not be checked). New layer shapes are
    added to ``layers`` (shared by all GPUs, so one shape has one name everywhere)."""
    rows: list[dict] = []
    first: dict[tuple, float] = {}
    repeats: list[float] = []
    skipped = unchecked = 0
    for row in conv.itertuples(index=False):
        if row.pad_w != row.pad_h or row.stride_w != row.stride_h:
            skipped += 1
            continue
        key = (int(row.h), int(row.w), int(row.c), int(row.k), int(row.r), int(row.s), int(row.stride_h),
               int(row.pad_h))
        if key not in layers:
            layers[key] = to_layer(f"{slug(row.app).replace('-', '_')}_{len(layers) + 1}", row)
        layer = layers[key]
        unchecked += not _output_checked(layer, row.p, row.q)
        for op in ("F", "D", "G"):
            value = getattr(row, op)
            if isinstance(value, str):  # "N/A*": DeepBench skips δ for a layer fed by the data
                continue
            unit = (key, int(row.batch), op)
            if unit in first:
                repeats.append(abs(float(value) / first[unit] - 1))
                continue
            first[unit] = float(value)
            rows.append({"network": LAYERS_FILE, "layer": layer.name, "kind": "conv", "batch": int(row.batch),
                         "op": op, "measured_ms": float(value), "ifmap_h": layer.ifmap_h, "ifmap_w": layer.ifmap_w,
                         "channels": layer.channels, "filters": layer.filters, "filter_h": layer.filter_h,
                         "filter_w": layer.filter_w, "stride": layer.stride, "padding": layer.padding,
                         "same_as": "", "repeats": "", "inner": "",
                         "algorithm": row.algorithm if op == "F" else ""})  # the sheet records only the forward's
    return rows, skipped, repeats, unchecked


PRECISION = {"fp16": "fp16 inputs with mixed-precision math", "fp32": "fp32 inputs and math"}


def pick_sheet(path: Path) -> tuple[str, str]:
    """(sheet, dtype): the fp16-input mixed-precision sheet where the file has one (V100, T4), else
    its FP32 sheet — the only results the Maxwell, Pascal and AMD files hold besides P100's
    "Psuedo FP16" sheet (fp16 storage on a GPU without tensor cores), which is not used."""
    names = pd.ExcelFile(path).sheet_names
    if SHEET in names:
        return SHEET, "fp16"
    fp32 = [name for name in names if "fp32" in name.lower()]
    if len(fp32) != 1:
        raise SystemExit(f"{path.name}: expected one FP32 results sheet, found {names}")
    return fp32[0], "fp32"


def _specs(path: Path) -> dict[str, str]:
    sheet = pd.read_excel(path, sheet_name="Specs", header=None, dtype=object)
    return {str(row[0]).strip(): str(row[1]).strip() for row in sheet.itertuples(index=False)
            if len(row) > 1 and not pd.isna(row[0]) and not pd.isna(row[1]) and str(row[1]).strip() not in ("", "-")}


def specs(path: Path) -> str:
    """The file's Specs sheet (GPU, CUDA/cuDNN or ROCm/MIOpen versions, host) on one line."""
    return "; ".join(f"{key} {value}" for key, value in _specs(path).items())


def libraries(path: Path) -> tuple[str, str]:
    """(convolution library, GEMM library) the Specs sheet names: MIOpen/rocBLAS on AMD, else cuDNN/cuBLAS."""
    return ("MIOpen", "rocBLAS") if "MIOpen Version" in _specs(path) else ("cuDNN", "cuBLAS")


def topology_text(layers: list[Layer]) -> str:
    lines = [TOPOLOGY_HEADER]
    for layer in layers:
        lines.append(f"{layer.name}, {layer.ifmap_h}, {layer.ifmap_w}, {layer.filter_h}, {layer.filter_w}, "
                     f"{layer.channels}, {layer.filters}, {layer.stride}, {layer.padding}, {layer.kind}, input, 0, 1,")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("xlsx", nargs="+", type=Path, help="DeepBench results/train/DeepBench_NV_<gpu>.xlsx files")
    parser.add_argument("--gpu", action="append", required=True, help="GPU name per file, in order")
    parser.add_argument("--sm-count", action="append", type=int, required=True, help="SMs per file, in order")
    parser.add_argument("--source", action="append", required=True, help="provenance per file, in order")
    parser.add_argument("--out-dir", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)
    if not len(args.xlsx) == len(args.gpu) == len(args.sm_count) == len(args.source):
        parser.error("give one --gpu, --sm-count and --source per file")
    try:
        import openpyxl  # noqa: F401  (pandas reads .xlsx through it)
    except ImportError:
        print("deepbench_convert: needs openpyxl (pip install openpyxl)", file=sys.stderr)
        return 2
    layers: dict[tuple, Layer] = {}
    gemm_layers: dict[tuple, Layer] = {}
    outputs = []
    for path, gpu, sms, source in zip(args.xlsx, args.gpu, args.sm_count, args.source):
        sheet, dtype = pick_sheet(path)
        conv_lib, gemm_lib = libraries(path)
        precision = PRECISION[dtype]
        rows, skipped, repeats, unchecked = convert(read_conv_rows(path, sheet), layers)
        meta = {"gpu": gpu, "gpu_slug": f"deepbench-{slug(gpu)}", "sm_count": sms, "dtype": dtype,
                "measured_by": f"DeepBench (Baidu Research), {conv_lib} convolution kernels, {precision}; "
                               "times as published (msec per call)",
                "sheet": sheet, "specs": specs(path),
                "source": source, "skipped_rows": f"{skipped} (unequal horizontal/vertical stride or padding)",
                "output_sizes": "checked against archsim on every row" if not unchecked
                else f"{unchecked} rows list fractional output sizes (not checked)",
                "repeated_listings": f"{len(repeats)} kernels listed twice (first kept; the second differs by "
                                     f"{max(repeats, default=0):.0%} at most)",
                "networks": LAYERS_FILE, "batches": ",".join(str(b) for b in sorted({r['batch'] for r in rows})),
                "command": "python benchmarks/deepbench_convert.py " + " ".join(sys.argv[1:] if argv is None else argv)}
        outputs.append((args.out_dir / f"deepbench_{slug(gpu)}_kernels.csv", format_kernel_csv(meta, rows)))
        gemm_rows, gemm_repeats = convert_gemm(read_gemm_rows(path, sheet), gemm_layers)
        gemm_meta = {**meta, "gpu_slug": f"deepbench-{slug(gpu)}-gemm", "networks": GEMM_LAYERS_FILE,
                     "measured_by": f"DeepBench (Baidu Research), {gemm_lib} dense GEMMs, {precision}; "
                                    "times as published (msec per call)",
                     "skipped_rows": "0", "output_sizes": "not applicable",
                     "repeated_listings": f"{len(gemm_repeats)} GEMMs listed twice (first kept; the second "
                                          f"differs by {max(gemm_repeats, default=0):.0%} at most)",
                     "batches": "the GEMM's N"}
        outputs.append((args.out_dir / f"deepbench_{slug(gpu)}_gemm_kernels.csv", format_kernel_csv(gemm_meta, gemm_rows)))
    atomic_write_text(args.out_dir / LAYERS_FILE, topology_text(list(layers.values())))
    atomic_write_text(args.out_dir / GEMM_LAYERS_FILE, topology_text(list(gemm_layers.values())))
    for path, text in outputs:
        atomic_write_text(path, text)
        print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    print(f"wrote {LAYERS_FILE}: {len(layers)} distinct layer shapes; {GEMM_LAYERS_FILE}: {len(gemm_layers)} GEMMs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
