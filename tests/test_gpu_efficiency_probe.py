"""The kernel-efficiency probe (``benchmarks/gpu_efficiency_probe.py``), its reader and the fit of
archsim's four GPU constants to it (:func:`archsim.training.calibrate.fit_probe`), and the
``--efficiency-probe`` column of ``bench_vtrain_e2e.py --measured``.

References: a synthetic probe generated with known ground-truth constants (the fit must recover
them through 2% noise), archsim's own lowering for the shapes the probe must time, and the probe's
tiny CPU run read back. The GPU run itself is ``STEPS=probe bash benchmarks/device_check.sh``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from benchmark_scripts import load_benchmark

from archsim.devices.device import catalog_device
from archsim.devices.kernel_constants import KernelConstants, one_fraction
from archsim.devices.kernel_ops import device_gemm_seconds
from archsim.devices.kernels import stream_seconds
from archsim.errors import InputError
from archsim.training.calibrate import HOST_ROW, fit_probe, read_probe
from archsim.training.layer_ops import block_work, head_work
from archsim.workload.transformer import TransformerConfig

ROOT = Path(__file__).resolve().parents[1]
TRUTH = one_fraction(gemm=0.78, memory=0.83, launch_s=4.5e-6, host_s=14e-6)
COLUMNS = ("section", "name", "model", "micro_batch", "layout", "m", "k", "n", "count", "bytes", "ops",
           "seconds", "min_seconds", "max_seconds", "repeats")


def gpt(hidden: int, layers: int) -> TransformerConfig:
    return TransformerConfig(f"gpt{hidden}", "gpt", layers, hidden, 16, 50257, 1024, 4 * hidden, 16, True, 1024)


def synthetic_probe(path: Path, truth: KernelConstants = TRUTH, noise: float = 0.02, gpu_name: str = "NVIDIA H200",
                    launches: int = 0) -> Path:
    """A probe CSV whose times are archsim's model at ``truth`` on an H200, × lognormal noise; with
    ``launches``, a kernel count for the 139-op host iteration."""
    device = catalog_device("h200")
    rng = np.random.default_rng(7)
    shapes = sorted({(g.m, g.k, g.n, g.count) for c in (gpt(1024, 24), gpt(2048, 20)) for b in (1, 2, 4, 8)
                     for op in (*block_work(c, b).forward, *block_work(c, b).backward, *head_work(c, b).forward)
                     for g in op.gemms})
    rows = []

    def add(section, name, seconds, **cells):
        row = dict.fromkeys(COLUMNS, "") | {"section": section, "name": name, "repeats": 11} | cells
        row["seconds"] = f"{seconds * float(np.exp(rng.normal(0, noise))):.6e}"
        rows.append(",".join(str(row[c]) for c in COLUMNS))

    for m, k, n, count in shapes:
        add("gemm", "x", float(device_gemm_seconds(m, k, n, count, device, truth)), m=m, k=k, n=n, count=count)
    for moved in np.geomspace(2e6, 4e9, 30):
        add("memory", "x", float(stream_seconds(moved, device.hbm_bytes_per_s, truth)), bytes=int(moved))
    for name in ("add_.1024", "mul_.1024"):
        add("kernel", name, truth.launch_s, ops=1000)
    add("host", HOST_ROW, truth.host_s * 139, ops=139)
    add("host", HOST_ROW + ".synchronized", truth.host_s * 139 * 1.5, ops=139)
    if launches:
        add("launches", HOST_ROW, 0.01, ops=139, count=launches)
    path.write_text(f"# gpu: {gpu_name}\n# complete: true\n" + ",".join(COLUMNS) + "\n" + "\n".join(rows) + "\n")
    return path


def test_fit_recovers_known_constants_through_noise(tmp_path):
    meta, rows = read_probe(synthetic_probe(tmp_path / "probe.csv"))
    assert meta["gpu"] == "NVIDIA H200"
    fit = fit_probe(rows, catalog_device("h200"))
    e = fit.efficiency
    assert e.gemm == pytest.approx(TRUTH.gemm, rel=0.02)
    assert e.memory == pytest.approx(TRUTH.memory, rel=0.02)
    assert e.launch_s == pytest.approx(TRUTH.launch_s, rel=0.05)
    assert e.host_s == pytest.approx(TRUTH.host_s, rel=0.05)
    assert fit.gemm_rms < 0.05 and fit.memory_rms < 0.05
    assert fit.rows["kernel"] == 2 and fit.rows["memory"] == 30


def test_fit_moves_with_the_truth(tmp_path):
    """A different ground truth gives a different fit (the fit reads the data, not a default)."""
    other = one_fraction(gemm=0.55, memory=0.6, launch_s=9e-6, host_s=40e-6)
    e = fit_probe(read_probe(synthetic_probe(tmp_path / "p.csv", other, noise=0.0))[1], catalog_device("h200")).efficiency
    assert (e.gemm, e.memory) == (pytest.approx(0.55, abs=0.002), pytest.approx(0.6, rel=1e-6))
    assert (e.launch_s, e.host_s) == (pytest.approx(9e-6), pytest.approx(40e-6))


def test_kernel_overhead_is_charged_per_launch_of_an_archsim_op(tmp_path):
    """417 kernels for 139 archsim ops: each op pays three kernels' overhead."""
    fit = fit_probe(read_probe(synthetic_probe(tmp_path / "p.csv", noise=0.0, launches=417))[1], catalog_device("h200"))
    assert fit.kernels_per_op == 3.0
    assert fit.efficiency.launch_s == pytest.approx(3 * TRUTH.launch_s)
    assert fit.efficiency.gemm == pytest.approx(TRUTH.gemm, abs=0.002)


