"""``--stage-layers`` reads Megatron-LM's ``--pipeline-model-parallel-layout`` string as well as counts
(archsim.training.stage_layout). References: Megatron-LM's own documented layouts, quoted with their source
(NVIDIA/Megatron-LM, commit d98e8a64ddf34856e74b24714e3bedb2f5a39553), unrolled here by hand from the grammar its
docs state; the re-implementation of Megatron's reader in tests/test_megatron_layout.py (written from its source)
for the round trip; and ``archsim.train`` given the same split as counts, for the equivalence."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_megatron_layout import megatron_stages

import archsim
from archsim.cli import main
from archsim.errors import InputError
from archsim.training.stage_layout import layout_counts, layout_stages, megatron_layout, parse_stage_layers
from archsim.validate import shown

ROOT = Path(__file__).resolve().parents[1]
GPT3_1_3B = str(ROOT / "configs" / "transformers" / "gpt3_1.3b.toml")  # 24 layers
NODE = str(ROOT / "configs" / "clusters" / "a100_node.toml")  # 8 A100s


# docs/user-guide/features/pipeline_parallel_layout.md (d98e8a6): "--pipeline-model-parallel-size 16
# --pipeline-model-parallel-layout "Et*3|(tt|)*29,m|L"" for "61 decoder layers and one MTP layer" at PP 16, VPP 2,
# and its rank map: PP rank 0 "embedding + 3 × decoder | 2 × decoder", ranks 1~13 "2 × decoder | 2 × decoder",
# rank 14 "2 × decoder | mtp", rank 15 "2 × decoder | loss" (chunk c of rank r is stage c·16 + r).
DEEPSEEK_DOC = "Et*3|(tt|)*29,m|L"


def test_megatrons_documented_deepseek_layout_unrolls_to_its_rank_map():
    stages = layout_stages(DEEPSEEK_DOC)
    assert len(stages) == 32
    rank_map = {(0, 0): "Ettt", (0, 1): "tt", (14, 0): "tt", (14, 1): "m", (15, 0): "tt", (15, 1): "L",
                **{(r, c): "tt" for r in range(1, 14) for c in range(2)}}
    assert {(r, c): stages[c * 16 + r] for r in range(16) for c in range(2)} == rank_map
    assert "".join(stages).count("t") == 61 and "".join(stages).count("m") == 1
    # its m and L stand in stages of their own, which archsim's stage model does not price
    with pytest.raises(InputError, match="stage 30 \\('m'\\) has no decoder layer"):
        layout_counts(DEEPSEEK_DOC)


@pytest.mark.parametrize(("layout", "stages"), [
    # megatron/training/arguments.py, --pipeline-model-parallel-layout's help: 'e.g., "E|(t|)*3,m|m||L"'
    ("E|(t|)*3,m|m||L", ("E", "t", "t", "t", "m", "m", "", "L")),
    # the same doc page: "Empty stages are allowed, for example `E||t|L` (the second stage is empty)"
    ("E||t|L", ("E", "", "t", "L")),
    # parse_str_to_list's docstring (pipeline_parallel_layer_layout.py): "Ettt|(tt|)*29,m|L" is
    # [["E","t","t","t"]]+[["t","t"]]*29+[["m"],["L"]]
    ("Ettt|(tt|)*29,m|L", ("Ettt", *["tt"] * 29, "m", "L")),
])
def test_megatrons_documented_examples_unroll_as_documented(layout, stages):
    assert layout_stages(layout) == stages


def test_an_empty_stage_is_refused_saying_why():
    """Megatron allows ``E||t|L``; archsim's stage model does not price a stage without a decoder layer."""
    with pytest.raises(InputError, match="stage 0 \\('E'\\) has no decoder layer: archsim's stage model prices no"):
        layout_counts("E|t*4|t*4|t*4L")
    with pytest.raises(InputError, match="stage 1 \\('empty'\\) has no decoder layer"):
        layout_counts("Et||t|tL")


