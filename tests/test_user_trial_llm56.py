"""A Megatron user's first hour with train and search: the refusals and notes that named the wrong fix, or
none. Each expected text is the rule it states (a CP's divisors counted by hand, the flag that answers a
rejection), not output copied from the code."""

import json
import warnings
from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
LLAMA8B = str(ROOT / "configs" / "transformers" / "llama3_8b.toml")
MIXTRAL = str(ROOT / "tests" / "data" / "hf_configs" / "mixtral_8x7b.json")


def _cluster(tmp_path: Path, servers: int = 2, gpus: int = 8) -> str:
    """Servers of H100s (two of eight by default, eight 400 Gb/s NICs each): a cluster file as docs/formats.md states it."""
    path = tmp_path / "c.toml"
    network = "[network]\nnics_per_server = 8\nnic_gbps = 400\n" if servers > 1 else ""
    path.write_text(f'[cluster]\n[[servers]]\ncount = {servers}\ngpus = {gpus}\ngpu = "h100-80gb-sxm"\n{network}')
    return str(path)


# 1. a --cp that divides none of the GPUs searched is refused, naming the CPs that do

@pytest.mark.parametrize("cp, expected", [("3", "CP 1, 2, 4, 8 or 16"), ("32", "CP 1, 2, 4, 8 or 16")])
def test_search_refuses_a_cp_dividing_no_gpu_count(tmp_path, capsys, cp, expected):
    """Failed before: the search enumerated nothing and noted "every one broke a rule its flags leave ()", with
    advice (--schedule, --recompute, …) that changes nothing; 16's divisors are 1, 2, 4, 8 and 16."""
    assert main(["search", LLAMA8B, "--cluster", _cluster(tmp_path), "--global-batch", "16", "--cp", cp]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("archsim search: error: argument --cp: ") and "\n" not in err, err
    assert f"CP {cp} divides none of the 16 GPUs" in err and expected in err, err


def test_search_keeps_a_cp_dividing_one_of_the_counts(tmp_path):
    """CP 3 divides 12 of --gpus 12 16: the search runs (16 alone takes none of CP 3's layouts)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = archsim.search(LLAMA8B, cluster=_cluster(tmp_path), global_batch=12, gpus=[12, 16], cp=3,
                                seq=6144, top=1, refine=0, schedule="1f1b", recompute="full", progress=False)
    assert result.costed > 0


def test_the_library_refuses_it_in_its_keyword(tmp_path):
    with pytest.raises(InputError) as refused:
        archsim.search(LLAMA8B, cluster=_cluster(tmp_path), global_batch=16, cp=[3, 5], progress=False)
    assert refused.value.where.field == "cp" and "CP 3 and 5 divide none of the 16 GPUs" in str(refused.value)


# 2. an empty search's note names the flag whose other values answer its rejections


def test_a_search_every_cp_of_which_cannot_split_the_sequence_names_cp(tmp_path, capsys):
    """Failed before: every configuration was rejected as cp-splits-sequence (8,192 tokens do not split into
    2 × 3 = 6 equal chunks) and the note said to give more --schedule, --recompute, --sequence-parallel or
    --max-micro-batch values, none of which splits a sequence."""
    assert main(["search", LLAMA8B, "--cluster", _cluster(tmp_path), "--global-batch", "12", "--gpus", "12",
                 "--cp", "3", "--refine", "0"]) == 0
    err = capsys.readouterr().err
    assert "every one broke a rule its flags leave (cp-splits-sequence: " in err, err
    assert "--sequence-parallel, --cp or --max-micro-batch values" in err, err


def test_a_search_whose_etp_cannot_split_the_experts_names_etp(tmp_path, capsys):
    """Failed before: ETP 3 divides neither Mixtral's expert FFN (14,336 = 2¹¹ · 7) nor any layout, the rejections
    were etp-divides-expert-ffn, and the note did not name --etp."""
    assert main(["search", MIXTRAL, "--cluster", _cluster(tmp_path), "--global-batch", "16", "--seq", "4096",
                 "--etp", "3", "--refine", "0"]) == 0
    err = capsys.readouterr().err
    assert "etp-divides-expert-ffn: " in err and "--sequence-parallel, --etp or --max-micro-batch values" in err, err


def test_a_cp_a2a_search_of_one_kv_head_names_cp_and_cp_comm(tmp_path):
    """Multi-query attention (one key/value head) takes TP 1 alone, where a2a's CP 2 cannot split the one head
    (cp-divides-heads): another CP, or --cp-comm p2p, answers it, and the note names both."""
    model = tmp_path / "mqa.toml"
    model.write_text('[transformer]\nfamily = "llama"\nlayers = 4\nhidden = 1024\nheads = 8\nkv_heads = 1\n'
                     'ffn = 4096\nvocab = 32000\nseq = 2048\n')
    with pytest.warns(UserWarning) as said:
        archsim.search(str(model), cluster=_cluster(tmp_path, servers=1), global_batch=8, cp=2, cp_comm="a2a",
                       refine=0, progress=False)
    lines = [str(w.message) for w in said]
    assert any("cp-divides-heads: " in line and "sequence_parallel, cp, cp_comm or max_micro_batch values" in line
               for line in lines), lines


# 3. an empty search whose even split refused pipelines names --balance planned


def _odd_model(tmp_path: Path) -> str:
    """9 layers of 491 M parameters (hidden 6,144, FFN 18,432; 3 heads, so TP 1 only): 4.8·10⁹ parameters at
    18 bytes in bf16 is 80.4 GiB, more than one H100 holds; PP 2 halves it, but 2 does not divide 9."""
    model = tmp_path / "odd.toml"
    model.write_text('[transformer]\nfamily = "llama"\nlayers = 9\nhidden = 6144\nheads = 3\nkv_heads = 3\n'
                     'ffn = 18432\nvocab = 32000\nseq = 512\n')
    return str(model)


def test_an_out_of_memory_search_names_the_uneven_split_that_fits(tmp_path, capsys):
    """Failed before: the note offered the distributed optimizer, more GPUs or more memory, not the planned
    balance under which PP 2 runs 5 and 4 layers; with it the search costs configurations."""
    model, cluster = _odd_model(tmp_path), _cluster(tmp_path, servers=1, gpus=2)
    flags = ["--cluster", cluster, "--global-batch", "4", "--dtype", "bf16", "--attention", "standard", "--refine", "0"]
    assert main(["search", model, *flags]) == 0
    err = capsys.readouterr().err
    assert "all out of memory" in err and "; or --balance planned: its uneven stages admit the " in err, err
    assert "because PP × chunks does not divide the 9 layers" in err, err
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = archsim.search(model, cluster=cluster, global_batch=4, dtype="bf16", attention="standard",
                                refine=0, balance="planned", progress=False)
    assert result.costed > 0 and {row["pp"] for row in result.rows} == {2}


def test_a_planned_search_is_not_told_to_plan(tmp_path):
    """A search under --balance planned already splits unevenly: its note does not name it again."""
    with pytest.warns(UserWarning) as said:
        archsim.search(_odd_model(tmp_path), cluster=_cluster(tmp_path, servers=1, gpus=1), global_batch=4,
                       dtype="bf16", attention="standard", refine=0, balance="planned", progress=False)
    lines = [str(w.message) for w in said]
    assert any("all out of memory" in line for line in lines) and not any("balance=" in line for line in lines), lines


# 4. a misspelt flag names the flag it resembles, as a misspelt keyword and cluster key do


@pytest.mark.parametrize("words, hint", [
    (["--recompte", "full"], "unrecognized arguments: --recompte full (did you mean '--recompute'?)"),
    (["--sequence-paralel"], "unrecognized arguments: --sequence-paralel (did you mean '--sequence-parallel'?)"),
    (["--distributed-optimiser"], "(did you mean '--distributed-optimizer'?)"),
    (["--micro_batch", "1"], "(did you mean '--micro-batch'?)"),
    (["--global-batch=16", "--interleav=2"], "unrecognized arguments: --interleav=2 (did you mean '--interleave'?)"),
])
def test_a_misspelt_train_flag_names_the_flag_it_resembles(tmp_path, capsys, words, hint):
    """Failed before: ``unrecognized arguments: --recompte full`` alone, where archsim.train(recompte=…) says
    "did you mean 'recompute'?"."""
    argv = ["train", LLAMA8B, "--cluster", _cluster(tmp_path), "--global-batch", "16", *words]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("archsim train: error: ") and err.endswith(hint) and "\n" not in err, err


def test_a_flag_like_none_gets_no_hint(tmp_path, capsys):
    """A name near no flag of the command is reported as before; a stray value is not a flag to correct."""
    assert main(["train", LLAMA8B, "--cluster", _cluster(tmp_path), "--global-batch", "16", "--bogus", "x"]) == 2
    assert capsys.readouterr().err.strip() == "archsim train: error: unrecognized arguments: --bogus x"


def test_another_commands_short_flag_is_not_corrected(tmp_path, capsys):
    """search has no --dp (it searches DP): a hint of --dtype or --top would mislead; it says whose flag it is (--tp
    and --pp: the TPs and PPs search tries)."""
    assert main(["search", LLAMA8B, "--cluster", _cluster(tmp_path), "--global-batch", "16", "--dp", "8"]) == 2
    assert capsys.readouterr().err.strip() == ("archsim search: error: unrecognized arguments: --dp 8 (--dp is archsim "
                                               "train's: search tries every DP itself, on --gpus N or the cluster's GPUs)")


@pytest.mark.parametrize("words", [["--gpus", "16"], ["--gpus=16"]])
def test_searchs_gpus_given_to_train_names_trains_layout_flags(tmp_path, capsys, words):
    """Failed before: ``unrecognized arguments: --gpus 16`` alone; train's GPUs are its layout's product."""
    assert main(["train", LLAMA8B, "--cluster", _cluster(tmp_path), "--global-batch", "16", *words]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"archsim train: error: unrecognized arguments: {' '.join(words)} (--gpus is archsim "
                          "search's: train takes its layout as --tp, --pp, --dp and --cp") and "\n" not in err, err


# 5. a config.json's model_type: missing, or misspelt


def _config(tmp_path: Path, **fields) -> str:
    base = {"hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 2, "num_attention_heads": 32,
            "num_key_value_heads": 8, "num_local_experts": 8, "num_experts_per_tok": 2, "vocab_size": 32000,
            "max_position_embeddings": 4096}
    path = tmp_path / "config.json"
    path.write_text(json.dumps({k: v for k, v in {**base, **fields}.items() if v is not None}))
    return str(path)


def test_a_config_without_model_type_is_told_it_is_missing(tmp_path, capsys):
    """Failed before: ``model_type None is not read``, Python's None for a key the file lacks."""
    assert main(["train", _config(tmp_path), "--cluster", _cluster(tmp_path), "--global-batch", "8"]) == 2
    err = capsys.readouterr().err.strip()
    assert "field 'model_type': missing key: the model's type (archsim reads gpt2, " in err and "None" not in err, err


def test_a_misspelt_model_type_names_the_type_it_resembles(tmp_path, capsys):
    assert main(["train", _config(tmp_path, model_type="mixtrall"), "--cluster", _cluster(tmp_path),
                 "--global-batch", "8"]) == 2
    err = capsys.readouterr().err.strip()
    assert "model_type 'mixtrall' is not read (did you mean 'mixtral'?); archsim reads gpt2, " in err, err
