"""``archsim plan NETWORK --cluster C.toml`` prices the layers on the device the cluster's servers name.

It priced every layer on one 32 × 32 array at 1 GHz whatever the servers named (a catalog ``gpu`` or a
``device`` file), so a cluster of H100s and one of a small accelerator planned alike. References here
come from other paths: the single-array cost of ``plan --config`` (SCALE-Sim's analytic cycles), the
catalog GPU against its device-file twin, and devices that differ only in array count or clock.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from archsim import plan_flags
from archsim.cli import build_parser, main
from archsim.commands import plan

CLUSTERS = Path(__file__).resolve().parents[1] / "configs" / "clusters"


def _cluster(folder: Path, name: str, servers: list[str | None]) -> Path:
    """A cluster file of one 4-GPU server per entry of ``servers`` (a device line, or None for none)."""
    text = f'[cluster]\nname = "{name}"\ninter_server_gbps = 100\n'
    for line in servers:
        text += "\n[[servers]]\ngpus = 4\nintra_server_gbps = 800\n" + (f"{line}\n" if line else "")
    path = folder / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _device_cluster(tmp_path: Path, name: str, cfg: str) -> Path:
    """A cluster of one server naming the device file ``cfg`` (written as NAME.cfg beside it)."""
    (tmp_path / f"{name}.cfg").write_text(cfg, encoding="utf-8")
    return _cluster(tmp_path, name, [f'device = "{name}.cfg"'])


def _profile(argv: list[str]):
    args = build_parser(argv).parse_args(argv)
    plan_flags.check_flags(args)  # as plan's run does first (it puts in --mode's default)
    return plan.layer_profile(args)


def _plan_json(capsys, argv: list[str]) -> dict:
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["meta"]


def test_a_device_file_of_one_array_prices_as_plan_config_on_that_array(tmp_path, chip_cfg):
    """One 64 × 64 array at 1 GHz as a device file gives exactly the layer profile ``plan --config`` gives on
    that array (SCALE-Sim's analytic cycles ÷ clock): the device counts a GEMM's cycles as the array model
    does (it counted one more per GEMM call, elapsed rather than SCALE-Sim's last cycle's index). Tensor
    bytes are fp16's (``--element-bytes 2`` on the array path)."""
    cluster = _device_cluster(tmp_path, "one", chip_cfg())
    plain = _cluster(tmp_path, "plain", [None])
    on_device, meta, memory = _profile(["plan", "layerpipe_sample", "--cluster", str(cluster), "--microbatches", "4"])
    on_array, array_meta, _ = _profile(["plan", "layerpipe_sample", "--cluster", str(plain), "--microbatches", "4",
                                        "--config", str(tmp_path / "one.cfg"), "--element-bytes", "2"])
    assert meta["priced_on"] == "chip_1x_1ghz" and array_meta["priced_on"] == "array 64x64 ws at 1 GHz"
    assert (array_meta["dtype"], array_meta["element_bytes"]) == (None, 2)
    assert memory == 16 * 2**30
    assert on_device.names == on_array.names == ("conv1", "conv2", "conv3", "conv4")
    for attribute in ("forward", "weight_grad", "delta"):
        device_cycles = getattr(on_device, attribute) * 1e9
        array_cycles = getattr(on_array, attribute) * 1e9
        np.testing.assert_allclose(device_cycles, array_cycles, rtol=0, atol=1e-6)
    assert on_device.delta[0] == 0  # the first layer sends no δ back
    np.testing.assert_array_equal(on_device.activation_bytes, on_array.activation_bytes)


@pytest.mark.parametrize("faster", [{"arrays": 4}, {"clock_ghz": 2.0}])
def test_a_faster_device_plans_a_strictly_shorter_makespan(tmp_path, capsys, faster, chip_cfg):
    """Four arrays instead of one, or twice the clock, on the same links: every layer costs less, so SPP's
    makespan is strictly smaller (the old plan gave both the 32 × 32 array's makespan)."""
    slow = _device_cluster(tmp_path, "slow", chip_cfg())
    fast = _device_cluster(tmp_path, "fast", chip_cfg(**faster))
    args = ["layerpipe_sample", "--microbatches", "4"]
    slow_meta = _plan_json(capsys, ["plan", args[0], "--cluster", str(slow), *args[1:]])
    fast_meta = _plan_json(capsys, ["plan", args[0], "--cluster", str(fast), *args[1:]])
    assert fast_meta["makespan_seconds"] < slow_meta["makespan_seconds"]
    assert fast_meta["priced_on"] != slow_meta["priced_on"]


def test_h100s_plan_faster_than_a100s(tmp_path, capsys):
    """Two clusters of the same links, one of A100s and one of H100s: H100 layers cost less (its tiles at
    a higher peak and clock), where the old plan gave both the same per-layer costs."""
    meta = {}
    for gpu in ("a100-80gb", "h100-80gb-sxm"):
        cluster = _cluster(tmp_path, gpu, [f'gpu = "{gpu}"'])
        meta[gpu] = _plan_json(capsys, ["plan", "layerpipe_sample", "--cluster", str(cluster), "--microbatches", "4"])
    a100, h100 = meta["a100-80gb"], meta["h100-80gb-sxm"]
    assert a100["priced_on"] == "NVIDIA A100 SXM4 80GB" and h100["priced_on"] == "NVIDIA H100 SXM5 80GB"
    assert "tiles on 108 SMs" in a100["priced_on_model"] and "tiles on 132 SMs" in h100["priced_on_model"]
    assert h100["makespan_seconds"] < a100["makespan_seconds"]


def test_a_catalog_gpu_prices_as_its_device_file_twin(capsys):
    """``gpu = "a100-80gb"`` and the device file that writes the catalog A100 as arrays
    (configs/devices/a100_80gb_as_arrays.toml, the same predictions in ``train``) give one plan: a
    catalog GPU's layers are priced by the one device model, not a second one."""
    catalog = _plan_json(capsys, ["plan", "layerpipe_sample", "--cluster", str(CLUSTERS / "a100_node.toml"),
                                  "--microbatches", "4"])
    twin = _plan_json(capsys, ["plan", "layerpipe_sample", "--cluster",
                               str(CLUSTERS / "a100_node_device_file.toml"), "--microbatches", "4"])
    assert catalog["makespan_seconds"] == pytest.approx(twin["makespan_seconds"], rel=1e-12)
    assert catalog["priced_on"] == twin["priced_on"]


def test_the_json_meta_names_the_device_for_every_method(capsys):
    """SPP, a baseline and PipeDream's optimizer each say which device priced the layers."""
    cluster = str(CLUSTERS / "scalesim_32x32_device.toml")
    for method in ("spp", "gpipe", "pipedream"):
        meta = _plan_json(capsys, ["plan", "layerpipe_sample", "--cluster", cluster, "--microbatches", "4",
                                   "--method", method])
        assert meta["priced_on"] == "scalesim_32x32_x16"
        assert meta["priced_on_model"] == "16 arrays of 32x32 ws at 1 GHz, fp16"


def test_servers_of_different_devices_are_refused(tmp_path, capsys):
    """The planners take one per-layer cost for every GPU: a cluster of H100s, A100s and V100s is refused
    in one line naming the devices (exit 2, nothing written), not planned on one of them."""
    out = tmp_path / "plan.json"
    assert main(["plan", "layerpipe_sample", "--cluster", str(CLUSTERS / "mixed_h100_a100_v100.toml"),
                 "--microbatches", "4", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "different devices" in err and "H100" in err and "V100" in err and "'servers'" in err
    assert not out.exists()


def test_servers_naming_a_device_beside_servers_naming_none_are_refused(tmp_path, capsys, chip_cfg):
    (tmp_path / "one.cfg").write_text(chip_cfg(), encoding="utf-8")
    cluster = _cluster(tmp_path, "some", ['device = "one.cfg"', None])
    assert main(["plan", "layerpipe_sample", "--cluster", str(cluster), "--microbatches", "4"]) == 2
    err = capsys.readouterr().err
    assert "one.cfg" in err and "some servers name a device" in err


def test_element_bytes_on_a_device_is_refused(tmp_path, capsys, chip_cfg):
    """--element-bytes sizes the array model's tensors; on a device its dtype does: refused, not ignored."""
    cluster = _device_cluster(tmp_path, "one", chip_cfg())
    assert main(["plan", "layerpipe_sample", "--cluster", str(cluster), "--microbatches", "4",
                 "--element-bytes", "2"]) == 2
    assert "element-bytes" in capsys.readouterr().err


def test_an_explicit_array_keeps_the_array_and_says_so(tmp_path, capsys, chip_cfg):
    """``--array`` with a device cluster prices on that array (a what-if the user asked for), with a note
    naming the device it did not use; the plan is the one of the same links naming no device."""
    cluster = _device_cluster(tmp_path, "one", chip_cfg())
    plain = _cluster(tmp_path, "plain", [None])
    meta = _plan_json(capsys, ["plan", "layerpipe_sample", "--cluster", str(cluster), "--microbatches", "4",
                               "--array", "32x32"])
    reference = _plan_json(capsys, ["plan", "layerpipe_sample", "--cluster", str(plain), "--microbatches", "4",
                                    "--array", "32x32"])
    assert meta["priced_on"] == reference["priced_on"] == "array 32x32 ws at 1 GHz"
    assert meta["makespan_seconds"] == reference["makespan_seconds"]
    assert main(["plan", "layerpipe_sample", "--cluster", str(cluster), "--microbatches", "4", "--clock-ghz", "2"]) == 0
    err = capsys.readouterr().err
    assert "one.cfg" in err and "--clock-ghz" in err and "not on the servers' devices" in err


def test_gpu_memory_gb_beside_a_device_is_refused(tmp_path, capsys, chip_cfg):
    """A device states its own memory (what --memory-constraint then reads): a cluster's gpu_memory_gb
    beside it would be a second, conflicting figure, refused as train refuses it."""
    cluster = _device_cluster(tmp_path, "one", chip_cfg())
    cluster.write_text(cluster.read_text(encoding="utf-8").replace("inter_server_gbps = 100\n",
                                                                   "inter_server_gbps = 100\ngpu_memory_gb = 8\n"),
                       encoding="utf-8")
    assert main(["plan", "layerpipe_sample", "--cluster", str(cluster), "--microbatches", "4"]) == 2
    assert "gpu_memory_gb" in capsys.readouterr().err


def test_pipedreams_memory_constraint_reads_the_devices_memory(tmp_path, capsys, chip_cfg):
    """--memory-constraint bounds a stage by the device's HBM (16 GiB = 16 · 2³⁰ B here), not by
    plan's default of 16 GB for a cluster without gpu_memory_gb."""
    cluster = _device_cluster(tmp_path, "one", chip_cfg())
    meta = _plan_json(capsys, ["plan", "layerpipe_sample", "--cluster", str(cluster), "--microbatches", "4",
                               "--method", "pipedream", "--memory-constraint"])
    assert f"memory constraint {16 * 2**30:.4g} B" in meta["settings"]
