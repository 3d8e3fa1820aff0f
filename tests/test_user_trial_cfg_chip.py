"""An accelerator architect's SCALE-Sim ``.cfg`` (one 64 × 64 weight-stationary array, 256/256/128 KiB of
SRAM) made a device (16 arrays at 1 GHz, 32 GiB of HBM at 800 GB/s, 100 GB/s links) and trained on 8 and
64 chips: what a newcomer following docs/own-model.md and docs/formats.md ran into, each pinned here."""

import json
from itertools import pairwise
from pathlib import Path

import pytest

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
GPT2 = str(ROOT / "configs" / "transformers" / "gpt2.json")

CFG = """[general]
run_name = mychip

[architecture_presets]
ArrayHeight:    64
ArrayWidth:     64
IfmapSramSzkB:    256
FilterSramSzkB:   256
OfmapSramSzkB:    128
Bandwidth : 400
Dataflow : ws

[archsim]
ClockGHz = 1.0

[device]
name = mychip_x16
arrays = 16

[memory]
hbm_gib = 32
hbm_gbps = 800

[links]
intra_gbps = 100
"""


@pytest.mark.parametrize("command", [("train", GPT2, "--dp", "8", "--global-batch", "64"),
                                     ("search", GPT2, "--global-batch", "64"),
                                     ("plan", "layerpipe_sample", "--microbatches", "4")])
