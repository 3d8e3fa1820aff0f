"""SCALE-Sim's topology formats (hand-written files in tests/data/scalesim_formats) and .cfg keys.

Reference: SCALE-Sim 3.0.0 itself — its loader reads each file (conv mode, or GEMM mode for the
``Layer, M, N, K`` files), and its layer simulator gives each row's compute cycles, which must equal
archsim's forward cycles for the same file (batch 1, SCALE-Sim geometry).
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from archsim.array.config import ArrayConfig, read_scalesim_cfg
from archsim.array.costing import cost_network
from archsim.cli import main
from archsim.errors import InputError
from archsim.workload import load_topology
from tests.scalesim_reference import scalesim_conv

DATA = Path(__file__).parent / "data" / "scalesim_formats"
FILES = {"gemm_mnk.csv": True, "gemm_sparsity.csv": True, "conv_comment.csv": False,
         "conv_batch_column.csv": False, "conv_repeated.csv": False, "conv_dp.csv": False}
ARRAYS = [(8, 8, "ws"), (4, 8, "os"), (8, 4, "is")]


def _scalesim_rows(path: Path, gemm: bool) -> list[list]:
    pytest.importorskip("scalesim")
    from scalesim.topology_utils import topologies

    topo = topologies()
    with contextlib.redirect_stdout(io.StringIO()):
        topo.load_arrays(str(path), mnk_inputs=gemm)
    return topo.topo_arrays


@pytest.mark.long
@pytest.mark.parametrize("rows, cols, dataflow", ARRAYS)
@pytest.mark.parametrize("file", sorted(FILES))
def test_compute_cycles_equal_scalesims_on_its_own_reading_of_the_file(file, rows, cols, dataflow):
    path = DATA / file
    reference = _scalesim_rows(path, FILES[file])
    expected: list[int] = []
    for entry in reference:  # a DP row arrives as one SCALE-Sim layer per input channel: summed
        name, h, w, fh, fw, c, m, stride = entry[:8]
        cycles = scalesim_conv(h, w, fh, fw, c, m, stride, rows, cols, dataflow).compute_cycles
        if "DP" in name and not name.endswith("Channel_0"):
            expected[-1] += cycles
        else:
            expected.append(cycles)
    network = load_topology(path, geometry="scalesim")
    table = cost_network(network, ArrayConfig(rows, cols, dataflow), 1, "paper")
    assert table["F_cycles"].astype(int).tolist() == expected


def test_repeated_names_are_made_unique_and_reported():
    network = load_topology(DATA / "conv_repeated.csv")
    assert [layer.name for layer in network.layers] == ["block", "block_2", "block_3"]
    assert network.notes == ("line 3: layer name 'block' repeats; renamed block_2",
                             "line 4: layer name 'block' repeats; renamed block_3")
    gemm = load_topology(DATA / "gemm_mnk.csv")
    assert [layer.name for layer in gemm.layers][-1] == "Linear1_2"


def test_gemm_rows_are_linear_layers_on_m_rows():
    layer = load_topology(DATA / "gemm_mnk.csv").layers[2]  # Linear1: M 24, N 40, K 16
    assert (layer.kind, layer.ifmap_h, layer.channels, layer.filters, layer.macs) == ("fc", 24, 16, 40, 24 * 16 * 40)


def test_repeated_names_with_inputs_stay_an_error():
    text = ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, "
            "Inputs,\na, 4, 4, 1, 1, 2, 2, 1, input,\na, 4, 4, 1, 1, 2, 2, 1, a,\n")
    from archsim.workload import parse_topology

    with pytest.raises(InputError, match="duplicate"):
        parse_topology(text)


def test_a_batch_size_value_is_refused(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("Layer name,Ifmap height,ifmap width,filter height,filter width,channels,num filters,strides,"
                    "batch size,\nconv1,14,14,3,3,4,12,1,8,\n")
    with pytest.raises(InputError) as err:
        load_topology(path)
    assert (err.value.where.line, err.value.where.field) == (2, "batch size")


@pytest.mark.parametrize("section, key, on", [("sparsity", "SparsitySupport", "true"),
                                              ("run_presets", "UseRamulatorTrace", "True"),
                                              ("layout", "IfmapCustomLayout", "True")])
def test_cfg_features_archsim_does_not_model_are_refused(tmp_path, capsys, section, key, on):
    shipped = Path(__file__).parents[1] / "configs" / "arrays" / "scalesim_32x32_ws.cfg"
    text = shipped.read_text()
    lines = [f"{key} : {on}" if line.split(":")[0].strip() == key else line for line in text.splitlines()]
    path = tmp_path / "on.cfg"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as err:
        read_scalesim_cfg(path)
    assert err.value.where.field == key and "does not model" in err.value.message
    assert main(["cost", "layerpipe_sample", "--config", str(path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert read_scalesim_cfg(shipped).rows == 32  # the shipped file (all off) still loads


def test_a_device_cfg_costs_as_the_array_it_is_written_from(capsys):
    """configs/devices/scalesim_32x32_device.cfg is configs/arrays/scalesim_32x32_ws.cfg's array with a
    device's sections added: `cost --config` reads its array (it refused the [device] section)."""
    import json

    configs = Path(__file__).parents[1] / "configs"
    tables = []
    for cfg in (configs / "arrays" / "scalesim_32x32_ws.cfg", configs / "devices" / "scalesim_32x32_device.cfg"):
        assert main(["cost", "layerpipe_sample", "--config", str(cfg), "--batch", "4", "--format", "json"]) == 0
        tables.append([{k: v for k, v in row.items() if k.endswith("_cycles")}
                       for row in json.loads(capsys.readouterr().out)["rows"]])
    assert tables[0] == tables[1] and tables[0][0]["F_cycles"] > 0


