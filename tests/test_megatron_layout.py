"""Megatron-LM's ``--pipeline-model-parallel-layout`` for a planned split the first/last flags cannot state (the
middle stages differ, or any uneven split with interleaving): before, a search row of such a split had no Megatron
line at all. Each emitted layout is read here by a re-implementation of Megatron-LM's own grammar, written from
its source (commit d98e8a6): ``PipelineParallelLayerLayout.parse_str_to_list`` and its constructor
(``megatron/core/transformer/pipeline_parallel_layer_layout.py``) and ``validate_args``' VPP from the stage count
(``megatron/training/arguments.py``); the decoder layers each (virtual) stage builds must be the plan's."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

import archsim
from archsim.training.search_rows import megatron_args
from archsim.training.search_space import Candidate
from archsim.workload.model_files import load_transformer

ROOT = Path(__file__).resolve().parents[1]
GPT3_1_3B = ROOT / "configs" / "transformers" / "gpt3_1.3b.toml"  # 24 layers
KINDS = {"E": "embedding", "L": "loss", "t": "decoder", "m": "mtp"}  # parse_str_to_list's char2layer_type


def megatron_stages(layout: str, pp: int, mtp: int = 0) -> list[list[list[str]]]:
    """``layout`` as Megatron-LM reads it: commas dropped, ``(…)*n`` then ``x*n`` unrolled, stages split at ``|``,
    each character a layer kind (another refused); then, as the constructor does, the flat list laid out as
    ``[pp_rank][vpp_rank]`` with flat index ``vpp_rank·PP + pp_rank``, its length a multiple of PP; and the
    checks of ``validate_layer_layout``: embedding first and loss last in layer order, each once, ``mtp`` MTP layers
    (``--mtp-num-layers``), none before a decoder layer, all in one virtual stage, the last of its rank's."""
    text = layout.replace(",", "")
    for pattern in (r"\(([^)]+)\)\*(\d+)", r"(.)\*(\d+)"):
        text = re.sub(pattern, lambda m: m.group(1) * int(m.group(2)), text)
    flat = [[KINDS[char] for char in stage] for stage in text.split("|")]  # KeyError: an unknown character
    assert len(flat) % pp == 0, (layout, pp)
    vpp = len(flat) // pp
    grid = [[flat[v * pp + r] for v in range(vpp)] for r in range(pp)]
    order = [kind for v in range(vpp) for r in range(pp) for kind in grid[r][v]]
    assert order[0] == "embedding" and order[-1] == "loss" and order.count("embedding") == order.count("loss") == 1
    assert order.count("mtp") == mtp
    if mtp:
        assert "decoder" not in order[order.index("mtp"):]  # "decoder layers must be placed before MTP layers"
        assert all("mtp" not in grid[r][v] for r in range(pp) for v in range(vpp - 1))
        assert any(grid[r][-1].count("mtp") == mtp for r in range(pp))
    return grid


def _flag(args: str, name: str) -> str | None:
    words = shlex.split(args)  # the layout is quoted: | and * are the shell's
    return words[words.index(name) + 1] if name in words else None


def _check(args: str, pp: int, split: tuple[int, ...]) -> None:
    """The layout's decoder layers per (rank, chunk) are the plan's, in pipeline order; no flag it excludes."""
    layout = _flag(args, "--pipeline-model-parallel-layout")
    assert layout is not None, args
    grid = megatron_stages(layout, pp)
    vpp = len(grid[0])
    assert vpp * pp == len(split)
    assert [grid[s % pp][s // pp].count("decoder") for s in range(len(split))] == list(split)
    for excluded in ("--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers",
                     "--num-layers-per-virtual-pipeline-stage"):  # Megatron refuses them beside a layout
        assert excluded not in args
    assert int(_flag(args, "--pipeline-model-parallel-size")) == pp
    assert int(_flag(args, "--num-layers")) == sum(split)


@pytest.mark.parametrize(("pp", "chunks", "schedule", "split"), [
    (4, 1, "1f1b", (5, 8, 6, 5)),  # the middle differs: first/last cannot state it
    (2, 2, "interleaved-1f1b", (5, 7, 7, 5)),  # uneven with chunks: rank 0 holds 5 and 7, rank 1 7 and 5
    (4, 1, "1f1b", (1, 11, 1, 11)),
])
def test_a_split_first_and_last_cannot_state_gets_megatrons_layout(pp, chunks, schedule, split):
    c = load_transformer(GPT3_1_3B)
    k = Candidate(1, pp, 2, 1, "full", schedule, chunks, False, stage_layers=split)
    _check(megatron_args(k, 16, c, "bf16"), pp, split)


def test_a_split_first_and_last_state_keeps_them():
    """An even middle (5, 7, 7, 5) is still the first/last flags, no layout: such outputs are unchanged."""
    c = load_transformer(GPT3_1_3B)
    args = megatron_args(Candidate(1, 4, 2, 1, "full", "1f1b", 1, False, stage_layers=(5, 7, 7, 5)), 16, c, "bf16")
    assert (_flag(args, "--decoder-first-pipeline-num-layers"), _flag(args, "--decoder-last-pipeline-num-layers")) \
        == ("5", "5")
    assert "--pipeline-model-parallel-layout" not in args


def test_a_planned_search_states_every_uneven_split():
    """GPT-3 1.3B on 8 A100s, planned splits under 1F1B and interleaving: its rows of uneven interleaved splits
    (3,4,4,3,3,3,3,1 and 6,7,7,4 among them) had an empty Megatron line; now each row's line states its split."""
    found = archsim.search(GPT3_1_3B, cluster=ROOT / "configs" / "clusters" / "a100_node.toml", gpus=8,
                           global_batch=64, balance="planned", schedule=["1f1b", "interleaved-1f1b"], progress=False)
    uneven = [row for row in found.rows if row["stage_layers"] and len(set(row["stage_layers"].split(","))) > 1]
    assert uneven and all(row["megatron_args"] for row in found.rows)
    laid_out = [row for row in uneven if "--decoder-first-pipeline-num-layers" not in row["megatron_args"]]
    assert laid_out, "no row of a split the first/last flags cannot state: nothing here reads a layout"
    for row in laid_out:
        _check(row["megatron_args"], row["pp"], tuple(int(n) for n in row["stage_layers"].split(",")))