def test_a_cfg_device_given_as_the_cluster_says_what_it_is(tmp_path, capsys, command):
    """``--cluster mychip.cfg`` (the device, not a cluster naming it) was refused as 'not valid TOML
    (Invalid value (at line 2, column 12))', SCALE-Sim's ``key: value`` read as TOML; a device TOML in
    the same place was already told to go in a cluster's [[servers]]. Now the .cfg is too, in one line."""
    path = tmp_path / "mychip.cfg"
    path.write_text(CFG)
    assert main([*command, "--cluster", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not valid TOML" not in err
    assert "field 'cluster': this is a SCALE-Sim .cfg, not a cluster file" in err
    assert "configs/clusters/scalesim_32x32_device.toml" in err
    broken = tmp_path / "broken.toml"  # a cluster TOML of bad syntax is still a syntax error
    broken.write_text("[cluster\n")
    assert main([*command, "--cluster", str(broken)]) == 2
    assert "not valid TOML" in capsys.readouterr().err


def _cluster(tmp_path: Path, cluster_extra: str = "", device: str = CFG) -> str:
    """Two servers of 4 of the chip (100 GB/s per direction: 1600 Gbit/s both ways), ``cluster_extra``
    appended to the [cluster] table."""
    (tmp_path / "mychip.cfg").write_text(device)
    path = tmp_path / "cluster.toml"
    path.write_text(f'[cluster]\nname = "two"\n{cluster_extra}\n[[servers]]\ncount = 2\ngpus = 4\n'
                    'intra_server_gbps = 1600\ndevice = "mychip.cfg"\n')
    return str(path)


def _seconds(capsys, cluster: str) -> float:
    assert main(["train", GPT2, "--dp", "8", "--global-batch", "64", "--format", "json", "--cluster", cluster]) == 0
    return json.loads(capsys.readouterr().out)["meta"]["iteration_seconds"]


def test_a_device_files_nic_prices_the_servers_link_when_the_cluster_gives_none(tmp_path, capsys):
    """docs/formats.md: ``[links] inter_node_gbps`` is "the inter-server bandwidth when the cluster file
    gives none"; the cluster reader refused every such file first ("missing: the bandwidth between two
    servers"), so the key was read and never used. Now a device's 400 Gbit/s NIC trains as the cluster's
    ``inter_server_gbps = 400`` does, and a device that states none is still refused in one line."""
    stated = _seconds(capsys, _cluster(tmp_path, "inter_server_gbps = 400\n"))
    slower = _seconds(capsys, _cluster(tmp_path, "inter_server_gbps = 100\n"))
    assert slower > stated  # the figure is read: DP's all-reduce crosses the servers
    nic = CFG.replace("intra_gbps = 100\n", "intra_gbps = 100\ninter_node_gbps = 400\n")
    assert _seconds(capsys, _cluster(tmp_path, device=nic)) == stated
    assert main(["train", GPT2, "--dp", "8", "--global-batch", "64", "--cluster", _cluster(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "field 'inter_server_gbps': missing" in err and "inter_node_gbps" in err


def test_a_device_files_nic_speed_outside_any_nic_sold_is_warned(tmp_path, capsys):
    """``[links] inter_node_gbps = 400000`` (400 Gb/s written in Mb/s) prices every collective across servers 1000
    times fast without a word, where ``[network] nic_gbps = 400000`` is warned: it now gets the same warning on
    stderr, naming the device file and the key; a plausible 400 gets none."""
    from archsim.training.cluster_file import load_gpu_cluster

    mbps = CFG.replace("intra_gbps = 100\n", "intra_gbps = 100\ninter_node_gbps = 400000\n")
    assert main(["train", GPT2, "--dp", "8", "--global-batch", "64", "--cluster", _cluster(tmp_path, device=mbps)]) == 0
    err = capsys.readouterr().err
    assert err.count("archsim train: warning: mychip.cfg [links]: inter_node_gbps = 400000 Gb/s per NIC is above any "
                     "NIC sold (≤ 3200 Gb/s): if it is in Mb/s, write inter_node_gbps = 400\n") == 1, err
    tbps = CFG.replace("intra_gbps = 100\n", "intra_gbps = 100\ninter_node_gbps = 0.4\n")
    low = ("mychip.cfg [links]: inter_node_gbps = 0.4 Gb/s per NIC is below any NIC sold (≥ 1 Gb/s): if it is in "
           "Tb/s, write inter_node_gbps = 400")
    assert load_gpu_cluster(_cluster(tmp_path, device=tbps)).warnings == (low,)
    plausible = CFG.replace("intra_gbps = 100\n", "intra_gbps = 100\ninter_node_gbps = 400\n")
    assert load_gpu_cluster(_cluster(tmp_path, device=plausible)).warnings == ()


@pytest.mark.long
def test_an_energy_search_on_array_chips_ranks_equal_joules_by_time(tmp_path, capsys):
    """On array chips ``energy_j`` is the energy model's: the same ops cost the same joules whatever the
    schedule, so 1F1B, GPipe and ZB-H1 at one layout tie, and the tie kept the grid's order: the search's
    first row was 1F1B at 0.248 s with ZB-H1's 0.214 s for the same joules third. Ties now rank faster first."""
    (tmp_path / "mychip.cfg").write_text(CFG)
    cluster = tmp_path / "eight.toml"
    cluster.write_text('[cluster]\nname = "eight"\n\n[[servers]]\ngpus = 8\nintra_server_gbps = 1600\n'
                       'device = "mychip.cfg"\n')
    assert main(["search", GPT2, "--cluster", str(cluster), "--global-batch", "64", "--objective", "energy",
                 "--top", "6", "--recompute", "none", "--schedule", "1f1b", "gpipe", "zb-h1",
                 "--sequence-parallel", "off", "--max-micro-batch", "8", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    ties = [(a, b) for a, b in pairwise(rows) if a["energy_j"] == b["energy_j"]]
    assert ties  # the case this pins: configurations of equal joules
    assert all(a["iteration_seconds"] <= b["iteration_seconds"] for a, b in ties)
    assert [r["energy_j"] for r in rows] == sorted(r["energy_j"] for r in rows)  # still ranked by energy first


def test_the_library_warns_as_the_command_notes_that_one_of_a_devices_arrays_is_costed(tmp_path, capsys):
    """``archsim cost --config mychip.cfg`` says on stderr that it costs one of the chip's 16 arrays;
    ``archsim.cost(config="mychip.cfg")`` (docs/api.md: the same code, the same checks) said nothing, so a
    notebook's cycles read as the chip's. It now warns with the command's line; a plain .cfg warns of nothing."""
    import warnings

    import archsim

    device, plain = tmp_path / "mychip.cfg", tmp_path / "plain.cfg"
    device.write_text(CFG)
    plain.write_text(CFG.split("\n[archsim]")[0].replace("Bandwidth : 400", "Bandwidth : 10") + "\n")
    assert main(["cost", "layerpipe_sample", "--batch", "4", "--config", str(device)]) == 0
    notes = capsys.readouterr().err.splitlines()
    assert len(notes) == 2 and all(note.startswith("archsim cost: note: ") for note in notes)  # its arrays, its dtype
    with pytest.warns(UserWarning) as caught:
        archsim.cost("layerpipe_sample", batch=4, config=str(device))
    assert [str(w.message) for w in caught] == [note.removeprefix("archsim cost: note: ").replace(
        "--dtype fp16", "dtype='fp16'") for note in notes]  # the advice in the keyword a library user types
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        archsim.cost("layerpipe_sample", batch=4, config=str(plain))


@pytest.mark.parametrize(("written", "wanted"), [("[Memory]", "memory"), ("[link]", "links")])
def test_a_misspelt_device_section_is_named_by_train_as_by_cost(tmp_path, capsys, written, wanted):
    """``[Memory]`` (section names are case-sensitive) or ``[link]``: ``cost --config`` named the unknown
    section, but ``train`` only said the file "needs a [memory] section" beside the one the user wrote."""
    cluster = _cluster(tmp_path, device=CFG.replace(f"[{wanted}]", written))
    for argv in (["cost", "layerpipe_sample", "--config", str(tmp_path / "mychip.cfg")],
                 ["train", GPT2, "--dp", "8", "--global-batch", "64", "--cluster", cluster]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"unknown section {written} (did you mean '[{wanted}]'?); expected " in err, err


@pytest.mark.parametrize("command", [("train", GPT2, "--dp", "8", "--global-batch", "64"),
                                     ("plan", "layerpipe_sample", "--microbatches", "4")])
def test_a_device_file_named_as_the_gpu_is_pointed_to_the_device_key(tmp_path, capsys, command):
    """``gpu = "mychip.cfg"`` listed the catalog's GPUs, which never hold a chip of one's own; the file
    name tells what was meant, and the error says where it goes."""
    _cluster(tmp_path)
    cluster = tmp_path / "wrong_key.toml"
    cluster.write_text('[cluster]\n[[servers]]\ngpus = 8\nintra_server_gbps = 1600\ngpu = "mychip.cfg"\n')
    assert main([*command, "--cluster", str(cluster)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "field 'servers[1].gpu'" in err and 'device = "mychip.cfg"' in err, err
    assert "v100-32gb" not in err
