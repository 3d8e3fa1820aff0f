"""A network file edited while a sweep runs: every unit is costed on the file the sweep hashed at its start, or
the run stops, one line naming the file; never the edited file's rows under the first file's hash and cache
entry. In-process and in a forked pool the workers use the network the sweep's process parsed (keyed by its
SHA-256); a ``--dask`` worker is a fresh process that reads the file again, and costed the edited one unchecked.
Failed before: the dask run finished, its rows the edited network's under the original SHA-256, and cached so."""

from __future__ import annotations

import pytest

from archsim.errors import InputError
from archsim.sweep import load_spec, networks, run_sweep, runner
from archsim.sweep.spec_files import file_sha256_unless_shipped

HEADER = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
NETWORK = HEADER + "c1, 8, 8, 3, 3, 3, 4, 1,\nc2, 6, 6, 3, 3, 4, 8, 1,\nc3, 6, 6, 3, 3, 8, 8, 1,\n"
EDITED = NETWORK.replace("c3, 6, 6, 3, 3, 8, 8, 1,", "c3, 6, 6, 3, 3, 8, 64, 1,")  # 8× the last layer's filters
SPEC = ('[sweep]\nname = "e"\nnetworks = ["net.csv"]\narrays = ["16x16"]\nbatches = [4]\nprocessors = [2]\n'
        'methods = ["gpipe"]\nmode = "paper"\n')


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "net.csv").write_text(NETWORK)
    (tmp_path / "spec.toml").write_text(SPEC)
    return tmp_path


def edit_once_the_sweep_has_read_it(monkeypatch, net) -> None:
    """Edit the network right after the sweep's process has parsed and hashed it, before any unit is costed."""
    checked = runner.check_processor_counts

    def then_edit(*args):
        skipped = checked(*args)
        net.write_text(EDITED)
        return skipped

    monkeypatch.setattr(runner, "check_processor_counts", then_edit)


def test_a_network_read_again_after_an_edit_is_refused(folder):
    """The reader every process costs units with (a dask worker's first read of the file is this one)."""
    original = file_sha256_unless_shipped(str(folder / "net.csv"))
    (folder / "net.csv").write_text(EDITED)
    networks.loaded_network.cache_clear()
    networks.unit_network.cache_clear()
    with pytest.raises(InputError) as error:
        networks.unit_network(str(folder / "net.csv"), original, ())
    assert error.value.where.file == str(folder / "net.csv")
    assert "changed after the sweep started" in error.value.message


@pytest.mark.long
def test_with_dask_an_edit_mid_run_stops_the_run_naming_the_file(folder, monkeypatch):
    edit_once_the_sweep_has_read_it(monkeypatch, folder / "net.csv")
    spec = load_spec(folder / "spec.toml")
    with pytest.raises(InputError) as error:
        run_sweep(spec, folder / "out", workers=1, dask="local", progress=False)
    assert error.value.where.file == str(folder / "net.csv") and "changed after the sweep started" in str(error.value)
    assert not list((folder / "out" / "cache").glob("*.json"))  # nothing cached under the first file's hash


def test_in_process_an_edit_mid_run_costs_the_file_the_sweep_started_with(folder, tmp_path_factory, monkeypatch):
    """The reference: the same spec run on the unedited file in a folder of its own."""
    reference = tmp_path_factory.mktemp("reference")
    (reference / "net.csv").write_text(NETWORK)
    (reference / "spec.toml").write_text(SPEC)
    expected = run_sweep(load_spec(reference / "spec.toml"), reference / "out", progress=False)
    edit_once_the_sweep_has_read_it(monkeypatch, folder / "net.csv")
    got = run_sweep(load_spec(folder / "spec.toml"), folder / "out", progress=False)
    columns = ["single_processor_cycles", "iteration_cycles", "network_sha256"]
    assert got[columns].equals(expected[columns])
