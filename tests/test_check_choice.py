"""archsim.value_parsers.check_choice, the one refusal of a value that is none of its choices: the same line and
field from a library keyword, a dataclass's field (Parallelism, ArrayConfig) and a reader's argument."""

from __future__ import annotations

import pytest

import archsim
from archsim.errors import InputError
from archsim.value_parsers import check_choice

MISSPELT = "expected one of none, selective, full, got 'ful' (did you mean 'full'?)"  # the documented line


def test_a_choice_passes_and_anything_else_is_refused_on_its_field():
    assert check_choice("full", ("none", "selective", "full"), "recompute") is None
    with pytest.raises(InputError) as refused:
        check_choice("ful", ("none", "selective", "full"), "recompute")
    assert (refused.value.message, refused.value.where.field) == (MISSPELT, "recompute")
    with pytest.raises(InputError) as number:
        check_choice(3, ("a", "b"), "x")
    assert number.value.message == "expected one of a, b, got 3"  # a number is no name: no hint


def test_parallelism_and_the_keyword_refuse_alike():
    from archsim.training.parallel import Parallelism

    with pytest.raises(InputError) as field:
        Parallelism(1, 1, 1, 8, 1, "ful")
    assert (field.value.message, field.value.where.field) == (MISSPELT, "recompute")
    with pytest.raises(InputError) as keyword:
        archsim.search("gpt2", cluster="configs/clusters/a100_node.toml", global_batch=8, dp_overlap="bucket")
    assert keyword.value.where.field == "dp-overlap" and keyword.value.message.startswith("expected one of none, ")
