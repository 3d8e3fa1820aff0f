"""A list keyword reads what its flag's comma form reads (docs/api.md): ``gpus="4,8"`` is the counts 4 and 8, as
``--gpus 4 8`` and as ``gpus=[4, 8]``, on every list keyword of every job (:func:`archsim.api_keywords.listed`).

Failed before: ``archsim.search(gpus="4,8")`` was refused ("expected a positive integer, got '4,8'", the one string
read as one count), and ``recompute="none,full"`` as one recompute name."""

from __future__ import annotations

import json

import pytest
from api_parity_helpers import MODEL, NODE, cli_json
from test_docs import ROOT

import archsim
from archsim.api_keywords import listed
from archsim.errors import InputError
from archsim.json_text import dumps

SEARCH = {"cluster": NODE, "global_batch": 16, "top": 3, "progress": False}


def test_search_reads_comma_separated_lists_as_the_commands_lists(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    printed = cli_json(["search", MODEL, "--cluster", NODE, "--global-batch", "16", "--top", "3", "--gpus", "4", "8",
                        "--schedule", "1f1b", "interleaved-1f1b", "--recompute", "none", "full", "--chunks", "2"], capsys)
    commas = archsim.search(MODEL, gpus="4,8", schedule="1f1b, interleaved-1f1b", recompute="none,full", chunks="2",
                            **SEARCH)
    lists = archsim.search(MODEL, gpus=[4, 8], schedule=["1f1b", "interleaved-1f1b"], recompute=("none", "full"),
                           chunks=[2], **SEARCH)
    # as the command writes them (NaN as null, which no NaN equals)
    assert json.loads(dumps(commas.to_dict())) == json.loads(dumps(lists.to_dict())) == printed
    assert printed["meta"]["gpus"] == "4,8"  # the command's own JSON writes the list so


@pytest.mark.parametrize(("keywords", "field"), [({"gpus": "4,x"}, "gpus"), ({"gpus": "4,,8"}, "gpus"),
                                                 ({"schedule": "1f1b,gpipe?"}, "schedule"),
                                                 ({"chunks": "2,0"}, "chunks")])
def test_a_bad_entry_of_a_comma_list_is_one_line_naming_the_keyword(keywords, field, monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(InputError) as refused:
        archsim.search(MODEL, **{**SEARCH, **keywords})
    assert refused.value.where.field == field and "\n" not in str(refused.value)


@pytest.mark.parametrize(("value", "values"), [("4,8", ("4", "8")), (" 4 , 8 ", ("4", "8")), ("1f1b", ("1f1b",)),
                                               (4, (4,)), ([4, 8], (4, 8)), (("none",), ("none",))])
def test_listed_reads_a_string_at_its_commas_and_a_list_as_is(value, values):
    assert listed(value, "gpus") == values
