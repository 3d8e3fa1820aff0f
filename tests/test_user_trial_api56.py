"""User trial 56 (a performance engineer who drives archsim from a notebook): the defects it found in the Python API,
each checked against an independent reference — the catalog's own names, the command's error line, what mypy reads
off the signature, a second thread's run."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_docs import ROOT

import archsim
from archsim.errors import InputError

KERNELS = str(ROOT / "tests" / "data" / "neusight_kernels" / "linear.csv")


# --- validate-gpu: a GPU name that only contains a catalog one's is not that GPU -------------------------------------
# Failed before: gpu="a1000" (NVIDIA's RTX A1000) was read by the a100 pattern and every kernel priced on an A100 80GB
# SXM4, without a word; "V100S" ran as the V100. train's gpu= refused both already (gpu_lookup.gpu).

@pytest.mark.parametrize("name", ["a1000", "NVIDIA RTX A1000", "h1000", "Tesla V100S-PCIE-32GB"])
def test_validate_gpu_refuses_a_gpu_name_that_holds_a_catalog_one_in_a_longer_word(name):
    with pytest.raises(InputError, match="unknown GPU") as caught:
        archsim.validate_gpu(csv=KERNELS, gpu=name, show="kernels")
    assert caught.value.where.field == "gpu"


def test_a_neusight_row_of_another_gpu_is_not_counted_as_the_catalog_one(tmp_path):
    lines = Path(KERNELS).read_text(encoding="utf-8").splitlines()
    header, row = lines[0], next(line for line in lines[1:] if "A100" in line)
    renamed = tmp_path / "a1000.csv"
    renamed.write_text(f"{header}\n{row.replace('NVIDIA A100-PCIE-40GB', 'NVIDIA RTX A1000')}\n", encoding="utf-8")
    with pytest.raises(InputError, match="unknown GPU 'NVIDIA RTX A1000'"):
        archsim.validate_gpu(csv=str(renamed))  # its row's Device read without gpu=: no catalog GPU
    with pytest.raises(InputError, match="no row was measured on 'a100-40gb-pcie'"):
        archsim.validate_gpu(csv=str(renamed), gpu="a100-40gb-pcie", show="stats")  # not the A100's measurement


@pytest.mark.parametrize("name", ["NVIDIA A100-PCIE-40GB", "Tesla_V100-PCIE-32GB", "Tesla P4", "a100", "h200",
                                  "NVIDIA GeForce GTX 1080 Ti", "NVIDIA Titan X Maxwell", "AMD Radeon Instinct MI25"])
def test_whole_names_of_catalog_gpus_are_still_found(name):
    from archsim.devices.gpu_lookup import find_gpu, find_whole_gpu

    assert find_gpu(name) is not None and find_whole_gpu(name) == find_gpu(name)


# --- a misspelt value of train's and search's keywords names the one it resembles, as the command's flag does --------
# Failed before: archsim.train(..., recompute="selectve") said "expected one of none, selective, full, got 'selectve'"
# where `archsim train --recompute selectve` adds "(did you mean 'selective'?)": Parallelism built its own line.

TYPOS = {"recompute": ("selectve", "selective"), "attention": ("flsh", "flash"), "fp8": ("hybird", "hybrid"),
         "cp_comm": ("a2p", "p2p"), "dp_overlap": ("buckted", "bucketed"), "grad_accumulation": ("fusd", "fused")}


@pytest.mark.parametrize("job", ["train", "search"])
@pytest.mark.parametrize("keyword", sorted(TYPOS))
def test_a_misspelt_training_choice_names_the_one_it_resembles(job, keyword):
    from api_parity_helpers import MODEL, NODE

    typo, meant = TYPOS[keyword]
    with pytest.raises(InputError) as caught:
        getattr(archsim, job)(MODEL, cluster=NODE, global_batch=16, **{keyword: typo})
    assert str(caught.value).endswith(f"got {typo!r} (did you mean {meant!r}?)")
    assert caught.value.where.field == keyword.replace("_", "-")  # the flag's name, as docs/api.md says


# --- progress=True in one notebook thread draws no bars in another, nor outlives it -----------------------------------
# Failed before: shown() set a module global, so while one thread ran archsim.search(..., progress=True) another
# thread's quiet search drew bars on stderr, and two threads leaving shown() out of order left it set for good.

def test_shown_in_one_thread_leaves_another_threads_bars_as_they_were():
    import io
    import threading

    from tqdm import tqdm

    from archsim.progress import progress, shown

    entered, leave = threading.Event(), threading.Event()

    def notebook_cell() -> None:
        with shown(True):
            entered.set()
            leave.wait(10)

    cell = threading.Thread(target=notebook_cell)
    cell.start()
    assert entered.wait(10)
    try:
        with shown(False):  # the main thread's own setting, left after the other thread's
            assert not isinstance(progress(3, "quiet", "step"), tqdm)
        assert not isinstance(progress(3, "quiet", "step", file=io.StringIO()), tqdm)  # not a tty
    finally:
        leave.set()
        cell.join(10)
    with shown(True):  # the setting itself still works in the thread that makes it
        bar = progress(3, "drawn", "step", file=io.StringIO())
    assert isinstance(bar, tqdm)
    bar.close()


# --- only= takes a numpy array or a pandas Series of kinds, as every other list keyword does ---------------------------
# Failed before: only=np.array(["conv"]) was "expected layer kinds such as 'conv,fc' or ['conv']", where gpus=,
# sram_kb=, csv=, seq_len= took an array (a notebook's column of values); only's own reader was not the list keywords'.

@pytest.mark.parametrize("job", ["cost", "profile", "load_network"])
def test_only_takes_an_array_of_layer_kinds(job):
    import numpy as np
    import pandas as pd

    vgg16_convs = 13  # Simonyan and Zisserman's configuration D: 2 + 2 + 3 + 3 + 3 convolutions
    for kinds in (np.array(["conv"]), pd.Series(["conv"])):
        result = getattr(archsim, job)("vgg16", only=kinds)
        layers = result.layers if job == "load_network" else result.to_frame() if job == "profile" else result.table
        assert len(layers) == vgg16_convs


# --- a timeline drawn from Python is labelled and scaled in its own unit ----------------------------------------------
# Failed before: gantt_figure(result.timeline) of a train run titled its seconds "cycles", and chrome_trace(result.timeline)
# wrote them as one cycle per µs (a 0.2 s iteration drawn as 0.2 µs), unless the caller repeated unit="seconds";
# a schedule's frame, whose attrs["unit"] says "units", was drawn in "cycles" too.

def test_a_train_timeline_is_drawn_in_seconds_without_being_told():
    from api_parity_helpers import MODEL, NODE

    from archsim.report.export import chrome_trace
    from archsim.report.gantt import gantt_figure

    result, _ = archsim.train(MODEL, cluster=NODE, global_batch=16, pp=2, dp=4)
    assert gantt_figure(result.timeline).layout.xaxis.title.text == "seconds"
    trace = chrome_trace(result.timeline)
    last_end_us = max(event["ts"] + event["dur"] for event in trace["traceEvents"] if event["ph"] == "X")
    assert last_end_us == pytest.approx(result.timeline.makespan * 1e6)  # Chrome's µs: seconds × 10⁶
    assert trace["otherData"]["time_unit"] == "microseconds"
    assert gantt_figure(result.timeline, unit="ms").layout.xaxis.title.text == "ms"  # a unit given still wins


def test_a_schedule_frame_is_drawn_in_the_unit_its_attrs_state():
    from archsim.report.gantt import gantt_figure

    frame = archsim.schedule("ffnn8", policy="ooo-pipe2", processors=2, unit_costs=True).timeline.to_frame()
    assert frame.attrs["unit"] == "units"
    assert gantt_figure(frame).layout.xaxis.title.text == "units"


# --- a job given its keywords positionally says which job, and which keywords they are ---------------------------------
# Failed before: archsim.train(model, cluster, global_batch=16) — the cluster passed positionally, a notebook's
# first slip — raised inspect's bare "TypeError: too many positional arguments", naming neither the job nor the fix.

@pytest.mark.parametrize(("call", "expected"), [
    (lambda: archsim.train("gpt3_1.3b", "configs/clusters/a100_node.toml", global_batch=16),
     "archsim.train() takes 1 positional argument (model) but 2 were given; the others are keywords: cluster=…"),
    (lambda: archsim.gemm(64, 128, 96),
     "archsim.gemm() takes 0 positional arguments but 3 were given; the others are keywords: m=…, k=…, n=…"),
])
def test_extra_positionals_name_the_job_and_the_keywords_they_stand_for(call, expected):
    with pytest.raises(TypeError) as caught:
        call()
    assert str(caught.value) == expected


# --- a runs result shows in a notebook cell as one line, as the other results do ---------------------------------------
# Failed before: its repr was the list's, every row's dict — 7,763 characters for an 18-row file, a screenful per
# hundred rows of a vTrain file — where a TableResult or SearchResult is one line and print() shows the rows.

def test_a_runs_result_repr_is_one_line():
    from api_parity_helpers import MODEL, NODE

    rows = archsim.train_runs(MODEL, runs=str(ROOT / "configs" / "runs" / "vtrain_h1024_l24.csv"), cluster=NODE,
                              attention="standard")
    measured = [row for row in rows if row["error"] is not None]
    mape = sum(abs(row["error"]) for row in measured) / len(measured)
    assert repr(rows) == (f"RunsResult({len(rows)} runs of gpt_1024h_24l on NVIDIA A100 SXM4 80GB, "
                          f"MAPE {mape:.1%} over {len(measured)} measured)")
    assert rows == list(rows)


def test_print_of_a_runs_result_is_its_line_as_train_and_search_results_print():
    """print(archsim.train_runs(...)) dumped every row's dict on one line (2,539 characters for 3 rows), where
    print(archsim.train(...)) and print(archsim.search(...)) show their one-line summary: it shows the same line as
    its repr, naming the file's 3 runs."""
    import pandas as pd
    from api_parity_helpers import MODEL, NODE

    runs = ROOT / "configs" / "runs" / "vtrain_h1024_l24.csv"
    rows = archsim.train_runs(MODEL, runs=pd.read_csv(runs, comment="#").head(3), cluster=NODE, attention="standard")
    train = archsim.train(MODEL, cluster=NODE, tp=1, pp=1, dp=8, global_batch=8, attention="standard")
    assert str(train) == repr(train)  # the convention the runs result follows: print shows the summary line
    assert str(rows) == repr(rows) and "\n" not in str(rows) and "{" not in str(rows)
    assert str(rows).startswith("RunsResult(3 runs of gpt_1024h_24l on ")
    assert rows == list(rows)


