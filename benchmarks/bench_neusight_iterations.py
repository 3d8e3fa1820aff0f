"""NeuSight's measured single-GPU training iterations against ``archsim train`` (fp32, eager PyTorch).

    .venv/bin/python benchmarks/bench_neusight_iterations.py [--data ../shared/gpu_kernels]

Data: ``train_iterations.csv`` (NeuSight's dataset, MIT): one forward + backward of a Hugging Face
model (``model_configs/``) in fp32 on one GPU; ``fw_ms`` forward, ``bwall_ms`` backward,
``e2e_ms`` = their sum (no optimizer step). Each row is predicted by

    archsim train model_configs/<model>.json --cluster <one GPU of the row's Device> --seq <seq>
        --global-batch <batch> --micro-batch <batch> --dtype fp32 --implementation pytorch-eager
        --attention standard --recompute none --format json

and its ``forward_seconds`` and ``backward_seconds`` compared with ``fw_ms`` and ``bwall_ms`` (the
total is their sum; archsim's optimizer step is left out, as NeuSight's e2e leaves it out).
Nothing is fitted on these iterations: they are checks. The fp32 kernel constants archsim uses were
fitted on NeuSight's kernel files of five GPUs, the V100-PCIE-32GB among them.

Held out: the same rows with kernel constants fitted on the other four GPUs' kernel files
(``archsim.validation.neusight.fit_constants``, as ``bench_neusight_kernels.py``'s leave-one-GPU-out
fits, ``--iterations`` Nelder–Mead iterations), passed to the training model as
``Machine.pytorch_constants`` — a GPU whose kernels the constants never saw.

The same three cells are then predicted on every GPU of ``device_configs/`` (prediction only: no
measurement of a GPU outside the five is read). Writes benchmarks/results/neusight_iterations.csv
and .md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pandas as pd

from archsim.devices.kernel_constants import FITTED
from archsim.outputs import atomic_write_text

FIT_FILES = ("linear", "bmm", "elem", "softmax", "ln", "train_elem", "train_softmax", "train_ln")

FLAGS = ("--dtype", "fp32", "--implementation", "pytorch-eager", "--attention", "standard", "--recompute", "none",
         "--format", "json")


def cluster_file(folder: Path, device: str) -> Path:
    """A one-GPU cluster of the catalog GPU named ``device`` (NeuSight's Device string)."""
    path = folder / f"{device}.toml"
    path.write_text(f'[cluster]\nname = "one_gpu"\n\n[[servers]]\ncount = 1\ngpus = 1\nintra_server_gbps = 128\n'
                    f'gpu = "{device}"\n')
    return path


def predict(data: Path, folder: Path, device: str, model: str, seq: int, batch: int) -> dict:
    """``archsim train`` on one GPU of ``device``: its JSON meta."""
    command = [sys.executable, "-m", "archsim", "train", str(data / "model_configs" / f"{model}.json"),
               "--cluster", str(cluster_file(folder, device)), "--seq", str(seq), "--global-batch", str(batch),
               "--micro-batch", str(batch), *FLAGS]
    out = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout)["meta"]


def held_out_constants(data: Path, device: str, iterations: int):
    """Kernel constants fitted on NeuSight's kernel files of every GPU but ``device``."""
    from archsim.devices.gpu_lookup import find_gpu
    from archsim.validation.neusight import FIT_START, fit_constants, read_neusight_csv

    fit = pd.concat([read_neusight_csv(data / f"{name}.csv").frame for name in FIT_FILES], ignore_index=True)
    slug = find_gpu(device.replace("_", " "))
    others = fit["device"].map(lambda name: find_gpu(str(name)) != slug)
    return fit_constants(fit[others.to_numpy()], FIT_START, iterations)


