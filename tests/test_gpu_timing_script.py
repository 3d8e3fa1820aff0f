"""The GPU timing script, ``benchmarks/gpu_validate.py`` (issue 9, part 3): shape de-duplication, its
one-line error without torch/CUDA, its bookkeeping against a stand-in ``torch.cuda``, the kernels it
times against autograd on the CPU, and — only on a CUDA machine — real timings of tiny layers.

The analysis the script hands its CSV to is tested in test_gpu_validation.py.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import inspect
import sys
from pathlib import Path

import pytest
from benchmark_scripts import load_benchmark

from archsim.validation.gpu_csv import OPS, read_kernel_csv
from archsim.workload.layer import Layer

ROOT = Path(__file__).resolve().parents[1]
H100 = "NVIDIA H100 80GB HBM3"


def test_script_dedupes_identical_shapes():
    script = load_benchmark("gpu_validate")
    layers = script.gemm_layers(["vgg16"])
    # 13 conv + 3 fc; conv3_3 = conv3_2, conv4_3 = conv4_2, conv5_2 = conv5_3 = conv5_1 → 12 distinct
    assert len(layers) == 16 and len({script.shape_key(layer) for _, layer in layers}) == 12
    resnet = script.gemm_layers(["resnet50"])
    by_key: dict[tuple, list[Layer]] = {}
    for _, layer in resnet:
        by_key.setdefault(script.shape_key(layer), []).append(layer)
    assert len(resnet) == 54 and len(by_key) < 30
    assert script.estimate_seconds([(layer, 64) for _, layer in layers], 10, 3, True) > 0
    # fc8 (4096 → 1000, 1×1 output), batch 1, 10 repeats, 3 warm-ups, with streams: 5 timings of
    # 0.02 + 0.004·10 s, no cuDNN search (not a conv), and 2·3·4,096,000 FLOPs run 10 + 3 + 2 times,
    # twice, at 300 TFLOP/s — the docstring's model: 0.3 s + 2.4576 µs.
    fc8 = next(layer for _, layer in layers if layer.name == "fc8")
    assert script.estimate_seconds([(fc8, 1)], 10, 3, True) == pytest.approx(0.3 + 6 * 4_096_000 * 15 * 2 / 300e12)


def test_script_without_torch_or_cuda_exits_2_with_one_line(monkeypatch, capsys):
    script = load_benchmark("gpu_validate")
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch → ImportError
    assert script.main(["--batches", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gpu_validate: ") and "\n" not in err


def _cuda():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the timing part needs it and a CUDA GPU")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU: the timing part runs only on a GPU machine")
    return torch


@pytest.mark.parametrize("layer", [Layer("tiny_conv", "conv", 9, 9, 3, 3, 4, 8, stride=2, padding=1),
                                   Layer("tiny_fc", "fc", 1, 1, 1, 1, 64, 16)], ids=["conv", "fc"])
def test_timing_script_on_one_tiny_layer(layer):
    torch = _cuda()
    script = load_benchmark("gpu_validate")
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    errors = script.check_kernels(torch, layer, 2)
    assert max(errors.values()) < 1e-4, errors  # F, D, G compute what autograd computes
    result = script.measure(torch, layer, 2, torch.float16, repeats=3, warmup=1, target_ms=0.05)
    assert set(result) == set(OPS)
    assert all(0 < ms < 1000 and inner >= 1 for ms, inner in result.values())


def test_timing_script_end_to_end_on_one_shape(tmp_path):
    _cuda()
    script = load_benchmark("gpu_validate")
    out = tmp_path / "gpu_kernels_x.csv"
    # a GPU machine without plotly (the HTML report's) writes the CSV only; the analysis is tested without a GPU
    analyse = importlib.util.find_spec("plotly") is not None
    code = script.main(["--networks", "vgg16", "--limit", "1", "--batches", "1", "--repeats", "2", "--warmup", "1",
                        "--out", str(out), "--markdown", str(tmp_path / "x.md"), "--report", str(tmp_path / "x.html"),
                        *([] if analyse else ["--no-analysis"])])
    assert code == 0
    table = read_kernel_csv(out)
    assert set(table.frame.layer) == {"conv1_1"} and set(table.frame.op) == set(OPS)
    assert int(table.meta["sm_count"]) > 0 and (tmp_path / "x.md").is_file() == analyse


@pytest.mark.parametrize("layer", [Layer("tiny_conv", "conv", 9, 9, 3, 3, 4, 8, stride=2, padding=1),
                                   Layer("tiny_1x1_s2", "conv", 8, 8, 1, 1, 6, 5, stride=2, padding=0),
                                   Layer("tiny_fc", "fc", 1, 1, 1, 1, 64, 16)], ids=["conv", "1x1-stride-2", "fc"])
def test_timed_kernels_compute_what_autograd_computes_on_the_cpu(layer):
    """The D and G closures the script times are training's backward (checked without a GPU)."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    errors = load_benchmark("gpu_validate").check_kernels(torch, layer, 3, torch.float64, device="cpu")
    assert set(errors) == {"F", "D", "G"} and max(errors.values()) < 1e-12, errors


