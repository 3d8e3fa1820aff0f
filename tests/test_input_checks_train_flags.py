"""``train`` flags it accepted silently and now refuses with one line, nothing written (issue #40):
``--implementation pytorch-eager`` on several GPUs, a ``--sweep`` axis twice or beside flags a sweep does not
apply, ``--stage-layers`` with ``--balance planned`` — and the neighbouring runs that stay accepted."""

from __future__ import annotations

import pytest
from input_checks_common import GPT2, NODE

import archsim
from archsim.cli import main
from archsim.errors import InputError

# -- --implementation pytorch-eager: plain PyTorch on one GPU (benchmarks/gpu_train_measure.py; NeuSight's fp32 runs)
EAGER = ("--implementation", "pytorch-eager", "--attention", "standard")


@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
@pytest.mark.parametrize("layout", [("--dp", "2"), ("--pp", "2"), ("--tp", "2"), ("--dp", "2", "--pp", "2")])
def test_eager_on_several_gpus_is_refused_in_one_line(tmp_path, capsys, dtype, layout):
    out = tmp_path / "out.csv"
    argv = ["train", str(GPT2), "--cluster", str(NODE), "--global-batch", "8", "--dtype", dtype, *EAGER, *layout,
            "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert "one GPU" in err and "--implementation megatron" in err and "argument --implementation:" in err
    assert not out.exists()


def test_eager_on_several_gpus_is_refused_by_the_api():
    with pytest.raises(InputError, match="one GPU") as caught:
        archsim.train(GPT2, cluster=NODE, global_batch=8, dp=2, implementation="pytorch-eager", attention="standard")
    assert caught.value.where.field == "implementation"


def test_eager_accumulates_micro_batches_on_one_gpu():
    """One GPU with several micro-batches is what the eager list models: their gradients summed unfused."""
    result, _ = archsim.train(GPT2, cluster=NODE, global_batch=8, micro_batch=2, implementation="pytorch-eager",
                              attention="standard")
    assert result.breakdown["grad_accumulation"] > 0 and result.breakdown["dp_communication"] == 0


# -- train --sweep: one value per axis and point
def test_a_sweep_axis_given_twice_is_refused(tmp_path, capsys):
    """``--sweep tp=1,2 --sweep tp=4`` ran two points, both at TP 4 (the later axis overwrote the earlier)."""
    from archsim.training.sweep import points

    out = tmp_path / "out.csv"
    argv = ["train", str(GPT2), "--cluster", str(NODE), "--global-batch", "8", "--sweep", "tp=1,2",
            "--sweep", "tp=4", "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "tp" in err and "argument --sweep:" in err
    assert not out.exists()
    with pytest.raises(InputError, match="micro_batch"):  # the same axis under its two spellings
        list(points({}, [("micro_batch", (1,)), ("tp", (1, 2)), ("micro_batch", (2,))]))


@pytest.mark.parametrize(("flag", "extra"), [("--stage-layers", ("--pp", "2", "--stage-layers", "4,8")),
                                             ("--balance", ("--pp", "2", "--balance", "planned")),
                                             ("--gantt", ("--gantt", "{tmp}/g.html")),
                                             ("--chrome-trace", ("--chrome-trace", "{tmp}/t.json")),
                                             ("--schedule-csv", ("--schedule-csv", "{tmp}/s.csv"))])
def test_a_sweep_refuses_the_flags_it_does_not_apply(tmp_path, capsys, flag, extra):
    """Its points ran Megatron's even split and wrote no timeline, whatever these flags said."""
    out = tmp_path / "out.csv"
    argv = ["train", str(GPT2), "--cluster", str(NODE), "--global-batch", "8", "--sweep", "tp=1,2",
            *(e.format(tmp=tmp_path) for e in extra), "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and flag in err and "--sweep" in err
    assert list(tmp_path.iterdir()) == []


def test_stage_layers_and_a_planned_balance_together_are_refused(capsys):
    """--balance planned was dropped without a word when --stage-layers gave the split."""
    argv = ["train", str(GPT2), "--cluster", str(NODE), "--global-batch", "8", "--pp", "2", "--stage-layers", "4,8",
            "--balance", "planned"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "--stage-layers" in err and "--balance planned" in err
