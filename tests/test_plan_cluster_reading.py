"""``archsim plan`` reads a cluster file as ``archsim train`` does: the same warnings and notes on stderr, and the
same bandwidth between servers where the file states none but the servers' device files do.

plan printed none of train's warnings for the same file (a NIC speed in Tb/s, NVLink quoted in GB/s, a device
file's NIC in the wrong unit) and refused a cluster of device files stating ``[links] inter_node_gbps`` without
``inter_server_gbps``, which train runs. References: train's own stderr on the same file, and a twin file that
states the device's figure as ``inter_server_gbps`` (docs/formats.md, "Cluster (TOML)").
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from archsim.cli import main
from archsim.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
GPT2 = str(ROOT / "configs" / "transformers" / "gpt2.json")
TPU = ROOT / "configs" / "devices" / "tpu_v4_like.toml"  # states no [links] inter_node_gbps
H100S = '[[servers]]\ncount = 2\ngpus = 4\ngpu = "h100-sxm"\n'
PLAN = ["plan", "layerpipe_sample", "--microbatches", "4"]


def _file(folder: Path, name: str, text: str) -> str:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _stderr_lines(capsys, argv: list[str], command: str) -> list[str]:
    """The ``warning:`` and ``note:`` lines a run writes on stderr of its cluster file, with its command's name
    taken out (plan's note on what it prices the layers on, not the servers' devices, is plan's own, and so is the
    once-per-install note that numba compiles SPP's PRM tables, which a run in a fresh checkout writes)."""
    assert main(argv) == 0
    err = capsys.readouterr().err
    return [line.replace(f"archsim {command}: ", "archsim COMMAND: ") for line in err.splitlines()
            if line.startswith(f"archsim {command}: ") and "'s servers name " not in line
            and "with numba (once per install" not in line]


def _train(cluster: str) -> list[str]:
    return ["train", GPT2, "--cluster", cluster, "--tp", "4", "--dp", "2", "--global-batch", "8", "--seq", "128"]


@pytest.mark.long
@pytest.mark.parametrize("extra", [[], ["--array", "32x32"]], ids=["on_the_device", "on_an_array"])
def test_plan_writes_trains_warning_for_a_nic_speed_in_tb_per_s(tmp_path, capsys, extra):
    """nic_gbps = 0.4 (400 Gb/s written in Tb/s): train warns; plan said nothing. Now plan writes train's line,
    once, whatever prices its layers (the NIC is the cluster file's, not the device's)."""
    cluster = _file(tmp_path, "c.toml", '[cluster]\nname = "n"\n[network]\nnics_per_server = 4\nnic_gbps = 0.4\n'
                                        f"gpus_per_nic = 1\n{H100S}")
    trained = _stderr_lines(capsys, _train(cluster), "train")
    assert trained == [("archsim COMMAND: warning: nic_gbps = 0.4 Gb/s per NIC is below any NIC sold (≥ 1 Gb/s): if "
                       "it is in Tb/s, write nic_gbps = 400")]
    assert _stderr_lines(capsys, [*PLAN, "--cluster", cluster, *extra], "plan") == trained


@pytest.mark.long
def test_plan_writes_trains_warning_and_notes_for_nvlink_in_gb_per_s(tmp_path, capsys):
    """intra_server_gbps = 900 (an H100's NVLink in GB/s) beside a [network] table that supersedes a stated
    inter_server_gbps: plan writes train's warning and note, each once."""
    cluster = _file(tmp_path, "c.toml", '[cluster]\nname = "n"\ninter_server_gbps = 100\n[network]\n'
                                        f"nics_per_server = 4\nnic_gbps = 400\n{H100S}intra_server_gbps = 900\n")
    trained = _stderr_lines(capsys, _train(cluster), "train")
    assert [line.split(":")[1] for line in trained] == [" warning", " note"]
    assert "intra_server_gbps = 900 is the " in trained[0] and "inter_server_gbps = 100 is not read" in trained[1]
    assert _stderr_lines(capsys, [*PLAN, "--cluster", cluster], "plan") == trained


def _device(folder: Path, name: str, inter_node_gbps: float | None) -> str:
    """The shipped TPU-v4-like device file, with its NIC stated (None: none, as shipped), named after ``name``
    (two files that describe different chips must name them apart)."""
    text = re.sub(r'(?m)^name = ".*"$', f'name = "{Path(name).stem}"', TPU.read_text(encoding="utf-8"), count=1)
    if inter_node_gbps is not None:
        text = re.sub(r"(?m)^\[links\]$", f"[links]\ninter_node_gbps = {inter_node_gbps:g}", text)
    return _file(folder, name, text)


def _chips(folder: Path, name: str, devices: tuple[str, str], inter: str = "") -> str:
    """Two 4-chip servers naming ``devices`` (file names beside the cluster file), ``inter``: [cluster] lines."""
    servers = "".join(f'[[servers]]\ngpus = 4\nintra_server_gbps = 4800\ndevice = "{d}"\n' for d in devices)
    return _file(folder, name, f'[cluster]\nname = "chips"\n{inter}{servers}')


def _makespan(capsys, cluster: str) -> float:
    assert main([*PLAN, "--cluster", cluster, "--format", "json"]) == 0
    out = capsys.readouterr()
    assert "archsim plan:" not in out.err  # train reads the same file without a word
    return json.loads(out.out)["meta"]["makespan_seconds"]


@pytest.mark.long
def test_a_device_files_nic_prices_plans_links_as_trains(tmp_path, capsys):
    """No inter-server bandwidth in the file, the device files' [links] inter_node_gbps: train runs it and plan
    refused it. Now plan plans on the twin stating that figure as inter_server_gbps (and the figure counts: 1 and
    200 Gb/s plan differently)."""
    makespans = {}
    for gbps in (1, 200):
        _device(tmp_path, f"chip{gbps}.toml", gbps)
        read = _makespan(capsys, _chips(tmp_path, f"fallback{gbps}.toml", (f"chip{gbps}.toml",) * 2))
        twin = _makespan(capsys, _chips(tmp_path, f"twin{gbps}.toml", (f"chip{gbps}.toml",) * 2,
                                        f"inter_server_gbps = {gbps}\n"))
        assert read == twin
        makespans[gbps] = read
        assert main(_train(str(tmp_path / f"fallback{gbps}.toml"))) == 0
        capsys.readouterr()
    assert makespans[1] > makespans[200]


@pytest.mark.parametrize("second", ["chip200.toml", "none.toml"], ids=["different_figures", "one_states_none"])
def test_device_files_that_give_no_one_nic_are_refused_as_train_refuses_them(tmp_path, capsys, second):
    _device(tmp_path, "chip200.toml", 200)
    _device(tmp_path, "chip100.toml", 100)
    _device(tmp_path, "none.toml", None)
    cluster = _chips(tmp_path, "c.toml", ("chip100.toml", second))
    for argv in ([*PLAN, "--cluster", cluster], _train(cluster)):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert "missing: the bandwidth between two servers" in err and "inter_server_gbps" in err and "\n" not in err


@pytest.mark.long
def test_a_device_files_nic_in_the_wrong_unit_is_warned_by_plan_as_by_train(tmp_path, capsys):
    """inter_node_gbps = 400000 (Mb/s), the file's own inter_server_gbps read: train names the device file and the
    likely unit; plan now does too."""
    _device(tmp_path, "chip.toml", 400000)
    cluster = _chips(tmp_path, "c.toml", ("chip.toml",) * 2, "inter_server_gbps = 200\n")
    trained = _stderr_lines(capsys, _train(cluster), "train")
    assert trained == [("archsim COMMAND: warning: chip.toml [links]: inter_node_gbps = 400000 Gb/s per NIC is above "
                       "any NIC sold (≤ 3200 Gb/s): if it is in Mb/s, write inter_node_gbps = 400")]
    assert _stderr_lines(capsys, [*PLAN, "--cluster", cluster], "plan") == trained


def test_a_drawn_range_is_planned_and_judged_by_no_single_figure(tmp_path, capsys):
    """plan alone draws [low, high] ranges (on an array: on the servers' device it refuses them, as train does):
    no one NIC or NVLink figure to judge, so no warning, and the range is still planned."""
    cluster = _file(tmp_path, "c.toml", '[cluster]\nname = "r"\ninter_server_gbps = [0.3, 0.5]\n'
                                        f'inter_server_link = "per_gpu_pair"\n{H100S}intra_server_gbps = [800, 900]\n')
    assert _stderr_lines(capsys, [*PLAN, "--cluster", cluster, "--array", "32x32"], "plan") == []
    with pytest.raises(InputError, match="a \\[low, high\\] range is drawn by archsim plan"):
        from archsim.training.cluster_file import load_gpu_cluster

        load_gpu_cluster(cluster)


def test_a_refused_plan_prints_its_error_alone(tmp_path, capsys):
    """The warnings follow the run, as train's do: a plan refused for its size writes one line, the refusal."""
    cluster = _file(tmp_path, "c.toml", '[cluster]\nname = "n"\n[network]\nnics_per_server = 4\nnic_gbps = 0.4\n'
                                        f"gpus_per_nic = 1\n{H100S}")
    assert main([*PLAN, "--cluster", cluster, "--array", "32x32", "--max-ops", "1"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("archsim plan: note:")]
    assert len(err) == 1 and err[0].startswith("archsim plan: error:") and "max-ops" in err[0], err
