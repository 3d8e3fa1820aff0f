"""A user trial's findings in ``archsim search`` and ``train`` (an LLM trainer with MoE and long-context models):
the text of the EP rule search rejects by, and search --tp / --pp pinning the TPs and PPs tried."""

from __future__ import annotations

from pathlib import Path

import pytest

from archsim.training import search as search_module
from archsim.training.search_space import Candidate, rejection
from archsim.workload.model_files import load_transformer

ROOT = Path(__file__).resolve().parents[1]
MIXTRAL = ROOT / "tests" / "data" / "hf_configs" / "mixtral_8x7b.json"


def test_ep_divides_dp_is_stated_as_trains_rule_over_cp_times_dp():
    """``ep-divides-dp`` rejects EP ∤ CP × DP at ETP = TP (Megatron-Core's expert groups take the CP ranks as DP
    ranks): EP 2 at CP 2, DP 1 runs; at CP 1, DP 1 it is rejected. The search's docstring said EP divides DP."""
    config = load_transformer(str(MIXTRAL), seq=4096)
    beside_cp = Candidate(8, 1, 1, 1, "none", "1f1b", 1, True, attention="flash", cp=2, ep=2)
    alone = Candidate(8, 1, 1, 1, "none", "1f1b", 1, True, attention="flash", cp=1, ep=2)
    assert rejection(config, beside_cp, 8, 8) is None  # EP 2 divides CP × DP = 2 × 1
    assert rejection(config, alone, 8, 8) == "ep-divides-dp"  # EP 2 does not divide 1 × 1
    doc = " ".join(search_module.search.__doc__.split())
    said = doc[doc.index("``eps``"):doc.index("``etps``")]
    assert "CP × DP" in said and "experts and DP" not in said
    training = " ".join((ROOT / "docs" / "training.md").read_text().split())
    assert "`ep-divides-dp` where EP does not divide CP × DP" in training


# --- search --tp / --pp: the TPs and PPs tried, as --cp and --ep name theirs

def _rows(rows: list[dict]) -> str:
    """The rows as JSON (NaN as null: NaN equals nothing) without their Pareto flag (the front is of the rows
    searched, so a pinned search's differs)."""
    from archsim.json_text import dumps

    return dumps([{k: v for k, v in row.items() if k != "pareto_optimal"} for row in rows])


