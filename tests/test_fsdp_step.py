"""``--fsdp-grad-sync step`` (PyTorch's pipeline runtime: each stage's backward with gradient sync off, one
reduce-scatter per stage after its last backward; the parameters, never resharded, gathered once a step) against
hand counts: the bytes a GPU holds (Megatron's GPT layer 12h² + 13h and the embedding's tables, counted by hand,
times the bytes per parameter), the bytes all-gathered and reduce-scattered in a step in both modes priced by the
ring formulas, the reduce-scatters' end read off the pipeline's own timeline (its slots by their op ids), the
default unchanged, the columns and rows that carry the mode, and the refusals."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

import archsim
from archsim.cli import main
from archsim.collectives import collective_seconds
from archsim.errors import InputError
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.fsdp import Unit, fsdp_sync, held_state_bytes, step_exposed_seconds
from archsim.training.parallel import Parallelism
from archsim.workload.model_files import load_transformer
from tests.test_fsdp import GPT_350M, NODE
from tests.test_fsdp_pipeline import (  # the same PP 2 GPT, counted there
    FIRST,
    LAST,
    LAYER,
    POSITIONS,
    TOKENS,
    H,
    run,
)

STEP = {"fsdp": True, "fsdp_reshard": "none", "fsdp_grad_sync": "step"}


@pytest.mark.parametrize(("dtype", "width", "grad"), [("fp16", 2, 2), ("bf16", 2, 4), ("fp32", 4, 4)])
def test_held_bytes_per_parameter_by_hand(dtype, width, grad):
    """DP 4: 16/4 bytes of sharded states a parameter, plus the parameter unsharded in the compute dtype and its
    gradient at the reduce width (fp32 in bf16: FSDP2 accumulates in its reduce dtype) for the whole step, and one
    unit's reduce-scatter input at the reduce width."""
    states, unit = held_state_bytes(dtype, "megatron", Parallelism(1, 2, 4, 4, 1, **STEP))
    assert (states, unit) == (16 / 4 + width + grad, grad)


def test_held_bytes_of_each_stage_by_hand():
    """fp16: each stage's parameters (hand-counted) × (16/4 + 2 + 2), plus 2 a parameter of its largest unit (the
    embedding on the first, the head's table with the final norm on the last); the activations unchanged."""
    on, off = run(**STEP), run()
    for memory, params, root in zip(on.memory, (FIRST, LAST), (TOKENS + POSITIONS, 2 * H + TOKENS), strict=True):
        assert memory.parameters == params
        assert memory.states == pytest.approx((16 / 4 + 2 + 2) * params + 2 * root, rel=1e-12)
    assert [m.activations for m in on.memory] == [m.activations for m in off.memory]


@pytest.mark.parametrize("interleave", [1, 2])
def test_collectives_of_a_step_by_hand_in_both_modes(interleave):
    """No compute to hide under: the first rank exposes all it issues. Micro-batch mode (4 micro-batches a
    pipeline): 4 × (root + 12 layers) × 2 bytes all-gathered and as many reduce-scattered; step mode: once."""
    c = load_transformer(GPT_350M)
    link = load_gpu_cluster(NODE, "fp16").machine(Parallelism(1, 2, 4, 32, 2, fsdp=True)).links.dp

    def ag(n):
        return float(collective_seconds("all-gather", 2 * n, 4, link))

    def rs(n):
        return float(collective_seconds("reduce-scatter", 2 * n, 4, link))

    once = ag(TOKENS + POSITIONS) + rs(TOKENS + POSITIONS) + 12 * (ag(LAYER) + rs(LAYER))
    for mode, times in (("micro-batch", 4), ("step", 1)):
        par = Parallelism(1, 2, 4, 32, 2, interleave=interleave, fsdp=True, fsdp_reshard="none", fsdp_grad_sync=mode)
        machine = load_gpu_cluster(NODE, "fp16").machine(par)
        before, after = fsdp_sync(c, par, machine, FIRST, 0.0, 0.0, rank=0)
        assert before["fsdp_exposed_communication"] == pytest.approx(times * once, rel=1e-12) and after == {}


