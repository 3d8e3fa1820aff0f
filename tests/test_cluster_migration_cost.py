"""What a worker's move costs and counts (``--migration-cost``): the SPB paper's §3.2 start-up γ × model size "for
the other machines", read with machine = one GPU (``gpu``, the default) or machine = a server of several (``machine``).
Every expected figure comes from the rule below on 2 machines × 2 GPUs, traced by hand."""

import pytest

import archsim
from archsim.cli import main
from archsim.cluster.catalog import lookup, paper_catalog
from archsim.cluster.jobs import JobCluster, JobSpec, SimConfig
from archsim.cluster.simulate import simulate
from archsim.cluster.trace import synthetic_trace
from archsim.errors import InputError

GIB = 2**30
TWO_BY_TWO = JobCluster((2, 2), 16 * GIB)  # machine 0: devices 0, 1; machine 1: devices 2, 3
MACHINE_OF = (0, 0, 1, 1)
GAMMA, MODEL_BYTES = 1e-9, 5e8  # γ × model size = 0.5 s


def startup_s(previous: int, device: int, mode: str) -> float:
    """§3.2: no start-up on the machine that ran the worker's previous task, γ × model size on any other; a
    "machine" is a device (gpu) or a server (machine)."""
    same = previous == device if mode == "gpu" else MACHINE_OF[previous] == MACHINE_OF[device]
    return 0.0 if same else GAMMA * MODEL_BYTES


def job(name, workers, iterations, task_s, submit=0.0):
    return JobSpec(name, submit, workers, iterations, "m", task_s, GIB, (task_s,) * workers, (GIB,) * workers,
                   MODEL_BYTES)


def config(mode):
    return SimConfig(interval_s=0.0, gamma_s_per_byte=GAMMA, unit_s=0.0, migration_cost=mode)


def per_job(result, column):
    return dict(zip(result.jobs.job_id, result.jobs[column]))


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("mode", ["gpu", "machine"])
def test_jigsaw_move_inside_a_machine_is_free_only_under_machine(mode, compiled, monkeypatch):
    """A (1 worker, 2 iterations of 1 s) runs iteration 1 on device 0; at 1 s B (10 s, larger priority) arrives and
    takes device 0, the lowest idle one; A's iteration 2 goes to device 1, its machine's idle device. It ends at
    1 + start-up + 1: 2.5 s under gpu with one migration, 2 s under machine with none. Both the plain-Python loop
    (a small case's) and the compiled kernel (a large one's)."""
    if compiled:
        monkeypatch.setattr("archsim.cluster.jigsaw.PYTHON_WORK", -1)
    result = simulate([job("A", 1, 2, 1.0), job("B", 1, 1, 10.0, submit=1.0)], TWO_BY_TWO, "jigsaw", config(mode))
    cost = startup_s(0, 1, mode)
    assert per_job(result, "end_s")["A"] == pytest.approx(1.0 + cost + 1.0, abs=1e-9)
    assert per_job(result, "migrations")["A"] == (1 if cost else 0)
    assert per_job(result, "end_s")["B"] == pytest.approx(11.0, abs=1e-9)
    assert cost == (0.5 if mode == "gpu" else 0.0)  # the two readings differ here


@pytest.mark.parametrize("mode", ["gpu", "machine"])
def test_jigsaw_move_to_another_machine_costs_under_both(mode):
    """As above, but B has two workers and takes devices 0 and 1, so A's iteration 2 goes to device 2, on the
    other machine: γ × model size and one migration under either reading."""
    result = simulate([job("A", 1, 2, 1.0), job("B", 2, 1, 10.0, submit=1.0)], TWO_BY_TWO, "jigsaw", config(mode))
    cost = startup_s(0, 2, mode)
    assert cost == 0.5
    assert per_job(result, "end_s")["A"] == pytest.approx(1.0 + cost + 1.0, abs=1e-9)
    assert per_job(result, "migrations")["A"] == 1


@pytest.mark.parametrize("mode", ["gpu", "machine"])
def test_gandiva_unpacking_inside_a_machine_pauses_only_under_gpu(mode):
    """B (10 iterations of 1 s) goes to device 0 (best-fitting machine 0), A (2 s) to device 1, C (2 workers) to
    devices 2, 3; D (5 iterations of 1 s) finds no free device and is packed onto device 0 beside B (least loaded,
    lowest index): both run at half speed, 1 iteration each in 2 s. A ends at 2 s and device 1 frees; the earlier
    submitted of device 0's pair, B, unpacks to it (same machine) and ends at 2 + start-up + 9; D, alone, at 2 + 4."""
    jobs = [job("B", 1, 10, 1.0), job("A", 1, 1, 2.0), job("C", 2, 20, 1.0), job("D", 1, 5, 1.0)]
    result = simulate(jobs, TWO_BY_TWO, "gandiva", config(mode))
    cost = startup_s(0, 1, mode)
    assert per_job(result, "end_s")["A"] == pytest.approx(2.0, abs=1e-9)
    assert per_job(result, "end_s")["B"] == pytest.approx(2.0 + cost + 9.0, abs=1e-9)
    assert per_job(result, "migrations")["B"] == (1 if cost else 0)
    assert per_job(result, "end_s")["D"] == pytest.approx(2.0 + 4.0, abs=1e-9)
    assert per_job(result, "migrations")["D"] == 0


def test_the_default_is_gpu_and_other_values_are_refused():
    assert SimConfig().migration_cost == "gpu"
    with pytest.raises(InputError, match="migration_cost.*gpu, machine"):
        SimConfig(migration_cost="server")
    with pytest.raises(InputError, match="migration_cost.: expected one of gpu, machine"):
        archsim.cluster_jobs(jobs=5, migration_cost="server")


