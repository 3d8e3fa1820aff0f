"""The table's extra lines (energy, host floor, compute split, network, parameters) write their figures as the table's
cells do (``archsim.outputs.format_number``): ``--precision`` significant digits, but to the unit where those would
take a positive exponent. Until then a line wrote ``:.2g``'s ``4.4e+02`` where the cells wrote 443."""

from __future__ import annotations

import json

from test_docs import ROOT

from archsim.cli import main
from archsim.training.table_lines import energy_line, host_note, network_lines, parameters_line, split_line

MODEL = str(ROOT / "configs" / "transformers" / "gpt3_1.3b.toml")


def test_each_line_writes_its_figures_to_the_unit_past_its_digits():
    """By hand, at 2 digits: 443 J (not 4.4e+02), 150 s of 200 s and 345 µs, 123 s of compute, 438 GB/s (437.5 to the
    unit, half to even), a 3200 Gb/s NIC, 1008 B parameters; figures under 10² keep their 2 digits (50 GB/s, 25)."""
    assert energy_line({"energy_j": 443.0, "energy_breakdown_j": {"mac": 221.5, "dram": 221.5}}, 2) == \
        "energy: 443 J — mac 50%, dram 50%"
    assert host_note(150.0, 200.0, ((345e-6, "fit"),), 2).startswith(
        "150 s of 200 s is the host issuing ops (345 µs per op, fit) beyond")
    split = {"gemm": 61.5, "memory_bound": 61.5, "kernel_gaps": 0.0, "host_floor": 0.0,
             "recompute_communication": 0.0, "other": 0.0}
    assert split_line(split, 2) == "123 s of compute and recompute — gemm 50%, memory-bound 50%, kernel gaps 0%, " \
                                   "host floor 0%"
    meta = {"intra_server": {"gb_per_s_per_gpu": 437.5, "link": "nvlink", "nvls": False},
            "inter_server": {"nics_per_server": 8, "nic_gbps": 3200.0, "gpus_per_nic": 1, "gb_per_s_per_gpu": 50.0,
                             "crossed_by": ["dp"], "oversubscription": 2.0, "leaves_crossed_by": ["dp"]}}
    lines = network_lines(meta, 2)
    assert lines["intra_server"] == "438 GB/s per direction per GPU (nvlink), NVLS off"
    assert lines["inter_server"] == ("8 NICs × 3200 Gb/s per server, 1 GPU per NIC: 50 GB/s per direction per GPU, down "
                                     "to 25 across leaves (uplinks 2× oversubscribed); crossed by dp (across leaves: dp)")
    assert parameters_line(1_008_000_000_000, 2) == "1008 B (1,008,000,000,000)"
    assert parameters_line(1_315_723_264, 2) == "1.3 B (1,315,723,264)"  # under 10²: its 2 digits, as before


def test_train_precision_2_prints_the_lines_as_the_cells(capsys):
    """Failed before: ``--precision 2`` printed ``intra_server: 4.5e+02 GB/s`` and ``8 NICs × 4e+02 Gb/s`` (the file's
    7200 Gb/s both ways: 450 GB/s per direction; its NICs 400 Gb/s), and on an array device ``energy: 1e+02 J`` under
    the meta's cell ``energy_j: 103``. Now no line takes an exponent and the energy line's joules are the cell's."""
    argv = ["train", MODEL, "--cluster", str(ROOT / "configs" / "clusters" / "h100_2_servers.toml"), "--tp", "8",
            "--pp", "2", "--dp", "1", "--global-batch", "8", "--precision", "2"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "# intra_server: 450 GB/s per direction per GPU (nvlink), NVLS off" in lines
    assert any(line.startswith("# inter_server: 8 NICs × 400 Gb/s per server, 1 GPU per NIC: 50 GB/s") for line in lines)
    device = ["train", MODEL, "--cluster", str(ROOT / "configs" / "clusters" / "scalesim_32x32_device.toml"), "--tp",
              "1", "--pp", "1", "--dp", "1", "--global-batch", "2"]
    assert main([*device, "--format", "json"]) == 0
    joules = json.loads(capsys.readouterr().out)["meta"]["energy_j"]
    assert joules >= 100  # past 2 digits: the case
    assert main([*device, "--precision", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert f"# energy_j: {round(joules)}" in out
    energy = next(line for line in out if line.startswith("energy: "))
    assert energy.startswith(f"energy: {round(joules)} J — ")
    assert not [line for line in out + lines if line.startswith(("# ", "energy: ")) and "e+" in line]