def test_reduce_scatters_queue_on_the_wire_behind_their_stages_backward():
    """Two chunks, reduce-scatters of 1.5 s and 2 s, the first chunk's last backward 1 s before the rank's end and
    the second's at it: the first ends 0.5 s past the end, the second waits for it: 2.5 s exposed; 3 s before the
    end, the first is hidden (0 + 2 s). Gathers of 0.25 s each, no compute: each exposed once."""
    a, b = [Unit(0.25, 1.5, 0.0, 0.0, False)], [Unit(0.25, 2.0, 0.0, 0.0, False)]
    assert step_exposed_seconds([a, b], (1.0, 0.0)) == pytest.approx(0.5 + 2.5)
    assert step_exposed_seconds([a, b], (3.0, 0.0)) == pytest.approx(0.5 + 2.0)
    assert step_exposed_seconds([a, b]) == pytest.approx(0.5 + 3.5)  # no drain given: both after the end


@pytest.mark.parametrize("interleave", [1, 2])
def test_step_tail_read_off_the_pipeline_timeline(interleave):
    """Each rank's exposed seconds: its chunks' first forward gathers (the forward rule with this run's compute, as
    micro-batch mode prices one micro-batch's forward) plus its chunks' reduce-scatters queued from each chunk's last
    backward (read from the timeline's slots by their op ids, ``<stage><kind><micro-batch>``) past the rank's end.
    The SMs free (``comm_sms`` 0): the forward rule's gathers as max(0, g − f)."""
    from archsim.training.fsdp import exposed_seconds, machine_units
    from archsim.training.run import train

    c = load_transformer(GPT_350M)
    par = Parallelism(1, 2, 4, 32, 2, interleave=interleave, **STEP)
    machine = replace(load_gpu_cluster(NODE, "fp16").machine(par), comm_sms=0)
    result = train(c, par, machine)
    ends: dict[str, float] = {}
    last: dict[int, float] = {}
    for slot in result.run.timeline.slots:
        ends[slot.processor] = max(ends.get(slot.processor, 0.0), slot.end)
        stage, kind = int(slot.op.rstrip("0123456789")[:-1]), slot.op.rstrip("0123456789")[-1]
        if kind != "F":
            last[stage] = max(last.get(stage, 0.0), slot.end)
    for r in range(2):
        stages = [j for j in range(2 * interleave) if j % 2 == r]  # interleaved: stage j on rank j mod PP
        chunks = machine_units(c, par, machine, result.memory[r].parameters, 0.0, 0.0, r)
        wire = -float("inf")
        for j, units in sorted(zip(stages, chunks, strict=True), key=lambda p: last[p[0]]):
            wire = max(wire, last[j]) + sum(u.reduce_scatter for u in units)
        tail = max(0.0, wire - ends[f"r{r}"])
        forward = result.post[r]["fsdp_exposed_communication"] - tail
        gathered = sum(exposed_seconds(u)[0] for u in chunks)  # with no compute: every gather exposed
        assert 0 <= forward <= gathered * (1 + 1e-12)
        if r == result.finishing_rank:  # its one micro-batch's forward: the run's forward over the 4 micro-batches
            timed = machine_units(c, par, machine, result.memory[r].parameters, result.forward_seconds / 4, 0.0, r)
            assert forward == pytest.approx(sum(exposed_seconds(u)[0] for u in timed), rel=1e-9, abs=1e-15)


def test_step_exposes_less_than_micro_batch_and_holds_more():
    """One gather and one reduce-scatter a step instead of four: less exposed on every rank, more held (the
    gradients, 2 bytes a parameter in fp16)."""
    step, each = run(**STEP), run(fsdp=True, fsdp_reshard="none")
    for r in range(2):
        assert step.post[r]["fsdp_exposed_communication"] < each.post[r]["fsdp_exposed_communication"]
        assert step.memory[r].states - each.memory[r].states == pytest.approx(2 * step.memory[r].parameters, rel=1e-12)


