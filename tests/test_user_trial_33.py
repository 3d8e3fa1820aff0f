"""User trial 33: an LLM engineer plans Llama-3-8B-like and dense 70B-like runs (GQA, vocabulary 128k, RoPE)
on their own 4 × 8 H100 cluster with 8 × 400 Gb/s rails, through the documented CLI and API only. Hand checks
against published figures (Llama-3-8B's 8.03 B parameters, Llama-2-70B's 68.98 B, Llama-3-70B's 70.55 B) and
the documented formulas (tokens/s, MFU), and the defects found, each test saying whether it failed before
its fix."""

from __future__ import annotations

import json

import pytest

from archsim.cli import main

LLAMA3_8B = ('[transformer]\nfamily = "llama"\nlayers = 32\nhidden = 4096\nheads = 32\nkv_heads = 8\n'
             'ffn = 14336\nvocab = 128256\nseq = 8192\n')
# Llama-2-70B's shapes (Touvron et al. 2023): 80 layers, hidden 8192, 64 heads over 8 KV heads, FFN 28672
LLAMA2_70B = ('[transformer]\nfamily = "llama"\nlayers = 80\nhidden = 8192\nheads = 64\nkv_heads = 8\n'
              'ffn = 28672\nvocab = 32000\nseq = 4096\n')
CLUSTER = ('[cluster]\nname = "my_h100_32"\n\n[[servers]]\ncount = 4\ngpus = 8\ngpu = "h100-80gb-sxm"\n\n'
           '[network]\nnics_per_server = 8\nnic_gbps = 400\n')


@pytest.fixture
def files(tmp_path):
    (tmp_path / "llama3_8b.toml").write_text(LLAMA3_8B)
    (tmp_path / "llama2_70b.toml").write_text(LLAMA2_70B)
    (tmp_path / "h100x32.toml").write_text(CLUSTER)
    return tmp_path


def _meta(capsys, argv) -> dict:
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["meta"]


@pytest.mark.parametrize(("model", "published"), [("llama3_8b.toml", 8.03e9), ("llama2_70b.toml", 68.98e9)])
def test_parameter_counts_match_the_published_models(files, capsys, model, published):
    """Meta's `parameters` against the model cards' counts (to their printed 3–4 digits). Passed before."""
    meta = _meta(capsys, ["train", str(files / model), "--cluster", str(files / "h100x32.toml"), "--tp", "8",
                          "--pp", "4", "--global-batch", "8"])
    assert meta["parameters"] == pytest.approx(published, abs=0.005e9)


def test_tokens_per_second_and_mfu_by_hand(files, capsys):
    """tokens/s = global batch × seq / iteration; MFU = model FLOPs / (GPUs × time × dense peak): model FLOPs of
    a Llama counted by hand — 6 × the GEMM parameters (all but the token table) per token plus the attention's
    12 · s · h · l per token (the causal square counted whole, as docs/formats.md states) — over the H100 SXM's
    989.4 TFLOP/s dense fp16 peak (NVIDIA's datasheet). Passed before."""
    meta = _meta(capsys, ["train", str(files / "llama3_8b.toml"), "--cluster", str(files / "h100x32.toml"),
                          "--tp", "2", "--dp", "16", "--global-batch", "128", "--distributed-optimizer"])
    seconds = meta["iteration_seconds"]
    assert meta["tokens_per_second"] == pytest.approx(128 * 8192 / seconds, rel=1e-9)
    gemm_parameters = meta["parameters"] - 128256 * 4096
    per_token = 6 * gemm_parameters + 12 * 8192 * 4096 * 32
    assert meta["mfu"] == pytest.approx(per_token * 128 * 8192 / (32 * seconds * 989.4e12), rel=2e-3)


