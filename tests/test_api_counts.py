"""A count given as its flag's text (``tp="2"``, from a CSV or a widget) is read as the flag reads it, on every job
(docs/api.md), and the annotations say so (``int | str``), so a type checker accepts what the run accepts; a value
no flag could give (``tp="two"``, ``2.5``, ``True``) is one InputError naming the keyword.

Failed before: ``archsim.train(..., tp="2")`` ran but mypy refused it (``tp: int``); and ``seq="2048"`` on a
rotary ``config.json`` (whose note compares the sequence with ``max_position_embeddings``) was a TypeError from
inside (``'<=' not supported between 'str' and 'int'``)."""

from __future__ import annotations

import inspect
import json
import warnings

import numpy as np
import pytest
from api_parity_helpers import MODEL, NODE, annotation_text
from test_docs import ROOT

import archsim
from archsim.errors import InputError

COUNTS = {  # job → its keywords that take a count (or a number) a flag reads from text
    "train": ("global_batch", "tp", "pp", "dp", "micro_batch", "seq", "interleave", "max_ops", "cp", "ep", "etp",
              "moe_expert_capacity_factor", "moe_load_imbalance", "cp_hierarchy"),  # cp, ep, etp: int until 2026-12-03
    "train_runs": ("seq", "max_ops", "mtp_layers"),
    "train_sweep": ("global_batch", "tp", "pp", "dp", "micro_batch", "seq", "interleave", "max_ops", "cp", "ep", "etp",
                    "moe_expert_capacity_factor", "moe_load_imbalance", "cp_hierarchy", "mtp_layers"),
    "search": ("global_batch", "gpus", "seq", "top", "chunks", "max_micro_batch", "refine", "max_ops", "cp", "ep", "etp",
               "moe_load_imbalance"),
    "cost": ("batch", "element_bytes", "bandwidth", "clock_ghz"),
    "profile": ("batch", "element_bytes", "bandwidth", "clock_ghz"),
    "array_config": ("element_bytes", "bandwidth", "clock_ghz"),
    "pipeline": ("processors",),
    "simulate": ("microbatches", "max_ops"),
    "schedule": ("processors", "microbatches", "group", "region_size", "chunks", "element_bytes", "dram_bandwidth",
                 "batch", "max_ops", "stages", "max_orders", "comm_units", "comm", "link_bandwidth", "clock_ghz"),
    "gemm": ("m", "k", "n", "bandwidth", "clock_ghz"),
    "sparse": ("batch", "processors"),
    "iteration_energy": ("batch", "microbatches", "element_bytes", "bandwidth", "clock_ghz"),
    "plan": ("microbatches", "seed", "max_stages", "activation_compression_ratio", "element_bytes", "micro_batch",
             "batch", "clock_ghz", "max_ops", "max_search_steps"),
    "validate_gpu": ("sm_count", "tensor_cores_per_sm", "clock_mhz", "memory_gbps"),
    "bppsa_rnn": ("hidden", "batch", "element_bytes"),
    "bppsa_pruned_vgg11": ("sparsity", "seed", "width_divisor", "max_mflops"),
    "bppsa_network": ("batch", "seed", "max_mflops"),
    "cluster_jobs": ("gpus", "gpus_per_machine", "device_memory_gb", "seed", "seeds", "jobs", "interval",
                     "gamma_ns_per_byte", "unit_seconds", "max_pack"),
}
LLAMA = {"model_type": "llama", "hidden_size": 1024, "intermediate_size": 3584, "num_hidden_layers": 4,
         "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 32000,
         "max_position_embeddings": 1024, "hidden_act": "silu", "tie_word_embeddings": False}


@pytest.mark.parametrize("job", sorted(COUNTS))
def test_a_count_keyword_is_annotated_as_its_flags_text_too(job):
    parameters = inspect.signature(getattr(archsim, job)).parameters
    narrow = [name for name in COUNTS[job] if "str" not in annotation_text(parameters[name].annotation)]
    assert not narrow, f"archsim.{job}: {narrow} refuse text for a type checker, which the run reads"


def test_train_reads_counts_given_as_text_as_the_flags_do(monkeypatch):
    monkeypatch.chdir(ROOT)
    given, _ = archsim.train(MODEL, cluster=NODE, tp="2", pp="2", dp="2", global_batch="16", micro_batch="2")
    counted, _ = archsim.train(MODEL, cluster=NODE, tp=2, pp=2, dp=2, global_batch=16, micro_batch=2)
    assert given.iteration_seconds == counted.iteration_seconds
    assert given.parallelism.tp == 2 and given.parallelism.global_batch == 16


