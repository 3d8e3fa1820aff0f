"""Megatron-Core's expert capacity (``--moe-expert-capacity-factor``, ``--moe-pad-expert-input-to-capacity``):
the expert GEMMs' rows and the dispatcher's bytes against hand counts of ``get_capacity``'s ⌈(T·k/E)·C⌉, the
dropless figures where the cap does not bind, the refusals, and the flags' wiring (API, JSON meta, search's
Megatron arguments)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.errors import InputError
from archsim.training.layer_ops import block_work
from archsim.training.search_rows import megatron_model_args
from archsim.workload.transformer import TransformerConfig

H, F, S = 64, 128, 32  # a small Llama: hidden, expert width, tokens of one sequence
CLUSTER = Path(__file__).resolve().parents[1] / "configs" / "clusters" / "h100_2_servers.toml"
SMALL_MOE = {"model_type": "mixtral", "num_hidden_layers": 2, "hidden_size": 256, "num_attention_heads": 4,
             "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1024, "max_position_embeddings": 512,
             "num_local_experts": 8, "num_experts_per_tok": 2}


def _moe(**capacity) -> TransformerConfig:
    return TransformerConfig("small", "llama", 2, H, 4, 256, S, F, 2, False, experts=4, experts_per_token=2,
                             expert_ffn=F, **capacity)


def _expert_rows_and_bytes(c: TransformerConfig, tp: int = 2, ep: int = 2):
    work = block_work(c, 1, tp, tp > 1, ep=ep)
    gemms = {(op.layer, op.kind): op.gemms[0] for op in work.forward if op.gemms}
    fc1, fc2 = gemms[("experts.fc1", "F")], gemms[("experts.fc2", "F")]
    permute = next(op for op in work.forward if op.layer == "permute")
    named = {(x.name, x.phase): x.bytes for x in (*work.forward_collectives, *work.backward_collectives)
             if x.name.startswith("moe.")}
    return (fc1.m, fc1.count, fc2.m), permute.vector_elements, named


def test_padded_capacity_1_25_by_hand():
    # TP 2 under SP: a rank routes 16 tokens, 32 rows over E = 4: 8 an expert; C = 1.25 caps (and pads) each at
    # ceil(8 · 1.25) = 10 rows from each rank, so the rank sends 4 · 10 = 40 rows and a local expert (E/EP = 2 of
    # them) takes 10 from each of the ETP · EP = 4 ranks: 40 rows
    rows, permute, named = _expert_rows_and_bytes(_moe(moe_expert_capacity_factor=1.25,
                                                       moe_pad_expert_input_to_capacity=True))
    assert rows == (40, 2, 40)
    assert permute == 2 * 40 * H  # the permute's copy of the 40 rows, read and written
    a2a = 40 * H * 2  # 40 rows of h, 2 bytes each: 5,120
    gathered = 2 * 40 * H * 2  # the ETP = 2 ranks' rows all-gathered: 10,240
    assert named == {("moe.dispatch", "F"): a2a, ("moe.combine", "F"): a2a, ("moe.dispatch", "B"): a2a,
                     ("moe.combine", "B"): a2a, ("moe.all-gather", "F"): gathered,
                     ("moe.reduce-scatter", "F"): gathered, ("moe.all-gather", "B"): gathered,
                     ("moe.reduce-scatter", "B"): gathered}
    assert (a2a, gathered) == (5120, 10240)


def test_padded_capacity_rounds_up_as_get_capacity():
    # TP 1: 32 tokens, 64 rows, 16 an expert; C = 1.1 → ceil(17.6) = 18 rows from each rank, 2 ranks: 36
    rows, _, named = _expert_rows_and_bytes(_moe(moe_expert_capacity_factor=1.1,
                                                 moe_pad_expert_input_to_capacity=True), tp=1)
    assert rows == (36, 2, 36) and named[("moe.dispatch", "F")] == 4 * 18 * H * 2


def test_capacity_1_padded_is_dropless_to_the_bit():
    dropless = block_work(_moe(), 1, 2, True, ep=2)
    padded = block_work(_moe(moe_expert_capacity_factor=1.0, moe_pad_expert_input_to_capacity=True), 1, 2, True, ep=2)
    assert padded == dropless


@pytest.mark.parametrize("factor", [1.0, 1.25, 3.0])
def test_drop_only_at_c_at_least_1_changes_nothing_under_uniform_routing(factor):
    assert block_work(_moe(moe_expert_capacity_factor=factor), 1, 2, True, ep=2) == block_work(_moe(), 1, 2, True, ep=2)


def test_drop_only_below_1_drops_to_the_capacity():
    # 8 rows an expert from a rank, C = 0.5: 4 kept; the rank sends 16 rows, a local expert takes 4 · 4 = 16
    rows, permute, named = _expert_rows_and_bytes(_moe(moe_expert_capacity_factor=0.5))
    assert rows == (16, 2, 16) and permute == 2 * 16 * H and named[("moe.combine", "F")] == 16 * H * 2


@pytest.mark.parametrize("capacity,match", [
    ({"moe_expert_capacity_factor": 0}, "above 0, got '0'"),
    ({"moe_expert_capacity_factor": -1.0}, "above 0, got '-1.0'"),
    ({"moe_expert_capacity_factor": float("inf")}, "above 0"),
    ({"moe_pad_expert_input_to_capacity": True}, "Megatron-Core raises without one"),
])
def test_refused_settings(capacity, match):
    with pytest.raises(InputError, match=match):
        _moe(**capacity)


@pytest.mark.parametrize("capacity", [{"moe_expert_capacity_factor": 1.25},
                                      {"moe_pad_expert_input_to_capacity": True}])
def test_a_dense_model_refuses_either(capacity):
    with pytest.raises(InputError, match="small is dense"):
        TransformerConfig("small", "llama", 2, H, 4, 256, S, F, 2, False, **capacity)


def _small_moe(tmp_path) -> Path:
    path = tmp_path / "small_moe.json"
    path.write_text(json.dumps(SMALL_MOE))
    return path


TRAIN = ["--cluster", str(CLUSTER), "--dp", "4", "--ep", "2", "--global-batch", "8", "--seq", "128"]


@pytest.mark.parametrize("flags,match", [
    (["--moe-expert-capacity-factor", "0"], "argument --moe-expert-capacity-factor: expected a positive number, got '0'"),
    (["--moe-expert-capacity-factor", "-1"], "argument --moe-expert-capacity-factor: expected a positive number, got '-1'"),
    (["--moe-expert-capacity-factor", "inf"], "argument --moe-expert-capacity-factor: expected a finite"),
    (["--moe-pad-expert-input-to-capacity"], "give --moe-expert-capacity-factor C too"),
])
def test_cli_refuses_in_one_line(tmp_path, capsys, flags, match):
    import re

    code = main(["train", str(_small_moe(tmp_path)), *TRAIN, *flags])
    err = capsys.readouterr().err.strip()
    assert code != 0 and len(err.splitlines()) == 1 and re.search(match, err)


def test_cli_refuses_on_a_dense_model(tmp_path, capsys):
    dense = tmp_path / "dense.json"
    dense.write_text(json.dumps({**{k: v for k, v in SMALL_MOE.items() if k not in ("num_local_experts", "num_experts_per_tok")},
                                 "model_type": "llama"}))
    code = main(["train", str(dense), "--cluster", str(CLUSTER), "--dp", "4", "--global-batch", "8", "--seq", "128",
                 "--moe-expert-capacity-factor", "1.25"])
    err = capsys.readouterr().err.strip()
    assert code != 0 and len(err.splitlines()) == 1 and "is dense" in err


def test_api_times_as_the_flags_do_and_meta_states_them(tmp_path, capsys):
    flags = ["--moe-expert-capacity-factor", "1.25", "--moe-pad-expert-input-to-capacity"]
    assert main(["train", str(_small_moe(tmp_path)), *TRAIN, *flags, "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    result, _ = archsim.train(_small_moe(tmp_path), cluster=CLUSTER, dp=4, ep=2, global_batch=8, seq=128,
                              moe_expert_capacity_factor=1.25, moe_pad_expert_input_to_capacity=True)
    dropless, _ = archsim.train(_small_moe(tmp_path), cluster=CLUSTER, dp=4, ep=2, global_batch=8, seq=128)
    assert result.iteration_seconds == meta["iteration_seconds"]
    # the all-to-alls carry 1.25 × the rows (this tiny model's iteration is its host floor: the total does not move)
    assert result.breakdown["ep_communication"] > dropless.breakdown["ep_communication"]
    assert (meta["moe_expert_capacity_factor"], meta["moe_pad_expert_input_to_capacity"]) == (1.25, True)


def test_search_rows_name_the_capacity_flags():
    plain = megatron_model_args(_moe())
    capped = megatron_model_args(_moe(moe_expert_capacity_factor=1.25, moe_pad_expert_input_to_capacity=True))
    assert "capacity" not in plain
    assert capped.replace(" --moe-expert-capacity-factor 1.25 --moe-pad-expert-input-to-capacity", "") == plain
    assert "--moe-grouped-gemm --moe-expert-capacity-factor 2.0 --" in megatron_model_args(_moe(moe_expert_capacity_factor=2))


# padding above E/k: each expert padded beyond the tokens a rank routes, priced and noted once

PADDED_NOTE = "pads each expert to C·k/E = 5·2/8 = 1.25 × the tokens a rank routes"  # E = 8, k = 2: by hand


def test_padding_above_e_over_k_is_priced_and_noted_once(tmp_path, capsys):
    """Failed before: C = 5 > E/k = 4 padded every expert to 1.25 × the rank's tokens with no word."""
    flags = ["--moe-expert-capacity-factor", "5", "--moe-pad-expert-input-to-capacity", "--format", "json"]
    assert main(["train", str(_small_moe(tmp_path)), *TRAIN, *flags]) == 0
    captured = capsys.readouterr()
    notes = [line for line in captured.err.splitlines() if PADDED_NOTE in line]
    assert len(notes) == 1 and notes[0].startswith("archsim train: note: --moe-expert-capacity-factor 5 with "
                                                   "--moe-pad-expert-input-to-capacity pads"), captured.err
    assert "the experts take 5 × the routed rows" in notes[0]
    assert json.loads(captured.out)["meta"]["moe_expert_capacity_factor"] == 5  # still priced


