"""One check that a problem built from columns equals the one its old object builder made: the same
processors, links, ops and dependencies (in order), every array with its dtype, the op ids, and
equal problems with equal hashes."""

import numpy as np

ARRAYS = ("proc", "duration", "pin", "alloc", "free", "streams", "dep_src", "dep_dst", "dep_link", "dep_bytes",
          "dep_time")


def assert_same_problem(columnar, expected) -> None:
    assert columnar.processors == expected.processors
    assert columnar.links == expected.links
    assert columnar.ops == expected.ops
    assert columnar.deps == expected.deps
    for name in ARRAYS:
        got, want = getattr(columnar.arrays, name), getattr(expected.arrays, name)
        assert got.dtype == want.dtype and np.array_equal(got, want), name
    assert list(columnar.arrays.ids) == list(expected.arrays.ids)
    assert columnar == expected and hash(columnar) == hash(expected)