def test_a_sync_in_the_queued_host_time_falls_back_to_the_synchronized_one(tmp_path):
    path = synthetic_probe(tmp_path / "p.csv", noise=0.0)
    lines = path.read_text().splitlines()
    queued = lines.index(next(line for line in lines if line.startswith(f"host,{HOST_ROW},")))
    cells = lines[queued].split(",")
    cells[COLUMNS.index("seconds")] = "1.0"  # 1 s: the host waited for the GPU's sleep
    lines[queued] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")
    e = fit_probe(read_probe(path)[1], catalog_device("h200")).efficiency
    assert e.host_s == pytest.approx(TRUTH.host_s * 1.5)


def test_bad_probe_files_fail_with_one_line(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("section,name\ngemm,x\n")
    with pytest.raises(InputError, match="missing the probe columns"):
        read_probe(bad)
    bad.write_text(",".join(COLUMNS) + "\ngemm,x,,,,1,2,3,1,,,oops,,,\n")
    with pytest.raises(InputError, match="expected a positive number of seconds, got .oops."):
        read_probe(bad)
    bad.write_text(",".join(COLUMNS) + "\nkernel,x,,,,,,,,,1000,1e-6,,,\n")
    with pytest.raises(InputError, match="no gemm, memory, host rows"):
        fit_probe(read_probe(bad)[1], catalog_device("h200"))


def test_probe_times_archsims_own_gemm_shapes():
    """The probe's GEMM list is exactly the distinct shapes of archsim's lowering (layer + LM head)."""
    probe = load_benchmark("gpu_efficiency_probe")
    configs = [gpt(1024, 24), gpt(2048, 20)]
    timed = {key[:4] for key in probe.gemm_shapes(configs, [1, 2, 4, 8])}
    lowered = {(g.m, g.k, g.n, g.count) for c in configs for b in (1, 2, 4, 8)
               for w in (block_work(c, b), head_work(c, b)) for op in (*w.forward, *w.backward) for g in op.gemms}
    assert timed == lowered


def test_tiny_cpu_probe_reads_back(tmp_path):
    pytest.importorskip("torch", reason="PyTorch is not installed")
    out = tmp_path / "probe.csv"
    code = load_benchmark("gpu_efficiency_probe").main(["--device", "cpu", "--tiny", "--out", str(out), "--micro-batches", "1",
                                              "--warmup", "0", "--repeats", "1"])
    assert code == 0
    meta, rows = read_probe(out)
    assert meta["complete"] == "true" and meta["gpu"].startswith("cpu")
    sections = {r.section for r in rows}
    assert sections == {"gemm", "memory", "kernel", "host"}
    host = {r.name: r for r in rows if r.section == "host"}
    c = TransformerConfig("h", "gpt", 4, 64, 4, 1000, 32, 256, 4, True, 32)
    counted = 4 * (len(block_work(c, 1).forward) + len(block_work(c, 1).backward)) + 4 + 7  # + embedding, head
    assert host[HOST_ROW].ops == counted
    assert all(r.seconds > 0 for r in rows)


def test_bench_reports_both_mapes_side_by_side(tmp_path):
    probe = synthetic_probe(tmp_path / "probe.csv")
    md = tmp_path / "summary.md"
    code = load_benchmark("bench_vtrain_e2e").main([
        "--measured", str(ROOT / "benchmarks" / "results" / "gpu_train_measured_h200.csv"),
        "--cluster", str(ROOT / "configs" / "clusters" / "h200_1gpu.toml"), "--markdown", str(md),
        "--csv", str(tmp_path / "runs.csv"), "--efficiency-probe", str(probe)])
    assert code == 0
    text = md.read_text()
    assert "| runs | time MAPE | time MAPE, probe-fitted | memory MAPE |" in text
    assert "gemm 0.78" in text and "| recompute full |" in text and "| h2048 L20 |" in text


@pytest.mark.long
def test_bench_refuses_a_probe_of_another_gpu(tmp_path):
    probe = synthetic_probe(tmp_path / "probe.csv", gpu_name="NVIDIA A100-SXM4-80GB")
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_vtrain_e2e.py"),
         "--measured", str(ROOT / "benchmarks" / "results" / "gpu_train_measured_h200.csv"),
         "--cluster", str(ROOT / "configs" / "clusters" / "h200_1gpu.toml"), "--markdown", str(tmp_path / "m.md"),
         "--csv", str(tmp_path / "r.csv"), "--efficiency-probe", str(probe)], check=False, capture_output=True,
        text=True)
    assert result.returncode == 2 and "the probe ran on" in result.stderr


