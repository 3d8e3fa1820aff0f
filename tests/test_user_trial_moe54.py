"""A mixture-of-experts user's first trial of ``--ep``/``--etp``: what the outputs name of the expert layout. The
Gantt's title and the search's Pareto page say EP as the search's front lines do; the network line names the
expert groups (EP all-to-all, expert-TP, expert-DP) that cross servers, counted by hand from Megatron-Core's rank
order (tp-ep-dp: an EP group is GPU t of EP consecutive ETP groups)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.commands.timeline_outputs import iteration_title
from archsim.training.parallel import Parallelism

CLUSTERS = Path(__file__).resolve().parents[1] / "configs" / "clusters"
SMALL_MOE = {"model_type": "mixtral", "num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 8,
             "num_key_value_heads": 8, "intermediate_size": 512, "vocab_size": 1024, "max_position_embeddings": 512,
             "num_local_experts": 8, "num_experts_per_tok": 2}


def _config(tmp_path) -> Path:
    path = tmp_path / "small_moe.json"
    path.write_text(json.dumps(SMALL_MOE))
    return path


def _four_servers(tmp_path) -> Path:
    """Four servers of eight H100s, one 400 Gb/s NIC a GPU (configs/clusters/h100_2_servers.toml, count 4)."""
    text = (CLUSTERS / "h100_2_servers.toml").read_text().replace("count = 2", "count = 4")
    assert "count = 4" in text
    path = tmp_path / "h100_4_servers.toml"
    path.write_text(text)
    return path


def test_the_gantt_title_names_ep_and_an_etp_other_than_tp():
    assert iteration_title("m", Parallelism(tp=4, pp=4, dp=2, ep=2, global_batch=8)) == "m: TP4 EP2 PP4 DP2, 1f1b"
    assert (iteration_title("m", Parallelism(tp=4, pp=4, dp=2, ep=2, etp=1, global_batch=8))
            == "m: TP4 EP2 ETP1 PP4 DP2, 1f1b")
    assert iteration_title("m", Parallelism(tp=4, dp=2, etp=4, global_batch=8)) == "m: TP4 PP1 DP2, 1f1b"  # ETP = TP
    assert iteration_title("m", Parallelism(tp=2, dp=2, global_batch=8)) == "m: TP2 PP1 DP2, 1f1b"


def test_train_gantt_page_carries_the_ep(tmp_path):
    page = tmp_path / "g.html"
    assert main(["train", str(_config(tmp_path)), "--cluster", str(CLUSTERS / "h100_2_servers.toml"), "--dp", "4",
                 "--ep", "4", "--global-batch", "8", "--seq", "128", "--gantt", str(page)]) == 0
    assert "small_moe: TP1 EP4 PP1 DP4, 1f1b" in page.read_text()


def test_the_pareto_page_tables_carry_ep(tmp_path, capsys):
    page = tmp_path / "front.html"
    assert main(["search", str(_config(tmp_path)), "--cluster", str(CLUSTERS / "h100_2_servers.toml"), "--gpus",
                 "8", "--global-batch", "16", "--seq", "128", "--max-micro-batch", "1", "--schedule", "1f1b",
                 "--refine", "0", "--pareto-html", str(page)]) == 0
    capsys.readouterr()
    text = page.read_text()
    assert text.count("<th>ep</th>") == 2  # the front's table and the ranked rows'
    dense = tmp_path / "dense.json"
    dense.write_text(json.dumps({k: v for k, v in SMALL_MOE.items() if "experts" not in k} | {"model_type": "llama"}))
    assert main(["search", str(dense), "--cluster", str(CLUSTERS / "h100_2_servers.toml"), "--gpus", "8",
                 "--global-batch", "16", "--seq", "128", "--max-micro-batch", "1", "--schedule", "1f1b",
                 "--refine", "0", "--pareto-html", str(page)]) == 0
    assert "<th>ep</th>" not in page.read_text()


@pytest.mark.parametrize(("keys", "crossed"), [
    # TP 4 × DP 8 on 4 servers of 8: an EP group is GPU t of EP consecutive TP groups (GPUs t, t + 4, …)
    ({"tp": 4, "dp": 8, "ep": 2}, ["dp", "expert_dp"]),  # EP: t, t + 4 in one server; expert-DP 4 ranks, 8 apart
    ({"tp": 4, "dp": 8, "ep": 4}, ["ep", "dp", "expert_dp"]),  # EP: t … t + 12, two servers; expert-DP t, t + 16
    ({"tp": 4, "dp": 8, "ep": 8}, ["ep", "dp"]),  # EP over all four servers; expert-DP 1: no group
    ({"tp": 4, "dp": 8, "ep": 4, "etp": 1}, ["dp", "expert_dp"]),  # EP: four consecutive GPUs; expert-DP 8
    ({"tp": 8, "dp": 4, "etp": 16}, ["etp", "dp", "expert_dp"]),  # an expert over two servers' GPUs
])
def test_the_network_line_names_the_expert_groups_that_cross_servers(tmp_path, keys, crossed):
    result, _ = archsim.train(_config(tmp_path), cluster=_four_servers(tmp_path), global_batch=32, seq=128,
                              sequence_parallel=True, **keys)
    assert result.to_dict()["meta"]["inter_server"]["crossed_by"] == crossed


def _search(tmp_path, *flags: str) -> list[str]:
    return ["search", str(_config(tmp_path)), "--cluster", str(CLUSTERS / "h100_2_servers.toml"), "--gpus", "8",
            "--global-batch", "16", "--seq", "128", "--max-micro-batch", "1", "--schedule", "1f1b", "--refine", "0",
            "--format", "json", *flags]


@pytest.mark.parametrize("ep", ["3", "16"])
def test_an_empty_search_for_an_ep_dividing_no_expert_count_says_to_change_ep(tmp_path, capsys, ep):
    """EP 3 or 16 of 8 experts: every row is rejected by Megatron-Core's divisibility assert. The note used to ask
    for more --schedule, --recompute, --sequence-parallel or --max-micro-batch values, none of which helps."""
    assert main(_search(tmp_path, "--ep", ep)) == 0
    err = capsys.readouterr().err
    assert "ep-divides-experts" in err and "--ep" in err.split("give more")[1]
    assert "EP 1, 2, 4 or 8 divides its 8 experts" in err  # the divisors of 8


def test_a_search_names_ep_beside_fsdp_as_its_own_rule(tmp_path, capsys):
    """EP 2 on DP 4 divides DP: the rows fall to train's refusal of EP beside FSDP, which search counted as
    ``ep-divides-dp`` — a rule those layouts keep. (EP beside CP runs: Megatron-Core carves EP from TP·CP·DP.)"""
    assert main(_search(tmp_path, "--ep", "2", "--fsdp")) == 0
    out = capsys.readouterr()
    rejected = json.loads(out.out)["meta"]["rejected"]
    assert rejected.get("ep-beside-fsdp", 0) > 0
    assert "ep-divides-dp" not in rejected  # 8 GPUs: every DP left beside EP 2 is even
    assert "--ep" in out.err.split("give more")[1]


@pytest.mark.parametrize(("model_type", "experts_key"), [("mixtral", "num_local_experts"), ("qwen3_moe", "num_experts")])
def test_top_k_above_the_expert_count_is_named_in_the_configs_terms(tmp_path, capsys, model_type, experts_key):
    """num_experts_per_tok 9 of 8 experts: the message was archsim's tuple "(8, 9, 512) for llama" for a Mixtral."""
    config = {k: v for k, v in SMALL_MOE.items() if k != "num_local_experts"}
    config |= {"model_type": model_type, experts_key: 8, "num_experts_per_tok": 9}
    if model_type == "qwen3_moe":
        config |= {"moe_intermediate_size": 512, "head_dim": 32}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert main(["train", str(path), "--cluster", str(CLUSTERS / "h100_2_servers.toml"), "--global-batch", "8",
                 "--seq", "128"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "field 'num_experts_per_tok'" in err
    assert "routed to 9 experts (top-k) of the 8" in err and "llama" not in err


@pytest.mark.parametrize("flags", [("--dp", "4", "--etp", "3"), ("--dp", "2", "--cp", "2", "--etp", "3"),
                                   ("--dp", "4", "--fsdp", "--etp", "2")])
def test_an_etp_refused_at_ep_1_names_etp(tmp_path, capsys, flags):
    """--etp 3 (ETP × EP = 3 does not divide TP × CP × DP = 4) or --etp beside FSDP, without --ep: the one-line
    refusal named field 'ep', a flag the user never gave."""
    assert main(["train", str(_config(tmp_path)), "--cluster", str(CLUSTERS / "h100_2_servers.toml"), *flags,
                 "--global-batch", "8", "--seq", "128"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "argument --etp" in err and "ETP" in err


def test_train_help_lists_every_runs_column_and_the_ep_rule_at_an_etp(capsys):
    """--runs' help listed the optional columns of before CP and EP (no ep, etp, cp, …), and --ep's said EP divides
    DP, which an ETP other than TP lifts (TP 4, DP 2, ETP 1, EP 4 trains: ETP × EP = 4 divides TP × CP × DP = 8)."""
    from archsim.training.runs import OPTIONAL, REQUIRED

    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    runs = re.findall(r"[a-z0-9_]+", text.split("--runs RUNS.csv")[-1].split("--max-ops")[0])  # [-1]: not the usage's
    assert [c for c in (*REQUIRED, *OPTIONAL) if c not in runs] == []
    ep = text.split("--ep EP")[-1].split("--etp ETP")[0]
    assert "ETP × EP divides TP × CP × DP" in ep
    Parallelism(tp=4, dp=2, ep=4, etp=1, sequence_parallel=True, global_batch=8)  # accepted: the help's rule


def test_the_breakdown_paragraph_names_every_entry_a_moe_run_prints(tmp_path):
    """docs/training.md's list of ``breakdown_seconds`` left out ``ep_communication`` (and CP's, FSDP's entries)."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "training.md").read_text()
    paragraph = " ".join(text.split("`breakdown_seconds` (")[1].split("`intra_server`")[0].split())
    dense, _ = archsim.train(_config(tmp_path), cluster=CLUSTERS / "h100_2_servers.toml", global_batch=8, seq=128)
    for keys in ({"ep": 4, "dp": 4}, {"cp": 2, "dp": 2}, {"fsdp": True, "dp": 4}):
        result, _ = archsim.train(_config(tmp_path), cluster=CLUSTERS / "h100_2_servers.toml", global_batch=8,
                                  seq=128, **keys)
        extra = [k for k in result.breakdown if k not in dense.breakdown]  # the layout's own entries, by key
        assert extra and [k for k in extra if f"`{k}`" not in paragraph] == []


@pytest.mark.parametrize("flag", ["--ep", "--etp"])
def test_ep_on_a_config_whose_experts_are_not_read_says_which_types_are(tmp_path, capsys, flag):
    """A Mixtral's fields under model_type llama: num_local_experts is not read, so the model is dense and --ep 2 is
    refused before the unread-fields note could say so; the refusal said only "is dense"."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(SMALL_MOE | {"model_type": "llama"}))
    assert main(["train", str(path), "--cluster", str(CLUSTERS / "h100_2_servers.toml"), "--dp", "4",
                 "--global-batch", "8", "--seq", "128", flag, "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is dense" in err and "model_type mixtral" in err and "qwen2_moe" in err and "qwen3_moe" in err


def test_cli_doc_names_every_parallel_degree_flag_train_takes(capsys):
    """docs/cli.md described --tp, --pp, --dp and --cp (and the runs file's refusal of them) but not --ep or --etp."""
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    usage = capsys.readouterr().out
    degrees = {f for f in ("tp", "pp", "dp", "cp", "ep", "etp") if f"[--{f} {f.upper()}]" in usage}
    assert degrees == {"tp", "pp", "dp", "cp", "ep", "etp"}
    text = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()
    assert [f for f in sorted(degrees) if f"`--{f} " not in text and f"`--{f}`" not in text] == []


def test_etp_on_a_dense_model_is_refused_only_where_it_is_not_tp(tmp_path, capsys):
    """docs/training.md said `--etp` on a dense model is refused; an ETP equal to TP (the default, as EP 1 is) runs.
    The doc now says which: the run below at TP 2 with --etp 2 trains, --etp 1 is refused."""
    dense = tmp_path / "dense.json"
    dense.write_text(json.dumps({k: v for k, v in SMALL_MOE.items() if "experts" not in k} | {"model_type": "llama"}))
    flags = ["train", str(dense), "--cluster", str(CLUSTERS / "h100_2_servers.toml"), "--tp", "2", "--dp", "2",
             "--sequence-parallel", "--global-batch", "4", "--seq", "128"]
    assert main([*flags, "--etp", "2"]) == 0
    assert main([*flags, "--etp", "1"]) == 2 and "argument --etp" in capsys.readouterr().err
    text = " ".join((Path(__file__).resolve().parents[1] / "docs" / "training.md").read_text().split())
    assert "an `--etp` other than TP on a dense model" in text


@pytest.mark.parametrize(("flags", "said"), [(("--ep", "2", "--sweep", "ep=1,4"), "--ep"),
                                             (("--ep", "2", "--sweep", "micro_batch=1,2"), None)])
def test_a_flag_the_sweep_replaces_is_noted(tmp_path, capsys, flags, said):
    """``--ep 2 --sweep ep=1,4`` ran EP 1 and 4 without a word about the --ep 2 it was given (as --tp/--pp beside
    their axes): a note names the flag now; a flag the sweep does not sweep is not named."""
    assert main(["train", str(_config(tmp_path)), "--cluster", str(CLUSTERS / "h100_2_servers.toml"), "--dp", "4",
                 "--global-batch", "8", "--seq", "128", *flags, "--format", "csv"]) == 0
    err = capsys.readouterr().err
    noted = [line for line in err.splitlines() if "given beside --sweep" in line]
    line = f"archsim train: note: {said} given beside --sweep over the same setting: every point takes the sweep's values"
    assert noted == ([line] if said else [])
