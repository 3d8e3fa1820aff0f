"""``--dask`` values that cannot name a scheduler are refused before the sweep writes anything."""

from __future__ import annotations

import pytest

from archsim.errors import InputError
from archsim.sweep.dask_address import check_dask_address


@pytest.mark.parametrize("address", ["local", "tcp://10.0.0.1:8786", "10.0.0.1:8786", "scheduler.example:1",
                                     "tls://host:65535", "tcp://[::1]:8786"])
def test_addresses_with_a_port_pass(address):
    check_dask_address(address)


@pytest.mark.parametrize("address", ["abc", "tcp://host", "host:0", "host:65536", "host:port", "", "tcp://:8786",
                                     "a b:1", "LOCAL"])
def test_addresses_without_a_usable_port_are_refused(address):
    with pytest.raises(InputError, match="scheduler address with its port"):
        check_dask_address(address)


def test_cli_refuses_before_writing(tmp_path, capsys):
    from archsim.cli import main

    out = tmp_path / "out"
    assert main(["sweep", "configs/sweeps/layerpipe_paper.toml", "--out", str(out), "--dask", "abc"]) == 2
    assert "argument --dask" in capsys.readouterr().err
    assert not out.exists()


def test_api_refuses_before_writing(tmp_path):
    import archsim

    out = tmp_path / "out"
    with pytest.raises(InputError, match="'abc'"):
        archsim.run_sweep("configs/sweeps/layerpipe_paper.toml", out=out, dask="abc")
    assert not out.exists()
