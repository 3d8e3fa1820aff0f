"""A training-systems engineer's first afternoon (Megatron-LM and Calculon known): Llama-3-8B and a Mistral-7B
``config.json`` on 2 × 8 H200 with eight 400 Gb/s rails, a hand-written runs file, ``--sweep``, and the table's
digits.

Each test here failed on the code before its fix (the docstring says how). The references are the docs' own
statements: docs/cli.md, "An unknown flag names the command's flag it resembles, as an unknown key or keyword
does"; IEEE 754's 17 significant digits of a double.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
MODEL = str(ROOT / "configs/transformers/gpt_1024h_24l.json")
CLUSTER = str(ROOT / "configs/clusters/a100_node.toml")


def _error(capsys, argv: list[str]) -> str:
    """The one stderr line of a refused command (exit status 2)."""
    capsys.readouterr()
    status = main(argv)
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1, (status, err)
    return err


@pytest.mark.parametrize(("header", "row", "typed", "meant"), [
    ("tp,pp,dp,micro_batch,global_batch,sequnce_parallel", "2,1,4,1,64,true", "sequnce_parallel",
     "sequence_parallel"),
    ("tp,pp,dp,micro_batch,global_batch,measured_second", "2,1,4,1,64,3.1", "measured_second", "measured_seconds"),
])
def test_a_misspelt_runs_column_is_told_the_column_it_resembles(tmp_path, capsys, header, row, typed, meant):
    """Failed before: ``sequnce_parallel`` in a runs file's header was refused as "unknown column(s)
    sequnce_parallel" and a list of 25 columns to read through, where the cluster file's misspelt key, a misspelt
    flag and a misspelt choice name the one they resemble; now the column does too."""
    path = tmp_path / "runs.csv"
    path.write_text(f"{header}\n{row}\n")
    err = _error(capsys, ["train", MODEL, "--cluster", CLUSTER, "--runs", str(path)])
    assert f"unknown column(s) {typed} (did you mean '{meant}'?)" in err, err


@pytest.mark.parametrize(("column", "cell", "meant"), [
    ("recompute", "ful", "full"), ("fp8", "hybird", "hybrid"), ("cp_comm", "all-gather", "all_gather"),
    ("sequence_parallel", "ture", "true"),
])
def test_a_misspelt_runs_cell_is_told_the_value_it_resembles(tmp_path, capsys, column, cell, meant):
    """Failed before: a runs file's cell ``ful`` (recompute), ``hybird`` (fp8), ``all-gather`` (cp_comm) or
    ``ture`` was refused listing the choices without the one meant, where ``--recompute ful`` says "did you mean
    'full'?"; now the cell's line says it too."""
    path = tmp_path / "runs.csv"
    path.write_text(f"tp,pp,dp,micro_batch,global_batch,{column}\n1,1,8,1,8,{cell}\n")
    err = _error(capsys, ["train", MODEL, "--cluster", CLUSTER, "--runs", str(path)])
    assert f"field '{column}'" in err and f"(did you mean '{meant}'?)" in err, err


def test_a_cell_unlike_every_choice_gets_no_hint(tmp_path, capsys):
    """The hint can fail: a cell like no choice (``xyz``) is refused without a guess."""
    path = tmp_path / "runs.csv"
    path.write_text("tp,pp,dp,micro_batch,global_batch,recompute\n1,1,8,1,8,xyz\n")
    err = _error(capsys, ["train", MODEL, "--cluster", CLUSTER, "--runs", str(path)])
    assert "got 'xyz'" in err and "did you mean" not in err, err


@pytest.mark.parametrize(("sweep", "meant"), [
    ("sequence_paralel=false,true", "sequence_parallel"), ("microbatch=1,2", "micro_batch"),
    ("recompute=ful,none", "full"), ("fp8=none,hybird", "hybrid"), ("schedule=1f1b,dualpipe", "dualpipev"),
])
def test_a_misspelt_sweep_axis_or_value_is_told_the_one_it_resembles(capsys, sweep, meant):
    """Failed before: ``--sweep sequence_paralel=false,true`` was refused with the 21 axes listed and no word of
    the one meant, and ``--sweep recompute=ful,none`` without the hint ``--recompute ful`` gets; now both name it."""
    err = _error(capsys, ["train", MODEL, "--cluster", CLUSTER, "--global-batch", "8", "--sweep", sweep])
    assert "argument --sweep" in err and f"(did you mean '{meant}'?)" in err, err