def test_an_unknown_cfg_section_is_still_refused(tmp_path):
    shipped = Path(__file__).parents[1] / "configs" / "devices" / "scalesim_32x32_device.cfg"
    path = tmp_path / "typo.cfg"
    path.write_text(shipped.read_text().replace("[links]", "[link]"))
    with pytest.raises(InputError, match=r"unknown section \[link\]"):
        read_scalesim_cfg(path)


def test_a_device_toml_given_as_cfg_names_its_array_flags(capsys):
    """configs/devices/tpu_v4_like.toml (128 × 128 ws MXUs at 1050 MHz, its [compute] table) is for train
    and search; --config read it as an INI and said "unknown section [compute]; expected ... device,
    links, memory", as if one table were amiss. The refusal names the flags that cost its array (bppsa's:
    gemm, cost, energy, pipeline and schedule read the TOML as train does)."""
    toml = Path(__file__).parents[1] / "configs" / "devices" / "tpu_v4_like.toml"
    assert main(["bppsa", "rnn", "--config", str(toml)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown section" not in err
    assert "--array 128x128 --dataflow ws --clock-ghz 1.05" in err


DEVICE_CFG = Path(__file__).parents[1] / "configs" / "devices" / "scalesim_32x32_device.cfg"
# (old text, new text, the field the error names): a key typo, a bad value, a bad array count, in each section
DEVICE_KEY_BREAKS = [
    ("intra_gbps = 100", "intra_gbsp = 100", "links.intra_gbsp"),
    ("intra_gbps = 100", "intra_gbps = -1", "links.intra_gbps"),
    ("arrays = 16", "arays = 16", "device.arays"),
    ("arrays = 16", "arrays = 0", "device.arrays"),
    ("hbm_gib = 16", "hbm_gib = nan", "memory.hbm_gib"),
]


@pytest.mark.parametrize("old, new, field", DEVICE_KEY_BREAKS)
def test_a_device_cfg_is_checked_alike_by_every_reader(old, new, field, tmp_path, capsys):
    """The dense readers (cost/energy/gemm --config, the library) refuse what train refuses in a .cfg device file,
    with the same one line: one check of [device]/[memory]/[links]."""
    from archsim.devices.device_file import load_device

    path = tmp_path / "device.cfg"
    text = DEVICE_CFG.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    with pytest.raises(InputError) as by_train:
        load_device(path)
    with pytest.raises(InputError) as by_cost:
        read_scalesim_cfg(path)
    assert by_train.value.where.field == by_cost.value.where.field == field
    assert str(by_train.value) == str(by_cost.value)
    for argv in (["cost", "layerpipe_sample"], ["energy", "layerpipe_sample"], ["gemm", "--m", "8", "--k", "8", "--n", "8"]):
        assert main([*argv, "--config", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"field '{field}'" in err, (argv, err)


def test_a_plain_scalesim_cfg_keeps_its_own_memory_section(tmp_path):
    """Without [device] or [links] a .cfg is SCALE-Sim's: a [memory] section there is not a device file's."""
    shipped = Path(__file__).parents[1] / "configs" / "arrays" / "scalesim_32x32_ws.cfg"
    path = tmp_path / "plain.cfg"
    path.write_text(shipped.read_text() + "\n[memory]\nanything = 1\n")
    assert read_scalesim_cfg(path).rows == 32
