"""A chip's three operand SRAMs are priced at their stated sizes in every command (issue #37): a .cfg device
file's IfmapSramSzkB/FilterSramSzkB/OfmapSramSzkB, and a device TOML's three-value ``sram_kib_per_array``, as
``archsim energy --config`` prices the .cfg. Before the fix train split the total in three equal buffers."""

import json
from pathlib import Path

import pytest

from archsim.cli import main
from tests.test_user_trial_chip import CFG as CHIP_CFG
from tests.test_user_trial_chip import CHIP

ROOT = Path(__file__).resolve().parents[1]
GPT2 = str(ROOT / "configs" / "transformers" / "gpt2.json")

# test_user_trial_chip.py's chip (8 arrays of 128×128, OS, 1.2 GHz) with its three SRAMs stated unequal
CFG = (CHIP_CFG.replace("IfmapSramSzkB:    2731", "IfmapSramSzkB:    512")
       .replace("FilterSramSzkB:   2731", "FilterSramSzkB:   512")
       .replace("OfmapSramSzkB:    2730", "OfmapSramSzkB:    256"))

# the same chip as a device TOML, its SRAM figure(s) left to fill
TOML = CHIP.replace("sram_kib_per_array = 8192", "sram_kib_per_array = SRAM")


def test_a_cfg_chips_sram_is_priced_per_buffer_as_archsim_energy_prices_it(tmp_path):
    """The energy of one GEMM on the .cfg chip's array, as train charges it, is the energy of the same GEMM on the
    array ``archsim energy --config`` reads from the file (512/512/256 KiB). Failed before the fix: train priced
    three 426 KiB buffers (the sum split in thirds)."""
    from archsim.array.config import read_scalesim_cfg
    from archsim.energy.model import op_energy_columns
    from archsim.energy.table import access_energies
    from archsim.lowering.ops import Gemm, TrainingOp
    from archsim.training.energy import device_array, load_priced_device

    path = tmp_path / "chip.cfg"
    path.write_text(CFG)
    charged = device_array(load_priced_device(path), "bf16")
    assert (charged.ifmap_sram_kb, charged.filter_sram_kb, charged.ofmap_sram_kb) == (512, 512, 256)
    stated = read_scalesim_cfg(path, element_bytes=2, clock_hz=1.2e9)
    op = [TrainingOp(layer="fc1", kind="F", gemms=(Gemm(m=2048, k=2048, n=8192, count=1),))]
    train_pj = float(op_energy_columns(op, charged, access_energies(charged))["energy_pj"].sum())
    energy_pj = float(op_energy_columns(op, stated, access_energies(stated))["energy_pj"].sum())
    assert train_pj == pytest.approx(energy_pj, rel=1e-12)


def _train(tmp_path: Path, capsys, device: str, text: str) -> dict:
    (tmp_path / device).write_text(text)
    cluster = tmp_path / "cluster.toml"
    cluster.write_text('[cluster]\nname = "mychip16"\n\n[[servers]]\ncount = 1\ngpus = 16\n'
                       f'intra_server_gbps = 9600\ndevice = "{device}"\n')
    assert main(["train", GPT2, "--dp", "16", "--global-batch", "64", "--dtype", "bf16", "--format", "json",
                 "--cluster", str(cluster)]) == 0
    return json.loads(capsys.readouterr().out)["meta"]


def test_a_toml_stating_three_srams_trains_as_the_cfg(tmp_path, capsys):
    """A device TOML's ``sram_kib_per_array = [512, 512, 256]`` is the .cfg's three keys: the same iteration and
    energy. One figure (1280 KiB, split in three) is a different chip: the same time, another energy (SRAM size
    enters energy, not time)."""
    cfg = _train(tmp_path, capsys, "chip.cfg", CFG)
    three = _train(tmp_path, capsys, "three.toml", TOML.replace("SRAM", "[512, 512, 256]"))
    one = _train(tmp_path, capsys, "one.toml", TOML.replace("SRAM", "1280"))
    for key in ("iteration_seconds", "energy_j", "mfu", "peak_memory_gib"):
        assert three[key] == pytest.approx(cfg[key], rel=1e-12), key
    assert one["iteration_seconds"] == cfg["iteration_seconds"]
    assert one["energy_j"] != pytest.approx(cfg["energy_j"], rel=1e-9)


@pytest.mark.parametrize("value", ["[512, 512]", "[512, 0, 256]", '[512, "512", 256]', "[512.5, 512, 256]"])
def test_a_toml_sram_list_other_than_three_positive_integers_is_refused(tmp_path, value):
    """Three values are the three buffers, each whole KiB: any other list is one line naming the key."""
    from archsim.devices.device_file import load_device
    from archsim.errors import InputError

    path = tmp_path / "chip.toml"
    path.write_text(TOML.replace("SRAM", value))
    with pytest.raises(InputError) as caught:
        load_device(path)
    assert caught.value.where.field == "memory.sram_kib_per_array"


def test_cost_config_on_a_three_sram_toml_names_the_three_sizes(tmp_path, capsys):
    """``bppsa rnn --config chip.toml`` refuses the TOML and names its array as flags: a TOML stating three SRAMs
    names them as stated (it crashed on the three-value form, a list where one figure was read); ``cost`` reads the
    TOML (train's reader) and costs the three sizes as stated."""
    import json

    path = tmp_path / "chip.toml"
    path.write_text(TOML.replace("SRAM", "[512, 512, 256]"))
    layer = tmp_path / "gemm.csv"
    layer.write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
                     "Strides, Padding, Type,\nfc1, 1, 1, 1, 1, 2048, 8192, 1, 0, fc,\n")
    assert main(["bppsa", "rnn", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--sram-kb 512,512,256" in err
    assert main(["cost", str(layer), "--config", str(path), "--engine", "cycle", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["meta"]["sram_kb"] == "512,512,256"