def test_the_sweep_notes_it_once(tmp_path, capsys):
    flags = ["--moe-expert-capacity-factor", "5", "--moe-pad-expert-input-to-capacity", "--sweep", "micro_batch=1,2"]
    assert main(["train", str(_small_moe(tmp_path)), *TRAIN, *flags]) == 0
    assert capsys.readouterr().err.count(PADDED_NOTE) == 1


@pytest.mark.parametrize("flags", [["--moe-expert-capacity-factor", "4", "--moe-pad-expert-input-to-capacity"],
                                   ["--moe-expert-capacity-factor", "5"], []])
def test_no_note_at_or_below_e_over_k_or_without_padding(tmp_path, capsys, flags):
    """C = E/k = 4 pads each expert to exactly the rank's tokens; without padding the cap only drops."""
    assert main(["train", str(_small_moe(tmp_path)), *TRAIN, *flags]) == 0
    assert "C·k/E" not in capsys.readouterr().err


def test_the_library_warns_it_in_its_keywords(tmp_path):
    with pytest.warns(UserWarning, match="^moe_expert_capacity_factor=5 with moe_pad_expert_input_to_capacity=True "
                                         "pads each expert") as caught:
        archsim.train(_small_moe(tmp_path), cluster=CLUSTER, dp=4, ep=2, global_batch=8, seq=128,
                      moe_expert_capacity_factor=5, moe_pad_expert_input_to_capacity=True)
    assert sum(PADDED_NOTE in str(w.message) for w in caught) == 1