@pytest.mark.parametrize("value", ["two", 2.5, True, "0", "-2", "2.0"])
def test_train_refuses_a_count_no_flag_could_give_in_one_line(value, monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(InputError) as refused:
        archsim.train(MODEL, cluster=NODE, global_batch=16, tp=value)
    assert refused.value.where.field == "tp" and "expected a positive integer" in str(refused.value)


def test_seq_as_text_on_a_rotary_config_is_read_as_seq_does(tmp_path, monkeypatch):
    """A rotary config.json's note compares the sequence with max_position_embeddings (1,024 here): 2,048 given as
    text is 2,048, past it, so the note says so, as for the number; the run is the number's."""
    monkeypatch.chdir(ROOT)
    model = tmp_path / "config.json"
    model.write_text(json.dumps(LLAMA), encoding="utf-8")
    runs = {}
    for seq in ("2048", 2048):
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            runs[seq], _ = archsim.train(model, cluster=NODE, global_batch=8, seq=seq)
        assert any("seq=2048 is past max_position_embeddings 1024" in str(w.message) for w in said)
    assert runs["2048"].iteration_seconds == runs[2048].iteration_seconds
    assert runs["2048"].to_dict()["meta"]["seq"] == 2048
    found = archsim.search(model, cluster=NODE, global_batch=8, seq="2048", top=1, schedule="1f1b",
                           max_micro_batch=1, refine=0)
    assert found.to_dict()["meta"]["seq"] == 2048 and "--seq 2048" in found.rows[0]["command"]


@pytest.mark.parametrize("job", ["schedule", "cost", "gemm"])
def test_a_clock_out_of_range_is_one_input_error_on_every_job(job):
    """``clock_ghz=1e9`` (Hz given as GHz) is ``--clock-ghz``'s line, an InputError naming the keyword (failed
    before for ``schedule``: a bare ValueError from inside)."""
    inputs = {"schedule": {"network": "ffnn8", "policy": "ooo-pipe2", "processors": 2}, "cost": {"network": "ffnn8"},
              "gemm": {"m": 4, "k": 4, "n": 4}}[job]
    with pytest.raises(InputError) as refused:
        getattr(archsim, job)(**inputs, clock_ghz=1e9)
    assert refused.value.where.field == "clock-ghz" and "did you mean 1e+09 Hz = 1 GHz?" in str(refused.value)


def _count_calls(made) -> dict:
    """job → (a call of good values that takes one more keyword, its count keywords): every count keyword of every
    job, the layout lists (``stage_layers``, ``cp_hierarchy``, search's ``tp``) and sweep axes among them."""
    profile, plan = made
    net, cfg = "layerpipe_sample", "configs/arrays/scalesim_sparsity_128x128_ws.cfg"
    return {
        "train": (lambda **k: archsim.train(MODEL, cluster=NODE, **{"global_batch": 8, **k}),
                  ("global_batch", "tp", "pp", "dp", "micro_batch", "seq", "interleave", "max_ops", "cp", "ep", "etp",
                   "mtp_layers", "stage_layers", "cp_hierarchy")),
        "train_runs": (lambda **k: archsim.train_runs(MODEL, runs="configs/runs/vtrain_h1024_l24.csv", cluster=NODE,
                                                      **k), ("seq", "max_ops", "mtp_layers")),
        "train_sweep": (lambda **k: archsim.train_sweep(MODEL, sweep="tp=1,2", cluster=NODE,
                                                        **{"global_batch": 8, **k}),
                        ("global_batch", "pp", "dp", "micro_batch", "seq", "interleave", "max_ops", "cp", "ep")),
        "search": (lambda **k: archsim.search(MODEL, cluster=NODE, **{"global_batch": 8, "gpus": 2, **k}),
                   ("global_batch", "gpus", "seq", "top", "chunks", "max_micro_batch", "refine", "max_ops", "cp", "tp",
                    "pp")),
        "cost": (lambda **k: archsim.cost(net, **k), ("batch",)),
        "pipeline": (lambda **k: archsim.pipeline(profile, **{"processors": 2, **k}), ("processors",)),
        "simulate": (lambda **k: archsim.simulate(plan, profile, **{"microbatches": 2, **k}),
                     ("microbatches", "max_ops")),
        "schedule": (lambda **k: archsim.schedule("ffnn8", **{"policy": "1f1b", "processors": 2, **k}),
                     ("processors", "microbatches", "max_ops", "batch", "group", "chunks")),
        "gemm": (lambda **k: archsim.gemm(**{"m": 8, "k": 8, "n": 8, **k}), ("m", "k", "n")),
        "gemm_cost": (lambda **k: archsim.gemm_cost(**{"m": 8, "k": 8, "n": 8, "rows": 4, "cols": 4, **k}),
                      ("m", "k", "n", "rows", "cols")),
        "sparse": (lambda **k: archsim.sparse("docs/examples/pruned_convs.csv", config=cfg, **k),
                   ("batch", "processors")),
        "plan": (lambda **k: archsim.plan(net, cluster="configs/clusters/testbed_1080ti.toml",
                                          **{"microbatches": 4, **k}),
                 ("microbatches", "seed", "max_stages", "micro_batch", "batch", "max_ops")),
        "bppsa_rnn": (lambda **k: archsim.bppsa_rnn(**{"seq_len": [10], **k}), ("hidden", "batch", "seq_len")),
        "cluster_jobs": (lambda **k: archsim.cluster_jobs(**{"jobs": 3, **k}), ("gpus", "seed", "jobs")),
        "collective": (lambda **k: archsim.collective("all-reduce", 1e6, cluster=NODE, **{"gpus": 8, **k}),
                       ("gpus", "per_server")),
    }


COUNT_CALLS = [(job, keyword) for job, (_, keywords) in _count_calls((None, None)).items() for keyword in keywords]


@pytest.fixture(scope="module")
def made():
    profile = archsim.profile("layerpipe_sample", array="16x16", batch=4)
    return profile, archsim.pipeline(profile, processors=2)


@pytest.mark.parametrize("value", [2.5, True, np.float64(2.5), np.True_], ids=["fraction", "bool", "np-fraction",
                                                                              "np-bool"])
@pytest.mark.parametrize("job, keyword", COUNT_CALLS)
def test_every_count_keyword_refuses_a_fraction_and_a_bool_naming_it(job, keyword, value, made, monkeypatch):
    """docs/api.md: a count is an int, a whole float or a numpy integer; ``2.5`` and ``True`` (which Python counts
    an int, 1) are refused in one line naming the keyword, on every job (gemm_cost took ``True`` as 1 before)."""
    monkeypatch.chdir(ROOT)
    call, _ = _count_calls(made)[job]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(InputError) as refused:
            call(**{keyword: value})
    assert (refused.value.where.field or "").replace("-", "_") == keyword, str(refused.value)
    assert "\n" not in str(refused.value)
