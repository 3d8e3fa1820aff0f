"""An accelerator architect's own chip (4 cores × 2 arrays of 128 × 128, output-stationary, 1.2 GHz,
64 MiB of SRAM, 96 GiB of HBM at 2.4 TB/s, six 100 GB/s links) through train, search and the device
sweep: what they found read silently or broke, each pinned here (docs/training.md, "Accelerators")."""

import json
from pathlib import Path

import pytest
from device_files import device_toml, scalesim_chip_cfg

from archsim.cli import main
from archsim.commands.common import note_unread_cluster_keys
from archsim.training.cluster_file import load_gpu_cluster

ROOT = Path(__file__).resolve().parents[1]
GPT2 = str(ROOT / "configs" / "transformers" / "gpt2.json")

CHIP = device_toml(name="MyChip", gemm="arrays", arrays=8, arrays_per_core=2, rows=128, cols=128, dataflow="os",
                   clock_mhz=1200, sram_kib=8192, hbm_gib=96, hbm_gbps=2400, intra_gbps=600, links=6)


def _cluster(tmp_path: Path, extra: str = "", device: str = CHIP) -> str:
    """A one-server cluster of 16 of ``device`` (``intra_server_gbps``: the chip's 600 GB/s per
    direction, both directions in Gbit/s), ``extra`` appended to its [[servers]] table."""
    (tmp_path / "chip.toml").write_text(device)
    path = tmp_path / "cluster.toml"
    path.write_text('[cluster]\nname = "mychip16"\n\n[[servers]]\ncount = 1\ngpus = 16\n'
                    f'intra_server_gbps = 9600\ndevice = "chip.toml"\n{extra}')
    return str(path)


def _run(capsys, *argv: str) -> tuple[str, str]:
    assert main(list(argv)) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


def _energy(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("# energy_j:"))


def test_gpu_watts_on_an_array_device_is_noted_as_unread(tmp_path, capsys):
    """On an array device ``energy_j`` is the energy model's (train and search alike), so a server's
    ``gpu_watts`` changes nothing: it was read by neither and said so nowhere. Now each says so on
    stderr, once; the figure is the same with or without the key."""
    argv = ("train", GPT2, "--dp", "16", "--global-batch", "64", "--dtype", "bf16", "--cluster")
    plain_out, plain_err = _run(capsys, *argv, _cluster(tmp_path))
    watts_out, watts_err = _run(capsys, *argv, _cluster(tmp_path, "gpu_watts = 5000\n"))
    assert _energy(plain_out) == _energy(watts_out)  # what the note says: the key changes nothing
    assert "gpu_watts" not in plain_err
    note = "note: gpu_watts is not read by train on an array device"
    assert watts_err.count(note) == 1
    # search prices energy by the same function (cluster_iteration_energy) and notes by the same one as train
    note_unread_cluster_keys(load_gpu_cluster(_cluster(tmp_path, "gpu_watts = 5000\n")), "search")
    assert capsys.readouterr().err.count("note: gpu_watts is not read by search on an array device") == 1


def test_gpu_watts_on_a_tile_timed_device_is_read(tmp_path, capsys):
    """A ``gemm = "tiles"`` device is priced at board power × time: there ``gpu_watts`` is the figure,
    no note, and the energy follows it."""
    tiles = CHIP.replace('gemm = "arrays"', 'gemm = "tiles"') + "\n[compute.peak_tflops]\nbf16 = 314.6\n"
    argv = ("train", GPT2, "--dp", "16", "--global-batch", "64", "--dtype", "bf16", "--cluster")
    low_out, low_err = _run(capsys, *argv, _cluster(tmp_path, "gpu_watts = 100\n", tiles))
    high_out, _ = _run(capsys, *argv, _cluster(tmp_path, "gpu_watts = 200\n", tiles))
    assert "gpu_watts" not in low_err
    low = float(_energy(low_out).split(":")[1])
    high = float(_energy(high_out).split(":")[1])
    assert high == pytest.approx(2 * low, rel=1e-3)


SPEC = """[sweep]
name = "mychip"
model = "gpt2"
device = "chip.toml"
array_sides = [64, 128]
hbm_gbps = [1200, 2400]
chips = [2, 4]
global_batch = 16
dtype = "bf16"
"""