def test_the_flag_and_keyword_reach_the_run_and_its_meta(tmp_path, capsys):
    """Same trace, both readings: the meta says which, and the command and the keyword run the same simulation."""
    import json

    counts = {}
    for mode in ("gpu", "machine"):
        assert main(["cluster", "--jobs", "4", "--gpus", "16", "--unit-seconds", "0", "--migration-cost", mode,
                     "--format", "json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["meta"]["migration_cost"] == mode
        counts[mode] = out["rows"][0]["migrations_per_iteration"]
        library = archsim.cluster_jobs(jobs=4, gpus=16, unit_seconds=0, migration_cost=mode)
        assert library.meta["migration_cost"] == mode
        assert library["migrations_per_iteration"].iloc[0] == counts[mode]


def test_a_synthetic_job_too_large_for_memory_is_named_by_its_place_and_model(capsys):
    """The generator names jobs j0000, j0001, …, ids the user never wrote: the error says which job of the drawn
    trace it is (1-based) and its model. The first row whose model needs more than 8 GiB, from the catalog's
    memory by hand over the drawn rows."""
    trace = synthetic_trace(10, 3, catalog=paper_catalog())
    first = next(i for i, row in enumerate(trace) if lookup(paper_catalog(), row.model).full_memory_bytes > 8 * GIB)
    assert main(["cluster", "--device-memory-gb", "8", "--jobs", "10", "--seed", "3"]) == 2
    err = capsys.readouterr().err
    assert first == 5 and trace[first].job_id == "j0005"  # the user's trial: the 6th job
    assert (f"the synthetic trace (seed 3) draws as its 6th job (job_id j0005) a {trace[first].model} of "
            f"{trace[first].workers} workers, which needs") in err, err
    assert err.count("\n") == 1 and "argument --device-memory-gb" in err


def test_the_report_names_the_reading_it_ran(tmp_path):
    """The page's command line repeats --migration-cost machine (the default is left out), and its note says a move
    within a machine was free and that the quoted default-trace figures count every change of device."""
    page = tmp_path / "page.html"
    archsim.cluster_jobs(jobs=4, gpus=16, migration_cost="machine", report=page)
    text = page.read_text(encoding="utf-8")
    assert "--migration-cost machine" in text
    assert "a move within one machine is free and not counted" in text
    assert "counting every change of device, --migration-cost gpu" in text
    archsim.cluster_jobs(jobs=4, gpus=16, report=page)
    assert "migration-cost" not in page.read_text(encoding="utf-8")


def earliest_start(previous, t, free_at, startup):
    """§3.2 under ``machine``: the start on device d is max(d free, t) + (start-up if d is on another machine than
    ``previous``); the earliest wins, ties to ``previous``, then its machine, then the lowest index."""
    order = sorted(range(len(free_at)), key=lambda d: (d != previous, MACHINE_OF[d] != MACHINE_OF[previous], d))
    starts = [(max(free_at[d], t) + (0.0 if MACHINE_OF[d] == MACHINE_OF[previous] else startup), rank, d)
              for rank, d in enumerate(order)]
    return min(starts)[::2]  # (start, device)


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("startup", [0.5, 0.2, 0.1])
def test_jigsaw_under_machine_waits_for_a_busy_gpu_of_its_machine_when_that_starts_earliest(startup, compiled,
                                                                                            monkeypatch):
    """At 0 s C (1 iteration of 1.2 s, the larger priority) takes device 0 and A (2 iterations of 1 s) device 1. At 1 s
    A's iteration 1 ends and B (10 s) arrives and takes device 1, the lowest idle one, until 11 s. A's iteration 2
    may start on device 0 (machine 0, free at 1.2 s, no start-up), device 1 (its own, at 11 s) or devices 2, 3
    (machine 1, idle, 1 s + start-up): 1.2 < 1.5 under a start-up of 0.5 s (device 0, no migration), 1.1 < 1.2 under
    0.1 s (device 2, one migration); under 0.2 s both start at 1.2 and the tie goes to A's machine (device 0). Under
    gpu only idle devices and the previous one are weighed: device 2, after the start-up, one migration."""
    if compiled:
        monkeypatch.setattr("archsim.cluster.jigsaw.PYTHON_WORK", -1)
    jobs = [job("A", 1, 2, 1.0), job("C", 1, 1, 1.2), job("B", 1, 1, 10.0, submit=1.0)]
    start, device = earliest_start(1, 1.0, (1.2, 11.0, 0.0, 0.0), startup)
    assert device == (2 if startup == 0.1 else 0)
    assert start == pytest.approx(1.1 if startup == 0.1 else 1.2, abs=1e-12)
    for mode in ("machine", "gpu"):
        cfg = SimConfig(interval_s=0.0, gamma_s_per_byte=startup / MODEL_BYTES, unit_s=0.0, migration_cost=mode)
        result = simulate(jobs, TWO_BY_TWO, "jigsaw", cfg)
        if mode == "gpu":  # the idle device of the lowest index, device 2, after the start-up
            start, device = 1.0 + startup, 2
        assert per_job(result, "end_s")["A"] == pytest.approx(start + 1.0, abs=1e-9), mode
        assert per_job(result, "migrations")["A"] == (MACHINE_OF[device] != MACHINE_OF[1] if mode == "machine" else 1)
        assert per_job(result, "end_s")["C"] == pytest.approx(1.2, abs=1e-9)
        assert per_job(result, "end_s")["B"] == pytest.approx(11.0, abs=1e-9)