class _FakeCuda:
    """Just enough of ``torch.cuda`` for the script's bookkeeping; no kernel runs."""

    class OutOfMemoryError(RuntimeError):
        pass

    @staticmethod
    def is_available():
        return True

    @staticmethod
    def set_device(index):
        assert index == 0

    @staticmethod
    def empty_cache():
        pass

    @staticmethod
    def get_device_properties(index):
        return argparse.Namespace(name=H100, multi_processor_count=132, major=9, minor=0, total_memory=80 * 2**30)


def fake_torch():
    backends = argparse.Namespace(cudnn=argparse.Namespace(version=lambda: 90100),
                                  cuda=argparse.Namespace(matmul=argparse.Namespace()))
    return argparse.Namespace(cuda=_FakeCuda, backends=backends, version=argparse.Namespace(cuda="12.4"),
                              __version__="0.fake", float16="f16", bfloat16="bf16", float32="f32")


@pytest.mark.long
def test_script_bookkeeping_with_a_fake_gpu(tmp_path, monkeypatch, capsys):
    """main() without a GPU: a stand-in ``measure`` (time ∝ MACs) and one out-of-memory unit. Every
    conv/fc layer of both networks gets a row per batch and op, repeated shapes are timed once and
    point at their first occurrence, the OOM unit is named and marks the run incomplete, and the
    analysis reads the CSV the script wrote."""
    script = load_benchmark("gpu_validate")
    monkeypatch.setitem(sys.modules, "torch", fake_torch())
    monkeypatch.setattr(script.subprocess, "run", lambda *a, **k: (_ for _ in ()).throw(OSError("no nvidia-smi")))
    timed: list[tuple[str, int]] = []

    def fake_measure(torch, layer, batch, dtype, **_):
        assert dtype == "f16"
        if (layer.name, batch) == ("conv1_1", 4):
            raise _FakeCuda.OutOfMemoryError
        timed.append((layer.name, batch))
        ms = batch * layer.ofmap_h * layer.ofmap_w * layer.weight_elements / 2e8 + 0.01
        return {"F": (ms, 2), "D": (ms, 2), "G": (ms * 1.1, 2), "DG_serial": (ms * 2.1, 1),
                "DG_concurrent": (ms * 1.6, 1)}

    monkeypatch.setattr(script, "measure", fake_measure)
    out = tmp_path / "gpu_kernels_fake.csv"
    code = script.main(["--batches", "4,1", "--out", str(out), "--markdown", str(tmp_path / "fake.md"),
                        "--report", str(tmp_path / "fake.html")])
    assert code == 0
    table = read_kernel_csv(out)
    layers = script.gemm_layers(["vgg16", "resnet50"])
    distinct = {script.shape_key(layer) for _, layer in layers}
    assert len(timed) == 2 * len(distinct) - 1 == len(set(timed))
    frame = table.frame
    vgg_conv1 = frame.network.eq("vgg16") & frame.layer.eq("conv1_1")
    assert len(frame) == 5 * (2 * len(layers) - 1) and set(frame[vgg_conv1].batch) == {1}
    assert table.meta["complete"] == "false" and table.meta["skipped_oom"] == "vgg16/conv1_1@4"
    assert table.meta["sm_clock_max_mhz"].startswith("unknown")
    same = frame[(frame.network == "vgg16") & (frame.layer == "conv3_3")].same_as
    assert set(same) == {"vgg16/conv3_2"}
    assert (tmp_path / "fake.md").is_file() and (tmp_path / "fake.html").is_file()
    assert "F" in capsys.readouterr().out


def test_no_analysis_writes_the_csv_only(tmp_path, monkeypatch):
    """--no-analysis (a GPU machine without plotly): the measured CSV, no Markdown or HTML, exit 0."""
    script = load_benchmark("gpu_validate")
    monkeypatch.setitem(sys.modules, "torch", fake_torch())
    monkeypatch.setitem(sys.modules, "plotly", None)  # as on the GPU machine: import plotly fails
    monkeypatch.setattr(script.subprocess, "run", lambda *a, **k: (_ for _ in ()).throw(OSError("no nvidia-smi")))
    monkeypatch.setattr(script, "measure", lambda torch, layer, batch, dtype, **_: {op: (1.0, 1) for op in OPS})
    out = tmp_path / "k.csv"
    code = script.main(["--networks", "vgg16", "--limit", "1", "--batches", "1", "--out", str(out), "--markdown",
                        str(tmp_path / "k.md"), "--report", str(tmp_path / "k.html"), "--no-analysis"])
    assert code == 0 and not (tmp_path / "k.md").exists() and not (tmp_path / "k.html").exists()
    assert set(read_kernel_csv(out).frame.op) == set(OPS) and read_kernel_csv(out).meta["complete"] == "true"


