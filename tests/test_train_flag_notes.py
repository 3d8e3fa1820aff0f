"""Two train flags a user reads as ignored: ``--recompute selective`` beside FlashAttention, which recomputes
nothing (the note saying why, once per command: train, --sweep, --runs and the API's warnings), and
``--dp-overlap bucketed`` beside ``--implementation pytorch-eager``, refused as Megatron-LM's as
``--distributed-optimizer`` is (one GPU, DP 1: no DP all-reduce to bucket)."""

from __future__ import annotations

import io
import json
import warnings
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
MODEL = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")
NODE = str(ROOT / "configs" / "clusters" / "a100_node.toml")
ONE_H100 = str(ROOT / "configs" / "clusters" / "h100_1gpu.toml")
WHY = "FlashAttention never stores"  # the note's reason, in each spelling


def _train(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["train", MODEL, *args])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("attention", ["flash", "standard"])
def test_selective_beside_flash_is_noted_and_is_none(attention):
    """The documented rule (docs/training.md, layer_activations): FlashAttention keeps no s² tensor, so selective
    recompute has nothing to rerun and every figure is none's; with the standard core it reruns the scores and
    differs. The note is said once with flash, never with standard."""
    meta = {}
    for recompute in ("none", "selective"):
        code, out, err = _train(["--cluster", NODE, "--tp", "2", "--global-batch", "4", "--recompute", recompute,
                                 "--attention", attention, "--format", "json"])
        assert code == 0, err
        meta[recompute] = json.loads(out)["meta"]
        noted = err.count(WHY)
        assert noted == (1 if recompute == "selective" and attention == "flash" else 0), err
    differ = {k for k in meta["none"] if meta["none"][k] != meta["selective"][k]}
    if attention == "flash":
        assert differ == {"recompute"}
    else:
        assert {"recompute", "iteration_seconds", "peak_memory_gib"} <= differ


def test_the_api_warns_the_note():
    with pytest.warns(UserWarning, match="recompute='selective' with attention='flash' recomputes nothing"):
        archsim.train(MODEL, cluster=NODE, tp=8, global_batch=4, recompute="selective")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # none: nothing to say, and a layout using every GPU says nothing else
        archsim.train(MODEL, cluster=NODE, tp=8, global_batch=4, recompute="selective", attention="standard")


def test_sweep_and_runs_say_it_once(tmp_path):
    """A sweep's and a runs file's iterations are not noted one by one: one line, counting them."""
    code, _, err = _train(["--cluster", NODE, "--global-batch", "4", "--sweep", "recompute=none,selective,full",
                           "--sweep", "tp=2,4"])
    assert code == 0, err
    assert err.count(WHY) == 1 and "2 of the 6 points: --recompute selective" in err
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch,global_batch,recompute\n2,1,1,1,4,selective\n2,1,1,1,4,none\n"
                    "4,1,1,1,4,selective\n")
    code, _, err = _train(["--cluster", NODE, "--runs", str(runs)])
    assert code == 0, err
    assert err.count(WHY) == 1 and "2 of the 3 rows: recompute selective" in err  # the column, not a flag
    with pytest.warns(UserWarning, match="2 of the 3 rows"):
        archsim.train_runs(MODEL, runs=str(runs), cluster=NODE)
    with pytest.warns(UserWarning, match="1 of the 2 points"):
        archsim.train_sweep(MODEL, cluster=NODE, global_batch=4, tp=8, sweep={"recompute": ["selective", "full"]})


def test_bucketed_dp_overlap_is_refused_with_pytorch_eager():
    """Megatron-LM's --overlap-grad-reduce on plain PyTorch's one GPU: refused in one line naming both flags, as
    --distributed-optimizer is, nothing on stdout; ``none`` (the default) still runs."""
    code, out, err = _train(["--cluster", ONE_H100, "--implementation", "pytorch-eager", "--global-batch", "2",
                             "--dp-overlap", "bucketed"])
    assert code == 2 and out == ""
    assert "--dp-overlap bucketed is Megatron-LM's" in err and "--implementation pytorch-eager" in err
    assert err.count("\n") == 1
    with pytest.raises(InputError, match="dp_overlap='bucketed' is Megatron-LM's"):
        archsim.train(MODEL, cluster=ONE_H100, implementation="pytorch-eager", global_batch=2, dp_overlap="bucketed")
    code, _, err = _train(["--cluster", ONE_H100, "--implementation", "pytorch-eager", "--global-batch", "2",
                           "--dp-overlap", "none"])
    assert code == 0, err
