"""Two directions of one correspondence, kept in step: the Megatron-LM flags a search row writes
(``search_rows.megatron_args``, archsim → Megatron) and the hints ``train`` and ``search`` give a user who brings
Megatron's flags (``job_settings.MEGATRON_FLAGS``, Megatron → archsim). Every layout or precision flag a row writes
must be one a user can bring back: a hint names archsim's setting for it, or archsim's own command takes it under
the same name. Each hint must name a flag the job's own parser has. The only flags written without an archsim
setting are Megatron's way of stating full recompute (``--recompute-method uniform --recompute-num-layers 1``:
archsim's ``full`` is that one layer at a time, docs/training.md)."""

from __future__ import annotations

import argparse
import re

import pytest

from archsim.cli import build_parser
from archsim.training.job_settings import MEGATRON_FLAGS, SEARCH_FLAGS
from archsim.training.search_rows import megatron_args, megatron_model_args
from archsim.training.search_space import Candidate
from archsim.workload.model_files import load_transformer

FULL_RECOMPUTE_ONLY = {"recompute-method", "recompute-num-layers"}
CANDIDATES = [
    Candidate(1, 4, 2, 1, "full", "1f1b", 1, False, stage_layers=(5, 7, 7, 5)),
    Candidate(2, 2, 2, 1, "selective", "interleaved-1f1b", 2, True, attention="flash", dp_overlap="bucketed",
              distributed_optimizer=True, grad_accumulation="unfused"),
    Candidate(2, 2, 2, 1, "none", "interleaved-1f1b", 2, True, stage_layers=(5, 7, 7, 5)),
    Candidate(1, 1, 4, 1, "none", "1f1b", 1, False, cp=2, cp_comm="a2a"),
    Candidate(1, 1, 4, 1, "none", "1f1b", 1, False, cp=4, cp_comm="a2a+p2p", cp_hierarchy=(2, 2)),
    Candidate(2, 1, 4, 1, "none", "1f1b", 1, True, fp8="hybrid", fp8_param_gather=True),
]


def _options(command: str) -> set[str]:
    parser = build_parser([command, "x"])
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {o[2:] for a in sub.choices[command]._actions for o in a.option_strings if o.startswith("--")}


def _flags(text: str) -> set[str]:
    return set(re.findall(r"(?<!\S)--([a-z0-9-]+)", text))


@pytest.mark.parametrize("k", CANDIDATES, ids=range(len(CANDIDATES)))
def test_every_setting_a_row_writes_is_one_a_user_can_bring_back(k):
    c = load_transformer("gpt3_1.3b")
    written = megatron_args(k, 16, c, "bf16")
    assert written, k  # a 1F1B row of a GPT Megatron-LM trains
    layout = _flags(written) - _flags(megatron_model_args(c))
    assert "tensor-model-parallel-size" in layout
    unmatched = layout - set(MEGATRON_FLAGS) - _options("train") - FULL_RECOMPUTE_ONLY
    assert not unmatched, (unmatched, written)


def test_every_hint_names_a_flag_its_job_has():
    train, search = _options("train"), _options("search")
    for megatron, (flag, _value, _placeholder) in MEGATRON_FLAGS.items():
        assert flag in train, (megatron, flag)
        assert SEARCH_FLAGS.get(flag, (flag,))[0] in search, (megatron, flag)  # --tp, --pp: the TPs, PPs it tries