def test_pinned_tp_and_pp_are_the_whole_searchs_rows_of_those_degrees(tmp_path, capsys):
    """``search --tp 2 4 --pp 1 2`` on 8 GPUs: every row's TP and PP among those, and the rows those of the unpinned
    search (every row kept: a large top, closed forms alone) whose TP and PP are, in the same order: the filter
    applied afterwards, another path to the same rows."""
    import json

    import archsim
    from archsim.cli import main

    model, cluster = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json"), \
        str(ROOT / "configs" / "clusters" / "a100_node.toml")
    keys = {"global_batch": 16, "max_micro_batch": 2, "schedule": ["1f1b"], "recompute": ["none"], "refine": 0,
            "top": 500}
    every = archsim.search(model, cluster=cluster, **keys)
    assert {r["tp"] for r in every.rows} > {2, 4} and {r["pp"] for r in every.rows} > {1, 2}  # the filter removes some
    expected = [r for r in every.rows if r["tp"] in (2, 4) and r["pp"] in (1, 2)]
    pinned = archsim.search(model, cluster=cluster, tp=[2, 4], pp="1,2", **keys)
    assert expected and _rows(pinned.rows) == _rows(expected)
    assert pinned.to_dict()["meta"]["tp"] == "2,4" and pinned.to_dict()["meta"]["pp"] == "1,2"
    assert "tp" not in every.to_dict()["meta"]  # a default search's meta as before
    capsys.readouterr()
    assert main(["search", model, "--cluster", cluster, "--global-batch", "16", "--max-micro-batch", "2",
                 "--schedule", "1f1b", "--recompute", "none", "--refine", "0", "--top", "500", "--tp", "8",
                 "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows and _rows(rows) == _rows([r for r in every.to_dict()["rows"] if r["tp"] == 8])


def test_a_tp_or_pp_with_no_layout_is_refused_in_one_line(capsys):
    """TP 3 divides none of 8 GPUs; TP 8 with PP 8 leaves no layout of 8 GPUs: one line each, naming the flag."""
    from archsim.cli import main

    base = ["search", str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json"), "--cluster",
            str(ROOT / "configs" / "clusters" / "a100_node.toml"), "--global-batch", "16"]
    for extra, said in ((["--tp", "3"], "argument --tp: TP 3 divides none of the 8 GPUs searched"),
                        (["--pp", "8", "--tp", "8"], "argument --tp: no TP × CP × PP of --tp 8 and --pp 8 (CP 1)"),
                        (["--pp", "16"], "argument --pp: PP 16 divides none")):
        capsys.readouterr()
        assert main([*base, *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert said in err and len(err.splitlines()) == 1, err


@pytest.mark.long  # a 64-GPU Mixtral search, about 5 to 15 s
def test_trainings_etp_paragraph_quotes_what_its_command_prints():
    """docs/training.md's ``--ep 8 --etp 1 tp`` paragraph: its best row and the front's first TP 2 line as the
    command prints them now (it quoted 2.34 s, 61.5 GiB at PP 2 × DP 32 from before the SMs NCCL takes were counted)."""
    import warnings

    import archsim

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = archsim.search(str(MIXTRAL), cluster=str(ROOT / "configs" / "clusters" / "dgx_h100_superpod.toml"),
                               gpus=64, global_batch=256, seq=4096, dtype="bf16", distributed_optimizer=True,
                               dp_overlap="bucketed", ep=8, etp=[1, "tp"])
    best = found.rows[0]
    assert (best["tp"], best["pp"], best["dp"], best["schedule"]) == (1, 4, 16, "zb-v")
    said = f"PP 4, DP 16, ZB-V: {best['iteration_seconds']:.2f} s, {best['peak_memory_gib']:.1f} GiB a GPU"
    first_tp2 = next(r for r in found.pareto if r["tp"] == 2)
    assert (first_tp2["pp"], first_tp2["dp"], first_tp2["micro_batch"]) == (8, 4, 2)
    front = f"{first_tp2['iteration_seconds']:.2f} s in {first_tp2['peak_memory_gib']:.1f}"
    paragraph = " ".join((ROOT / "docs" / "training.md").read_text().split())
    assert said in paragraph and f"ETP 1, {front} GiB" in paragraph, (said, front)


# --- train --sequence-parallel at TP 1: off with a note, as Megatron-LM's validate_args turns it off

def test_sequence_parallel_at_tp_1_runs_without_it_and_says_so(tmp_path, capsys):
    """Megatron-LM's validate_args at TP 1: warns "Disabling sequence parallelism because tensor model parallelism is
    disabled" and runs without it. train refused the flag; now one note, and the document the run without it prints
    (the reference: the same command without the flag). TP 2 keeps it, with no note."""
    import json
    import warnings

    from tiny_search import tiny_files

    import archsim
    from archsim.cli import main

    model, cluster = tiny_files(tmp_path)
    base = ["train", model, "--cluster", cluster, "--pp", "2", "--dp", "1", "--global-batch", "8", "--micro-batch", "2",
            "--format", "json"]

    def run(*extra: str) -> tuple[dict, list[str]]:
        capsys.readouterr()
        assert main([*base, *extra]) == 0
        out = capsys.readouterr()
        return json.loads(out.out), [line for line in out.err.splitlines() if "sequence-parallel" in line]

    on, notes = run("--tp", "1", "--sequence-parallel")
    off, none = run("--tp", "1")
    assert on == off and not none
    assert len(notes) == 1 and "turned off" in notes[0] and "Disabling sequence parallelism" in notes[0], notes
    kept, quiet = run("--tp", "2", "--sequence-parallel")
    assert kept["meta"]["sequence_parallel"] is True and not quiet
    keys = {"cluster": cluster, "tp": 1, "pp": 2, "dp": 1, "global_batch": 8, "micro_batch": 2}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found, _rates = archsim.train(model, sequence_parallel=True, **keys)
    said = [str(w.message) for w in caught if "sequence_parallel=True with tp=1 is turned off" in str(w.message)]
    assert len(said) == 1 and all(issubclass(w.category, UserWarning) for w in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert found.to_dict() == archsim.train(model, **keys)[0].to_dict()


# --- search at a long sequence without --cp: one note that CP was not searched

LONG_LLAMA = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 256, "num_attention_heads": 4,
              "num_key_value_heads": 4, "intermediate_size": 512, "vocab_size": 1024,
              "max_position_embeddings": 32768, "tie_word_embeddings": False}


def test_a_long_sequence_searched_without_cp_says_so_once(tmp_path, capsys):
    """The documented rule: no ``--cp`` and a sequence of 32,768 tokens or more (CP 2 able to run it) → one note
    naming ``--cp``; at 16,384 tokens, with ``--cp`` given (1 alone too) or under standard attention (CP runs in flash
    only) none. From Python a UserWarning naming ``cp=``."""
    import json
    import warnings

    import archsim
    from archsim.cli import main
    from archsim.training.search_note import LONG_SEQ

    assert LONG_SEQ == 32_768
    model = tmp_path / "llama.json"
    model.write_text(json.dumps(LONG_LLAMA))
    cluster = str(ROOT / "configs" / "clusters" / "a100_node.toml")
    keys = ["--gpus", "2", "--global-batch", "2", "--schedule", "1f1b", "--recompute", "full", "--max-micro-batch", "1",
            "--refine", "0", "--top", "1", "--format", "json"]

    def notes(*extra: str) -> list[str]:
        capsys.readouterr()
        assert main(["search", str(model), "--cluster", cluster, *keys, *extra]) == 0
        return [line for line in capsys.readouterr().err.splitlines() if "context parallelism was not searched" in line]

    said = notes("--seq", "32768")
    assert len(said) == 1 and "32,768 tokens" in said[0] and "--cp 1 2 4" in said[0], said
    assert notes("--seq", "16384") == []
    assert notes("--seq", "32768", "--cp", "1") == [] and notes("--seq", "32768", "--cp", "1", "2") == []
    assert notes("--seq", "32768", "--attention", "standard") == []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        archsim.search(str(model), cluster=cluster, gpus=2, global_batch=2, seq=32768, schedule="1f1b",
                       recompute="full", max_micro_batch=1, refine=0, top=1)
    texts = [str(w.message) for w in caught if "context parallelism was not searched" in str(w.message)]
    assert len(texts) == 1 and "cp=[1, 2, 4]" in texts[0] and "--" not in texts[0], texts