@pytest.mark.parametrize("split", [(24,), (4, 2, 3), (5, 7, 7, 5), (1, 11, 1, 11), (3,) * 8, (2, 1) * 16])
def test_write_then_read_gives_the_split_back_and_megatron_reads_the_same(split):
    layout = megatron_layout(split)
    assert layout_counts(layout) == split
    assert parse_stage_layers(layout, layers=sum(split), pp=len(split)) == split
    for pp in {len(split), max(len(split) // 2, 1)}:  # one chunk a rank, and two where there are 2+ stages
        if len(split) % pp == 0:  # Megatron's reader: rank r's chunk c is stage c·PP + r
            grid = megatron_stages(layout, pp)
            assert tuple(grid[s % pp][s // pp].count("decoder") for s in range(len(split))) == split
            assert parse_stage_layers(layout, layers=sum(split), pp=pp, interleave=len(split) // pp) == split


def test_the_docstring_example_is_written():
    assert megatron_layout((4, 2, 3)) == "Et*4|t*2|t*3L"
    assert megatron_layout((4, 2, 3), 1) == "Et*4|t*2|t*3,mL"


@pytest.mark.parametrize(("split", "pp", "mtp"), [((24,), 1, 1), ((4, 2, 3), 3, 1), ((5, 7, 7, 5), 2, 2)])
def test_a_layout_with_mtp_reads_back_and_megatron_takes_it(split, pp, mtp):
    """Written with its m's (search rows' megatron_args), read back as the split, and valid to Megatron's checks."""
    layout = megatron_layout(split, mtp)
    assert parse_stage_layers(layout, layers=sum(split), pp=pp, interleave=len(split) // pp, mtp=mtp) == split
    grid = megatron_stages(layout, pp, mtp)
    assert grid[(len(split) - 1) % pp][-1].count("mtp") == mtp  # in the last stage in pipeline order


@pytest.mark.parametrize(("text", "kwargs", "message"), [
    ("Et*5|t*7|t*7|t*4L", {"layers": 24}, "has 23 decoder layers \\(t\\), the model 24"),
    ("Et*6|t*6|t*6L", {"pp": 4}, "has 3 stages, not a multiple of --pp 4"),
    ("Et*3|t*3|t*3|t*3|t*3|t*3|t*3|t*3L", {"pp": 4},
     "8 stages: 2 per rank at --pp 4, and --interleave 1 runs 1 chunks a rank; give --interleave 2 or a layout of 4 stages"),
    ("Et*6|t*6|t*6|t*6L", {"pp": 4, "schedule": "zb-v"},
     "4 stages: 1 per rank at --pp 4, and zb-v runs 2 chunks a rank; give a layout of 8 stages"),
    ("Et*6|t*6|t*6|t*6L", {"pp": 4, "interleave": 2},
     "1 per rank at --pp 4, and --interleave 2 runs 2 chunks a rank; give --interleave 1 or a layout of 8 stages"),
    ("t*6|Et*6|t*6|t*6L", {}, "E \\(the embedding\\) must open the first stage, once \\(it has 1\\)"),
    ("Et*6|Et*6|t*6|t*6L", {}, "must open the first stage, once \\(it has 2\\)"),
    ("Et*6|t*6|t*6|t*6", {}, "L \\(the loss\\) must close the last stage, once \\(it has 0\\)"),
    ("Et*6|t*6|tL*6|t*6L", {}, "must close the last stage, once"),
    ("Et*6|t*6|t*6|t*5mtL", {}, "a t \\(decoder layer\\) after an m \\(MTP layer\\)"),
    ("Et*6|t*6|t*6|t*6mL", {"mtp": 0}, "has 1 MTP layers \\(m\\), the model trains 0 \\(--mtp-layers 0\\)"),
    ("Et*6|t*6|t*6|t*6L", {"mtp": 1}, "has 0 MTP layers \\(m\\), the model trains 1"),
    ("Et*6|x*6|t*6|t*6L", {}, "'x' is no layout character"),
    ("Et*6 | t*18L", {}, "' ' is no layout character"),
    ("E(tt)|t*18L", {}, "\\(\\) left after unrolling"),
    ("Et*999999999L", {}, "unrolls to more than 1,000,000 characters"),
    ("Et*" + "9" * 5000 + "L", {}, "unrolls to more than 1,000,000 characters"),  # past int()'s 4,300 digits
    ("Et*20|(t*2|)*500000,t*4L", {}, "unrolls to more than 1,000,000 characters"),
    ("Et*|t*4L", {}, r"\* left after unrolling"),
    ("Et*0|t*4L", {}, r"stage 0 \('E'\) has no decoder layer"),
])
def test_a_bad_layout_is_refused_in_one_line_naming_it(text, kwargs, message):
    with pytest.raises(InputError, match=message) as caught:
        parse_stage_layers(text, **kwargs)
    assert "\n" not in str(caught.value) and shown(text, 100) in str(caught.value)


def test_counts_still_read_as_before():
    assert parse_stage_layers("5, 7,7,5") == (5, 7, 7, 5)
    with pytest.raises(InputError, match="or a Megatron layout string"):
        parse_stage_layers("5,x")


@pytest.mark.parametrize(("pp", "interleave", "schedule", "layout", "counts"), [
    (4, 1, "1f1b", "Et*5|t*7|t*7|t*5L", (5, 7, 7, 5)),
    (2, 2, "1f1b", "Et*5|(t*7|)*2,t*5L", (5, 7, 7, 5)),  # interleaved: chunk c of rank r is stage 2c + r
    (2, 1, "zb-v", "Et*4|t*8|t*7|t*5L", (4, 8, 7, 5)),
])
def test_train_on_a_layout_is_train_on_its_counts(pp, interleave, schedule, layout, counts):
    """The same split given both ways prices the same iteration and memory (the counts are the reference)."""
    common = {"cluster": NODE, "pp": pp, "dp": 8 // pp, "global_batch": 16, "interleave": interleave,
              "schedule": schedule}
    (by_layout, speed), (by_counts, speed_counts) = (archsim.train(GPT3_1_3B, stage_layers=split, **common)
                                                     for split in (layout, list(counts)))
    assert by_layout.parallelism.stage_layers == counts
    assert by_layout.iteration_seconds == by_counts.iteration_seconds
    assert by_layout.memory == by_counts.memory and by_layout.breakdown == by_counts.breakdown
    assert speed == speed_counts


def test_the_command_reads_a_layout_and_megatrons_flag_points_to_it(capsys):
    args = ["train", GPT3_1_3B, "--cluster", NODE, "--pp", "4", "--dp", "2", "--global-batch", "16", "--format", "json"]
    assert main([*args, "--stage-layers", "Et*5|t*7|t*7|t*5L"]) == 0
    by_layout = capsys.readouterr().out
    assert main([*args, "--stage-layers", "5,7,7,5"]) == 0
    assert capsys.readouterr().out == by_layout
    assert main([*args, "--pipeline-model-parallel-layout", "Et*5|t*7|t*7|t*5L"]) == 2
    assert "archsim train takes --stage-layers 'Et*5|t*7|t*7|t*5L'" in capsys.readouterr().err


def test_the_library_points_megatrons_keyword_to_stage_layers_with_the_layout():
    with pytest.raises(InputError, match="archsim.train takes stage_layers='Et\\*12\\|t\\*12L'"):
        archsim.train(GPT3_1_3B, cluster=NODE, global_batch=8, pipeline_model_parallel_layout="Et*12|t*12L")
