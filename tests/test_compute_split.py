"""``train``'s ``compute_split_seconds``: the finishing rank's compute and recompute by what they are.

References: the breakdown's own compute + recompute (the parts must add up to it, every part counted once); the
kernels of a tiny GPT's op list counted by hand × the training fit's gap per kernel (vTrain's A100 fit, 32.4 µs,
docs/accuracy.md); a device file stating no launch (no gap at all); PyTorch's fp32 kernels, queued inside a step
(``kernel_ops.queued``: no gap); ``host_bound_seconds`` (the host floor is that figure, not another estimate of
it); the printed rows' forward TP collectives (what a full recompute runs again); and iteration times recorded
before the split existed (splitting reads the op times apart: no prediction may move).
"""

from __future__ import annotations

import json
import re
import warnings

import pytest
from test_docs import ROOT
from train_cli import run_cli
from train_cli import train_json as shared_train_json

import archsim

LAUNCH_S = 32.4e-6  # the training fit's gap per kernel (vTrain's A100 runs, docs/training.md)
PARTS = ("gemm", "memory_bound", "kernel_gaps", "host_floor", "recompute_communication", "other")

# Kernels of the tiny GPT's Megatron list (standard attention, TP 1), counted from the op list
# (archsim.training.layer_ops.block_work; `piece_works(...)` prints it): every op below is one kernel —
# a GEMM op holds one GEMM and no elementwise pass, a memory-bound op one pass.
#   layer forward (13): norm1, qkv, scores, softmax, attn_dropout, context, proj, residual1, norm2, fc1, bias_gelu,
#                       fc2, residual2
#   layer backward (19): residual2, fc2 G, fc2 D, bias_gelu, fc1 G, fc1 D, norm2, residual1, proj G, proj D,
#                        context.dB, context D, attn_dropout, softmax, scores.dB, scores D, qkv G, qkv D, norm1
#   embedding (2 + 2): embedding, embedding_dropout; embedding_dropout, embedding G
#   head (3 + 4): final_norm, lm_head, cross_entropy; cross_entropy, lm_head D, lm_head G, final_norm
LAYER_F, LAYER_B, EMBEDDING, HEAD = 13, 19, 4, 7
CORE = 4  # a selective recompute's kernels: scores, softmax, attn_dropout, context (Korthikanti et al. 2022)


CLUSTERS = ROOT / "configs" / "clusters"
MEDIUM = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")
MIXTRAL = str(ROOT / "tests" / "data" / "hf_configs" / "mixtral_8x7b.json")
TINY = {"model_type": "gpt2", "n_layer": 2, "n_embd": 64, "n_head": 4, "n_positions": 32, "vocab_size": 1000,
        "n_inner": 256, "tie_word_embeddings": True}
SMALL = {"global_batch": 4, "micro_batch": 1, "attention": "standard", "dtype": "fp16"}
# (model — "tiny" for the file below —, cluster, train's keywords): a spread of what compute is made of
CASES = {
    "none": ("tiny", "h200_1gpu", dict(SMALL, recompute="none")),
    "selective": ("tiny", "h200_1gpu", dict(SMALL, recompute="selective")),
    "full": ("tiny", "h200_1gpu", dict(SMALL, recompute="full")),
    "pp2": ("tiny", "a100_node", dict(SMALL, pp=2, global_batch=8)),
    "tp2_full": ("tiny", "a100_node", dict(SMALL, tp=2, recompute="full")),
    "eager": ("tiny", "h200_1gpu", dict(SMALL, implementation="pytorch-eager")),
    "fp32_hugging_face": ("tiny", "h100_1gpu", dict(SMALL, dtype="fp32", implementation="pytorch-eager",
                                                   recompute="none")),
    "flash": ("tiny", "h200_1gpu", dict(SMALL, attention="flash")),
    "cp4_medium": (MEDIUM, "a100_node", {"cp": 4, "dp": 2, "global_batch": 4, "cp_comm": "a2a+p2p",
                                         "cp_hierarchy": (2, 2)}),
    "moe_mtp": (MIXTRAL, "a100_node", {"tp": 8, "global_batch": 8, "micro_batch": 1, "seq": 512, "dtype": "bf16",
                                           "sequence_parallel": True, "mtp_layers": 1}),
    "mixed_pp3": (MEDIUM, "mixed_h100_a100_v100", {"tp": 8, "pp": 3, "global_batch": 6, "micro_batch": 1}),
}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("split") / "tiny_gpt.json"
    path.write_text(json.dumps(TINY), encoding="utf-8")
    return str(path)


