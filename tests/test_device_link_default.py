"""A ``[[servers]]`` table naming a device file may leave out ``intra_server_gbps``: the device file's own
``[links] intra_gbps`` is its in-server link, as a catalog GPU's NVLink is (docs/formats.md, "Cluster (TOML)").

Both tests of the absent key failed before the change (train and plan refused the file: "missing: the in-server
bandwidth … optional only beside gpu"). The reference is the same cluster with the key written by hand from the
device file's figure: ``intra_gbps`` is GB/s per direction, ``intra_server_gbps`` Gbit/s both directions, so
× 2 directions × 8 bits (100 GB/s → 1600, 300 GB/s → 4800).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archsim.cli import main
from archsim.errors import InputError
from archsim.training.cluster_file import load_gpu_cluster

ROOT = Path(__file__).resolve().parents[1]
DEVICES = ROOT / "configs" / "devices"
GPT = ROOT / "configs" / "transformers" / "gpt_1024h_24l.json"
NETWORK = ROOT / "docs" / "examples" / "tiny_resnet.csv"
# device file, its [links] intra_gbps (GB/s per direction, read off the file), GPUs per server
CHIPS = {"scalesim_32x32_device.cfg": (100, 8), "tpu_v4_like.toml": (300, 16)}


def _clusters(tmp_path: Path, device: str) -> tuple[Path, Path]:
    """One server of the device: the key absent, and the key written as the device's figure converted by hand."""
    gb_per_s, gpus = CHIPS[device]
    assert f"intra_gbps = {gb_per_s}" in (DEVICES / device).read_text()  # the figure the hand conversion starts from
    table = f'[cluster]\nname = "x"\n\n[[servers]]\ngpus = {gpus}\ndevice = "{(DEVICES / device).as_posix()}"\n'
    absent, stated = tmp_path / "absent.toml", tmp_path / "stated.toml"
    absent.write_text(table)
    stated.write_text(table + f"intra_server_gbps = {gb_per_s * 2 * 8}\n")
    return absent, stated


def _run(capsys, *argv: str) -> tuple[dict, str]:
    assert main(list(argv)) == 0
    out = capsys.readouterr()
    return json.loads(out.out), out.err


@pytest.mark.parametrize("device", sorted(CHIPS))
def test_train_reads_the_device_files_link_where_the_cluster_states_none(tmp_path, capsys, device):
    """The same train JSON with the key absent as with the key equal to the device's figure, and no word on
    stderr about the in-server link (nothing overrides, nothing slipped)."""
    absent, stated = _clusters(tmp_path, device)
    argv = ("train", str(GPT), "--tp", "8", "--global-batch", "16", "--format", "json", "--cluster")
    out, err = _run(capsys, *argv, str(absent))
    reference, _ = _run(capsys, *argv, str(stated))
    assert out == reference
    assert out["meta"]["intra_server"]["gb_per_s_per_gpu"] == CHIPS[device][0]
    assert "intra" not in err
    fabrics = load_gpu_cluster(absent).fabrics
    assert fabrics == (CHIPS[device][0] * 1e9,)  # its one server's, bytes/s per direction per GPU


def test_plan_reads_the_device_files_link_where_the_cluster_states_none(tmp_path, capsys):
    """plan's topology takes the same default through the same helper: the same plan either way."""
    absent, stated = _clusters(tmp_path, "scalesim_32x32_device.cfg")
    argv = ("plan", str(NETWORK), "--microbatches", "4", "--format", "json", "--cluster")
    out, _ = _run(capsys, *argv, str(absent))
    reference, _ = _run(capsys, *argv, str(stated))
    assert out == reference


def test_a_server_naming_no_chip_names_both_places_to_state_its_link(tmp_path, capsys):
    """With neither the key nor a chip whose link could be read, the one error names the cluster's key and the
    device file's, for train and plan alike."""
    path = tmp_path / "bare.toml"
    path.write_text('[cluster]\nname = "x"\n\n[[servers]]\ngpus = 2\n')
    with pytest.raises(InputError) as err:
        load_gpu_cluster(path)
    assert err.value.where.field == "intra_server_gbps"
    assert "intra_server_gbps" in err.value.message and "[links] intra_gbps" in err.value.message
    assert main(["plan", str(NETWORK), "--microbatches", "2", "--cluster", str(path)]) != 0
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "[links] intra_gbps" in lines[0] and "field 'intra_server_gbps'" in lines[0]
