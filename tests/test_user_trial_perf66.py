"""An LLM performance engineer reads where an iteration's time goes: ``archsim train``'s table, JSON and CSV, its
``--sweep`` and ``--runs``, and the library's ``archsim.train``, ``train_sweep`` and ``train_runs``.

Each test here failed on the code before its fix (the docstring says how). The references are outside the code: the
cluster file's own memory cap (``usable_memory_gib``), the flags' documented defaults (docs/training.md, docs/api.md:
``--implementation pytorch-eager`` runs standard attention on one GPU), the documented rule that the library's
errors name keywords as Python spells them (docs/api.md, "The flags as keywords").
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import archsim
from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
MODEL = str(ROOT / "configs/transformers/gpt_1024h_24l.json")
CLUSTER = str(ROOT / "configs/clusters/a100_node.toml")


def small_cluster(tmp_path: Path) -> str:
    """One A100 server whose GPUs a job may use 6 GiB of: gpt_1024h_24l's 354 M parameters at 16 bytes each
    (5.3 GiB of states) do not fit one GPU with activations, and fit at TP 2."""
    path = tmp_path / "small.toml"
    path.write_text('[cluster]\nname = "small"\ninter_server_gbps = 200\ninter_server_link = "per_gpu_pair"\n\n'
                    '[[servers]]\ncount = 1\ngpus = 8\nintra_server_gbps = 4800\ngpu = "a100-80gb"\n'
                    'usable_memory_gib = 6\n')
    return str(path)


def test_a_sweep_warns_of_points_that_do_not_fit_as_train_and_runs_do(tmp_path, capsys):
    """Failed before: ``train --sweep tp=1,2`` printed the TP 1 point (over its GPU's memory, and with the better MFU)
    with ``fits_memory False`` in the table and nothing on stderr, where ``train --tp 1`` alone and a ``--runs`` row
    warn ``does not fit``; ``archsim.train_sweep`` issued no ``UserWarning`` either."""
    cluster = small_cluster(tmp_path)
    code = main(["train", MODEL, "--cluster", cluster, "--global-batch", "8", "--sweep", "tp=1,2", "--format", "json"])
    captured = capsys.readouterr()
    assert code == 0
    rows = json.loads(captured.out)["rows"]
    over = [row for row in rows if row["peak_memory_gib"] > 6.0]  # the file's cap: the reference
    assert [row["tp"] for row in over] == [1] and not over[0]["fits_memory"]
    lines = [line for line in captured.err.splitlines() if "does not fit" in line]
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("archsim train: warning: 1 of the sweep's 2 points (tp 1 × pp 1 × dp 1) does not fit")
    assert "has 6.0 GiB" in lines[0], lines[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        archsim.train_sweep(MODEL, cluster=cluster, global_batch=8, sweep={"tp": [1, 2]})
    said = [str(w.message) for w in caught if "does not fit" in str(w.message)]
    assert len(said) == 1 and "1 of the sweep's 2 points (tp 1 × pp 1 × dp 1)" in said[0], said


def test_a_sweep_whose_points_all_fit_says_nothing_of_memory(tmp_path, capsys):
    """The warning's other side: at TP 2 and 4 every rank fits its 6 GiB, and no memory line is printed."""
    cluster = small_cluster(tmp_path)
    assert main(["train", MODEL, "--cluster", cluster, "--global-batch", "8", "--sweep", "tp=2,4",
                 "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert all(row["fits_memory"] for row in json.loads(captured.out)["rows"])
    assert "does not fit" not in captured.err


@pytest.mark.parametrize("extra", [[], ["--dtype", "fp32"]])
def test_plain_pytorch_at_cp_2_is_told_it_runs_one_gpu_not_to_give_flash_the_default(capsys, extra):
    """Failed before: ``train --implementation pytorch-eager --cp 2`` was told ``CP 2 runs in TransformerEngine's
    flash attention only, not --attention standard: give --attention flash (the default)`` — standard is
    pytorch-eager's default (docs/training.md), and following the advice met the one-GPU refusal (in fp32, flash's
    own). The one-GPU refusal, which TP 2 already met, comes first."""
    code = main(["train", "gpt3_1.3b", "--cluster", CLUSTER, "--global-batch", "16", "--implementation",
                 "pytorch-eager", "--cp", "2", *extra])
    err = capsys.readouterr().err
    assert code == 2
    assert "argument --implementation" in err and "one GPU" in err and "CP 2" in err, err
    assert "(the default)" not in err.split("use --implementation")[0], err  # no default misnamed before the fix
    with pytest.raises(archsim.InputError, match="field 'implementation'.*one GPU.*implementation='megatron'"):
        archsim.train("gpt3_1.3b", cluster=CLUSTER, global_batch=16, cp=2, implementation="pytorch-eager")


def test_train_runs_over_max_ops_names_the_keyword_max_ops_as_the_library_spells_it(tmp_path, capsys):
    """Failed before: ``archsim.train_runs(..., max_ops=10)`` said ``RUNS.csv, line 2, field 'max-ops': … give
    max_ops=12`` — the flag's spelling in the field beside the keyword's in the advice, where docs/api.md says the
    library's errors name each keyword as Python spells it (``field 'global_batch'``); the command keeps
    ``field 'max-ops'``. Any row's schedule has more than one action, so a limit of 1 refuses the first row."""
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch,global_batch\n1,1,1,8,16\n")
    with pytest.raises(archsim.InputError) as caught:
        archsim.train_runs(MODEL, cluster=CLUSTER, runs=str(runs), max_ops=1)
    text = str(caught.value)
    assert "line 2, field 'max_ops'" in text and "give max_ops=" in text, text
    assert main(["train", MODEL, "--cluster", CLUSTER, "--runs", str(runs), "--max-ops", "1"]) == 2
    assert "line 2, field 'max-ops'" in capsys.readouterr().err  # the command: its flag's spelling, as before


def test_search_given_implementation_names_train_not_placement(capsys):
    """Failed before: ``archsim search … --implementation pytorch-eager`` was told ``did you mean '--placement'?``
    and ``archsim.search(..., implementation=…)`` ``did you mean 'placement'?`` — a flag with nothing to do with it.
    docs/training.md: ``search`` ranks Megatron's layouts only (it takes no ``--implementation``); docs/cli.md: a flag
    of the sibling command says what this one takes instead."""
    code = main(["search", "gpt3_1.3b", "--cluster", CLUSTER, "--global-batch", "16", "--implementation",
                 "pytorch-eager"])
    err = capsys.readouterr().err
    assert code == 2 and "--implementation is archsim train's" in err and "placement" not in err, err
    with pytest.raises(archsim.InputError) as caught:
        archsim.search("gpt3_1.3b", cluster=CLUSTER, global_batch=16, implementation="megatron")
    text = str(caught.value).split("; archsim.search takes")[0]  # the hint, before the list of keywords it takes
    assert "implementation is archsim.train's" in text and "placement" not in text, text


@pytest.mark.parametrize("axis", ["tp", "micro_batch", "recompute"])
def test_a_swept_axis_with_no_values_is_told_so_not_that_its_key_is_unknown(capsys, axis):
    """Failed before: ``--sweep tp=`` (and ``archsim.train_sweep(sweep={"tp": []})``, an empty list from a notebook)
    was told ``expected KEY=V1,V2,… with KEY one of tp, pp, dp, …, got 'tp='``: tp is one of them; what is missing
    is its values."""
    code = main(["train", MODEL, "--cluster", CLUSTER, "--global-batch", "16", "--sweep", f"{axis}="])
    err = capsys.readouterr().err
    assert code == 2 and f"{axis}: no values" in err and "KEY one of" not in err, err
    with pytest.raises(archsim.InputError, match=f"field 'sweep': {axis}: no values") as caught:
        archsim.train_sweep(MODEL, cluster=CLUSTER, global_batch=16, sweep={axis: []})
    assert "KEY one of" not in str(caught.value)


def test_runs_rows_carry_mfu_tflops_and_tokens_per_second_as_sweep_points_do(tmp_path):
    """Failed before: a ``--runs`` row had ``predicted_seconds`` but no ``mfu``, ``tflops_per_gpu``,
    ``hardware_tflops_per_gpu`` or ``tokens_per_second``, the figures ``train``, its ``--sweep`` and ``search`` rows
    give and a measured Megatron-LM log is compared by. References: Narayanan et al. 2021's model FLOPs of a GPT,
    72·B·s·l·h²(1 + s/6h + V/12lh) (archsim counts the norms' and biases' parameters too: within 0.2%), the A100's
    dense fp16 peak of 312 TFLOP/s (NVIDIA's datasheet) and tokens/s = global batch × sequence / seconds."""
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch,global_batch,measured_seconds\n1,1,2,2,8,0.184\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        row = archsim.train_runs(MODEL, cluster=CLUSTER, runs=str(runs), attention="standard")[0]
    b, s, layers, h, vocab, gpus = 8, 1024, 24, 1024, 50257, 2
    flops = 72 * b * s * layers * h**2 * (1 + s / (6 * h) + vocab / (12 * layers * h))
    seconds = row["predicted_seconds"]
    assert row["tflops_per_gpu"] == pytest.approx(flops / seconds / gpus / 1e12, rel=2e-3)
    assert row["mfu"] == pytest.approx(row["tflops_per_gpu"] / 312, rel=1e-9)
    assert row["hardware_tflops_per_gpu"] > row["tflops_per_gpu"]  # full recompute runs the forward again
    assert row["tokens_per_second"] == pytest.approx(b * s / seconds, rel=1e-12)
    frame = archsim.train_runs(MODEL, cluster=CLUSTER, runs=str(runs), attention="standard").to_frame()
    columns = frame.columns.tolist()  # after the iteration's host floor and compute split, as docs/formats.md lists them
    assert columns.index("mfu") == columns.index("compute_split_seconds") + 1 == columns.index("host_bound_seconds") + 2


def test_a_json_document_whose_timeline_is_left_out_says_so(monkeypatch, capsys):
    """Failed before: a run of more pipeline actions than the JSON keeps (20,000) printed ``"timeline": []`` and
    nothing else, which reads as a run without one; now a note names the count and the outputs that write it. The
    limit is lowered here to keep the test cheap: PP 2 × 8 micro-batches × (F, B) = 32 actions, counted by hand."""
    from archsim.training import train_json

    monkeypatch.setattr(train_json, "MAX_TIMELINE_SLOTS", 31)
    args = ["train", MODEL, "--cluster", CLUSTER, "--pp", "2", "--global-batch", "8", "--format", "json"]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["meta"]["timeline"] == []
    assert "note: the JSON's timeline is left out: 32 pipeline actions, over 31; --chrome-trace" in captured.err
    monkeypatch.setattr(train_json, "MAX_TIMELINE_SLOTS", 32)  # all 32 kept: no note
    assert main(args) == 0
    captured = capsys.readouterr()
    assert len(json.loads(captured.out)["meta"]["timeline"]) == 32 and "timeline is left out" not in captured.err


def test_the_tables_host_and_split_lines_follow_precision_as_its_other_figures_do(capsys):
    """Failed before: ``train --precision 6`` printed ``iteration_seconds`` and the breakdown to 6 digits but the
    ``host_bound`` and ``compute_split_seconds`` lines to 3 (``0.882 s of 2.47 s``, ``2.44 s of compute and
    recompute``), where ``--precision`` is the table's significant digits (docs/cli.md). Without the flag both lines
    keep their 3 digits (docs/training.md quotes them). The references are the JSON's full-precision figures: the
    split sums to the breakdown's compute and recompute, and ``host_bound_seconds`` of ``iteration_seconds``."""
    args = ["train", MODEL, "--cluster", str(ROOT / "configs/clusters/h200_1gpu.toml"), "--global-batch", "32",
            "--micro-batch", "1", "--implementation", "pytorch-eager", "--dtype", "fp16"]
    assert main([*args, "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    whole = meta["breakdown_seconds"]["compute"] + meta["breakdown_seconds"]["recompute"]
    host, total = meta["host_bound_seconds"], meta["iteration_seconds"]
    assert host > 0.1 * total  # the host line is printed
    for digits, shown in ((None, 3), (6, 6)):
        assert main([*args, *(["--precision", str(digits)] if digits else [])]) == 0
        lines = {line.split(":")[0]: line for line in capsys.readouterr().out.splitlines() if line.startswith("#")}
        assert lines["# compute_split_seconds"].startswith(f"# compute_split_seconds: {whole:.{shown}g} s of "), lines
        assert lines["# host_bound"].startswith(f"# host_bound: {host:.{shown}g} s of {total:.{shown}g} s is "), lines


@pytest.mark.parametrize(("extra", "seq"), [([], 2048), (["--seq", "1024"], 1024)])  # the config's; the flag's
def test_runs_output_names_the_sequence_length_its_rows_ran(tmp_path, capsys, extra, seq):
    """Failed before: ``train --runs`` printed no sequence length anywhere (``train``'s and ``--sweep``'s meta name
    it), so a row's time and tokens/s could not be read without knowing what MODEL's config or ``--seq`` said.
    gpt3_1.3b's config says 2048 tokens (configs/transformers/gpt3_1.3b.toml)."""
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch,global_batch\n1,1,8,2,64\n")
    assert main(["train", "gpt3_1.3b", "--cluster", CLUSTER, "--runs", str(runs), "--format", "json", *extra]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["meta"]["seq"] == seq
    row = document["rows"][0]
    assert row["tokens_per_second"] == pytest.approx(64 * seq / row["predicted_seconds"], rel=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = archsim.train_runs("gpt3_1.3b", cluster=CLUSTER, runs=str(runs), **({"seq": seq} if extra else {}))
    assert result.to_dict()["meta"]["seq"] == seq and result[0]["seq"] == seq