def test_an_interrupted_sweep_says_so_in_one_line_and_resumes(tmp_path, capsys, monkeypatch):
    """Ctrl-C in a device sweep printed a 30-line traceback and nothing about the points already
    cached. Now: one line naming what is cached and that the same command resumes, exit 130 (the
    shell's code for SIGINT); the re-run computes only the missing points and gives the rows an
    uninterrupted run gives."""
    from archsim.sweep import executors

    (tmp_path / "chip.toml").write_text(CHIP)
    spec = tmp_path / "mychip.toml"
    spec.write_text(SPEC)
    calls = []
    real = executors.compute_unit

    def stopped_at_third(unit):
        calls.append(unit)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(unit)

    monkeypatch.setattr(executors, "compute_unit", stopped_at_third)
    out = tmp_path / "results"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"archsim sweep: error: interrupted: 2 of 8 points are cached in {out}; the same command resumes from them"]
    assert len(list((out / "cache").glob("*.json"))) == 2 and not (out / "results.csv").exists()

    calls.clear()
    monkeypatch.setattr(executors, "compute_unit", lambda unit: calls.append(unit) or real(unit))
    _run(capsys, "sweep", str(spec), "--out", str(out), "--quiet")
    assert len(calls) == 6  # the two cached points are not computed again
    _run(capsys, "sweep", str(spec), "--out", str(tmp_path / "fresh"), "--quiet")
    assert (out / "results.csv").read_text() == (tmp_path / "fresh" / "results.csv").read_text()


CFG = scalesim_chip_cfg(8, 1.2, 2400, "mychip", "MyChip", size=128, sram_kb=(2731, 2731, 2730), dataflow="os",
                        hbm_gib=96, intra_gbps=600, arrays_per_core=2, links=6)


def test_the_cfg_and_the_toml_train_alike(tmp_path, capsys):
    """The chip written twice, as a device TOML and as a SCALE-Sim .cfg with [memory]/[links], trains
    to the same iteration (the .cfg's three SRAMs, 2731 + 2731 + 2730 KiB, are the TOML's three values of
    sram_kib_per_array; the energy model prices each buffer at its stated size)."""
    (tmp_path / "chip.cfg").write_text(CFG)
    argv = ("train", GPT2, "--dp", "16", "--global-batch", "64", "--dtype", "bf16", "--format", "json", "--cluster")
    three = CHIP.replace("sram_kib_per_array = 8192", "sram_kib_per_array = [2731, 2731, 2730]")
    toml_out, _ = _run(capsys, *argv, _cluster(tmp_path, device=three))
    cfg_cluster = tmp_path / "cfg_cluster.toml"
    cfg_cluster.write_text(Path(_cluster(tmp_path)).read_text().replace("chip.toml", "chip.cfg"))
    cfg_out, _ = _run(capsys, *argv, str(cfg_cluster))
    toml_meta, cfg_meta = json.loads(toml_out)["meta"], json.loads(cfg_out)["meta"]
    for key in ("iteration_seconds", "energy_j", "mfu", "peak_memory_gib"):
        assert cfg_meta[key] == pytest.approx(toml_meta[key], rel=1e-9), key


@pytest.mark.parametrize(("section", "line"), [("architecture_presets", "Bandwith : 1200"),
                                               ("run_presets", "InterfaceBandwith: USER"),
                                               ("general", "runname = x")])