def test_probe_columns_are_documented():
    from test_docs import table_keys

    [columns] = table_keys("formats.md", "## Kernel-efficiency probe (CSV)")
    assert tuple(columns) == load_benchmark("gpu_efficiency_probe").COLUMNS == COLUMNS


class _ThreadsTorch:
    """A stand-in ``torch`` with only its intra-op thread count, every change logged."""

    def __init__(self, threads: int):
        self.threads = threads
        self.set: list[int] = []

    def get_num_threads(self) -> int:
        return self.threads

    def set_num_threads(self, n: int) -> None:
        self.threads = n
        self.set.append(n)


def test_cpu_threads_restores_torchs_thread_count_even_when_the_block_raises():
    """One thread inside the block on the CPU, the caller's 6 after it (raised or not); on a GPU, untouched."""
    cpu_threads = load_benchmark("gpu_device").cpu_threads
    torch = _ThreadsTorch(6)
    with cpu_threads(torch, "cpu"):
        assert torch.threads == 1
    assert torch.threads == 6 and torch.set == [1, 6]
    with pytest.raises(RuntimeError), cpu_threads(torch, "cpu"):
        raise RuntimeError("a measurement failed")
    assert torch.threads == 6 and torch.set == [1, 6, 1, 6]
    with cpu_threads(torch, "cuda:0"):
        assert torch.threads == 6
    assert torch.set == [1, 6, 1, 6]


def test_the_probe_leaves_torchs_threads_as_it_found_them(tmp_path, monkeypatch):
    """The probe's CPU run (the process device_check.sh's steps and the tests share) gives the threads back:
    before, it left torch single-threaded for everything after it."""
    script = load_benchmark("gpu_efficiency_probe")
    torch = _ThreadsTorch(6)
    seen = []
    monkeypatch.setattr(script, "open_torch", lambda name, device: torch)
    monkeypatch.setattr(script, "probe", lambda torch_, *a: seen.append(torch_.threads) or 0)
    assert script.main(["--device", "cpu", "--tiny", "--out", str(tmp_path / "p.csv")]) == 0
    assert seen == [1] and torch.threads == 6
