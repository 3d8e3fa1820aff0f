"""The Python API's refusals of a job above its op limit name the keyword, ``max_ops=N``, as ``archsim.schedule``
names ``group=``; the commands keep ``--max-ops N``. One message source: :func:`archsim.validate.check_job_size`
spells the limit with :func:`archsim.console.setting`.

Before the fix ``archsim.train``, ``archsim.train_runs`` and ``archsim.schedule`` said "give --max-ops 48 to run it
anyway" to a Python caller, who has no such flag: the API cases here failed; the command cases passed and pin the
command's wording."""

from __future__ import annotations

from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
GPT2 = str(ROOT / "configs" / "transformers" / "gpt2.json")
NODE = str(ROOT / "configs" / "clusters" / "a100_node.toml")
# TP 2 · PP 2 · DP 2, global batch 16 of micro-batch 1: 16 / (1 · 2) = 8 micro-batches per pipeline, and an F, I and W
# per micro-batch on each of the 2 ranks (one chunk each): 3 · 2 · 8 = 48 schedule actions
LAYOUT = {"tp": 2, "pp": 2, "dp": 2, "global_batch": 16, "micro_batch": 1}
ACTIONS = 48


def _refusal(call) -> InputError:
    with pytest.raises(InputError) as caught:
        call()
    return caught.value


def test_train_names_max_ops_as_a_keyword():
    said = _refusal(lambda: archsim.train(GPT2, cluster=NODE, **LAYOUT, max_ops=ACTIONS - 1))
    assert str(said).startswith("field 'max_ops': ")
    assert said.message.endswith(f"above the limit of {ACTIONS - 1}; give max_ops={ACTIONS} to run it anyway")
    assert "--max-ops" not in str(said)
    archsim.train(GPT2, cluster=NODE, **LAYOUT, max_ops=ACTIONS)  # the limit itself runs


def test_train_runs_names_max_ops_as_a_keyword(tmp_path):
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch,global_batch,measured_seconds\n2,2,2,1,16,0.5\n")
    said = _refusal(lambda: archsim.train_runs(GPT2, runs=runs, cluster=NODE, max_ops=ACTIONS - 1))
    assert said.message.endswith(f"give max_ops={ACTIONS} to run it anyway") and "--max-ops" not in str(said)


def test_schedule_names_max_ops_as_a_keyword():
    # 4 stages × 8 micro-batches × F, B and W (zb-2p splits the backward) = 96 ops, by hand
    said = _refusal(lambda: archsim.schedule(stages=4, stage_times="1,1,1", comm=0, microbatches=8, policy="zb-2p",
                                             max_ops=10))
    assert said.message.endswith("give max_ops=96 to run it anyway") and "--max-ops" not in str(said)


def test_beyond_the_flags_range_names_the_keyword():
    said = _refusal(lambda: archsim.train(GPT2, cluster=NODE, pp=2, global_batch=2**31 - 1, micro_batch=1))
    assert said.message.endswith("beyond max_ops's range (2,147,483,647)"), said.message


def test_the_command_keeps_its_flag(capsys):
    flags = ["--tp", "2", "--pp", "2", "--dp", "2", "--global-batch", "16", "--micro-batch", "1"]
    assert main(["train", GPT2, "--cluster", NODE, *flags, "--max-ops", str(ACTIONS - 1)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("archsim train: error: argument --max-ops: ")
    assert err.endswith(f"above the limit of {ACTIONS - 1}; give --max-ops {ACTIONS} to run it anyway\n")
    assert main(["schedule", "--stages", "4", "--stage-times", "1,1,1", "--comm", "0", "--microbatches", "8",
                 "--policy", "zb-2p", "--max-ops", "10"]) == 2
    assert capsys.readouterr().err.endswith("give --max-ops 96 to run it anyway\n")


def test_search_names_max_ops_as_a_keyword():
    """A search's own refusals named it already (a check that passes before and after)."""
    said = _refusal(lambda: archsim.search(GPT2, cluster=NODE, global_batch=16, max_ops=0, progress=False))
    assert str(said).startswith("field 'max_ops': ") and "--max-ops" not in str(said)