def test_a_mistyped_scalesim_key_is_refused_not_ignored(tmp_path, capsys, section, line):
    """``Bandwith`` (for ``Bandwidth``) in the .cfg was accepted and ignored: the cycle engine ran at its
    default 10 words/cycle and the Bandwidth-vs-hbm_gbps check never ran. A key no SCALE-Sim version
    reads is a typo: one line naming it, exit 2, from every reader (cost --config and train alike)."""
    text = CFG if section in CFG else CFG + f"\n[{section}]\n"
    path = tmp_path / "chip.cfg"
    path.write_text(text.replace(f"[{section}]\n", f"[{section}]\n{line}\n"))
    key = line.split(":")[0].split("=")[0].strip()
    layer = tmp_path / "gemm.csv"
    layer.write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
                     "Strides, Padding, Type,\nfc1, 1, 1, 1, 1, 2048, 8192, 1, 0, fc,\n")
    assert main(["cost", str(layer), "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"field '{key.lower()}'" in err.lower() and "unknown key" in err
    cluster = tmp_path / "cfg_cluster.toml"
    cluster.write_text(Path(_cluster(tmp_path)).read_text().replace("chip.toml", "chip.cfg"))
    assert main(["train", GPT2, "--dp", "16", "--global-batch", "64", "--cluster", str(cluster)]) == 2
    assert capsys.readouterr().err.count("unknown key") == 1


def test_scalesims_own_keys_still_load(tmp_path, capsys):
    """What SCALE-Sim's own configs carry loads as before: its request buffers and ``MemoryBanks``
    (configs/scale.cfg of SCALE-Sim 3), and the ``[network_presets]`` section its config writer emits
    (docs/scalesim.md: no effect), which was refused as an unknown section."""
    text = CFG.replace("Dataflow : os\n", "Dataflow : os\nMemoryBanks:   1\nReadRequestBuffer: 512\n"
                                          "WriteRequestBuffer: 512\n")
    text += '\n[network_presets]\nTopologyCsvLoc = "./topologies/conv_nets/test.csv"\n'
    path = tmp_path / "chip.cfg"
    path.write_text(text)
    layer = tmp_path / "gemm.csv"
    layer.write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
                     "Strides, Padding, Type,\nfc1, 1, 1, 1, 1, 2048, 8192, 1, 0, fc,\n")
    plain = tmp_path / "plain.cfg"
    plain.write_text(CFG)
    argv = ["cost", str(layer), "--batch", "2048", "--mode", "exact", "--dtype", "bf16", "--format", "csv", "--config"]
    with_keys, _ = _run(capsys, *argv, str(path))
    without, _ = _run(capsys, *argv, str(plain))
    assert with_keys.replace("chip.cfg", "plain.cfg") == without
    flags, _ = _run(capsys, *argv[:-1], "--array", "128x128", "--dataflow", "os", "--clock-ghz", "1.2")
    cycles = [line.split(",")[2] for line in (without, flags)]  # fc1's F_cycles: the array the flags name
    assert cycles[0] == cycles[1]


def test_an_in_server_figure_that_overrides_the_device_files_links_is_noted(tmp_path, capsys):
    """Both files must state the chip's link: the device's ``[links] intra_gbps`` (GB/s per direction)
    and the cluster's ``intra_server_gbps`` (Gbit/s, both directions). The cluster's figure prices the
    collectives; a cluster copied from the TPU slice (4800 = 300 GB/s per direction) silently halved
    this chip's 600 GB/s. Now train says which figure it used when the two differ, and nothing when
    they agree (9600 Gbit/s = 600 GB/s per direction)."""
    argv = ("train", GPT2, "--tp", "4", "--dp", "4", "--global-batch", "64", "--dtype", "bf16", "--cluster")
    _, agree = _run(capsys, *argv, _cluster(tmp_path))
    assert "intra_server_gbps" not in agree
    halved = _cluster(tmp_path).replace("cluster.toml", "halved.toml")
    Path(halved).write_text(Path(_cluster(tmp_path)).read_text().replace("= 9600", "= 4800"))
    out, err = _run(capsys, *argv, halved)
    assert "# intra_server: 300 GB/s per direction" in out
    assert err.count("note: [[servers]] intra_server_gbps = 4800 (300 GB/s per direction per GPU) prices the "
                     "in-server links, not chip.toml's [links] intra_gbps = 600 GB/s") == 1


def test_a_device_sweep_warns_when_points_do_not_fit(tmp_path, capsys):
    """``archsim train`` warns on stderr when the iteration does not fit the chip's memory; the sweep
    said nothing even when no point fitted (an empty front). Now it says how many do not fit and the
    largest need against the chip's memory; a sweep whose points all fit says nothing of it."""
    (tmp_path / "chip.toml").write_text(CHIP.replace("hbm_gib = 96", "hbm_gib = 2"))
    spec = tmp_path / "mychip.toml"
    spec.write_text(SPEC.replace("hbm_gbps = [1200, 2400]", "hbm_gbps = [2400]").replace("array_sides = [64, 128]",
                                                                                       "array_sides = [128]"))
    _, err = _run(capsys, "sweep", str(spec), "--out", str(tmp_path / "small"), "--quiet")
    results = (tmp_path / "small" / "results.csv").read_text()
    assert results.count(",False,False,") == 2  # both points: fits_memory and pareto_optimal False
    assert err.count("archsim sweep: warning: 2 of 2 points do not fit memory") == 1
    assert "GiB per chip, its MyChip has 2 GiB" in err
    (tmp_path / "chip.toml").write_text(CHIP)
    _, err = _run(capsys, "sweep", str(spec), "--out", str(tmp_path / "big"), "--quiet")
    assert "fit" not in err


def test_a_device_sweeps_report_says_its_front_is_empty_when_no_point_fits(tmp_path, capsys):
    """A device sweep none of whose points fits memory drew an empty front: its legend's hollow markers and the
    stderr warning said so, but the report's caption, the line a reader of the page reads, did not. It now says the
    front is empty and why (2 GiB of HBM: no GPT-2 layout of these fits); a sweep with a point that fits does not."""
    spec = tmp_path / "mychip.toml"
    spec.write_text(SPEC.replace("hbm_gbps = [1200, 2400]", "hbm_gbps = [2400]").replace("array_sides = [64, 128]",
                                                                                       "array_sides = [128]"))
    said = "No design fits memory, so the time/energy front is empty: 2 of 2 points do not fit memory ("
    for hbm_gib, empty in ((2, True), (96, False)):
        (tmp_path / "chip.toml").write_text(CHIP.replace("hbm_gib = 96", f"hbm_gib = {hbm_gib}"))
        out, report = tmp_path / f"out{hbm_gib}", tmp_path / f"r{hbm_gib}.html"
        _run(capsys, "sweep", str(spec), "--out", str(out), "--report", str(report), "--quiet")
        assert (out / "results.csv").read_text().count(",True,") == (0 if empty else 2)  # fits_memory, by hand
        page = report.read_text(encoding="utf-8")
        assert (said in page) is empty
        assert ("its MyChip has 2 GiB): their rows say fits_memory False" in page) is empty


def test_a_device_tomls_array_flags_cost_what_train_charges(tmp_path, capsys):
    """``cost --config chip.toml`` refused the TOML and named the flags of one of its arrays; they left
    out the SRAM, so ``--energy`` with them priced the default buffers, not the chip's 8 MiB per
    array. cost now reads the TOML with train's reader: its F energy of a GEMM is the energy model's for the
    same op in ``archsim train`` (the SRAM split in three, as train splits it)."""
    from archsim.devices.device_file import load_device
    from archsim.energy.model import op_energy_columns
    from archsim.energy.table import access_energies
    from archsim.lowering.ops import Gemm, TrainingOp
    from archsim.training.energy import device_array

    (tmp_path / "chip.toml").write_text(CHIP)
    layer = tmp_path / "gemm.csv"
    layer.write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
                     "Strides, Padding, Type,\nfc1, 1, 1, 1, 1, 2048, 8192, 1, 0, fc,\n")
    out, _ = _run(capsys, "cost", str(layer), "--config", str(tmp_path / "chip.toml"), "--batch", "2048",
                  "--mode", "exact", "--dtype", "bf16", "--energy", "--format", "json")
    row = json.loads(out)["rows"][0]
    array = device_array(load_device(tmp_path / "chip.toml"), "bf16")
    op = TrainingOp(layer="fc1", kind="F", gemms=(Gemm(m=2048, k=2048, n=8192, count=1),))
    charged = float(op_energy_columns([op], array, access_energies(array))["energy_pj"].sum())
    assert row["F_energy_pj"] == pytest.approx(charged, rel=1e-9)


@pytest.mark.parametrize("memory", ["", "sram_kib_per_array = 0\n"])
def test_an_array_device_without_its_sram_is_refused_naming_the_key(tmp_path, memory):
    """Without ``sram_kib_per_array`` (or with 0) the energy model priced each array's operand buffers as
    1 KiB SRAMs and said nothing (177.7 J where the chip's 640 KiB gave 197.8 J): the figure is the
    chip's, so a gemm = "arrays" device must state it."""
    from archsim.devices.device_file import load_device
    from archsim.errors import InputError

    path = tmp_path / "chip.toml"
    path.write_text(CHIP.replace("sram_kib_per_array = 8192\n", memory))
    with pytest.raises(InputError) as caught:
        load_device(path)
    assert caught.value.where.field == "memory.sram_kib_per_array"
    assert "KiB" in caught.value.message