def run(case, tiny: str | None):
    """``archsim.train``'s result of one case (its layout's and cluster's warnings are beside the point here)."""
    model, cluster, kwargs = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result, _ = archsim.train(tiny if model == "tiny" else model, cluster=str(CLUSTERS / f"{cluster}.toml"),
                                  **kwargs)
    return result


def train_json(args: list[str]) -> dict:
    """:func:`train_cli.train_json` with a shipped cluster's name for its file."""
    return shared_train_json([str(CLUSTERS / f"{a}.toml") if a in {"h200_1gpu", "h100_1gpu", "a100_node",
                                                                     "a100_node_device_file"} else a for a in args])


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_parts_add_up_to_compute_and_recompute(name, tiny):
    """Over recompute none/selective/full, PP 2, TP 2, eager PyTorch, fp32 Hugging Face GPT-2, flash attention, CP,
    MTP and a mixed cluster: the parts sum to the breakdown's compute + recompute, none is negative, the remainder
    ``other`` is 0 (every second is one of the named parts), and the host floor is ``host_bound_seconds``."""
    result = run(CASES[name], tiny)
    split, b = result.compute_split_seconds, result.breakdown
    assert tuple(split) == PARTS
    whole = b["compute"] + b["recompute"]
    assert sum(split.values()) == pytest.approx(whole, rel=1e-9, abs=0)
    assert min(split.values()) >= 0.0
    assert split["other"] == 0.0
    assert split["host_floor"] == result.host_bound_seconds
    assert split["gemm"] > 0 and split["memory_bound"] > 0
    if result.parallelism.recompute != "full":
        assert split["recompute_communication"] == 0.0


@pytest.mark.parametrize(("recompute", "again"), [("none", 0), ("selective", CORE), ("full", LAYER_F)])
def test_kernel_gaps_are_the_gap_times_the_kernels_counted_by_hand(tiny, recompute, again):
    """2 layers, 4 micro-batches of one sequence: 4 × (2 × (32 + the recompute's) + 4 + 7) kernels × 32.4 µs."""
    doc = train_json([tiny, "--cluster", "h200_1gpu", "--global-batch", "4", "--micro-batch", "1",
                      "--recompute", recompute, "--attention", "standard", "--dtype", "fp16"])
    kernels = 4 * (2 * (LAYER_F + LAYER_B + again) + EMBEDDING + HEAD)
    assert doc["meta"]["compute_split_seconds"]["kernel_gaps"] == pytest.approx(kernels * LAUNCH_S, rel=1e-12)


def test_a_full_recompute_runs_the_forward_collectives_again(tiny):
    """TP 2 (no sequence parallelism): the recompute's communication is each layer's forward TP collectives (the
    printed rows' F collectives, per micro-batch) × layers × micro-batches; embedding and head are not recomputed."""
    doc = train_json([tiny, "--cluster", "a100_node", "--tp", "2", "--global-batch", "4", "--micro-batch", "1",
                      "--recompute", "full", "--attention", "standard", "--dtype", "fp16"])
    forward = sum(r["seconds"] for r in doc["rows"] if r["piece"] == "layer" and r["op"] == "F" and " (" in r["name"])
    assert forward > 0
    again = doc["meta"]["compute_split_seconds"]["recompute_communication"]
    assert again == pytest.approx(4 * 2 * forward, rel=1e-12)


def test_fp32_kernels_queued_in_a_step_pay_no_gap(tiny):
    """PyTorch's fp32 kernels on a catalog GPU are queued (kernel_ops.queued): no per-kernel gap at all."""
    doc = train_json([tiny, "--cluster", "h100_1gpu", "--global-batch", "2", "--micro-batch", "1", "--recompute",
                      "none", "--attention", "standard", "--dtype", "fp32", "--implementation", "pytorch-eager"])
    assert doc["meta"]["compute_split_seconds"]["kernel_gaps"] == 0.0


