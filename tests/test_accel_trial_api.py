"""A device TOML given as ``array=`` is read as ``config=`` is, as a ``.cfg`` is (an accelerator designer's chip of
4 cores × 2 arrays of 128 × 128). Failed before: ``archsim.cost(…, array="chip.toml")`` was refused as no
``ROWSxCOLS``, and ``profile``, ``iteration_energy`` and ``schedule`` likewise."""

import warnings

import pytest
from device_files import device_toml, write_file

from archsim.errors import InputError

TOML = device_toml(name="MyAcc", arrays=8, arrays_per_core=2, rows=128, cols=128, clock_mhz=1000, sram_kib=16384,
                   hbm_gib=24, hbm_gbps=1600, intra_gbps=400, links=4)


def test_a_device_toml_given_as_array_is_read_as_config(tmp_path):
    """``array=`` takes a .cfg as ``config=`` does; a device TOML likewise: the same cycles, joules and makespan."""
    import archsim

    path = write_file(tmp_path, "chip.toml", TOML)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the notes of a device of 8 arrays
        for run in (lambda **k: list(archsim.cost("layerpipe_sample", batch=8, **k).table.total_cycles),
                    lambda **k: list(archsim.iteration_energy("layerpipe_sample", batch=8, **k).table.energy_pj),
                    lambda **k: archsim.profile("layerpipe_sample", batch=8, **k).array.rows,
                    lambda **k: archsim.schedule("ffnn8", policy="1f1b", microbatches=4, **k).makespan):
            assert run(array=str(path)) == run(array=path) == run(config=path)
        # the 128 × 128 array of the file, not the default 32 × 32
        assert archsim.profile("layerpipe_sample", batch=8, array=path).array.rows == 128


def test_a_shape_is_still_a_shape_and_a_typo_still_refused():
    import archsim

    assert archsim.profile("layerpipe_sample", batch=8, array="64x64").array.rows == 64
    with pytest.raises(InputError, match="ROWSxCOLS"):
        archsim.cost("layerpipe_sample", batch=8, array="chip.tml")
