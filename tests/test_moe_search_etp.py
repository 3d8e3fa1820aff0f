"""``archsim search --etp N [N …]`` plans the experts' tensor-parallel degree (Megatron-Core's
``--expert-tensor-parallel-size``) beside EP: ``tp`` is each candidate's own TP (the default, alone), a layout whose
ETP × EP does not divide TP × CP × DP is counted under its own rule, a row's time and memory are ``train``'s at
that ETP, and an integer ETP on a dense model is refused in one line, as ``train`` refuses it."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.errors import InputError
from archsim.training.search_space import candidate_count, candidates, factorization_count

CLUSTER = Path(__file__).resolve().parents[1] / "configs" / "clusters" / "h100_2_servers.toml"
SMALL_MOE = {"model_type": "mixtral", "num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 4,
             "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1024, "max_position_embeddings": 512,
             "num_local_experts": 8, "num_experts_per_tok": 2}
DENSE_FLAGS = ["--gpus", "4", "--global-batch", "8", "--seq", "128", "--max-micro-batch", "1", "--recompute", "none",
               "--schedule", "1f1b", "--refine", "0", "--top", "50", "--format", "json"]
FLAGS = [*DENSE_FLAGS, "--ep", "2", "4"]
KEYS = {"gpus": 4, "global_batch": 8, "seq": 128, "max_micro_batch": 1, "recompute": "none", "schedule": "1f1b",
        "ep": [2, 4], "refine": 0, "top": 50}


def _write(tmp_path: Path, config: dict, name: str) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(config))
    return str(path)


def _moe(tmp_path: Path) -> str:
    return _write(tmp_path, SMALL_MOE, "small_moe.json")


def _dense(tmp_path: Path) -> str:
    dense = {k: v for k, v in SMALL_MOE.items() if k not in ("num_local_experts", "num_experts_per_tok")}
    return _write(tmp_path, dense | {"model_type": "llama"}, "dense.json")


def _search(argv: list[str], capsys) -> dict:
    code = main(["search", *argv])
    assert code == 0
    return json.loads(capsys.readouterr().out)


def test_etp_1_and_tp_are_both_searched_and_the_rule_is_counted_by_hand(tmp_path, capsys):
    """4 GPUs, 4 layers, 4 heads and 2 K/V heads, 8 experts, EP 2 or 4, ETP 1 or TP, sequence parallelism on or off.
    (TP, PP, DP): (1,1,4), (1,2,2), (1,4,1) try one ETP (1 is their TP), (2,1,2), (2,2,1), (4,1,1) two: 3·2·2·1 +
    3·2·2·2 = 36 candidates. TP 4 does not divide 2 K/V heads: 8. SP at TP 1: 3 layouts × 2 EP = 6. TP 2 without SP
    (MoELayer raises): 2 layouts × 2 EP × 2 ETP = 8. Left, TP 1 without SP: EP 4 at DP 2, EP 2 and 4 at DP 1 break EP |
    CP·DP (3; 3 run). TP 2 with SP at ETP = TP: EP 4 at DP 2, EP 2 and 4 at DP 1 break EP | CP·DP (3; (2,1,2) EP 2
    runs); at ETP 1, ETP·EP | TP·DP = 4 holds but for (2,2,1) EP 4 (4 ∤ 2): 1, and 3 run. 7 costed."""
    document = _search([_moe(tmp_path), "--cluster", str(CLUSTER), *FLAGS, "--etp", "1", "tp"], capsys)
    meta, rows = document["meta"], document["rows"]
    assert meta["etp"] == "1,tp" and meta["enumerated"] == 36 and meta["costed"] == len(rows) == 7
    assert meta["rejected"] == {"tp-divides-heads": 8, "sequence-parallel-needs-tp": 6,
                                "moe-needs-sequence-parallel": 8, "ep-divides-dp": 6, "etp-ep-divides-tp-cp-dp": 1}
    layouts = {(r["tp"], r["pp"], r["dp"], r["ep"], r["etp"]) for r in rows}
    assert {(2, 1, 2, 2, 1), (2, 1, 2, 2, 2)} <= layouts  # the same layout at ETP 1 and at ETP = TP
    assert (2, 2, 1, 4, 1) not in layouts
    for r in rows:
        assert (r["tp"] * r["cp"] * r["dp"]) % (r["etp"] * r["ep"]) == 0
        apart = r["etp"] != r["tp"]
        assert (f"--etp {r['etp']}" in r["command"]) == apart
        assert (f"--expert-tensor-parallel-size {r['etp']}" in r["megatron_args"]) == apart


def test_the_grid_size_counts_each_tp_once_per_distinct_etp():
    """4 GPUs at ETP 1 or TP: TP 1 takes d(4) = 3 splits once (ETP 1 is its TP), TP 2 d(2) = 2 twice, TP 4 d(1) = 1
    twice: 3 + 4 + 2 = 9; ETP 2 or TP at 8 GPUs: TP 1 d(8) = 4 twice, TP 2 d(4) = 3 once, TP 4 and TP 8 (2 and 1
    splits) twice: 8 + 3 + 4 + 2 = 17."""
    assert factorization_count(4, (1, None)) == 9
    assert factorization_count(8, (2, None)) == 17
    grid = list(candidates(4, (1, 2), ("none",), ("1f1b",), (2,), (False, True), eps=(1, 2), etps=(1, None)))
    assert len(grid) == 9 * 2 * 2 * 2 == candidate_count((4,), (1, 2), ("none",), ("1f1b",), (2,), (False, True),
                                                         eps=(1, 2), etps=(1, None))
    assert all(k.etp is None or k.etp != k.tp for k in grid)  # an ETP equal to TP is TP's, said once


def test_a_searched_row_times_and_holds_what_train_gives_at_its_etp(tmp_path, capsys):
    model = _moe(tmp_path)
    rows = archsim.search(model, cluster=CLUSTER, etp=[1, "tp"], **KEYS).rows
    picked = [r for r in rows if (r["tp"], r["pp"], r["dp"], r["ep"]) == (2, 1, 2, 2)]
    assert sorted(r["etp"] for r in picked) == [1, 2]
    times = set()
    for row in picked:
        trained, _ = archsim.train(model, cluster=CLUSTER, tp=2, dp=2, ep=2, etp=row["etp"], global_batch=8, seq=128,
                                   micro_batch=1, recompute="none", sequence_parallel=True, attention="flash")
        assert trained.iteration_seconds == pytest.approx(row["iteration_seconds"], rel=1e-12)
        assert trained.peak_memory_gib == pytest.approx(row["peak_memory_gib"], rel=1e-12)
        assert main([*shlex.split(row["command"])[1:], "--format", "json"]) == 0  # the row's own line, as printed
        meta = json.loads(capsys.readouterr().out)["meta"]
        assert (meta["etp"], meta["iteration_seconds"]) == (row["etp"], pytest.approx(row["iteration_seconds"],
                                                                                         rel=1e-12))
        times.add(row["iteration_seconds"])
    assert len(times) == 2  # ETP 1 prices another layout than ETP = TP: not the same pieces twice


def test_the_api_takes_what_the_flag_takes(tmp_path, capsys):
    model = _moe(tmp_path)
    printed = _search([model, "--cluster", str(CLUSTER), *FLAGS, "--etp", "1,tp"], capsys)["rows"]
    for given in ([1, "tp"], "1,tp", ("1", "tp"), [1.0, "tp"]):
        found = archsim.search(model, cluster=CLUSTER, etp=given, **KEYS).rows
        assert [(r["tp"], r["pp"], r["dp"], r["ep"], r["etp"], r["iteration_seconds"]) for r in found] == \
            [(r["tp"], r["pp"], r["dp"], r["ep"], r["etp"], r["iteration_seconds"]) for r in printed]
    with pytest.raises(InputError, match=r"expected a positive integer or 'tp', got '0'"):
        archsim.search(model, cluster=CLUSTER, etp=[0], **KEYS)
    assert main(["search", model, "--cluster", str(CLUSTER), *FLAGS, "--etp", "0"]) == 2
    assert "argument --etp: expected a positive integer or 'tp', got '0'" in capsys.readouterr().err


def test_the_default_and_tp_alone_search_etp_at_tp_with_no_column(tmp_path, capsys):
    model = _moe(tmp_path)
    default = _search([model, "--cluster", str(CLUSTER), *FLAGS], capsys)
    said = _search([model, "--cluster", str(CLUSTER), *FLAGS, "--etp", "tp"], capsys)
    assert "etp" not in default["meta"] and not any("etp" in r for r in default["rows"])
    assert said["rows"] == default["rows"] and said["meta"]["rejected"] == default["meta"]["rejected"]
    assert not any("--etp" in r["command"] or "expert-tensor" in r["megatron_args"] for r in default["rows"])


def test_an_integer_etp_on_a_dense_model_is_refused_in_one_line(tmp_path, capsys):
    dense = _dense(tmp_path)
    assert main(["search", dense, "--cluster", str(CLUSTER), *DENSE_FLAGS, "--etp", "1", "tp"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    line = captured.err.strip()
    assert "\n" not in line and line.startswith("archsim search: error: argument --etp: ETP 1 needs a mixture-of-experts")
    with pytest.raises(InputError, match="ETP 1 needs a mixture-of-experts model"):
        archsim.search(dense, cluster=CLUSTER, etp=1, **{k: v for k, v in KEYS.items() if k != "ep"})
    rows = _search([dense, "--cluster", str(CLUSTER), *DENSE_FLAGS, "--etp", "tp"], capsys)["rows"]
    assert rows and not any("etp" in r for r in rows)  # TP's own ETP, like EP 1, is every dense search's


def test_a_search_emptied_by_the_etp_rule_names_etp(tmp_path, capsys):
    """2 GPUs with sequence parallelism on: TP 1 is refused (2 layouts), and TP 2 × DP 1 at EP 4, ETP 1 has
    ETP·EP = 4 ∤ TP·DP = 2: nothing costed, and the note offers --etp."""
    code = main(["search", _moe(tmp_path), "--cluster", str(CLUSTER), "--gpus", "2", "--global-batch", "8", "--seq",
                 "128", "--max-micro-batch", "1", "--recompute", "none", "--schedule", "1f1b", "--sequence-parallel",
                 "on", "--ep", "4", "--etp", "1"])
    err = capsys.readouterr().err
    assert code == 0 and "sequence-parallel-needs-tp: 2, etp-ep-divides-tp-cp-dp: 1" in err and "--etp" in err


def test_an_etp_not_dividing_the_expert_width_is_refused_by_train_and_search(tmp_path):
    """Megatron-Core splits each expert's fc1 and fc2 over ETP (``divide`` asserts): an expert FFN width of 510
    takes ETP 1 or 2, not 4 (before: 510 // 4 = 127 columns a rank, the width rounded down silently)."""
    model = _write(tmp_path, {**SMALL_MOE, "intermediate_size": 510}, "odd_moe.json")
    with pytest.raises(InputError, match=r"the experts' FFN width \(510\) over ETP 4 must divide"):
        archsim.train(model, cluster=str(CLUSTER), tp=2, dp=2, etp=4, sequence_parallel=True, global_batch=8, seq=128)
    archsim.train(model, cluster=str(CLUSTER), tp=2, dp=2, etp=1, ep=2, sequence_parallel=True, global_batch=8,
                  seq=128)  # ETP 1 divides it
    result = archsim.search(model, cluster=str(CLUSTER), **{**KEYS, "ep": [1, 2], "etp": [4, "tp"]})
    assert result.rejected["etp-divides-expert-ffn"] > 0
    assert result.rows and all(row.get("etp", row["tp"]) != 4 for row in result.rows)