def test_a_device_file_without_a_launch_has_no_kernel_gaps(tiny, tmp_path):
    """The catalog A100 as a device file (arrays) with its launch_s set to 0: kernel_gaps exactly 0; as shipped
    (launch_s 32.4 µs) the same run has them, so the test can tell."""
    text = (ROOT / "configs" / "devices" / "a100_80gb_as_arrays.toml").read_text(encoding="utf-8")
    assert re.search(r"^launch_s = 32.4e-6$", text, flags=re.MULTILINE)
    (tmp_path / "devices").mkdir()
    (tmp_path / "clusters").mkdir()
    no_launch = re.sub(r"^launch_s = .*$", "launch_s = 0", text, flags=re.MULTILINE)
    (tmp_path / "devices" / "a100.toml").write_text(no_launch, encoding="utf-8")
    cluster = (ROOT / "configs" / "clusters" / "a100_node_device_file.toml").read_text(encoding="utf-8")
    path = tmp_path / "clusters" / "a100_no_launch.toml"
    path.write_text(cluster.replace("../devices/a100_80gb_as_arrays.toml", "../devices/a100.toml"), encoding="utf-8")
    args = [tiny, "--global-batch", "2", "--micro-batch", "1", "--attention", "standard", "--dtype", "fp16"]
    without = train_json([*args, "--cluster", str(path)])["meta"]["compute_split_seconds"]
    shipped = train_json([*args, "--cluster", "a100_node_device_file"])["meta"]["compute_split_seconds"]
    assert without["kernel_gaps"] == 0.0
    assert shipped["kernel_gaps"] > 0.0


def test_the_table_says_each_parts_share(tiny):
    """One line: compute and recompute's seconds and each part's share, shares adding to about 100%."""
    h200 = str(CLUSTERS / "h200_1gpu.toml")
    out = run_cli(["train", tiny, "--cluster", h200, "--global-batch", "4", "--micro-batch", "1",
                   "--attention", "standard"])
    line = next(x for x in out.splitlines() if x.startswith("# compute_split_seconds: "))
    assert re.search(r"s of compute and recompute — gemm [\d.]+%, memory-bound [\d.]+%, kernel gaps", line)
    shares = [float(v) for v in re.findall(r" ([\d.]+)%", line)]
    assert sum(shares) == pytest.approx(100, abs=0.5)
    csv = run_cli(["train", tiny, "--cluster", h200, "--global-batch", "4", "--micro-batch", "1",
                   "--attention", "standard", "--format", "csv"])
    assert "gemm: " in csv.splitlines()[1]  # the seconds, one line, as breakdown_seconds


def test_every_part_the_split_returns_has_the_tables_name_and_every_name_a_part(tiny):
    """Failed before: the split's keys were written twice, in ``compute_split``'s dict and the table's names (a key
    added to the one only made the table raise KeyError). Now one list (``SPLIT_PARTS``) keys both: a run's keys are
    the documented six in order (PARTS above), and six parts of 1 s each make the table name each once, in that
    order: 6 s, each 1/6 = 17% to two digits (names as docs/training.md writes them)."""
    from archsim.training.compute_classes import SPLIT_PARTS
    from archsim.training.table_lines import split_line

    split = run(CASES["pp2"], tiny).compute_split_seconds
    assert list(split) == [part.key for part in SPLIT_PARTS] == list(PARTS)
    assert split_line(dict.fromkeys(split, 1.0)) == (
        "6 s of compute and recompute — gemm 17%, memory-bound 17%, kernel gaps 17%, host floor 17%, "
        "recompute's communication 17%, other 17%")


# iteration_seconds of archsim train before the compute split was added (one run each, recorded): reading the ops'
# times apart must leave every prediction where it was (the PP 2 run's with the overlapped sends it was recorded under;
# its TP 4 all-reduces on NCCL's LL128 below 16 MB since 2026-12-06: 0.11011969144343092 on Simple alone)
BEFORE = {
    "medium_h200_mb8": ((MEDIUM, "h200_1gpu", {"global_batch": 32, "micro_batch": 8, "dtype": "fp16"}),
                        0.3035986693349339),
    "medium_eager_mb1": ((MEDIUM, "h200_1gpu", {"global_batch": 32, "micro_batch": 1, "dtype": "fp16",
                                                "implementation": "pytorch-eager"}), 2.4657802006612073),
    "medium_tp4_pp2": ((MEDIUM, "a100_node", {"tp": 4, "pp": 2, "global_batch": 4, "micro_batch": 2,
                                                "p2p": "overlapped"}),
                       0.10998143920039413),
    "medium_cp4": ((MEDIUM, "a100_node", {"cp": 4, "dp": 2, "global_batch": 4, "cp_comm": "a2a+p2p",
                                          "cp_hierarchy": (2, 2)}), 0.18783266439261687),
}


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_no_prediction_moved(name):
    (model, cluster, kwargs), seconds = BEFORE[name]
    result = run((model, cluster, kwargs), None)
    assert result.iteration_seconds == pytest.approx(seconds, rel=1e-12)