class _GpuClock:
    """A stand-in GPU's time (ms), advanced by the stand-in kernels; its events stamp it, and every timing
    call is logged (a sleep is queued before the start event fires, so it is never inside a timed window)."""

    def __init__(self):
        self.now = 0.0
        self.log: list = []

    def kernel(self, *costs_ms: float):
        """A kernel whose successive calls take ``costs_ms`` (the last one repeating)."""
        left = list(costs_ms)

        def run() -> None:
            self.now += left.pop(0) if len(left) > 1 else left[0]
            self.log.append("call")
        return run


class _Event:
    def __init__(self, clock: _GpuClock, enable_timing: bool = False):
        assert enable_timing
        self.clock, self.at = clock, None

    def record(self):
        self.at = self.clock.now
        self.clock.log.append("record")

    def synchronize(self):
        self.clock.log.append("wait")

    def elapsed_time(self, end):
        return end.at - self.at


def timing_torch(clock: _GpuClock):
    """Just enough of ``torch.cuda`` for gpu_timing's CUDA path and gpu_validate's two streams."""
    stream = argparse.Namespace(wait_stream=lambda other: None)
    cuda = argparse.Namespace(Event=lambda enable_timing=False: _Event(clock, enable_timing),
                              synchronize=lambda: clock.log.append("sync"),
                              _sleep=lambda cycles: clock.log.append(("sleep", cycles)),
                              current_stream=lambda: stream, Stream=lambda: stream,
                              stream=lambda s: contextlib.nullcontext())
    return argparse.Namespace(cuda=cuda)


def test_time_kernel_is_gpu_timings_batched_median():
    """Two slow warm-ups (cuDNN's search) are not timed; one 0.3 ms call sets inner = ⌈1 / 0.3⌉ = 4 calls
    per repeat; three repeats of 4 calls at 0.3, 0.6 and 0.3 ms per call give the median 0.3 ms; each repeat
    is a synchronize, a sleep of 4 calls × 60 µs at 2 GHz = 480,000 cycles, then the calls between events."""
    script = load_benchmark("gpu_validate")
    clock = _GpuClock()
    fn = clock.kernel(5.0, 5.0, 0.3, *[0.3] * 4, *[0.6] * 4, 0.3)
    ms, inner = script.time_kernel(timing_torch(clock), fn, repeats=3, warmup=2, target_ms=1.0)
    assert inner == 4 and ms == pytest.approx(0.3)
    repeat = ["sync", ("sleep", 480_000), "record", *["call"] * 4, "record", "wait"]
    assert clock.log == ["call", "call", "sync", "record", "call", "record", "wait", *repeat * 3]
    assert "batched_ms" in script.time_kernel.__doc__ and "Event(" not in inspect.getsource(script)


def test_measure_times_each_op_with_its_own_inner_and_sleep(monkeypatch):
    """F 0.25, D 0.5, G 0.3 ms per call at --target-ms 1: inner 4, 2, 4; D then G 0.8 ms: inner 2, for the
    serial and the two-stream pair (the stand-in runs streams one after the other); sleeps of inner ×
    60 µs (one kernel) or × 150 µs (a pair, two launches and the stream joins) at 2 GHz."""
    script = load_benchmark("gpu_validate")
    clock = _GpuClock()
    costs = {"F": 0.25, "D": 0.5, "G": 0.3}
    monkeypatch.setattr(script, "layer_tensors", lambda *a, **k: (None, None, None))
    monkeypatch.setattr(script, "layer_kernels", lambda *a: {op: clock.kernel(ms) for op, ms in costs.items()})
    fc = Layer("tiny_fc", "fc", 1, 1, 1, 1, 64, 16)
    result = script.measure(timing_torch(clock), fc, 2, "f16", repeats=3, warmup=1, target_ms=1.0)
    expected = {"F": (0.25, 4), "D": (0.5, 2), "G": (0.3, 4), "DG_serial": (0.8, 2), "DG_concurrent": (0.8, 2)}
    assert set(result) == set(expected)
    for op, (ms, inner) in expected.items():
        assert result[op][0] == pytest.approx(ms) and result[op][1] == inner
    sleeps = [entry[1] for entry in clock.log if isinstance(entry, tuple)]
    assert sleeps == [480_000] * 3 + [240_000] * 3 + [480_000] * 3 + [600_000] * 6
