"""User trial 31: an LLM engineer plans a Llama-2-13B-like and a GPT-3 run with the state sharding options
(``--distributed-optimizer``, ``--fsdp``), reading only docs/training.md. Hand checks against independent
references (Megatron-LM's bytes-per-parameter table, FSDP's 16/d plus units in flight, the ring collectives'
α–β formulas of archsim.collectives' docstring, the prefetch rule of docs/training.md worked by hand), and the
defects found, each test saying whether it failed before its fix."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.collectives import LinkClass
from archsim.errors import InputError
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.parallel import Parallelism

ROOT = Path(__file__).resolve().parents[1]
GPT3_13 = ROOT / "configs" / "transformers" / "gpt3_1.3b.toml"
NODE = ROOT / "configs" / "clusters" / "a100_node.toml"
SUPERPOD = ROOT / "configs" / "clusters" / "dgx_a100_superpod.toml"
GIB = 2**30

# Llama-2-13B's config.json (Touvron et al. 2023; the Hugging Face release): untied embeddings, no biases
LLAMA2_13B = {"model_type": "llama", "hidden_size": 5120, "intermediate_size": 13824, "num_hidden_layers": 40,
              "num_attention_heads": 40, "num_key_value_heads": 40, "vocab_size": 32000,
              "max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "tie_word_embeddings": False}


@pytest.fixture
def llama(tmp_path) -> str:
    path = tmp_path / "llama2_13b.json"
    path.write_text(json.dumps(LLAMA2_13B))
    return str(path)


def _llama_per_gpu_tp2() -> tuple[int, int, int]:
    """(a layer's, the root's, the rank's) parameters on one GPU at TP 2, by hand: a layer's q, k, v, o
    (4h²) and gate, up, down (3·h·ffn) split in 2, its two RMS norms' γ (2h) whole; the root the token table
    and the LM head (32,000 × 5,120 each, 32,000 a multiple of 128 × 2: no padding) split in 2 and the final
    norm's γ."""
    h, ffn = 5120, 13824
    layer = (4 * h * h + 3 * h * ffn) // 2 + 2 * h  # 158,597,120 + 10,240 = 158,607,360
    root = 2 * (32000 * h // 2) + h  # 81,920,000 × 2 + 5,120 = 163,845,120 (larger than a layer)
    return layer, root, 40 * layer + root  # 6,344,294,400 + 163,845,120 = 6,508,139,520


def test_llama2_13b_states_by_hand_in_bf16(llama):
    """Llama-2-13B, TP 2 · PP 1 · DP 8, bf16, on two DGX A100s: parameters per GPU 6,508,139,520 (above).
    Replicated: Megatron's 18 bytes a parameter, 117,146,511,360 B = 109.10 GiB. Distributed optimizer:
    6 + 12/8 = 7.5, 48,811,046,400 B = 45.46 GiB. FSDP: 16/8 = 2 a parameter, 13,016,279,040 B, plus the units
    in flight at the largest unit, the root (163,845,120 > a layer's 158,607,360) × 8 (two bf16 gathers, one fp32
    gradient) = 1,310,760,960 B: 14,327,040,000 B = 13.34 GiB. The activations are the options' business in
    none of the three, and peak_memory_gib is states + activations."""
    layer, root, parameters = _llama_per_gpu_tp2()
    assert (layer, root, parameters) == (158_607_360, 163_845_120, 6_508_139_520)
    keys = {"cluster": str(SUPERPOD), "tp": 2, "dp": 8, "global_batch": 64, "dtype": "bf16"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the sequence length and the idle GPUs' notes
        runs = {name: archsim.train(llama, **keys, **extra)[0] for name, extra in
                (("off", {}), ("zero1", {"distributed_optimizer": True}), ("fsdp", {"fsdp": True}))}
    hand = {"off": 18 * parameters, "zero1": 7.5 * parameters, "fsdp": 2 * parameters + 8 * root}
    assert hand == {"off": 117_146_511_360, "zero1": 48_811_046_400, "fsdp": 14_327_040_000}
    for name, result in runs.items():
        rank = result.memory[0]
        assert rank.parameters == parameters
        assert rank.states == pytest.approx(hand[name], rel=1e-12)
        assert rank.activations == runs["off"].memory[0].activations
        meta = result.to_dict()["meta"]
        assert meta["peak_memory_gib"] == pytest.approx((hand[name] + rank.activations) / GIB, rel=1e-12)
        assert meta["memory_per_rank"][0]["states_gib"] == pytest.approx(hand[name] / GIB, rel=1e-12)
    assert not runs["off"].to_dict()["meta"]["fits_memory"] and runs["zero1"].to_dict()["meta"]["fits_memory"]


def _ring(kind: str, s: float, n: int, link: LinkClass) -> float:
    """archsim.collectives' ring reduce-scatter or all-gather of S bytes over n GPUs:
    α₀ + (n − 1)α + γS/2 + (n − 1)/n · S/(ηB)."""
    assert kind in ("reduce-scatter", "all-gather")
    return link.launch_s + (n - 1) * link.alpha_s + link.copy_s_per_byte * s / 2 + \
        (n - 1) / n * s / (link.efficiency * link.bandwidth)


@pytest.mark.parametrize(("dtype", "grad", "param"), [("fp16", 2, 2), ("bf16", 4, 2)])
def test_distributed_optimizers_dp_term_is_reduce_scatter_plus_all_gather(dtype, grad, param):
    """GPT-3 1.3B (24 layers, hidden 2,048, vocab 50,257 padded to 50,304, 2,048 positions, tied) at DP 8 on one
    DGX A100: P = 24·(12·2048² + 13·2048) + 50,304·2048 + 2,048·2048 + 2·2048 = 1,315,819,520 parameters a GPU.
    The docs: the gradients reduce-scattered at the buffer's width (fp16 2, bf16 fp32 4 bytes) and the
    parameters all-gathered at theirs (2), both NCCL rings over NVLink; dp_communication is their sum."""
    h = 2048
    parameters = 24 * (12 * h * h + 13 * h) + 50304 * h + 2048 * h + 2 * h
    assert parameters == 1_315_819_520
    result, _ = archsim.train(str(GPT3_13), cluster=str(NODE), dp=8, global_batch=64, dtype=dtype,
                              distributed_optimizer=True)
    assert result.memory[0].parameters == parameters
    link = load_gpu_cluster(NODE, dtype).machine(Parallelism(1, 1, 8, 64, 1, distributed_optimizer=True)).links.dp
    assert isinstance(link, LinkClass)
    hand = _ring("reduce-scatter", grad * parameters, 8, link) + _ring("all-gather", param * parameters, 8, link)
    assert result.breakdown["dp_communication"] == pytest.approx(hand, rel=1e-12)


def test_fsdp_exposed_term_by_the_prefetch_rule_on_an_untied_llama(llama):
    """Llama-2-13B at TP 2 · DP 8, bf16, 8 micro-batches a rank, on two DGX A100s (the DP group crosses the
    servers: the per-unit collectives are slow). The root (token table, LM head, final norm: 163,845,120
    parameters) is gathered once and reduce-scattered once; each layer's 158,607,360 parameters gathered twice
    (2-byte bf16) and reduce-scattered once (4-byte fp32). The prefetch rule of docs/training.md, with f and b a
    40th of one micro-batch's forward and backward: forward g_root + g + 39·max(0, g − f) (the root computes
    nothing, so the first layer's gather is exposed whole); backward, the last layer's gather g exposed, then
    under each of the 39 later layers max(0, g + r − b) (the next gather and the previous reduce-scatter; the
    first of them has no previous: max(0, g − b)), under the first layer max(0, 0 + r − b) (the root is not
    gathered again), under the root's empty backward the first layer's r, then the root's r_root. The SMs free
    (``comm_sms`` 0), the rule's max(0, a − c); NCCL's SMs taken: tests/test_comm_sms_fsdp_cp.py."""
    from dataclasses import replace

    layer, root, _ = _llama_per_gpu_tp2()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result, _ = archsim.train(llama, cluster=replace(load_gpu_cluster(SUPERPOD, "bf16"), comm_sms=0), tp=2, dp=8,
                                  global_batch=64, dtype="bf16", fsdp=True)
    link = load_gpu_cluster(SUPERPOD, "bf16").machine(Parallelism(2, 1, 8, 64, 1, fsdp=True)).links.dp
    from archsim.collectives import collective_seconds  # the spanning group's collectives, as the docs price them

    g = float(collective_seconds("all-gather", 2 * layer, 8, link))
    r = float(collective_seconds("reduce-scatter", 4 * layer, 8, link))
    g_root = float(collective_seconds("all-gather", 2 * root, 8, link))
    r_root = float(collective_seconds("reduce-scatter", 4 * root, 8, link))
    f, b = result.forward_seconds / 8 / 40, result.backward_seconds / 8 / 40
    forward = g_root + g + 39 * max(0.0, g - f)
    backward = g + max(0.0, g - b) + 38 * max(0.0, g + r - b) + max(0.0, r - b) + r + r_root
    assert result.breakdown["fsdp_exposed_communication"] == pytest.approx(8 * (forward + backward), rel=1e-12)
    assert result.breakdown["dp_communication"] == 0


def test_search_row_and_train_agree_on_llama_with_fsdp(llama, capsys):
    """The search's rows with --fsdp, re-run by their own ``command`` (first row and last row), print the
    same iteration and peak memory: one memory function, one FSDP term."""
    assert main(["search", llama, "--cluster", str(NODE), "--global-batch", "64", "--dtype", "bf16", "--seq", "4096",
                 "--fsdp", "--format", "json", "--top", "3", "--schedule", "1f1b"]) == 0  # one schedule: PP 1 rows
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows and all(row["fsdp"] and row["pp"] == 1 for row in rows)
    for row in (rows[0], rows[-1]):
        argv = row["command"].split()[1:]  # 'archsim train …'
        assert main([*argv, "--format", "json"]) == 0
        meta = json.loads(capsys.readouterr().out)["meta"]
        assert meta["iteration_seconds"] == pytest.approx(row["iteration_seconds"], rel=1e-12)
        assert meta["peak_memory_gib"] == pytest.approx(row["peak_memory_gib"], rel=1e-12)


def _gantt_caption(path: Path) -> str:
    text = path.read_text()
    start = text.index("Each pipeline rank")
    return text[start:text.index(" s.", start) + 3]


def test_gantt_caption_names_fsdp_and_the_distributed_optimizers_collectives(tmp_path, capsys):
    """The Gantt's note named "the DP and embedding all-reduces" as the undrawn tail with --fsdp (no DP
    all-reduce runs: the tail is FSDP's exposed collectives of every micro-batch, the one place a user sees them
    beside the breakdown) and with --distributed-optimizer (a reduce-scatter and an all-gather). Failed before
    the fix; the caption without either option names the DP all-reduce alone (PP 1: no embedding all-reduce)."""
    base = ["train", str(GPT3_13), "--cluster", str(NODE), "--dp", "8", "--global-batch", "16"]
    captions = {}
    for name, extra in (("off", []), ("zero1", ["--distributed-optimizer"]), ("fsdp", ["--fsdp"])):
        out = tmp_path / f"{name}.html"
        assert main([*base, *extra, "--gantt", str(out)]) == 0
        capsys.readouterr()
        captions[name] = _gantt_caption(out)
    # PP 1: no embedding all-reduce runs, so none is named (tests/test_train_progress_caption.py)
    assert "(the DP all-reduce left to run, the optimizer step)" in captions["off"]
    assert "all-reduces" not in captions["fsdp"] and "FSDP&#x27;s all-gathers and reduce-scatters" in \
        captions["fsdp"]
    assert "reduce-scatter and all-gather" in captions["zero1"] and "DP and embedding all-reduces" not in \
        captions["zero1"]


@pytest.mark.parametrize(("flag", "keyword"), [("--fsdp", "fsdp=True"),
                                               ("--distributed-optimizer", "distributed_optimizer=True")])
def test_a_sharding_at_dp_1_is_run_and_noted(flag, keyword, capsys):
    """DP 1 shards nothing: the run is priced (as Megatron-LM and PyTorch run it) and one note line says so,
    naming the switch as the caller spells it (the flag from the command, the keyword from Python). Before, it
    ran silently (failed before). The distributed optimizer's figures at DP 1 are those without it: 20 bytes a
    parameter in fp16, Megatron's table at d = 1 (4 + 16/1)."""
    assert main(["train", str(GPT3_13), "--cluster", str(NODE), "--tp", "8", "--global-batch", "8", flag]) == 0
    err = capsys.readouterr().err.splitlines()
    notes = [line for line in err if "shards nothing" in line]
    assert len(notes) == 1 and notes[0].startswith(f"archsim train: note: {flag} with --dp 1 shards nothing")
    with pytest.warns(UserWarning, match=f"{keyword} with dp=1 shards nothing"):
        on, _ = archsim.train(str(GPT3_13), cluster=str(NODE), tp=8, global_batch=8,
                              **{keyword.split("=")[0]: True})
    off, _ = archsim.train(str(GPT3_13), cluster=str(NODE), tp=8, global_batch=8)
    if flag == "--distributed-optimizer":
        assert on.memory[0].states == pytest.approx(20 * off.memory[0].parameters, rel=1e-15)
        assert on.iteration_seconds == off.iteration_seconds
    else:
        assert on.breakdown["fsdp_exposed_communication"] == 0  # a collective over one GPU moves nothing


def test_runs_file_refusal_names_every_spelling_it_takes(tmp_path):
    """The runs reader takes true/false, 1/0, yes/no in any case and empty (false) for sequence_parallel,
    distributed_optimizer and fsdp alike; its refusal said only "expected true or false" (failed before)."""
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,global_batch,micro_batch,fsdp,distributed_optimizer,sequence_parallel\n"
                    "1,1,8,16,1,True,,\n1,1,8,16,1,yes,FALSE,no\n1,1,8,16,1,,1,0\n1,1,8,16,1,on,,\n")
    with pytest.raises(InputError, match=r"line 5.*expected true or false \(or 1/0, yes/no, any case; empty: "
                                         r"false\), got 'on'"):
        archsim.train_runs(str(GPT3_13), runs=runs, cluster=str(NODE))
    runs.write_text(runs.read_text().rsplit("\n", 2)[0] + "\n")
    rows = archsim.train_runs(str(GPT3_13), runs=runs, cluster=str(NODE))
    assert [row["fsdp"] for row in rows] == [True, True, False]
    assert [row["distributed_optimizer"] for row in rows] == [False, False, True]


MIXED = ROOT / "configs" / "clusters" / "mixed_counts_h100_a100.toml"


def test_fsdp_search_on_mixed_gpus_names_the_one_type_gpus(capsys):
    """One DGX H100 (8) and two 4-GPU A100 40GB servers: until 2026-12-03 FSDP ran PP 1, every configuration's one
    stage held H100s and A100s and the search was empty, with a note naming --gpus 8. FSDP now runs inside each
    pipeline stage, so the types take their own stages: the search fills PP > 1 rows, FSDP's, with no empty note;
    --gpus 8 still fills the first server's H100s."""
    # 1F1B alone (2 s, not 6 s over every schedule): the stages' GPU types are what is checked, not the schedule
    base = ["search", str(GPT3_13), "--cluster", str(MIXED), "--global-batch", "48", "--fsdp", "--schedule", "1f1b"]
    assert main([*base, "--format", "json", "--top", "3"]) == 0
    out = capsys.readouterr()
    rows = json.loads(out.out)["rows"]
    assert rows and all(r["fsdp"] and r["pp"] > 1 for r in rows) and "no configuration" not in out.err
    assert main([*base, "--gpus", "8", "--format", "json", "--top", "1"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows and rows[0]["gpus"] == 8 and rows[0]["fsdp"]


def test_fsdp_on_an_array_slice_prices_the_step_on_its_shard_as_the_distributed_optimizer():
    """GPT-3 1.3B on the 16-chip TPU-v4-like slice (DP 16, bf16, no recompute), the docs' command: the energy
    model prices the same ops with either sharding and each chip's step on its 1/16 (docs: FSDP's step is the
    distributed optimizer's), and the collectives' links are not counted, so the two energies are equal, below
    the replicated run's by 15/16 of its step's DRAM joules; FSDP's exposed collectives lengthen the iteration."""
    cluster = str(ROOT / "configs" / "clusters" / "tpu_v4_like_slice.toml")
    keys = {"cluster": cluster, "dp": 16, "global_batch": 512, "recompute": "none", "dtype": "bf16"}
    off, zero1, full = (archsim.train(str(GPT3_13), **keys, **extra)[0] for extra in
                        ({}, {"distributed_optimizer": True}, {"fsdp": True}))
    energy = [r.to_dict()["meta"]["energy_j"] for r in (off, zero1, full)]
    assert energy[2] == pytest.approx(energy[1], rel=1e-12)
    # the step's bytes, 34 a parameter in bf16 (docs/training.md), over 2-byte words at the table's DRAM read
    # energy: 15 × 1,315,819,520 parameters × 17 words × 325 pJ = 109.05 J fewer than 16 whole steps
    from archsim.energy.table import access_energies
    from archsim.training.energy import device_array

    pj = access_energies(device_array(load_gpu_cluster(cluster, "bf16").gpu_at(0), "bf16")).dram_read_pj
    assert energy[0] - energy[1] == pytest.approx(15 * 1_315_819_520 * 34 / 2 * pj * 1e-12, rel=1e-9)
    assert full.iteration_seconds > zero1.iteration_seconds  # 0.151 s exposed against 0.032 s of DP sync
    assert full.breakdown["fsdp_exposed_communication"] > zero1.breakdown["dp_communication"]
