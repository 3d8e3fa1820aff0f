"""Follow-ups of an LLM training engineer's trial of ``train`` and ``search`` on four H100 servers (Llama 3 8B-like,
GQA, sequence 8192): a refusal naming a flag never given, no word on memory headroom, the short-pipeline note
missing from ``--runs`` and ``--sweep``."""

import json
from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = str(ROOT / "configs" / "clusters" / "h100_2_servers.toml")
SMALL_LLAMA = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 8,
               "num_key_value_heads": 2, "num_hidden_layers": 8, "vocab_size": 1000, "max_position_embeddings": 256,
               "tie_word_embeddings": False}
# a small grid: 35 configurations costed on 8 GPUs, their default re-timing about 5,000 schedule actions
GRID = {"seq": 128, "global_batch": 16, "gpus": 8, "schedule": ["1f1b", "gpipe"], "recompute": "none",
        "sequence_parallel": "off", "max_micro_batch": 4, "progress": False}
GRID_FLAGS = ["--seq", "128", "--global-batch", "16", "--gpus", "8", "--schedule", "1f1b", "gpipe", "--recompute",
              "none", "--sequence-parallel", "off", "--max-micro-batch", "4"]


def _model(tmp_path) -> str:
    path = tmp_path / "small_llama" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(SMALL_LLAMA))
    return str(path)


def _refusal(call) -> InputError:
    with pytest.raises(InputError) as caught:
        call()
    return caught.value


def test_a_default_re_timing_above_max_ops_names_top_and_the_refine_that_fits(tmp_path, capsys):
    """``search --top 2000`` was refused "lower --refine (by default 2 × --top, at least 20) or raise --max-ops",
    under field 'refine': flags the user never gave. The refusal of a default re-timing now names --top as given,
    and the largest --refine within --max-ops, which is checked here by running it and one more."""
    model = _model(tmp_path)
    assert main(["search", model, "--cluster", CLUSTER, *GRID_FLAGS, "--top", "30", "--max-ops", "1000"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("archsim search: error: field 'top': re-timing the best ")
    assert "(--refine's default: 2 × --top 30, at least 20); give --refine N of at most " in err
    assert "lower --refine" not in err and err.endswith("or a larger --max-ops N")
    fits = int(err.split("of at most ")[1].split()[0])
    assert 0 < fits < 30  # not every row fits: the number bounds something
    assert archsim.search(model, cluster=CLUSTER, top=30, refine=fits, max_ops=1000, **GRID).rows
    said = _refusal(lambda: archsim.search(model, cluster=CLUSTER, top=30, refine=fits + 1, max_ops=1000, **GRID))
    assert said.where.field == "refine"  # a --refine given keeps its refusal
    assert str(said).endswith("lower refine (by default 2 × top, at least 20) or raise max_ops")
    # from Python: the keywords, and with nothing that fits, refine=0
    said = _refusal(lambda: archsim.search(model, cluster=CLUSTER, top=30, max_ops=1, **GRID))
    assert said.where.field == "top" and "(refine's default: 2 × top=30, at least 20); give refine=" in str(said)


def test_the_top_a_default_re_timing_refusal_names_runs_and_one_more_does_not(tmp_path, capsys):
    """The ``--top T or fewer`` the refusal names is the largest whose default re-timing (2 × T) fits: T runs, T + 1
    is refused again (brute force, on the same grid and --max-ops)."""
    model = _model(tmp_path)
    said = str(_refusal(lambda: archsim.search(model, cluster=CLUSTER, top=30, max_ops=4500, **GRID)))
    top = int(said.split("; give top=")[1].split()[0])
    assert 10 <= top < 30
    assert archsim.search(model, cluster=CLUSTER, top=top, max_ops=4500, **GRID).rows
    said = _refusal(lambda: archsim.search(model, cluster=CLUSTER, top=top + 1, max_ops=4500, **GRID))
    assert said.where.field == "top"
