"""User trial 52: a training-systems engineer's first day. Their own 13B Llama-like config.json (hidden 5,120,
40 heads, 40 layers, FFN 13,824) on their own cluster file of 4 DGX H100 servers (8 NICs of 400 Gb/s, rails).
Each test failed on the code before its fix (its docstring says how)."""

from __future__ import annotations

import json

from archsim.cli import main

CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 5120,
          "intermediate_size": 13824, "num_attention_heads": 40, "num_hidden_layers": 40, "num_key_value_heads": 40,
          "max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "vocab_size": 32000, "tie_word_embeddings": False,
          "torch_dtype": "float16", "hidden_act": "silu"}

CLUSTER = """[cluster]
name = "my_dgx_h100_x4"

[network]
nics_per_server = 8
nic_gbps = 400
gpus_per_nic = 1
nvls = true

[[servers]]
count = 4
gpus = 8
gpu = "h100-80gb-sxm"
"""


def _train(tmp_path, capsys, *flags: str) -> tuple[int, str, str]:
    (tmp_path / "llama13b").mkdir(exist_ok=True)
    (tmp_path / "llama13b" / "config.json").write_text(json.dumps(CONFIG))
    (tmp_path / "cluster.toml").write_text(CLUSTER)
    status = main(["train", str(tmp_path / "llama13b" / "config.json"), "--cluster", str(tmp_path / "cluster.toml"),
                   "--global-batch", "64", "--seq", "4096", *flags])
    out, err = capsys.readouterr()
    return status, out, err


def test_a_tp_that_does_not_divide_the_heads_names_the_tps_that_do(tmp_path, capsys):
    """Failed before: ``--tp 16`` on 40 heads said only "TP 16 must divide the heads (40), the key/value heads (40
    …) and the FFN width (13824)", leaving the user to work out which TPs do. By hand: gcd(40, 40, 13,824) = 8
    (13,824 = 2⁹ · 27, 40 = 2³ · 5), so TP 1, 2, 4 and 8 divide all three; the line now names them."""
    for tp in ("16", "3"):
        status, out, err = _train(tmp_path, capsys, "--tp", tp)
        assert status == 2 and out == "" and len(err.strip().splitlines()) == 1, err
        assert "argument --tp" in err and err.strip().endswith("TP 1, 2, 4 or 8 divides all three"), err


def test_a_pp_that_does_not_divide_the_layers_names_the_pps_that_do(tmp_path, capsys):
    """Failed before: ``--pp 3`` on 40 layers said "40 layers do not split into 3 stages × 1 chunks" and no more:
    no PP that would, nor that ``--stage-layers`` splits them unevenly. The divisors of 40 by hand: 1, 2, 4, 5,
    8, 10, 20, 40."""
    status, out, err = _train(tmp_path, capsys, "--tp", "8", "--pp", "3")
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "argument --pp" in err and "PP 1, 2, 4, 5, 8, 10, 20 or 40 splits them evenly; " in err, err
    assert "--stage-layers" in err, err


def test_an_interleave_that_does_not_divide_the_layers_names_the_counts_that_do(tmp_path, capsys):
    """Failed before: ``--pp 2 --interleave 3`` said "40 layers do not split into 2 stages × 3 chunks" and no
    more. 40 / 2 = 20 layers per rank, split into v chunks for v dividing 20: 2, 4, 5, 10, 20 (v = 1
    interleaves nothing)."""
    status, out, err = _train(tmp_path, capsys, "--tp", "8", "--pp", "2", "--dp", "2", "--interleave", "3")
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "argument --interleave" in err and "--interleave 2, 4, 5, 10 or 20 splits them evenly; " in err, err


def test_a_pp_with_chunks_names_the_pps_that_split_the_chunks(tmp_path, capsys):
    """Failed before as the PP test does; with two chunks per rank (``--pp 32 --interleave 2``) the PPs offered
    are those that split 40 layers into 2 chunks each, 40 / (2p) whole: 1, 2, 4, 5, 10, 20 by hand (8, a
    divisor of 40, is not one: 40 / 16 = 2.5)."""
    status, out, err = _train(tmp_path, capsys, "--pp", "32", "--interleave", "2", "--global-batch", "64")
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "argument --pp" in err and "PP 1, 2, 4, 5, 10 or 20 splits them evenly; --stage-layers" in err, err


A100_PAIR = """[cluster]
name = "my_a100_2x8"

[network]
nics_per_server = 1
nic_gbps = 200

[[servers]]
count = 2
gpus = 8
gpu = "a100-80gb"
"""


def test_search_names_the_same_best_row_whatever_top_asks_for(tmp_path):
    """Failed before: ``--top 1`` re-timed only its 2 best closed-form rows (refine's default, 2 × top) and named
    TP 2 × PP 4 × DP 2, micro-batch 2, ZB-V at 3.419 s best, while ``--top 3`` re-timed 6 and found TP 2 × PP 2 ×
    DP 4, micro-batch 1, ZB-V at 3.397 s, whose closed form had ranked it below the first two. Now refine defaults
    to at least 20 rows, so every top up to 10 re-times the same rows."""
    import archsim

    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    (tmp_path / "cluster.toml").write_text(A100_PAIR)

    def first(top: int) -> dict:
        found = archsim.search(str(tmp_path / "config.json"), cluster=str(tmp_path / "cluster.toml"), global_batch=32,
                               seq=4096, top=top, progress=False)
        return found.rows[0]

    firsts = [first(top) for top in (1, 3, 10)]
    keys = ("tp", "pp", "dp", "micro_batch", "recompute", "schedule", "interleave", "sequence_parallel")
    assert [tuple(row[k] for k in keys) for row in firsts[1:]] == [tuple(firsts[0][k] for k in keys)] * 2
    assert firsts[0]["iteration_seconds"] == min(row["iteration_seconds"] for row in firsts)
