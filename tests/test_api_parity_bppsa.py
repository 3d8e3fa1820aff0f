"""``archsim.bppsa_rnn`` and ``archsim.bppsa_pruned_vgg11`` run both ways on the same input (docs/api.md): the JSON
``archsim bppsa rnn`` and ``archsim bppsa pruned-vgg11`` print (full precision; the command was there first) is the
reference. Each of these failed before the functions existed (``archsim.bppsa`` is the package, whose
``rnn_records`` and ``vgg_flops`` give the rows without the command's meta, its T and p lists or its summary)."""

from __future__ import annotations

import pytest
from api_parity_helpers import same_json
from test_docs import ROOT

import archsim
from archsim.errors import InputError

CASES = {  # name → (subcommand and flags, function, keywords)
    "rnn, defaults": (["rnn"], "bppsa_rnn", {}),
    "rnn, lists and an array": (["rnn", "--seq-len", "10,30", "--processors", "64,256", "--array", "16x16",
                                 "--dtype", "fp16", "--hidden", "8"],
                                "bppsa_rnn", {"seq_len": "10,30", "processors": [64, 256], "array": "16x16",
                                              "dtype": "fp16", "hidden": "8"}),
    "pruned VGG-11, narrow": (["pruned-vgg11", "--width-divisor", "8", "--compare-levels", "1,2", "--seed", "1"],
                              "bppsa_pruned_vgg11", {"width_divisor": 8, "compare_levels": [1, 2], "seed": "1"}),
    "pruned VGG-11, full up-sweep": (["pruned-vgg11", "--width-divisor", "16", "--up-levels", "full"],
                                     "bppsa_pruned_vgg11", {"width_divisor": 16, "up_levels": "full"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bppsa_studies_give_the_commands_json(case, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    flags, function, keywords = CASES[case]
    result, printed = same_json(["bppsa", *flags], getattr(archsim, function), keywords, capsys)
    assert len(result) == len(printed["rows"]) > 0


def test_a_repeated_value_runs_once_with_a_warning_naming_the_keyword():
    with pytest.warns(UserWarning, match=r"^seq_len repeats 10: each value runs once$"):
        result = archsim.bppsa_rnn(seq_len="10,10,30", processors=64)
    assert result["seq_len"].tolist() == [10, 30] and len(result) == 2  # hand count: two T × one p


@pytest.mark.parametrize(("function", "keywords"), [
    ("bppsa_rnn", {"seq_len": "1,10"}), ("bppsa_rnn", {"processors": "64,x"}), ("bppsa_rnn", {"hidden": 0}),
    ("bppsa_pruned_vgg11", {"sparsity": 1.0}), ("bppsa_pruned_vgg11", {"width_divisor": 3}),
    ("bppsa_pruned_vgg11", {"up_levels": 9}), ("bppsa_pruned_vgg11", {"compare_levels": "full"}),
    ("bppsa_pruned_vgg11", {"zeros": "none?"}), ("bppsa_pruned_vgg11", {"sparsity": 0.5, "max_mflops": 1})])
def test_a_value_no_flag_could_give_is_one_line(function, keywords):
    with pytest.raises(InputError) as refused:
        getattr(archsim, function)(**keywords)
    assert "\n" not in str(refused.value)
