"""The Python API's results as data: progress bars on request, and the CLI's JSON documents."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest
from api_parity_helpers import as_printed, cli_json

import archsim
from archsim.errors import InputError

MODEL = "configs/transformers/gpt_1024h_24l.json"
CLUSTER = "configs/clusters/a100_node.toml"
SMALL = {"global_batch": 16, "top": 2, "schedule": ["1f1b"], "max_micro_batch": 1, "refine": 1}


def test_search_progress_true_draws_the_bar_on_stderr_off_a_terminal(capsys):
    archsim.search(MODEL, cluster=CLUSTER, progress=True, **SMALL)
    err = capsys.readouterr().err
    assert "search gpt" in err and "config" in err  # the grid's bar, its description and unit
    assert "re-time in the event simulator" in err  # and the refine's


def test_search_progress_false_and_none_off_a_terminal_draw_nothing(capsys):
    archsim.search(MODEL, cluster=CLUSTER, progress=False, **SMALL)
    archsim.search(MODEL, cluster=CLUSTER, **SMALL)  # None: stderr is captured, not a terminal
    assert capsys.readouterr().err == ""


def test_search_progress_refuses_a_non_bool():
    with pytest.raises(InputError, match="progress"):
        archsim.search(MODEL, cluster=CLUSTER, progress="yes", **SMALL)


def test_train_to_dict_is_the_cli_json(capsys):
    """Pipeline and DP ranks, selective recompute and a planned split: most of the meta's keys differ
    from their defaults."""
    flags = {"tp": 2, "pp": 2, "dp": 2, "global_batch": 16, "micro_batch": 2, "recompute": "selective",
             "balance": "planned", "dtype": "bf16"}
    result, _ = archsim.train(MODEL, cluster=CLUSTER, **flags)
    argv = ["train", MODEL, "--cluster", CLUSTER]
    for key, value in flags.items():
        argv += [f"--{key.replace('_', '-')}", str(value)]
    printed = cli_json(argv, capsys)
    assert printed["meta"]["dtype"] == "bf16" and printed["meta"]["stage_layers"] != "even"
    assert printed["rows"] and printed["meta"]["timeline"]
    assert as_printed(result.to_dict()) == printed


def test_to_dict_is_a_copy_and_survives_pickle(capsys):
    result, _ = archsim.train(MODEL, cluster=CLUSTER, tp=2, pp=2, global_batch=8, micro_batch=2)
    document = result.to_dict()
    document["meta"]["model"] = "changed"
    assert result.to_dict()["meta"]["model"] != "changed"
    assert pickle.loads(pickle.dumps(result)).to_dict() == result.to_dict()
    assert copy.deepcopy(result) == result


def test_to_dict_of_a_result_that_knows_no_cluster_is_refused():
    result, _ = archsim.train(MODEL, cluster=CLUSTER, global_batch=2)
    bare = dataclasses.replace(result, document=None)
    with pytest.raises(InputError, match="archsim.train"):
        bare.to_dict()


def test_search_to_dict_is_the_cli_json(capsys):
    """Two GPU counts, a given sequence length, fp32 and the energy objective: the meta's optional keys and
    each row's train line (its --seq and --dtype) are all exercised."""
    found = archsim.search(MODEL, cluster=CLUSTER, global_batch=16, gpus=[4, 8], seq=512, top=3, schedule=["1f1b"],
                           max_micro_batch=2, refine=1, dtype="fp32", attention="standard", objective="energy")
    printed = cli_json(["search", MODEL, "--cluster", CLUSTER, "--global-batch", "16", "--gpus", "4", "8",
                        "--seq", "512", "--top", "3", "--schedule", "1f1b", "--max-micro-batch", "2",
                        "--refine", "1", "--dtype", "fp32", "--attention", "standard",
                        "--objective", "energy"], capsys)
    assert len(printed["rows"]) == 3 and printed["meta"]["gpus"] == "4,8" and printed["meta"]["pareto"]
    assert "--seq 512 --dtype fp32" in printed["rows"][0]["command"]
    assert as_printed(found.to_dict()) == printed


def test_search_to_dict_names_placeholders_for_objects():
    from archsim.training.cluster_file import load_gpu_cluster
    from archsim.workload.model_files import load_transformer

    found = archsim.search(load_transformer(MODEL), cluster=load_gpu_cluster(CLUSTER), **SMALL)
    assert found.to_dict()["rows"][0]["command"].startswith("archsim train MODEL.json --cluster CLUSTER.toml ")


def test_search_names_the_files_given_for_objects():
    """``model_file``/``cluster_file``: the paths the objects came from, in each row's train line."""
    from archsim.training.cluster_file import load_gpu_cluster
    from archsim.workload.model_files import load_transformer

    found = archsim.search(load_transformer(MODEL), cluster=load_gpu_cluster(CLUSTER), model_file=MODEL,
                           cluster_file=CLUSTER, **SMALL)
    assert found.to_dict()["rows"][0]["command"].startswith(f"archsim train {MODEL} --cluster {CLUSTER} ")
    with pytest.raises(InputError, match="model_file"):
        archsim.search(MODEL, cluster=CLUSTER, model_file=3, **SMALL)


def test_archsim_search_builds_its_json_document_once(capsys, monkeypatch):
    """The command's document is archsim.search's own (naming the command's files), not a second one."""
    from archsim.training import train_json

    built = []
    real = train_json.search_document
    monkeypatch.setattr(train_json, "search_document", lambda *a, **k: built.append(k["model"]) or real(*a, **k))
    printed = cli_json(["search", MODEL, "--cluster", CLUSTER, "--global-batch", "16", "--top", "2",
                        "--schedule", "1f1b", "--max-micro-batch", "1", "--refine", "1"], capsys)
    assert built == [MODEL]
    assert printed["rows"][0]["command"].startswith(f"archsim train {MODEL} --cluster {CLUSTER} ")