@pytest.mark.parametrize("kv_heads", [5, 64])
def test_kv_heads_that_do_not_divide_heads_name_kv_heads(files, capsys, kv_heads):
    """A `kv_heads` that does not divide `heads` was refused as `field 'heads': heads (32) must divide hidden
    (4096) and be a multiple of kv_heads (5)` — naming the wrong key, and stating a condition heads meets.
    Failed before the fix (the field was 'heads')."""
    model = files / "gqa.toml"
    model.write_text(LLAMA3_8B.replace("kv_heads = 8", f"kv_heads = {kv_heads}"))
    assert main(["train", str(model), "--cluster", str(files / "h100x32.toml"), "--tp", "2", "--dp", "16",
                 "--global-batch", "128"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"field 'kv_heads': kv_heads ({kv_heads}) must divide heads (32)" in err
    assert "must divide hidden" not in err


def test_heads_that_do_not_divide_hidden_still_name_heads(files, capsys):
    """The other half of the old check keeps its field and says only what fails. Passed before (field)."""
    model = files / "heads.toml"
    model.write_text(LLAMA3_8B.replace("heads = 32", "heads = 24").replace("kv_heads = 24", "kv_heads = 8"))
    assert main(["train", str(model), "--cluster", str(files / "h100x32.toml"), "--tp", "2", "--dp", "16",
                 "--global-batch", "128"]) == 2
    err = capsys.readouterr().err.strip()
    assert "field 'heads': heads (24) must divide hidden (4096)" in err


def test_search_command_runs_for_paths_with_spaces(files, capsys):
    """Each row's `command` is "the archsim train line that reproduces the row" (docs/search.md): pasted into a
    shell it must run. A model or cluster path with a space ("my models/llama 8b.toml") was written bare, so the
    shell split it into two words and train refused them. Failed before the fix (exit 2, no such file); the
    row's time is the time the pasted line prints."""
    import shlex

    folder = files / "my models"
    folder.mkdir()
    (folder / "llama 8b.toml").write_text(LLAMA3_8B)
    (folder / "h100 x32.toml").write_text(CLUSTER)
    assert main(["search", str(folder / "llama 8b.toml"), "--cluster", str(folder / "h100 x32.toml"),
                 "--global-batch", "128", "--top", "1", "--gpus", "16", "--seq", "4096", "--format", "json",
                 "--schedule", "1f1b"]) == 0  # one schedule: the quoting is what is checked
    row = json.loads(capsys.readouterr().out)["rows"][0]
    words = shlex.split(row["command"])
    assert words[:2] == ["archsim", "train"]
    meta = _meta(capsys, words[1:])
    assert meta["iteration_seconds"] == pytest.approx(row["iteration_seconds"], rel=1e-12)


@pytest.mark.parametrize(("flags", "field"), [(["--pp", "2", "--dp", "8", "--interleave", "3"], "interleave"),
                                              (["--pp", "8", "--dp", "2", "--interleave", "3"], "interleave"),
                                              (["--pp", "3", "--dp", "1"], "pp")])
def test_layers_that_do_not_split_name_the_flag_that_breaks_them(files, capsys, flags, field):
    """32 layers split over PP 2 (or 8) but not into 3 chunks per rank: the refusal named `field 'pp'`, a flag
    that splits them, not the `--interleave 3` that does not. Failed before the fix (the two interleave cases);
    PP 3 alone keeps naming pp."""
    argv = ["train", str(files / "llama3_8b.toml"), "--cluster", str(files / "h100x32.toml"), "--tp", "2",
            "--global-batch", "48", *flags]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"argument --{field}: 32 layers do not split" in err


def test_training_doc_states_fp16_model_state_bytes_as_archsim_counts_them():
    """docs/training.md's "Gradients in bf16" said bf16's 18 bytes of model states per parameter stand "against
    fp16's 16", while archsim (and the same page's next paragraph, from Megatron-LM's dist_optimizer table)
    counts fp16 at 20 — a user sizing an fp16 run by the doc's 16 underestimates 8B over TP 2 by 7.5 GiB.
    Reference: Megatron-LM's table (fp16 20, bf16 18). Failed before the doc fix."""
    import re
    from pathlib import Path

    from archsim.training.memory import state_bytes

    text = (Path(__file__).resolve().parents[1] / "docs" / "training.md").read_text()
    section = text[text.index("### Gradients in bf16"):]
    stated = re.search(r"the model states (\d+) bytes per parameter \(.*?\) against fp16's (\d+)", section, re.DOTALL)
    assert stated is not None
    assert (int(stated[1]), int(stated[2])) == (18, 20) == (state_bytes("bf16"), state_bytes("fp16"))


@pytest.mark.parametrize("command", ["train", "search"])
def test_training_gantt_names_its_rows_pipeline_ranks(files, capsys, command):
    """The Gantt of a training iteration draws one row per pipeline rank (r0, r1; its caption: "Each pipeline
    rank's forward and backward passes"), but its rows axis was titled "processor", the array commands' word.
    Failed before the fix (both commands); the x axis stays in seconds."""
    out = files / "gantt.html"
    base = [command, str(files / "llama3_8b.toml"), "--cluster", str(files / "h100x32.toml"), "--global-batch", "64"]
    extra = ["--tp", "8", "--pp", "4"] if command == "train" else ["--top", "1", "--schedule", "1f1b",
                                                                   "--max-micro-batch", "1"]
    assert main([*base, *extra, "--gantt", str(out)]) == 0
    capsys.readouterr()
    html = out.read_text()
    assert '"title":{"text":"pipeline rank"}' in html
    assert '"title":{"text":"seconds"}' in html and '"title":{"text":"processor"}' not in html


def test_forward_seconds_on_a_mixed_cluster_are_the_rank_that_ends_the_iteration(files, capsys):
    """On 2 H100 + 2 A100 servers at PP 2, `forward_seconds` (docs: "the slowest rank's forward") was the H100
    rank's 1.14 s while the A100 rank's forward, read off the JSON timeline, is 3.2 s: the figure is the rank
    that finishes last (rank 0, which waits for the A100 in its bubble), not the slowest GPU's. The code is
    kept (no modelled figure changes); docs/formats.md and docs/training.md now say which rank it is. The
    timeline sums are the reference. Failed before the doc fix (the formats row)."""
    from pathlib import Path

    (files / "mixed.toml").write_text(CLUSTER.replace("count = 4", "count = 2").replace(
        "\n[network]", '\n[[servers]]\ncount = 2\ngpus = 8\ngpu = "a100-80gb"\n\n[network]'))
    meta = _meta(capsys, ["train", str(files / "llama3_8b.toml"), "--cluster", str(files / "mixed.toml"),
                          "--tp", "2", "--pp", "2", "--dp", "8", "--global-batch", "128"])
    forward = {r: sum(e["end_s"] - e["start_s"] for e in meta["timeline"] if e["rank"] == f"r{r}" and "F" in e["action"])
               for r in (0, 1)}
    assert [m["gpu"] for m in meta["memory_per_rank"]] == ["NVIDIA H100 SXM5 80GB", "NVIDIA A100 SXM4 80GB"]
    assert meta["forward_seconds"] == pytest.approx(forward[0], rel=1e-9)
    assert forward[1] > 2 * forward[0]  # the A100 rank is the slow one
    formats = (Path(__file__).resolve().parents[1] / "docs" / "formats.md").read_text()
    row = next(line for line in formats.splitlines() if line.startswith("| `forward_seconds` |"))
    assert "slowest rank" not in row and "ends the iteration" in row


def test_collective_rows_state_large_messages_without_an_exponent(files, capsys):
    """With a 128k vocabulary the FSDP root unit's messages are gigabytes: Llama-3-8B's untied embedding and LM
    head, 2 × 128256 × 4096 bf16 parameters = 2004 MiB (by hand), were named `fsdp.all-gather (all-gather,
    2e+03 MiB)` and their fp32 reduce-scatter `4.01e+03 MiB`. Failed before the fix; smaller messages keep
    their 3 significant digits (a layer's 218.1 M parameters: 416 MiB)."""
    meta_rows = json.loads(_run_json(capsys, ["train", str(files / "llama3_8b.toml"), "--cluster",
                                              str(files / "h100x32.toml"), "--dp", "32", "--global-batch", "128",
                                              "--micro-batch", "2", "--fsdp", "--dtype", "bf16"]))["rows"]
    names = {row["name"] for row in meta_rows}
    root = 2 * 128256 * 4096
    layer = 4096 * (4096 + 2 * 1024) + 4096 * 4096 + 3 * 4096 * 14336
    assert f"fsdp.all-gather (all-gather, {round(2 * root / 2**20)} MiB)" in names
    assert f"fsdp.reduce-scatter (reduce-scatter, {round(4 * root / 2**20)} MiB)" in names
    assert f"fsdp.all-gather (all-gather, {2 * layer / 2**20:.3g} MiB)" in names
    assert not any("e+" in name for name in names)


def _run_json(capsys, argv) -> str:
    assert main([*argv, "--format", "json"]) == 0
    return capsys.readouterr().out


def test_runs_rows_say_the_schedule_they_ran(files, capsys):
    """A runs row with `interleave` 4 under the command's default `--schedule 1f1b` runs Megatron's interleaved
    1F1B — its time is `train --interleave 4`'s, whose meta says `schedule: interleaved-1f1b` — but the runs
    output said only `schedule: 1f1b` in its meta ("every row's"). Each row now names the order it ran, in a
    `schedule` column present when one differs from the command's. Failed before the fix (no column)."""
    runs = files / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch,global_batch,recompute,interleave,measured_seconds\n"
                    "8,2,2,1,64,full,4,\n8,2,2,1,64,full,1,\n")
    common = ["train", str(files / "llama3_8b.toml"), "--cluster", str(files / "h100x32.toml")]
    document = json.loads(_run_json(capsys, [*common, "--runs", str(runs)]))
    assert [row.get("schedule") for row in document["rows"]] == ["interleaved-1f1b", "1f1b"]
    alone = _meta(capsys, [*common, "--tp", "8", "--pp", "2", "--dp", "2", "--global-batch", "64",
                           "--interleave", "4"])
    assert alone["schedule"] == "interleaved-1f1b"
    assert document["rows"][0]["predicted_seconds"] == pytest.approx(alone["iteration_seconds"], rel=1e-12)
    plain = runs.read_text().replace(",4,\n", ",1,\n")
    runs.write_text(plain)
    assert "schedule" not in json.loads(_run_json(capsys, [*common, "--runs", str(runs)]))["rows"][0]


@pytest.mark.parametrize("chunks", [["1"], ["1", "2"]])
def test_search_refuses_one_chunk_per_rank(files, capsys, chunks):
    """`search --chunks 1 --schedule interleaved-1f1b 1f1b` ranked "interleaved-1f1b, interleave 1" rows beside
    1F1B's: the same time (3.797 s, TP2 PP2 DP8 mb1) with 62.9 GiB against 54.4 — one chunk per rank
    interleaves nothing (docs/training.md: train notes it), so the rows were a plain schedule under another
    name. Refused now in one line, as --chunks that changes nothing is. Failed before the fix (exit 0)."""
    import archsim
    from archsim.errors import InputError

    argv = ["search", str(files / "llama3_8b.toml"), "--cluster", str(files / "h100x32.toml"), "--global-batch",
            "128", "--schedule", "interleaved-1f1b", "1f1b", "--chunks", *chunks]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1
    assert "argument --chunks" in captured.err and "interleaves nothing" in captured.err
    # Each schedule's one-chunk run named as train's note names it: interleaved-1f1b runs Megatron-LM's plain 1F1B
    # (a longer warm-up until 2026-12-05), the other two ZB-H1's and GPipe's orders
    # (tests/test_one_chunk_note_schedules.py).
    assert "interleaved-zb: ZB-H1's order" in captured.err and "looped-bfs: GPipe's" in captured.err, captured.err
    assert "interleaved-1f1b: Megatron-LM's plain 1F1B" in captured.err, captured.err
    with pytest.raises(InputError, match="interleaves nothing"):
        archsim.search(str(files / "llama3_8b.toml"), cluster=str(files / "h100x32.toml"), global_batch=128,
                       schedule=["interleaved-1f1b"], chunks=[int(c) for c in chunks])
