"""A device file's keys its kind ignores: every device file takes ``[device] board_watts`` and ``[memory]
l2_bytes_per_clock``, but only a ``gemm = "tiles"`` device reads them (board power × time; the L2's cap on small
tiles), so on a ``gemm = "arrays"`` device (its energy the energy model's, its GEMMs SCALE-Sim's arrays) train,
search and plan say so in one note naming the key and the file (docs/formats.md, "Device files"), and so do
cost, energy and device sweeps, through the one note. Before, an array device file that set them got no word."""

import warnings
from pathlib import Path

import archsim
from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
TPU = (ROOT / "configs" / "devices" / "tpu_v4_like.toml").read_text()
A100_TILES = (ROOT / "configs" / "devices" / "a100_80gb_as_arrays.toml").read_text()
GPT = ROOT / "configs" / "transformers" / "gpt_1024h_24l.json"
UNREAD = 'is a gemm = "arrays" device'


def _cluster(tmp_path: Path, device_text: str, servers: int = 2) -> Path:
    (tmp_path / "chip.toml").write_text(device_text)
    path = tmp_path / "c.toml"
    path.write_text('[cluster]\nname = "x"\ninter_server_gbps = 200\n' + "".join(
        '[[servers]]\ncount = 1\ngpus = 2\nintra_server_gbps = 4800\ndevice = "chip.toml"\n' for _ in range(servers)))
    return path


def _train_err(capsys, cluster: Path) -> str:
    assert main(["train", str(GPT), "--cluster", str(cluster), "--global-batch", "4", "--dp", "2"]) == 0
    return capsys.readouterr().err


def test_train_notes_board_watts_and_l2_rate_on_an_array_device_once(tmp_path, capsys):
    """Two servers naming one TPU-like file that states both keys: one note, naming the file and both keys."""
    chip = TPU.replace('gemm = "arrays"', 'gemm = "arrays"\nboard_watts = 192').replace(
        "hbm_gbps = 1200", "hbm_gbps = 1200\nl2_bytes_per_clock = 4096")
    err = _train_err(capsys, _cluster(tmp_path, chip))
    lines = [line for line in err.splitlines() if UNREAD in line]
    assert len(lines) == 1, err
    assert lines[0].startswith("archsim train: note: chip.toml is a gemm = \"arrays\" device")
    assert "[device] board_watts" in lines[0] and "[memory] l2_bytes_per_clock" in lines[0]


def test_plan_notes_it_once_too(tmp_path, capsys):
    """plan reads the servers' device files twice (their links, then the device pricing the layers): the note is
    said once, after the run."""
    cluster = _cluster(tmp_path, TPU.replace('gemm = "arrays"', 'gemm = "arrays"\nboard_watts = 192'), servers=1)
    assert main(["plan", "ffnn8", "--cluster", str(cluster), "--microbatches", "2", "--baselines", "none"]) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if UNREAD in line]
    assert len(lines) == 1 and "[device] board_watts" in lines[0] and "l2_bytes_per_clock" not in lines[0], err


def test_the_shipped_tpu_file_and_a_tiles_device_stay_silent(tmp_path, capsys):
    """The shipped TPU-like file states neither key (its 192 W is a comment: nothing reads it); the A100 written
    as a tiles device reads both (board_watts = 400, l2_bytes_per_clock = 5120): no note for either."""
    assert UNREAD not in _train_err(capsys, _cluster(tmp_path, TPU))
    assert "board_watts" in A100_TILES and "l2_bytes_per_clock" in A100_TILES
    assert UNREAD not in _train_err(capsys, _cluster(tmp_path, A100_TILES))


SCALESIM_DEVICE = (ROOT / "configs" / "devices" / "scalesim_32x32_device.cfg").read_text()
SPEC = (ROOT / "configs" / "sweeps" / "device_tpu_v4_like_gpt.toml").read_text()


def _unread_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if UNREAD in line]


def test_cost_and_energy_note_it_once_on_a_device_file(tmp_path, capsys):
    """``archsim cost`` and ``energy --config`` on the shipped .cfg device with ``board_watts = 50`` added, and
    ``energy`` on the TPU-like TOML with ``board_watts = 192``: each says the one note (train's), naming the file and
    the key, once. Before, nothing: only train, search and plan read the note."""
    cfg = tmp_path / "chip.cfg"
    cfg.write_text(SCALESIM_DEVICE.replace("arrays = 16", "arrays = 16\nboard_watts = 50"))
    toml = tmp_path / "chip.toml"
    toml.write_text(TPU.replace('gemm = "arrays"', 'gemm = "arrays"\nboard_watts = 192'))
    for command, config in (("cost", cfg), ("energy", cfg), ("energy", toml)):
        assert main([command, "ffnn8", "--config", str(config)]) == 0
        lines = _unread_lines(capsys.readouterr().err)
        assert len(lines) == 1, (command, config, lines)
        assert lines[0].startswith(f"archsim {command}: note: {config} is a gemm = \"arrays\" device")
        assert "[device] board_watts" in lines[0] and "l2_bytes_per_clock" not in lines[0]


def test_the_shipped_cfg_device_stays_silent(capsys):
    """configs/devices/scalesim_32x32_device.cfg states neither key: cost says no such note."""
    assert "board_watts" not in SCALESIM_DEVICE and "l2_bytes_per_clock" not in SCALESIM_DEVICE
    assert main(["cost", "ffnn8", "--config", str(ROOT / "configs" / "devices" / "scalesim_32x32_device.cfg")]) == 0
    assert _unread_lines(capsys.readouterr().err) == []


def test_a_device_sweep_warns_it_once(tmp_path, capsys):
    """A one-point sweep of the TPU-like file with ``l2_bytes_per_clock = 4096`` added: one warning line naming the
    key (a device sweep's lines print as warnings). Before, none."""
    (tmp_path / "chip.toml").write_text(TPU.replace("hbm_gbps = 1200", "hbm_gbps = 1200\nl2_bytes_per_clock = 4096"))
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.replace('device = "tpu_v4_like"', 'device = "chip.toml"').replace(
        "array_sides = [64, 128, 256]", "array_sides = [128]").replace("hbm_gbps = [600, 1200, 2400]", "hbm_gbps = [1200]")
        .replace("chips = [4, 8, 16]", "chips = [4]"))
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    lines = _unread_lines(capsys.readouterr().err)
    assert len(lines) == 1 and lines[0].startswith("archsim sweep: warning: "), lines
    assert "[memory] l2_bytes_per_clock" in lines[0] and "board_watts" not in lines[0]


def test_the_python_api_warns_it_once(tmp_path):
    """``archsim.cost`` on the .cfg device with ``board_watts = 50`` and ``archsim.iteration_energy`` on the TOML with
    ``board_watts = 192`` warn the command's note as one UserWarning each. Before, none."""
    cfg = tmp_path / "chip.cfg"
    cfg.write_text(SCALESIM_DEVICE.replace("arrays = 16", "arrays = 16\nboard_watts = 50"))
    toml = tmp_path / "chip.toml"
    toml.write_text(TPU.replace('gemm = "arrays"', 'gemm = "arrays"\nboard_watts = 192'))
    for run, config in ((archsim.cost, cfg), (archsim.iteration_energy, toml)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            run("ffnn8", config=config)
        said = [str(w.message) for w in caught if UNREAD in str(w.message)]
        expected = (f'{config} is a gemm = "arrays" device: this key is not read: [device] board_watts (its '
                    "energy is the energy model's, not board power × time)")
        assert said == [expected], said