# --- run_sweep(progress=True) draws its bar in a notebook, as search(progress=True) does --------------------------------
# Failed before: the sweep's bar followed the terminal rule whatever progress= said, so in a notebook (stderr no
# terminal) progress=True drew nothing, where archsim.search(progress=True) draws its bars there at once.

SPEC = """[sweep]
name = "bar"
networks = ["layerpipe_sample"]
arrays = ["32x32"]
batches = [8]
processors = [2]
methods = ["layerpipe"]
"""


@pytest.mark.parametrize("shown", [True, False])
def test_run_sweep_progress_draws_off_a_terminal_as_asked(shown, tmp_path, capsys):
    spec = tmp_path / "bar.toml"
    spec.write_text(SPEC, encoding="utf-8")
    results = archsim.run_sweep(str(spec), out=str(tmp_path / "results"), progress=shown)
    assert len(results) == 1  # one network × array × batch × processor count × method
    assert ("sweep bar" in capsys.readouterr().err) is shown  # pytest's captured stderr is no terminal


# --- schedule's dim= is annotated as the other network jobs' (its text "seq=128" runs) -------------------------------
# Failed before: archsim.schedule(..., dim="seq=128") ran, as --dim seq=128 does, but its annotation (a mapping or
# (name, value) pairs) made mypy refuse the call that cost, profile, plan and load_network's annotations accept.

def test_every_network_jobs_dim_takes_the_flags_text_for_a_type_checker():
    import inspect

    jobs = [name for name in archsim.__all__ if callable(getattr(archsim, name))
            and "dim" in inspect.signature(getattr(archsim, name)).parameters]
    assert {"cost", "profile", "plan", "schedule", "load_network", "iteration_energy"} <= set(jobs)
    narrow = [job for job in jobs if "| str |" not in str(inspect.signature(getattr(archsim, job)).parameters["dim"].annotation)]
    assert not narrow, f"{narrow}: dim='seq=128' runs, but the annotation refuses it"
    one = archsim.schedule("configs/transformers/gpt2.json", policy="1f1b", processors=2, dim="seq=128", batch=1)
    other = archsim.schedule("configs/transformers/gpt2.json", policy="1f1b", processors=2, dim={"seq": 128}, batch=1)
    assert one.makespan == other.makespan
