"""An unknown GPU name a letter or a unit away from the catalog's names the one meant, as an unknown key does:
the catalog's list alone left `v100-pcie-32` (a unit dropped) to be read against fifteen names."""

import pytest

from archsim.devices.gpu_lookup import gpu
from archsim.errors import InputError


@pytest.mark.parametrize(("typed", "meant"), [("v100-pcie-32", "v100-pcie-32gb"), ("v10", "v100"), ("t44", "t4"),
                                             ("gtx1080ti", "gtx-1080-ti"), ("A100-40", "a100-40gb")])
def test_a_near_miss_names_the_gpu_meant(typed, meant):
    with pytest.raises(InputError, match=rf"unknown GPU '{typed}' \(did you mean '{meant}'\?\)"):
        gpu(typed)


@pytest.mark.parametrize("typed", ["b200", "h200-nvl", "mi300x"])
def test_another_gpu_of_a_like_name_is_not_offered(typed):
    """A B200 is no H200, an H200 NVL no H200 SXM: no hint, the catalog's list and its device-file advice stand."""
    with pytest.raises(InputError) as error:
        gpu(typed)
    assert "did you mean" not in str(error.value) and "the catalog has" in str(error.value)
