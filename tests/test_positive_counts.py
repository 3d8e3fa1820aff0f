"""One validator for the counts code passes in (``archsim.validate.positive_count``): the array engine's sizes and
BPPSA's scan lengths and processors follow one rule. A numpy integer is a count (an array's shape, a frame's cell
give one), so BPPSA takes ``np.int64`` as the array engine always did (until 2026-12-05 it refused it); 0, −1, 2.5,
``True`` and text stay refused by both, in one line naming the field."""

import json

import numpy as np
import pytest

from archsim.array.cycle import simulate_gemm
from archsim.bppsa import steps
from archsim.errors import InputError
from archsim.validate import positive_count

REFUSED = [0, -1, 2.5, True, "3", np.float64(3.0)]


@pytest.mark.parametrize("value", REFUSED)
def test_bppsa_and_the_array_engine_refuse_what_is_not_a_count(value):
    for call, field in ((lambda: steps.blelloch_level_count(value), "n"),
                        (lambda: steps.steps_with_workers(steps.linear_census(3), value), "processors"),
                        (lambda: steps.per_worker_memory(3, 2, 8, 8, copies=value), "copies"),
                        (lambda: simulate_gemm(value, 2, 2, 4, 4), "m"),
                        (lambda: simulate_gemm(2, 2, 2, 4, value), "cols")):
        with pytest.raises(InputError, match="must be a positive integer") as info:
            call()
        assert info.value.where.field == field


def test_bppsa_takes_a_numpy_integer_as_the_count_it_is():
    # n = 7: 8 elements, K = ⌈log₂ 8⌉ = 3, so 2K − 1 = 5 levels (Algorithm 1); the linear scan is 7 steps
    assert steps.blelloch_level_count(np.int64(7)) == 5
    assert len(steps.linear_census(np.int64(7))) == 7
    census = steps.level_census(np.int64(7))
    assert census == steps.level_census(7)
    # 7 linear steps, one product or move each, on 2 workers: one wave each
    assert steps.steps_with_workers(steps.linear_census(7), np.int64(2)) == 7
    # ⌈1·8/2⌉ = 4 Jacobians of 10 B; (⌈7/2⌉ + 2) = 6 activations of 3 B
    memory = steps.per_worker_memory(np.int64(7), np.int64(2), 10, 3, copies=np.int64(1))
    assert memory == (40, 18)
    assert json.dumps(memory) == "[40, 18]"  # plain ints, as from ints


def test_one_rule_returns_a_python_int():
    assert [type(positive_count(v, "x")) for v in (3, np.int64(3), np.uint8(3))] == [int] * 3