def test_a_misspelt_train_schedule_is_told_the_one_it_resembles(capsys):
    """Failed before: ``train --schedule dualpipe`` listed sixteen names without the one meant, where ``search
    --schedule dualpipe`` says "did you mean 'dualpipev'?"; now train says it too (DeepSeek's DualPipe is not
    modelled, its V-shaped DualPipeV is)."""
    err = _error(capsys, ["train", MODEL, "--cluster", CLUSTER, "--global-batch", "8", "--pp", "2",
                          "--schedule", "dualpipe"])
    assert "unknown schedule 'dualpipe' (did you mean 'dualpipev'?)" in err, err


def test_a_sweep_key_unlike_every_axis_gets_no_hint(capsys):
    """The hint can fail: ``hidden`` (not an axis: a sweep runs one model's width; ``seq`` is an axis since
    2026-12-05) resembles none."""
    err = _error(capsys, ["train", MODEL, "--cluster", CLUSTER, "--global-batch", "8", "--sweep", "hidden=1024,2048"])
    assert "got 'hidden=1024,2048'" in err and "did you mean" not in err, err


def _table_utilization(capsys, digits: str) -> tuple[int, str, str]:
    capsys.readouterr()
    status = main(["gemm", "--m", "100", "--k", "100", "--n", "100", "--array", "32x32", "--precision", digits])
    out, err = capsys.readouterr()
    return status, out, err


def test_a_table_prints_no_more_digits_than_a_double_holds(capsys):
    """Failed before: ``--precision 40`` printed a GEMM's utilization as 0.3147155978085723337933643506403313949704,
    the double's exact binary expansion: 40 "significant" digits of which IEEE 754 gives 17 (max_digits10), the
    rest noise no csv or json of the same run has. Now 1 … 17 are taken and 18 or more refused in one line."""
    status, out, _ = _table_utilization(capsys, "17")
    assert status == 0
    utilization = 100 * 100 * 100 / (3103 * 32 * 32)  # MACs over cycles × PEs (a 32×32 array's 3,103 cycles)
    assert f"{utilization:.17g}" in out, out
    for digits in ("18", "40"):
        status, _, err = _table_utilization(capsys, digits)
        assert status == 2 and err.count("\n") == 1 and "1…17" in err and f"got '{digits}'" in err, err


# Megatron-LM's pretrain_gpt.py flags (megatron/training/arguments.py) and the setting archsim names for each,
# written from archsim's own --help texts, which cite them ("Megatron-LM's --context-parallel-size").
MEGATRON = [
    ("train", ["--tensor-model-parallel-size", "2"], "--tp"),
    ("train", ["--context-parallel-size", "2"], "--cp"),
    ("train", ["--bf16"], "--dtype bf16"),
    ("train", ["--fp8-format", "hybrid"], "--fp8"),
    ("train", ["--use-distributed-optimizer"], "--distributed-optimizer"),
    ("train", ["--overlap-grad-reduce"], "--dp-overlap bucketed"),
    ("train", ["--recompute-activations"], "--recompute selective"),
    ("train", ["--virtual-pipeline-model-parallel-size", "2"], "--interleave"),
    ("search", ["--bf16"], "--dtype bf16"),
    ("search", ["--micro-batch-size", "2"], "--max-micro-batch"),
    ("search", ["--tensor-model-parallel-size", "2"], "archsim search takes --tp"),  # --tp: the TPs it tries
]


@pytest.mark.parametrize(("command", "flag", "meant"), MEGATRON)
def test_a_megatron_flag_is_told_archsims_name_for_it(capsys, command, flag, meant):
    """Failed before: ``train --fp8-format hybrid`` (the flag train's own --help cites as Megatron-LM's) was told
    "did you mean '--format'?", the output format; ``--bf16``, ``--tensor-model-parallel-size 2`` and
    ``--overlap-grad-reduce`` got no hint at all. Now each names archsim's setting."""
    err = _error(capsys, [command, MODEL, "--cluster", CLUSTER, "--global-batch", "8", *flag])
    assert f"({flag[0]} is Megatron-LM's: " in err and meant in err and "did you mean" not in err, err


def test_a_megatron_keyword_is_told_archsims_keyword():
    """The library's keyword in Megatron-LM's name is told the same, in keywords: ``bf16=True`` → ``dtype='bf16'``."""
    import archsim
    from archsim.errors import InputError

    with pytest.raises(InputError) as refused:
        archsim.train(MODEL, cluster=CLUSTER, global_batch=8, bf16=True)
    assert "bf16 is Megatron-LM's: archsim.train takes dtype='bf16'" in str(refused.value)