def test_default_unchanged_and_pp1_runs():
    """Naming ``micro-batch`` changes nothing, nor does it show in the meta; PP 1 runs in step mode too (the
    runtime's one stage)."""
    before, named = run(fsdp=True), run(fsdp=True, fsdp_grad_sync="micro-batch")
    assert named.iteration_seconds == before.iteration_seconds and named.memory == before.memory
    assert named.ops == before.ops and "fsdp_grad_sync" not in named.to_dict()["meta"]
    assert run(**STEP).to_dict()["meta"]["fsdp_grad_sync"] == "step"
    one, _ = archsim.train(str(GPT_350M), cluster=str(NODE), dp=8, global_batch=64, micro_batch=2, **STEP)
    assert one.breakdown["fsdp_exposed_communication"] > 0
    assert any("once a step" in r["name"] for r in one.to_dict()["rows"])


def test_runs_column_sweep_axis_and_search_rows(tmp_path, capsys):
    """A runs file's ``fsdp_grad_sync`` column, ``--sweep fsdp_grad_sync=…`` and the search's rows carry the mode;
    a search row re-run by its own command prints the same iteration and memory."""
    model = str(GPT_350M)
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch,global_batch,fsdp,fsdp_reshard,fsdp_grad_sync\n"
                    "1,2,4,2,32,true,none,micro-batch\n1,2,4,2,32,true,none,step\n", encoding="utf-8")
    assert main(["train", model, "--cluster", str(NODE), "--runs", str(runs), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["fsdp_grad_sync"] for r in rows] == ["micro-batch", "step"]
    one, _ = archsim.train(model, cluster=str(NODE), pp=2, dp=4, global_batch=32, micro_batch=2, **STEP)
    assert rows[1]["predicted_seconds"] == pytest.approx(one.iteration_seconds, rel=1e-12)
    assert main(["train", model, "--cluster", str(NODE), "--pp", "2", "--dp", "4", "--global-batch", "32",
                 "--micro-batch", "2", "--fsdp", "--fsdp-reshard", "none", "--sweep", "fsdp_grad_sync=micro-batch,step",
                 "--format", "json"]) == 0
    points = json.loads(capsys.readouterr().out)["rows"]
    assert [p["fsdp_grad_sync"] for p in points] == ["micro-batch", "step"]
    assert points[1]["peak_memory_gib"] > points[0]["peak_memory_gib"]
    assert main(["search", model, "--cluster", str(NODE), "--global-batch", "16", "--fsdp", "--fsdp-reshard", "none",
                 "--fsdp-grad-sync", "step", "--format", "json", "--top", "2",
                 "--schedule", "1f1b"]) == 0  # one schedule: the mode the rows carry is what is checked
    document = json.loads(capsys.readouterr().out)
    assert document["meta"]["fsdp_reshard"] == "none" and document["meta"]["fsdp_grad_sync"] == "step"
    found = document["rows"]
    assert found and all(r["fsdp_grad_sync"] == "step" for r in found)
    argv = found[0]["command"].split()[1:]
    assert "--fsdp-grad-sync" in argv
    assert main([*argv, "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert meta["iteration_seconds"] == pytest.approx(found[0]["iteration_seconds"], rel=1e-12)
    assert meta["peak_memory_gib"] == pytest.approx(found[0]["peak_memory_gib"], rel=1e-12)


def test_refusals(capsys):
    with pytest.raises(InputError, match="give --fsdp too"):
        Parallelism(1, 2, 2, 4, 1, fsdp_grad_sync="step")
    with pytest.raises(InputError, match="micro-batch, step"):
        Parallelism(1, 2, 2, 4, 1, fsdp=True, fsdp_reshard="none", fsdp_grad_sync="never")
    with pytest.raises(InputError, match="--fsdp-reshard none"):
        Parallelism(1, 2, 2, 4, 1, fsdp=True, fsdp_grad_sync="step")
    with pytest.raises(InputError, match="fsdp_reshard='none'"):
        archsim.search(str(GPT_350M), cluster=str(NODE), global_batch=8, fsdp=True, fsdp_grad_sync="step")
    assert main(["train", str(GPT_350M), "--cluster", str(NODE), "--pp", "2", "--dp", "4", "--global-batch", "8",
                 "--fsdp", "--fsdp-grad-sync", "step"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("archsim train: error:") and err.count("\n") == 1 and "--fsdp-reshard none" in err
