"""What planners derive from a profile lives beside it, once per profile object, and goes with it."""

import gc

from archsim.partition import profile_from_costs
from archsim.partition.memo import per_profile


def test_derived_once_per_profile_and_dropped_with_it():
    calls = []

    @per_profile
    def total(profile):
        calls.append(profile.names)
        return float(profile.total.sum())

    first = profile_from_costs(["a", "b"], [1.0, 2.0], [0.0, 0.0], [3.0, 4.0])
    second = profile_from_costs(["c"], [5.0], [0.0], [0.0])
    assert (total(first), total(first), total(second)) == (10.0, 10.0, 5.0)
    assert calls == [("a", "b"), ("c",)]
    cache = next(c.cell_contents for c in total.__closure__ if isinstance(c.cell_contents, dict))
    assert len(cache) == 2
    del first
    gc.collect()
    assert len(cache) == 1  # the collected profile's value is gone; its id may be reused safely