# a capacity too large to count exactly: refused naming its flag, not the array commands' advice


@pytest.mark.parametrize("factor, rows", [("1e12", "3.2e+13"),  # rows fit 2^53, the permute's bytes do not
                                          ("1e15", "3.2e+16"),  # the rows themselves pass 2^53
                                          ("1e308", "inf")])  # past a float: was an OverflowError's traceback
def test_a_capacity_past_exact_counts_names_its_flag(tmp_path, capsys, factor, rows):
    """Failed before: "use a smaller batch or network, or a larger array". A rank routes 128 tokens (seq 128, TP 1):
    ⌈(128·2/8)·C⌉ = 32·C rows an expert."""
    flags = ["--moe-expert-capacity-factor", factor, "--moe-pad-expert-input-to-capacity"]
    assert main(["train", str(_small_moe(tmp_path)), *TRAIN, *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("archsim train: error: ") and "\n" not in err, err
    assert "give a smaller --moe-expert-capacity-factor" in err and f"= {rows} rows from each rank" in err, err
    assert "larger array" not in err


def test_the_library_names_its_keyword(tmp_path):
    with pytest.raises(InputError, match="give a smaller moe_expert_capacity_factor: 1e\\+12 pads"):
        archsim.train(_small_moe(tmp_path), cluster=CLUSTER, dp=4, ep=2, global_batch=8, seq=128,
                      moe_expert_capacity_factor=1e12, moe_pad_expert_input_to_capacity=True)