def predict_with(data: Path, folder: Path, device: str, model: str, seq: int, batch: int, constants) -> dict:
    """What ``archsim train`` gives (its flags above) with ``constants`` as the fp32 kernel constants."""
    from dataclasses import replace

    from archsim.training.cluster_file import load_gpu_cluster
    from archsim.training.parallel import Parallelism
    from archsim.training.run import train
    from archsim.workload.model_files import load_transformer

    config = load_transformer(data / "model_configs" / f"{model}.json", seq=seq)
    par = Parallelism(1, 1, 1, batch, batch, "none", attention="standard")
    cluster = load_gpu_cluster(cluster_file(folder, device), "fp32")
    machine = replace(cluster.laid_out(par)[0], implementation="pytorch-eager", pytorch_constants=constants)
    result = train(config, par, machine)
    return {"forward_seconds": result.forward_seconds, "backward_seconds": result.backward_seconds}


def linears_alone(data: Path, folder: Path, row) -> dict:
    """The iteration's linear kernels that NeuSight also timed alone on the row's GPU (``linear.csv``, the
    same M, reduction and output width), against archsim's time of the same kernels in the step, and
    the rest of the iteration: measured as the iteration less those kernels' times alone, and
    archsim's, with and without a launch per kernel. Why: it says where the iteration's error lies
    without any constant (docs/training.md, "Which model times which dtype": NeuSight's measured iterations)."""
    from dataclasses import replace

    from archsim.devices.kernel_ops import op_seconds
    from archsim.training.cluster_file import load_gpu_cluster
    from archsim.training.hf_ops import hf_block_work, hf_embedding_work, hf_head_work
    from archsim.training.iteration import machine_op_seconds
    from archsim.training.parallel import Parallelism
    from archsim.validation.neusight import read_neusight_csv
    from archsim.workload.model_files import load_transformer

    linear = read_neusight_csv(data / "linear.csv").frame
    device = row.device.replace("_", " ")
    alone = {(r.M, r.N, r.K): r.measured_seconds for r in linear[linear["device"] == device].itertuples()}
    config = load_transformer(data / "model_configs" / f"{row.model}.json", seq=row.seq)
    par = Parallelism(1, 1, 1, row.batch, row.batch, "none", attention="standard")
    machine = replace(load_gpu_cluster(cluster_file(folder, row.device), "fp32").laid_out(par)[0],
                      implementation="pytorch-eager")
    found = {"matched": 0, "linears": 0, "alone_ms": 0.0, "archsim_ms": 0.0, "rest_ms": 0.0, "rest_alone_ms": 0.0,
             "rest_kernels": 0}
    for work, times in ((hf_block_work(config, row.batch), config.layers), (hf_embedding_work(config, row.batch), 1),
                        (hf_head_work(config, row.batch), 1)):
        ops = [*work.forward, *work.backward]
        in_step = machine_op_seconds(ops, machine)
        timed_alone = op_seconds(ops, machine.gpu, machine.pytorch_constants, "fp32")  # each with its launch
        for op, step, by_itself in zip(ops, in_step, timed_alone):
            if len(op.gemms) == 1 and op.gemms[0].count == 1:
                found["linears"] += times
                g = op.gemms[0]
                if (g.m, g.k, g.n) in alone:
                    found["matched"] += times
                    found["alone_ms"] += 1e3 * alone[(g.m, g.k, g.n)] * times
                    found["archsim_ms"] += 1e3 * step * times
                    continue
            found["rest_ms"] += 1e3 * step * times
            found["rest_alone_ms"] += 1e3 * by_itself * times
            found["rest_kernels"] += times
    if found["matched"] < found["linears"]:
        return {}
    return {"model": row.model, "batch": row.batch, "linear kernels": found["linears"],
            "linears measured alone ms": found["alone_ms"], "linears archsim ms": found["archsim_ms"],
            "rest measured ms": row.e2e_ms - found["alone_ms"], "rest kernels": found["rest_kernels"],
            "rest archsim ms": found["rest_ms"], "rest archsim, a launch each ms": found["rest_alone_ms"]}


def errors(row, meta: dict, label: str) -> dict:
    fw, bw = meta["forward_seconds"] * 1e3, meta["backward_seconds"] * 1e3
    return {"device": row.device, "model": row.model, "seq": row.seq, "batch": row.batch, "constants": label,
            "measured_fw_ms": row.fw_ms, "predicted_fw_ms": fw, "fw_error_pct": 100 * (fw - row.fw_ms) / row.fw_ms,
            "measured_bw_ms": row.bwall_ms, "predicted_bw_ms": bw,
            "bw_error_pct": 100 * (bw - row.bwall_ms) / row.bwall_ms,
            "measured_total_ms": row.e2e_ms, "predicted_total_ms": fw + bw,
            "total_error_pct": 100 * (fw + bw - row.e2e_ms) / row.e2e_ms}


