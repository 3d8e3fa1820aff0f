"""A device file's chip is known by its file, not its name: two chips of one name are refused, a name like a
catalog GPU's takes none of its price, its link is not labelled NVLink, and fp32 on arrays without lanes is said."""

from pathlib import Path

import pytest

from archsim.cli import main
from archsim.devices.device_file import load_device
from archsim.errors import InputError
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.rates import PRICE_PER_GPU_HOUR, dollars_per_hour, watts

ROOT = Path(__file__).resolve().parents[1]
DEVICES = ROOT / "configs" / "devices"
GPT = ROOT / "configs" / "transformers" / "gpt_1024h_24l.json"
TPU = (DEVICES / "tpu_v4_like.toml").read_text()


def _server(device: str, count: int = 1, extra: str = "") -> str:
    return f'[[servers]]\ncount = {count}\ngpus = 2\nintra_server_gbps = 4800\ndevice = "{device}"\n{extra}'


def _cluster(tmp_path: Path, *servers: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text('[cluster]\nname = "x"\ninter_server_gbps = 200\n' + "".join(servers))
    return path


def test_two_different_chips_of_one_name_are_refused_naming_both_files(tmp_path, capsys):
    (tmp_path / "chip_a.toml").write_text(TPU.replace('name = "TPU v4-like"', 'name = "mychip"'))
    (tmp_path / "chip_b.toml").write_text(TPU.replace('name = "TPU v4-like"', 'name = "mychip"')
                                          .replace("arrays = 8", "arrays = 16"))  # twice the arrays
    cluster = _cluster(tmp_path, _server("chip_a.toml"), _server("chip_b.toml"))
    with pytest.raises(InputError, match="chip_a.toml and device file chip_b.toml both name"):
        load_gpu_cluster(cluster)
    assert main(["train", str(GPT), "--cluster", str(cluster), "--global-batch", "4", "--dp", "4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "chip_a.toml" in err and "chip_b.toml" in err and "'mychip'" in err


def test_one_chip_in_two_files_or_twice_is_one_type(tmp_path):
    """Identical contents are one chip whatever the file: not refused, and the cluster stays uniform."""
    named = TPU.replace('name = "TPU v4-like"', 'name = "mychip"')
    (tmp_path / "chip_a.toml").write_text(named)
    (tmp_path / "chip_b.toml").write_text(named)
    cluster = load_gpu_cluster(_cluster(tmp_path, _server("chip_a.toml"), _server("chip_b.toml"),
                                        _server("chip_a.toml")))
    assert not cluster.heterogeneous and cluster.gpu_names == "mychip"


def test_a_device_file_named_like_a_catalog_gpu_gets_no_catalog_price(tmp_path):
    """The catalog A100 written as a device file (the catalog's very name) is a designer's chip to the rates:
    no AWS price unless its server states one; its board power is its own file's."""
    cluster = load_gpu_cluster(ROOT / "configs" / "clusters" / "a100_node_device_file.toml")
    assert cluster.gpu.name == "NVIDIA A100 SXM4 80GB"
    with pytest.raises(InputError, match="a device file's chip") as caught:
        dollars_per_hour(cluster, 8)
    assert caught.value.where.field == "price_per_gpu_hour"
    assert watts(cluster, 8) == 8 * 400  # [device] board_watts = 400 in the file
    catalog = load_gpu_cluster(ROOT / "configs" / "clusters" / "a100_node.toml")
    assert dollars_per_hour(catalog, 8) == pytest.approx(8 * PRICE_PER_GPU_HOUR["a100-80gb"])


def test_a_device_file_prices_at_its_servers_stated_price(tmp_path):
    (tmp_path / "chip.toml").write_text(TPU.replace('name = "TPU v4-like"', 'name = "a100-80gb"'))
    with pytest.raises(InputError, match="price_per_gpu_hour"):  # named like the catalog's key, priced as none
        dollars_per_hour(load_gpu_cluster(_cluster(tmp_path, _server("chip.toml"))), 2)
    cluster = load_gpu_cluster(_cluster(tmp_path, _server("chip.toml", extra="price_per_gpu_hour = 1.5\n")))
    assert dollars_per_hour(cluster, 2) == pytest.approx(3.0)
    with pytest.raises(InputError, match="board_watts"):  # no catalog board's watts either
        watts(cluster, 2)


def _intra(capsys, cluster: Path, *extra: str) -> tuple[dict, str]:
    import json

    assert main(["train", str(GPT), "--cluster", str(cluster), "--global-batch", "4", "--dp", "2", "--format",
                 "json", *extra]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out)["meta"]["intra_server"], captured.err


def test_a_device_files_link_is_a_fabric_not_nvlink(tmp_path, capsys):
    (tmp_path / "chip.toml").write_text(TPU)
    intra, _ = _intra(capsys, _cluster(tmp_path, _server("chip.toml")))
    assert intra["link"] == "fabric"
    catalog, _ = _intra(capsys, ROOT / "configs" / "clusters" / "a100_node.toml")
    assert catalog["link"] == "nvlink"


def test_fp32_on_arrays_without_lanes_is_said_once(tmp_path, capsys):
    (tmp_path / "chip.toml").write_text(TPU)
    assert load_device(tmp_path / "chip.toml").lanes is None  # the shipped TPU-like chip states none
    cluster = _cluster(tmp_path, _server("chip.toml", count=2))
    _, err = _intra(capsys, cluster, "--dtype", "fp32")
    line = "note: TPU v4-like states no fp32 lanes ([compute] lanes): its fp32 GEMMs run on its arrays"
    assert err.count(line) == 1
    _, half = _intra(capsys, cluster, "--dtype", "bf16")
    assert "fp32 lanes" not in half
    (tmp_path / "chip.toml").write_text(TPU.replace("clock_mhz = 1050", "clock_mhz = 1050\nlanes = 8"))
    _, laned = _intra(capsys, cluster, "--dtype", "fp32")
    assert "fp32 lanes" not in laned