@pytest.mark.parametrize(("column", "cell"), [
    ("global_batch", "100000000000000000000"), ("tp", "2147483648"), ("micro_batch", "4294967296"),
])
def test_a_runs_cell_past_the_integer_bound_is_refused_as_its_flag_refuses_it(tmp_path, capsys, column, cell):
    """Failed before: a runs file's integer cell had no upper bound, where README's input limits say integers are
    1 … 2³¹ − 1 and ``--global-batch 100000000000000000000`` is refused so: ``global_batch`` 10²⁰ was refused as
    field 'max-ops' ("this job simulates about 150,000,000,000,000,000,000 ops … beyond --max-ops's range"), a flag
    the user never gave, and ``tp`` 2³¹ as not dividing the heads. Now the cell is named with the bound."""
    row = {"tp": "2", "pp": "1", "dp": "1", "micro_batch": "1", "global_batch": "8", column: cell}
    path = tmp_path / "runs.csv"
    path.write_text(",".join(row) + "\n" + ",".join(row.values()) + "\n")
    err = _error(capsys, ["train", MODEL, "--cluster", CLUSTER, "--runs", str(path)])
    assert f"line 2, field '{column}': expected a positive integer in 1…{2**31 - 1}, got '{cell}'" in err, err


def test_a_runs_cell_at_the_integer_bound_is_read(tmp_path):
    """The bound is inclusive, as the flags': 2³¹ − 1 itself is a global batch the reader takes."""
    from archsim.training.runs import read_runs

    path = tmp_path / "runs.csv"
    path.write_text(f"tp,pp,dp,micro_batch,global_batch\n1,1,1,1,{2**31 - 1}\n")
    assert read_runs(path)[0].par.global_batch == 2**31 - 1


# mistralai/Mistral-7B-v0.1's config.json (shape fields); transformers' MistralConfig.__init__ defaults
# (src/transformers/models/mistral/configuration_mistral.py): num_key_value_heads=8 (None: the heads, "for backward
# compatibility"), sliding_window=4096.
MISTRAL_7B = {"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
              "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000,
              "max_position_embeddings": 32768, "sliding_window": 4096, "tie_word_embeddings": False}


def _mistral(tmp_path, **change):
    import json

    from archsim.workload.model_files import load_transformer

    fields = {k: v for k, v in {**MISTRAL_7B, **change}.items() if v is not ...}
    path = tmp_path / "mistral_7b" / "config.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(fields))
    return load_transformer(path)


def test_a_hand_written_mistral_config_without_kv_heads_is_refused_not_priced_as_full_attention(tmp_path):
    """Failed before: a Mistral config.json written without ``num_key_value_heads`` was priced with 32 key/value
    heads, 8.05 B parameters, where transformers' MistralConfig builds the absent key as 8 (GQA, 7.24 B): another
    model than the user's, without a word. Now the key is asked for, naming transformers' reading; a null still reads
    as the heads, as transformers reads it."""
    from archsim.errors import InputError

    assert _mistral(tmp_path).kv_heads == 8
    assert _mistral(tmp_path, num_key_value_heads=None).kv_heads == 32  # transformers: None → the heads
    with pytest.raises(InputError, match="MistralConfig reads it absent as 8") as refused:
        _mistral(tmp_path, num_key_value_heads=...)
    assert refused.value.where.field == "num_key_value_heads"


def test_a_hand_written_mistral_config_without_a_window_is_refused_not_priced_without_one(tmp_path):
    """Failed before: a Mistral config.json without ``sliding_window`` ran with no window, where MistralConfig
    builds a 4,096-token window: at 32K tokens its attention is a quarter of the full causal one. Now it is asked for;
    null is no window (Mistral v0.2 and later state it so)."""
    from archsim.errors import InputError

    assert _mistral(tmp_path).sliding_window == 4096
    assert _mistral(tmp_path, sliding_window=None).sliding_window is None
    with pytest.raises(InputError, match="MistralConfig reads it absent as 4096") as refused:
        _mistral(tmp_path, sliding_window=...)
    assert refused.value.where.field == "sliding_window"


def test_a_llama_config_without_kv_heads_still_reads_the_heads(tmp_path):
    """LlamaConfig's default is None, the heads: a Llama config.json may leave the key out, as Llama 1's did."""
    assert _mistral(tmp_path, model_type="llama", num_key_value_heads=..., sliding_window=...).kv_heads == 32


