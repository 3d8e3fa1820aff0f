"""Importing a 1,000-node ONNX graph (target: under 2 s), measured in one run.

    .venv/bin/python benchmarks/bench_onnx_import.py [--blocks 250]

Builds a residual chain with onnx.helper — per block a 3×3 conv (64 channels, with weights),
batch norm, ReLU and a shortcut Add, plus shape arithmetic every block (Shape → Gather → Concat →
Reshape, as exporters write it) — saves it to a temporary file and times ``load_onnx`` on the
file (best of 3), writing benchmarks/results/onnx_import_speed.csv atomically.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import pandas as pd
from onnx import TensorProto, helper, numpy_helper

from archsim.outputs import atomic_write_text
from archsim.workload import load_onnx

ROOT = Path(__file__).resolve().parents[1]


def residual_chain(blocks: int, channels: int = 64, size: int = 28) -> onnx.ModelProto:
    nodes, inits = [], []
    x = "x"
    zero = lambda name, *shape: inits.append(numpy_helper.from_array(np.zeros(shape, np.float32), name))
    inits.append(numpy_helper.from_array(np.array([0], np.int64), "i0"))
    inits.append(numpy_helper.from_array(np.array([channels, size, size], np.int64), "chw"))
    for b in range(blocks):
        p = f"b{b}"
        zero(f"{p}_w", channels, channels, 3, 3)
        for stat in ("g", "beta", "mu", "var"):
            zero(f"{p}_{stat}", channels)
        nodes += [
            helper.make_node("Conv", [x, f"{p}_w"], [f"{p}_c"], name=f"{p}_conv", pads=[1, 1, 1, 1]),
            helper.make_node("BatchNormalization", [f"{p}_c", f"{p}_g", f"{p}_beta", f"{p}_mu", f"{p}_var"],
                             [f"{p}_bn"], name=f"{p}_bn"),
            helper.make_node("Relu", [f"{p}_bn"], [f"{p}_r"], name=f"{p}_relu"),
            helper.make_node("Shape", [f"{p}_r"], [f"{p}_s"], name=f"{p}_shape"),
            helper.make_node("Gather", [f"{p}_s", "i0"], [f"{p}_n"], name=f"{p}_gather", axis=0),
            helper.make_node("Concat", [f"{p}_n", "chw"], [f"{p}_t"], name=f"{p}_concat", axis=0),
            helper.make_node("Reshape", [f"{p}_r", f"{p}_t"], [f"{p}_rs"], name=f"{p}_reshape"),
            helper.make_node("Add", [f"{p}_rs", x], [f"{p}_o"], name=f"{p}_add"),
        ]
        x = f"{p}_o"
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                             ["N", channels, size, size])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["N", channels, size, size])],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=125, help="blocks of 8 nodes (default 125: 1,000 nodes)")
    args = parser.parse_args(argv)
    model = residual_chain(args.blocks)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "chain.onnx"
        onnx.save(model, path)
        times = []
        for _ in range(3):
            start = time.perf_counter()
            network = load_onnx(path)
            times.append(time.perf_counter() - start)
        size_mb = path.stat().st_size / 2**20
    best = min(times)
    row = {"nodes": len(model.graph.node), "layers": len(network.layers), "file_mib": round(size_mb, 1),
           "import_seconds_best_of_3": round(best, 3), "target_seconds": 2.0, "met": best < 2.0}
    atomic_write_text(ROOT / "benchmarks" / "results" / "onnx_import_speed.csv",
                      pd.DataFrame([row]).to_csv(index=False))
    print(row)
    return 0 if best < 2.0 else 1


if __name__ == "__main__":
    sys.exit(main())
