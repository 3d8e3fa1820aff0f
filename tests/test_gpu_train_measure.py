"""The one-GPU training measurement (``benchmarks/gpu_train_measure.py``), the measured-CSV reader it
feeds, and the check that compares archsim against it (``bench_vtrain_e2e.py --measured``).

References: the A100 runs' CSV header (the format the new file must keep), ln(vocabulary) for an
untrained model's loss, autograd without checkpointing for the recomputed backward, archsim's
parameter count against the PyTorch model's own. The timing itself runs only on a CUDA machine
(``test_tiny_run_on_cuda``, in benchmarks/device_check.sh).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from benchmark_scripts import load_benchmark

from archsim.errors import InputError
from archsim.training.measured import read_measured, read_measured_table

ROOT = Path(__file__).resolve().parents[1]
A100_RUNS = ROOT / "tests" / "data" / "e2e" / "vtrain_single_node_shown.csv"


def tiny_run(tmp_path, device: str, *extra: str) -> Path:
    out = tmp_path / "gpu_train.csv"
    code = load_benchmark("gpu_train_measure").main(["--device", device, "--tiny", "--out", str(out), "--global-batches", "2",
                                           "--micro-batches", "1,2", "--warmup", "1", "--iterations", "1", *extra])
    assert code == 0
    return out


def test_tiny_cpu_run_writes_the_a100_runs_format(tmp_path):
    pytest.importorskip("torch", reason="PyTorch is not installed")
    out = tiny_run(tmp_path, "cpu")
    lines = out.read_text().splitlines()
    header = next(line for line in lines if line.startswith("# GPUs,"))
    a100_header = A100_RUNS.read_text().splitlines()[0]
    assert header == a100_header + ",recompute,peak_memory_gib,gpu_name"
    table = read_measured_table(out)
    assert table.meta["complete"] == "true" and table.meta["points"] == "8 of 8"
    runs = table.runs
    # 2 tiny models × recompute full, none × micro-batch 1, 2: the smaller model first, full first
    assert [(r.hidden, r.recompute, r.micro_batch) for r in runs] == [
        (64, "full", 1), (64, "full", 2), (64, "none", 1), (64, "none", 2),
        (96, "full", 1), (96, "full", 2), (96, "none", 1), (96, "none", 2)]
    assert all((r.gpus, r.tp, r.dp, r.pp, r.global_batch, r.seq) == (1, 1, 1, 1, 2, 32) for r in runs)
    assert all(r.milliseconds > 0 and r.peak_memory_gib is None and r.gpu_name.startswith("cpu") for r in runs)
    assert all(run.parallelism().recompute == run.recompute for run in runs)


def test_the_a100_runs_read_as_before():
    runs = read_measured(A100_RUNS)
    assert len(runs) == 1008 and {r.recompute for r in runs} == {"full"}
    assert all(r.peak_memory_gib is None and r.gpu_name == "" for r in runs)
    assert (runs[0].gpus, runs[0].micro_batch, runs[0].pp, runs[0].milliseconds) == (2, 8, 2, 372.160408)


@pytest.mark.parametrize(("body", "line", "field"), [
    ("# GPUs,global batch\n1,16\n", 3, None),  # missing columns
    ("{head}\n1,16,1,64,4,2,32,1,1,1,5.0,sometimes,,x\n", 4, "recompute"),
    ("{head}\n1,16,1,64,4,2,32,1,1,1,5.0,full,-1,x\n", 4, "peak_memory_gib"),
    ("{head}\n1,16,1,64,4,2,32,1,1,1,nan,full,1,x\n", 4, "iteration time (ms)"),
    ("{head}\n1,16,x,64,4,2,32,1,1,1,5.0,full,1,x\n", 4, "micro batch"),
    ("{head}\n2,16,1,64,4,2,32,1,1,1,5.0,full,1,x\n", 4, "# gpus"),  # GPUs ≠ TP × DP × PP
])
def test_reader_errors_name_line_and_field(tmp_path, body, line, field):
    head = A100_RUNS.read_text().splitlines()[0] + ",recompute,peak_memory_gib,gpu_name"
    path = tmp_path / "runs.csv"
    path.write_text("# gpu: NVIDIA H200\n# date: today, 10:00\n" + body.format(head=head))
    with pytest.raises(InputError) as error:
        read_measured_table(path)
    assert error.value.where.line == line and error.value.where.field == field


def _tiny_model(torch, module, recompute: str, dtype):
    torch.manual_seed(0)
    model = module.build_model(torch, module.TINY[0], dtype, "cpu")
    model.recompute = recompute
    return model


def test_untrained_loss_is_log_of_the_padded_vocabulary():
    """Weights ~ N(0, 0.02): logits near 0, so cross-entropy ≈ ln V over Megatron's padded vocabulary."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    module = load_benchmark("gpu_train_measure")
    shape = module.TINY[0]
    assert (shape.vocab, shape.padded_vocab) == (1000, 1024)
    model = _tiny_model(torch, module, "none", torch.float32)
    tokens = torch.randint(0, shape.vocab, (2, shape.seq), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        loss = float(model(tokens, tokens.roll(1, dims=1)))
    assert loss == pytest.approx(math.log(1024), abs=0.05)


def test_full_recompute_computes_what_no_recompute_computes():
    """One iteration (2 micro-batches, dropout on, Adam) with each layer checkpointed gives the same loss
    and the same updated weights as plain autograd (checkpoint replays the dropout masks)."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    module = load_benchmark("gpu_train_measure")
    shape = module.TINY[0]
    generator = torch.Generator().manual_seed(2)
    tokens = torch.randint(0, shape.vocab, (2, 2, shape.seq), generator=generator)
    labels = torch.randint(0, shape.vocab, (2, 2, shape.seq), generator=generator)
    weights, losses = [], []
    for recompute in ("none", "full"):
        model = _tiny_model(torch, module, recompute, torch.float32)
        optimizer = module.MixedPrecisionAdam(torch, model.parameters())
        torch.manual_seed(3)  # the dropout masks
        losses.append(float(module.iteration(torch, model, optimizer, tokens, labels)))
        weights.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
    assert losses[0] == pytest.approx(losses[1], rel=1e-6)
    assert torch.allclose(weights[0], weights[1], rtol=0, atol=1e-6)
    assert not torch.allclose(weights[0], torch.cat([p.detach().flatten() for p in _tiny_model(
        torch, module, "none", torch.float32).parameters()]))  # the step changed the weights


def test_the_measured_model_has_the_parameters_archsim_counts():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    from archsim.training.memory import stage_parameters
    from archsim.training.parallel import Parallelism
    from archsim.workload.transformer import TransformerConfig

    module = load_benchmark("gpu_train_measure")
    for shape in module.TINY:
        model = module.build_model(torch, shape, torch.float32, "meta" if hasattr(torch, "device") else "cpu")
        config = TransformerConfig("t", "gpt", shape.layers, shape.hidden, shape.heads, shape.vocab, shape.seq,
                                   shape.ffn, shape.heads, True, shape.seq)
        assert sum(p.numel() for p in model.parameters()) == stage_parameters(config, Parallelism(), shape.layers,
                                                                              True, True)


def test_grid_puts_the_smaller_global_batch_and_full_recompute_first():
    module = load_benchmark("gpu_train_measure")
    a, b = module.TINY
    points = module.grid([a, b], [1, 2, 8], [4, 8], ["full", "none"])
    assert [(p.global_batch, p.shape.name, p.recompute, p.micro_batch) for p in points[:5]] == [
        (4, a.name, "full", 1), (4, a.name, "full", 2), (4, a.name, "none", 1), (4, a.name, "none", 2),
        (4, b.name, "full", 1)]
    assert len(points) == 2 * 2 * 2 + 2 * 2 * 3  # micro-batch 8 only with global batch 8


def test_budget_stops_new_points_and_marks_the_file_incomplete(tmp_path):
    pytest.importorskip("torch", reason="PyTorch is not installed")
    table = read_measured_table(tiny_run(tmp_path, "cpu", "--max-minutes", "0"))
    assert table.runs == () and table.meta["complete"] == "false" and table.meta["points"] == "0 of 8"


def test_without_cuda_it_exits_2(capsys):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is present")
    assert load_benchmark("gpu_train_measure").main(["--out", "unused.csv"]) == 2
    assert "no CUDA GPU" in capsys.readouterr().err


def test_tiny_run_on_cuda(tmp_path):
    """On a GPU: fp16 training runs, peak memory is recorded, and keeping every activation takes more
    memory than keeping each layer's input only."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU: runs only on a GPU machine")
    table = read_measured_table(tiny_run(tmp_path, "cuda", "--micro-batches", "1,8", "--global-batches", "8"))
    runs = table.runs
    assert table.meta["dtype"] == "fp16" and len(runs) == 8
    assert all(r.peak_memory_gib and r.peak_memory_gib > 0 and r.gpu_name == table.meta["gpu"] for r in runs)
    peak = {(r.hidden, r.recompute, r.micro_batch): r.peak_memory_gib for r in runs}
    # micro-batch 8: a layer's activations (~0.7 MB) outweigh the optimizer step's fp32 gradients (~0.7 MB all)
    assert all(peak[(h, "none", 8)] > peak[(h, "full", 8)] for h in (64, 96)), peak


def _h200_csv(tmp_path, gpu: str) -> Path:
    head = A100_RUNS.read_text().splitlines()[0] + ",recompute,peak_memory_gib,gpu_name"
    path = tmp_path / "h200.csv"
    path.write_text(f"# gpu: {gpu}\n# complete: true\n{head}\n"
                    f"1,16,4,1024,16,24,1024,1,1,1,250.0,full,20.0,{gpu}\n"
                    f"1,16,4,1024,16,24,1024,1,1,1,200.0,none,40.0,{gpu}\n")
    return path


def test_measured_check_writes_per_run_errors_and_their_mape(tmp_path, capsys):
    bench = load_benchmark("bench_vtrain_e2e")
    md, out = tmp_path / "x.md", tmp_path / "x.csv"
    code = bench.main(["--measured", str(_h200_csv(tmp_path, "NVIDIA H200")), "--cluster",
                       str(ROOT / "configs" / "clusters" / "h200_1gpu.toml"), "--markdown", str(md), "--csv", str(out)])
    assert code == 0
    rows = [line.split(",") for line in out.read_text().splitlines()]
    names = rows[0]
    records = [dict(zip(names, row)) for row in rows[1:]]
    assert [r["recompute"] for r in records] == ["full", "none"]
    for r, measured_ms, measured_gib in zip(records, (250.0, 200.0), (20.0, 40.0)):
        assert float(r["measured_ms"]) == measured_ms and float(r["measured_gib"]) == measured_gib
        assert float(r["error"]) == pytest.approx(float(r["predicted_ms"]) / measured_ms - 1, abs=1e-3)
        assert float(r["memory_error"]) == pytest.approx(float(r["predicted_gib"]) / measured_gib - 1, abs=1e-3)
    # no recompute: less work, more activations than full recompute (what archsim predicts, whatever its accuracy)
    assert float(records[1]["predicted_ms"]) < float(records[0]["predicted_ms"])
    assert float(records[1]["predicted_gib"]) > float(records[0]["predicted_gib"])
    mape = (abs(float(records[0]["error"])) + abs(float(records[1]["error"]))) / 2
    assert f"| all | {mape:.1%}" in md.read_text()


def test_measured_check_refuses_another_gpus_cluster(tmp_path, capsys):
    bench = load_benchmark("bench_vtrain_e2e")
    code = bench.main(["--measured", str(_h200_csv(tmp_path, "NVIDIA H100 80GB HBM3")), "--cluster",
                       str(ROOT / "configs" / "clusters" / "h200_1gpu.toml")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "H100" in err and "H200" in err and "\n" not in err


def test_formats_page_lists_the_columns_read_and_written():
    from test_docs import table_keys

    from archsim.training.measured import COLUMNS, OPTIONAL

    read, optional, written = table_keys("formats.md", "## Measured training runs (CSV)")
    assert [name.lower() for name in read] == list(COLUMNS) and optional == list(OPTIONAL)
    assert written == list(load_benchmark("bench_vtrain_e2e").PER_RUN)


# -- committed one-GPU runs (benchmarks/device_check.sh's gpu_train_measured.csv, renamed) ------------
MEASURED = sorted((ROOT / "benchmarks" / "results").glob("gpu_train_measured_*.csv"))
CLUSTER_OF = {"h200": "h200_1gpu.toml", "h100-sxm": "h100_1gpu.toml"}  # find_gpu's name → one-GPU cluster file


@pytest.mark.parametrize("path", MEASURED or [pytest.param(None, marks=pytest.mark.skip(
    reason="no one-GPU training runs committed yet (benchmarks/results/gpu_train_measured_<gpu>.csv)"))],
    ids=[p.name for p in MEASURED] or ["none"])
def test_committed_one_gpu_runs_and_their_summary(path):
    """A committed measurement reads, is one-GPU with memory measured, and its summary beside it holds the
    MAPE archsim gives today: ``gpu_train_<gpu>.md`` (Megatron's op list) for the fp16 runs,
    ``gpu_train_<gpu><variant>_pytorch-eager.md`` for a variant (``_bf16_flash``…), predicted with the
    plain-PyTorch op list in the file's own dtype and attention."""
    from archsim.devices.gpu_lookup import find_gpu
    from archsim.training.cluster_file import load_gpu_cluster
    from archsim.training.measured import predict
    from archsim.validation.gpu_study import slug

    table = read_measured_table(path)
    assert table.runs and all(r.gpus == 1 and r.peak_memory_gib for r in table.runs)
    gpu = slug(table.meta["gpu"])
    assert path.name.startswith(f"gpu_train_measured_{gpu}")
    variant = path.stem[len(f"gpu_train_measured_{gpu}"):]
    assert variant == "" or variant.startswith("_"), path.name
    cluster = load_gpu_cluster(ROOT / "configs" / "clusters" / CLUSTER_OF[find_gpu(table.meta["gpu"])])
    if variant:
        predictions = predict(table.runs, cluster, implementation="pytorch-eager", dtype=table.meta["dtype"],
                              attention=table.meta["attention"])
        summary = path.with_name(f"gpu_train_{gpu}{variant}_pytorch-eager.md")
    else:
        predictions = predict(table.runs, cluster)
        summary = path.with_name(f"gpu_train_{gpu}.md")
    errors = [abs(p.error) for p in predictions]
    assert summary.is_file(), f"{summary.name} is not committed beside {path.name}"
    assert f"| all | {sum(errors) / len(errors):.1%}" in summary.read_text(), "stale summary: regenerate it"


def test_a_files_dtype_and_attention_reach_the_prediction(tmp_path):
    """``# dtype: bf16`` and ``# attention: flash`` in a measured file predict what ``archsim.train`` gives
    with those settings (the plain-PyTorch op list), not the fp16 standard-attention default."""
    import archsim
    from archsim.training.cluster_file import load_gpu_cluster
    from archsim.training.measured import predict

    path = _h200_csv(tmp_path, "NVIDIA H200")
    table = read_measured_table(path)
    cluster = load_gpu_cluster(ROOT / "configs" / "clusters" / "h200_1gpu.toml")
    flash = predict(table.runs, cluster, implementation="pytorch-eager", dtype="bf16", attention="flash")
    plain = predict(table.runs, cluster, implementation="pytorch-eager")
    config = ROOT / "configs" / "transformers" / "gpt_1024h_24l.json"
    for p, q, recompute in zip(flash, plain, ("full", "none")):
        direct, _ = archsim.train(str(config), cluster=str(ROOT / "configs" / "clusters" / "h200_1gpu.toml"),
                                  global_batch=16, micro_batch=4, seq=1024, recompute=recompute, dtype="bf16",
                                  attention="flash", implementation="pytorch-eager")
        assert p.milliseconds == pytest.approx(direct.iteration_seconds * 1e3, rel=1e-9)
        assert p.milliseconds != pytest.approx(q.milliseconds, rel=1e-3)


def test_flash_attention_computes_what_the_standard_core_computes():
    """The flash GPT (SDPA) and the standard core (baddbmm, mask, softmax, bmm) give the same loss on the
    same weights with dropout off: the measured models differ in kernels, not in what they compute."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    module = load_benchmark("gpu_train_measure")
    from benchmarks.gpt_model import build_model

    shape = module.TINY[0]
    tokens = torch.randint(0, shape.vocab, (2, shape.seq), generator=torch.Generator().manual_seed(4))
    standard = build_model(torch, shape, torch.float32, "cpu", dropout=0.0)
    flash = build_model(torch, shape, torch.float32, "cpu", dropout=0.0, attention="flash")
    flash.load_state_dict(standard.state_dict())
    for model in (standard, flash):
        model.recompute = "none"
    with torch.no_grad():
        assert float(flash(tokens, tokens)) == pytest.approx(float(standard(tokens, tokens)), rel=1e-5)
    with pytest.raises(ValueError, match="attention"):
        build_model(torch, shape, torch.float32, "cpu", attention="sparse")


def test_bf16_steps_without_a_loss_scale():
    """bf16 as Megatron runs it: no loss scale, so no unscale and no inf/NaN check — the gradient reaches
    Adam as computed (the step equals a plain fp32 Adam step on the same gradient)."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    module = load_benchmark("gpu_train_measure")
    weight = torch.nn.Parameter(torch.tensor([1.0, -2.0], dtype=torch.bfloat16))
    reference = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    optimizer = module.MixedPrecisionAdam(torch, [weight], loss_scaling=False)
    assert optimizer.scale == 1.0
    weight.grad = torch.tensor([0.5, 0.25], dtype=torch.bfloat16)
    reference.grad = torch.tensor([0.5, 0.25])
    assert optimizer.step()
    torch.optim.Adam([reference], lr=1e-4, betas=(0.9, 0.95), eps=1e-8).step()
    assert torch.allclose(optimizer.master[0], reference.detach(), rtol=0, atol=1e-7)


def test_the_cpu_run_gives_torchs_threads_back(monkeypatch):
    """gpu_train_measure uses gpu_device.cpu_threads too: one thread while it measures on the CPU, the
    caller's count after (a stand-in ``torch`` that only counts threads)."""
    import argparse

    script = load_benchmark("gpu_train_measure")
    torch = argparse.Namespace(threads=5)
    torch.get_num_threads = lambda: torch.threads
    torch.set_num_threads = lambda n: setattr(torch, "threads", n)
    seen = []
    monkeypatch.setattr(script, "open_torch", lambda name, device: torch)
    monkeypatch.setattr(script, "measure_all", lambda torch_, *a: seen.append(torch_.threads) or 0)
    assert script.main(["--device", "cpu", "--tiny", "--out", "unused.csv"]) == 0
    assert seen == [1] and torch.threads == 5