@pytest.mark.parametrize(("model_type", "extra", "reader", "default"), [
    ("qwen2", {}, "Qwen2Config", 32), ("qwen3", {"head_dim": 128}, "Qwen3Config", 32),
    ("mixtral", {"num_local_experts": 8, "num_experts_per_tok": 2}, "MixtralConfig", 8),
])
def test_other_configs_whose_class_default_is_not_the_heads_ask_for_kv_heads(tmp_path, model_type, extra, reader,
                                                                             default):
    """Failed before: Qwen2Config and Qwen3Config build an absent ``num_key_value_heads`` as 32 and MixtralConfig
    as 8 (transformers' class defaults, whatever the heads); archsim read it as the heads (28 on Qwen2-7B's shape:
    another model). Now it is asked for; stated, it is read."""
    from archsim.errors import InputError

    shape = {"hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28,
             "num_key_value_heads": 4, "vocab_size": 152064, "max_position_embeddings": 32768, "sliding_window": None,
             "tie_word_embeddings": False, **extra}
    assert _mistral(tmp_path, model_type=model_type, **{k: v for k, v in shape.items()}).kv_heads == 4
    with pytest.raises(InputError, match=f"{reader} reads it absent as {default}"):
        _mistral(tmp_path, model_type=model_type, **{**shape, "num_key_value_heads": ...})


H200_CLUSTER = """[cluster]
[[servers]]
count = 2
gpus = 8
gpu = "h200-141gb"
{usable}
[network]
nics_per_server = 8
nic_gbps = 400
"""


def _h200(tmp_path, usable: str = "") -> str:
    path = tmp_path / f"h200{len(usable)}.toml"
    path.write_text(H200_CLUSTER.format(usable=usable))
    return str(path)


def test_usable_memory_is_what_a_run_must_fit_in(tmp_path):
    """Failed before (the key was unknown): train's ``fits_memory`` and search's out-of-memory rule compared a rank's
    states and activations with the board's whole memory (139.8 GiB on an H200: what CUDA gave the measured run), which
    docs/training.md says leaves out the CUDA context, NCCL's buffers and fragmentation; a user reserving them had no
    way to say so. ``usable_memory_gib = 96`` caps what fits; the iteration's time is the same."""
    import warnings

    import archsim

    layout = {"tp": 1, "pp": 2, "dp": 8, "global_batch": 64, "dtype": "bf16", "recompute": "none", "seq": 8192}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole, _ = archsim.train("llama3_8b", cluster=_h200(tmp_path), **layout)
        capped, _ = archsim.train("llama3_8b", cluster=_h200(tmp_path, "usable_memory_gib = 96"), **layout)
    assert capped.iteration_seconds == whole.iteration_seconds
    assert whole.memory_capacity_gib == pytest.approx(139.8, abs=0.05)  # gpu_train_measured_h200.csv's total
    assert capped.memory_capacity_gib == 96
    peak = whole.peak_memory_gib  # Llama-3-8B at PP 2 · DP 8 without recompute: between the two capacities
    assert 96 < peak < 139.8 and whole.fits[0] and not capped.fits[0]
    # 1F1B's layouts (0.3 s, not 3 s over every schedule): 13 of their top 50 on the whole board hold over 96 GiB
    found = archsim.search("llama3_8b", cluster=_h200(tmp_path, "usable_memory_gib = 96"), global_batch=64,
                           dtype="bf16", top=50, refine=0, progress=False, schedule="1f1b")
    assert found.rows and all(row["peak_memory_gib"] <= 96 for row in found.rows)
    assert any(row["peak_memory_gib"] > 96 for row in archsim.search(
        "llama3_8b", cluster=_h200(tmp_path), global_batch=64, dtype="bf16", top=50, refine=0, progress=False,
        schedule="1f1b").rows)


@pytest.mark.parametrize(("usable", "words"), [
    ("usable_memory_gib = 150", "above the NVIDIA H200"), ("usable_memory_gib = 0", "positive number of GiB"),
    ('usable_memory_gib = "120"', "positive number of GiB"),
])
def test_usable_memory_past_the_board_or_not_a_number_is_refused(tmp_path, capsys, usable, words):
    """A job allocates at most the board's memory (141 GB, 139.8 GiB under CUDA): 150 GiB is refused in one line naming the key."""
    err = _error(capsys, ["train", "llama3_8b", "--cluster", _h200(tmp_path, usable), "--global-batch", "64"])
    assert "servers[1].usable_memory_gib" in err and words in err, err


def test_the_does_not_fit_line_names_the_usable_memory(tmp_path, capsys):
    """The warning says the figure is the file's usable memory, not the board's (96 GiB, not 139.8)."""
    capsys.readouterr()
    status = main(["train", "llama3_8b", "--cluster", _h200(tmp_path, "usable_memory_gib = 96"), "--pp", "2", "--dp",
                   "8", "--global-batch", "64", "--dtype", "bf16", "--recompute", "none"])
    err = capsys.readouterr().err
    assert status == 0 and "its NVIDIA H200 SXM 141GB (usable_memory_gib) has 96.0 GiB" in err, err