def markdown(frame: pd.DataFrame) -> str:
    """A markdown table of ``frame``, numbers to one decimal."""
    cells = [[f"{v:.1f}" if isinstance(v, float) else str(v) for v in row] for row in frame.itertuples(index=False)]
    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in cells])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "gpu_kernels")
    parser.add_argument("--iterations", type=int, default=600, help="Nelder–Mead iterations per held-out fit")
    args = parser.parse_args()
    cells = pd.read_csv(args.data / "train_iterations.csv")
    measured, every, split = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        held = {device: held_out_constants(args.data, device, args.iterations) for device in set(cells.device)}
        for row in cells.itertuples():
            shipped = predict(args.data, folder, row.device, row.model, row.seq, row.batch)
            same = predict_with(args.data, folder, row.device, row.model, row.seq, row.batch, FITTED)
            assert same["forward_seconds"] == shipped["forward_seconds"], "the in-process run is the CLI's"
            measured.append(errors(row, shipped, "fitted (five GPUs)"))
            if parts := linears_alone(args.data, folder, row):
                split.append(parts)
            measured.append(errors(row, predict_with(args.data, folder, row.device, row.model, row.seq, row.batch,
                                                     held[row.device]), "held out (its GPU not fitted)"))
        devices = sorted(p.stem for p in (args.data / "device_configs").glob("*.json"))
        for device in devices:
            for row in cells.itertuples():
                meta = predict(args.data, folder, device, row.model, row.seq, row.batch)
                every.append({"device": device, "catalog_gpu": meta["gpu"], "model": row.model, "seq": row.seq,
                              "batch": row.batch, "predicted_fw_ms": meta["forward_seconds"] * 1e3,
                              "predicted_bw_ms": meta["backward_seconds"] * 1e3,
                              "predicted_total_ms": (meta["forward_seconds"] + meta["backward_seconds"]) * 1e3,
                              "fits_memory": meta["fits_memory"]})
    table, grid = pd.DataFrame(measured), pd.DataFrame(every)
    mape = table.groupby("constants", sort=False)["total_error_pct"].apply(lambda e: e.abs().mean())
    results = ROOT / "benchmarks" / "results"
    atomic_write_text(results / "neusight_iterations.csv", table.to_csv(index=False))
    text = ("# NeuSight's single-GPU training iterations vs `archsim train --dtype fp32 --implementation "
            "pytorch-eager`\n\n"
            "Written by `.venv/bin/python benchmarks/bench_neusight_iterations.py` (its docstring: the command "
            "per row). Milliseconds; error = (predicted − measured) / measured. Nothing is fitted on these "
            "iterations.\n\n"
            + markdown(table)
            + "\n\nMean absolute error of the totals: "
            + "; ".join(f"{label} {value:.1f}%" for label, value in mape.items()) + ".\n\n"
            "## Where the error lies: the linear kernels NeuSight also timed alone\n\n"
            "Cells whose every linear kernel (forward and backward) has a row of the same shape on the same GPU "
            "in `linear.csv`: those kernels' times alone against archsim's, and the rest of the iteration (the "
            "measured iteration less those times alone) against archsim's rest, in the step (no launch) and "
            "with a launch of a kernel timed alone each. Shipped constants.\n\n"
            + (markdown(pd.DataFrame(split)) if split else "(no cell has all its linear kernels timed alone)")
            + "\n\n## Every GPU of `device_configs/` (prediction only)\n\n"
            + markdown(grid) + "\n")
    atomic_write_text(results / "neusight_iterations.md", text)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    print("mean absolute total error:", "; ".join(f"{label} {value:.1f}%" for label, value in mape.items()))
    print(grid.to_string(index=False, float_format=lambda v: f"{v:.1f}"))


if __name__ == "__main__":
    main()
