"""A search row run again through ``archsim.train`` from data: ``SearchResult.train_keywords(i)`` are train's keywords
of row ``i``, the flags of its ``command`` (one list of settings writes both: search_rows.train_settings). Failed
before (no train_keywords): a notebook wanting the best row's timeline passed the row's settings to archsim.train and
was refused, as the row says "none" with empty texts (``cp_comm`` '' at CP 1, ``stage_layers`` '' on an even split)
train refuses; the row's ``command`` is a shell line. The reference: the search's own ``iteration_seconds`` of each
row, which its ``command`` reproduces (tests/test_search_train_parity.py)."""

from __future__ import annotations

import json
import warnings

import pytest
from test_docs import ROOT

import archsim
from archsim.errors import InputError
from archsim.training.search_result import SearchResult

A100 = str(ROOT / "configs" / "clusters" / "a100_node.toml")
H100 = str(ROOT / "configs" / "clusters" / "h100_2_servers.toml")
MIXED = str(ROOT / "configs" / "clusters" / "mixed_counts_h100_a100.toml")
GPT = "gpt_1024h_24l"
LLAMA = {"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 8,
         "num_key_value_heads": 4, "intermediate_size": 512, "vocab_size": 1024, "max_position_embeddings": 512,
         "tie_word_embeddings": False}
MOE = {"model_type": "mixtral", "num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 8,
       "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1024, "max_position_embeddings": 512,
       "num_local_experts": 8, "num_experts_per_tok": 2}
SMALL = {"global_batch": 16, "top": 3, "schedule": ["1f1b"], "max_micro_batch": 2}

CASES = [
    pytest.param(GPT, A100, {**SMALL, "schedule": ["1f1b", "interleaved-1f1b"]}, {"interleave"}, id="even-interleaved"),
    pytest.param(GPT, H100, {**SMALL, "dtype": "bf16", "fp8": "hybrid", "fp8_param_gather": True,
                             "distributed_optimizer": True},
                 {"dtype", "fp8", "fp8_param_gather", "distributed_optimizer"}, id="fp8-distributed-optimizer"),
    pytest.param(LLAMA, H100, {**SMALL, "dtype": "bf16", "seq": 512, "gpus": 8, "cp": [4], "cp_comm": ["a2a+p2p"],
                               "max_micro_batch": 1},
                 {"seq", "cp", "cp_comm", "cp_hierarchy"}, id="cp-hierarchy"),
    pytest.param(GPT, A100, {**SMALL, "fsdp": True, "fsdp_reshard": "none", "fsdp_grad_sync": "step",
                             "grad_accumulation": "unfused"},
                 {"fsdp", "fsdp_reshard", "fsdp_grad_sync", "grad_accumulation"}, id="fsdp"),
    pytest.param(MOE, A100, {**SMALL, "dtype": "bf16", "seq": 256, "ep": [4], "etp": [1], "moe_load_imbalance": 1.5,
                             "overlap_moe_expert_parallel_comm": True, "sequence_parallel": "on"},
                 {"ep", "etp", "moe_load_imbalance", "overlap_moe_expert_parallel_comm", "sequence_parallel"}, id="moe"),
    pytest.param(GPT, H100, {**SMALL, "gpus": 8, "top": 4, "p2p": "blocking"}, {"p2p"}, id="p2p"),  # not the default
    pytest.param(GPT, MIXED, {**SMALL, "balance": "planned", "placement": "planned"}, {"stage_layers", "placement"},
                 id="planned-split-and-order", marks=pytest.mark.long),
]


@pytest.mark.parametrize(("model", "cluster", "keywords", "exercised"), CASES)
def test_train_keywords_run_each_row_again(tmp_path, model, cluster, keywords, exercised):
    """Every row re-run through archsim.train with its keywords times as the row; ``exercised``: the keywords beyond
    the layout's that some row of the case must carry (what the case is there to check)."""
    if isinstance(model, dict):
        path = tmp_path / "model.json"
        path.write_text(json.dumps(model))
        model = str(path)
    with warnings.catch_warnings():  # a config's unread fields and the like: not what is checked
        warnings.simplefilter("ignore")
        found = archsim.search(model, cluster=cluster, progress=False, **keywords)
        assert found.rows
        carried: set[str] = set()
        for index, row in enumerate(found.rows):
            given = found.train_keywords(index)
            carried |= set(given)
            assert {"model", "cluster"}.isdisjoint(given) and "" not in given.values()
            result, _ = archsim.train(model, cluster=cluster, **given)
            assert result.iteration_seconds == row["iteration_seconds"], row["command"]
            par = result.parallelism
            assert (par.tp, par.pp, par.dp, par.cp) == (row["tp"], row["pp"], row["dp"], row["cp"])
    assert exercised <= carried


def test_train_keywords_refuses_a_row_the_search_has_not():
    found = archsim.search(GPT, cluster=A100, progress=False, **{**SMALL, "top": 2, "max_micro_batch": 1})
    assert found.train_keywords(-1) == found.train_keywords(len(found.rows) - 1)
    for index in (len(found.rows), -len(found.rows) - 1, "0", True):
        with pytest.raises(InputError, match=f"expected a row of the search's {len(found.rows)}") as caught:
            found.train_keywords(index)  # type: ignore[arg-type]
        assert caught.value.where.field == "index"


def test_train_keywords_needs_the_search_that_wrote_the_commands():
    bare = SearchResult(rows=[{"tp": 1}], rejected={}, enumerated=1, costed=1, pareto=[])
    with pytest.raises(InputError, match="only archsim.search's result") as caught:
        bare.train_keywords(0)
    assert caught.value.where.field == "train_keywords"
