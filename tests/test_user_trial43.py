"""User trial 43: an accelerator designer's own chip (4 arrays of 64 × 64 at 1 GHz, 32 MiB of SRAM, 400 GB/s of HBM,
4 links of 50 GB/s) written as a device TOML and as a SCALE-Sim ``.cfg``. What a slip in the file says: one line
naming the file, the line and what to write. Each test failed on the code before its fix (its docstring says how)."""


import pytest
from device_files import device_error, device_toml, scalesim_chip_cfg, write_file

from archsim.cli import main
from archsim.devices.device_file import load_device
from archsim.errors import InputError

CHIP_TOML = device_toml(name="MyChip", gemm="arrays", arrays=4, rows=64, cols=64, dataflow="ws", clock_mhz=1000,
                        sram_kib=8192, hbm_gib=16, hbm_gbps=400, intra_gbps=200, links=4)

CHIP_CFG = scalesim_chip_cfg(4, 1.0, 400, "mychip", "MyChip", sram_kb=(2731, 2731, 2730), intra_gbps=200,
                             links=4)




def test_the_two_files_state_one_chip(tmp_path):
    """The trial's chip as TOML and as .cfg reads to the same arrays, memory and links (the baseline the slips
    below start from; the hand figures: 2 · 4 · 64 · 64 · 1 GHz = 32.77 TFLOP/s, 400 GB/s, 16 GiB)."""
    toml, cfg = (load_device(write_file(tmp_path, name, text)) for name, text in
                 (("chip.toml", CHIP_TOML), ("chip.cfg", CHIP_CFG)))
    for device in (toml, cfg):
        assert (device.arrays.count, device.arrays.rows, device.arrays.cols) == (4, 64, 64)
        assert device.arrays.peak_flops == pytest.approx(2 * 4 * 64 * 64 * 1e9)
        assert device.hbm_bytes_per_s == 400e9 and device.memory_bytes == 16 * 2**30


def test_an_unknown_section_names_its_line(tmp_path):
    """A misspelt section (``[link]`` for ``[links]``) is refused with its line, as a misspelt key is and as a cluster
    file's unknown table is (README: bad input names the file, line and field). Before the fix a device TOML's and a
    .cfg's unknown section named the file alone."""
    toml = write_file(tmp_path, "chip.toml", CHIP_TOML.replace("[links]", "[link]"))
    cfg = write_file(tmp_path, "chip.cfg", CHIP_CFG.replace("[links]", "[link]"))
    for path, line in ((toml, 17), (cfg, 26)):
        assert path.read_text().splitlines()[line - 1] == "[link]"
        error = device_error(path)
        assert error.where.line == line, str(error)
        assert "unknown section [link]" in str(error)


def test_an_unknown_section_names_its_line_on_the_command_line(tmp_path, capsys):
    """The same through ``archsim cost --config`` (the .cfg) and ``archsim train`` (a cluster naming the TOML)."""
    cfg = write_file(tmp_path, "chip.cfg", CHIP_CFG.replace("[memory]", "[Memory]"))
    assert main(["cost", "ffnn8", "--config", str(cfg), "--dtype", "fp16"]) == 2
    assert f"{cfg}, line 22" in capsys.readouterr().err
    write_file(tmp_path, "chip.toml", CHIP_TOML.replace("[memory]", "[memroy]"))
    cluster = write_file(tmp_path, "cl.toml", '[cluster]\nname = "c"\n[[servers]]\ncount = 1\ngpus = 1\n'
                     'device = "chip.toml"\n')
    assert main(["train", "gpt2", "--cluster", str(cluster), "--global-batch", "8"]) == 2
    err = capsys.readouterr().err
    assert "chip.toml, line 12" in err and "unknown section [memroy]" in err, err


@pytest.mark.parametrize(("name", "text", "old", "new", "says"), [
    ("chip.toml", CHIP_TOML, 'gemm = "arrays"', 'gemm = "arrays"\narrays = 4', "arrays is a [compute] key"),
    ("chip.toml", CHIP_TOML, "clock_mhz = 1000", "clock_mhz = 1000\nhbm_gbps = 400", "hbm_gbps is a [memory] key"),
    ("chip.toml", CHIP_TOML, "links = 4", "links = 4\nhbm_gib = 16", "hbm_gib is a [memory] key"),
    ("chip.cfg", CHIP_CFG, "arrays = 4", "arrays = 4\nrows = 64", ("a .cfg states rows as [architecture_presets] "
     "ArrayHeight")),
    ("chip.cfg", CHIP_CFG, "arrays = 4", "arrays = 4\nclock_mhz = 1000", ("a .cfg states clock_mhz as [archsim] "
     "ClockGHz, in GHz")),
    ("chip.cfg", CHIP_CFG, "hbm_gib = 16", "hbm_gib = 16\nintra_gbps = 200", "intra_gbps is a [links] key"),
    ("chip.cfg", CHIP_CFG, "links = 4", "links = 4\narrays = 4", "arrays is a [device] key"),
    ("chip.cfg", CHIP_CFG, "arrays = 4", "arrays = 4\ngemm_efficiency = 0.9", ("a .cfg has no [compute] for "
     "gemm_efficiency: write the chip as a device TOML")),
])
def test_a_key_in_the_wrong_section_says_where_it_goes(tmp_path, name, text, old, new, says):
    """A key written under another section of the file (a .cfg's ``[device] arrays`` copied into a TOML's
    ``[device]``, a TOML's ``rows`` into a .cfg's ``[device]``) is refused with the section, or the SCALE-Sim key, it
    belongs to. Before the fix the error listed the section's own keys alone, which do not name it."""
    lines = text.replace(old, new, 1).splitlines()
    error = device_error(write_file(tmp_path, name, "\n".join(lines)))
    assert "unknown key" in str(error) and says in str(error), str(error)
    assert error.where.line == lines.index(old) + 2  # the line after old: the misplaced key


def test_a_plain_typo_gets_no_home(tmp_path):
    """A key no section takes (``hbm_gbs``) keeps the plain refusal: no section is named for it (guards the hint above
    from naming a wrong one)."""
    error = device_error(write_file(tmp_path, "chip.toml", CHIP_TOML.replace("hbm_gbps", "hbm_gbs")))
    assert str(error).endswith("[memory] takes sram_kib_per_array, l2_mib, l2_bytes_per_clock, hbm_gib, hbm_gbps, "
                               "memory_efficiency, smem_bytes_per_clock, dram_traffic"), str(error)


@pytest.mark.parametrize(("name", "text", "table", "line"), [
    ("chip.toml", CHIP_TOML, 'table = "horowitz4"', 22),
    ("chip.cfg", CHIP_CFG, "table = horowitz4", 31),
])
@pytest.mark.parametrize("command", ["train", "energy"])
def test_a_misspelt_energy_table_names_the_device_file(tmp_path, capsys, name, text, table, line, command):
    """A device file's ``[energy] table`` naming no shipped table (``horowitz4``) is refused as that file's key.
    Before the fix ``train`` and ``energy`` both said ``field 'energy-table': unknown energy table 'horowitz4'``:
    no file, no line, and a flag the user never gave."""
    path = write_file(tmp_path, name, f"{text}\n[energy]\n{table}\n")
    assert path.read_text().splitlines()[line - 1] == table
    write_file(tmp_path, "cl.toml", f'[cluster]\nname = "c"\n[[servers]]\ncount = 1\ngpus = 1\ndevice = "{name}"\n')
    args = (["train", "gpt2", "--cluster", str(tmp_path / "cl.toml"), "--global-batch", "8"] if command == "train"
            else ["energy", "ffnn8", "--config", str(path), "--dtype", "fp16"])
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown energy table 'horowitz4'" in err, err
    assert "energy-table" not in err and f"{path}, line {line}, field 'energy.table'" in err, err


@pytest.mark.parametrize(("figure", "says"), [("mac_pj = abc", "expected a non-negative number, got 'abc'"),
                                               ("mac_pk = 1", "unknown energy figure")])
def test_a_cfg_energy_figure_names_its_line(tmp_path, figure, says):
    """A .cfg device file's bad ``[energy]`` figure is named as ``energy.KEY`` at its line, as the same file's
    ``[memory]`` keys and a device TOML's ``[energy]`` keys are. Before the fix it said ``FILE, field 'mac_pj'``: no
    line, and no section."""
    from archsim.energy.file_energy import read_cfg_energy

    path = write_file(tmp_path, "chip.cfg", f"{CHIP_CFG}\n[energy]\n{figure}\n")
    with pytest.raises(InputError) as caught:
        read_cfg_energy(path)
    key = figure.split(" ")[0]
    assert caught.value.where.line == 31 and caught.value.where.field == f"energy.{key}", str(caught.value)
    assert says in str(caught.value)


def test_cost_refuses_a_cfg_gemm_train_refuses(tmp_path, capsys):
    """``[device] gemm = array`` (for ``arrays``) in a .cfg is the same one-line error, at its line, from ``cost
    --config`` as from ``train`` (docs/formats.md: every reader checks a bad value alike). Before the fix ``cost``
    costed the file without a word and ``train``'s error named no line."""
    path = write_file(tmp_path, "chip.cfg", CHIP_CFG.replace("arrays = 4", "arrays = 4\ngemm = array"))
    write_file(tmp_path, "cl.toml", '[cluster]\nname = "c"\n[[servers]]\ncount = 1\ngpus = 1\ndevice = "chip.cfg"\n')
    errors = []
    for args in (["cost", "ffnn8", "--config", str(path), "--dtype", "fp16"],
                 ["train", "gpt2", "--cluster", str(tmp_path / "cl.toml"), "--global-batch", "8"]):
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        errors.append(err.split(": error: ", 1)[1])
    assert errors[0] == errors[1]
    assert errors[0].startswith(f"{path}, line 21, field 'device.gemm': unknown GEMM model 'array'"), errors[0]


@pytest.mark.parametrize(("extra", "field"), [("gemm = tiles\nstatic_watts = 5", "device.static_watts"),
                                              ("gemm = tiles\nsplit_k = true", "device.split_k")])
def test_a_cfg_device_combination_error_names_its_line(tmp_path, extra, field):
    """A .cfg's ``[device]`` keys that do not go together (static power or split-K on a tile-timed chip) are refused at
    the refused key's line, as in a device TOML. Before the fix the .cfg's error named the file and key alone."""
    lines = CHIP_CFG.replace("arrays = 4", f"arrays = 4\n{extra}").splitlines()
    error = device_error(write_file(tmp_path, "chip.cfg", "\n".join(lines)))
    assert error.where.field == field and error.where.line == 22, str(error)
    assert lines[21].startswith(field.split(".")[1])


@pytest.mark.parametrize(("old", "new", "write"), [("name = MyChip", 'name = "MyChip"', "name = MyChip"),
                                                    ("hbm_gbps = 400", "hbm_gbps = '400'", "hbm_gbps = 400"),
                                                    ("arrays = 4", 'arrays = 4\ngemm = "arrays"', "gemm = arrays")])
def test_a_cfg_value_in_quotes_is_refused(tmp_path, old, new, write):
    """A TOML habit in a .cfg device file (``name = "MyChip"``) is refused at its line, saying to drop the quotes: a .cfg
    reads text as written. Before the fix the chip was named ``"MyChip"``, quotes and all (``# gpu: "MyChip"``, so
    the .cfg and the TOML of one chip had two names), and a quoted number or gemm was refused without the cause."""
    lines = CHIP_CFG.replace(old, new).splitlines()
    error = device_error(write_file(tmp_path, "chip.cfg", "\n".join(lines)))
    assert str(error).endswith(f"a .cfg's values take no quotes (it reads the text as written): write {write}"), \
        str(error)
    assert lines[error.where.line - 1] == new.splitlines()[-1]


@pytest.mark.parametrize(("figure", "says"), [
    ("0.2", ("[links] intra_gbps = 0.2 GB/s is below any chip's in-server link (≥ 1 GB/s per direction): if it is in "
     "TB/s, write intra_gbps = 200")),
    ("200000", ("[links] intra_gbps = 200000 GB/s is above any chip's in-server link (≤ 10000 GB/s per direction): if "
     "it is in MB/s, write intra_gbps = 200")),
])
def test_an_in_server_link_1000_times_off_is_warned(tmp_path, capsys, figure, says):
    """The chip's 4 links of 50 GB/s, 200 GB/s per direction, written in TB/s (0.2) or MB/s (200,000) is warned on
    stderr, as a 1000× HBM figure is: on 4 chips 0.2 GB/s makes GPT-2's data-parallel iteration (global batch 16) 10×
    slower (2.076 s against 0.207 s). Before the fix train said nothing."""
    from archsim.devices.device_file import implausible_figures

    write_file(tmp_path, "chip.toml", CHIP_TOML.replace("intra_gbps = 200", f"intra_gbps = {figure}"))
    cluster = write_file(tmp_path, "cl.toml", '[cluster]\nname = "c"\n[[servers]]\ncount = 1\ngpus = 4\n'
                     'device = "chip.toml"\n')
    assert main(["train", "gpt2", "--cluster", str(cluster), "--global-batch", "8", "--dp", "4"]) == 0
    assert f"archsim train: warning: MyChip: {says}\n" in capsys.readouterr().err
    assert implausible_figures(load_device(write_file(tmp_path, "ok.toml", CHIP_TOML))) == ()


@pytest.mark.parametrize("key", ["lane_rows", "lane_cols"])
def test_lane_shape_without_lanes_names_its_line(tmp_path, key):
    """``lane_rows`` (or ``lane_cols``) without ``lanes`` is refused at the line of the key written. Before the fix the
    error named ``compute.lanes``, the key the file lacks, so it had no line."""
    lines = CHIP_TOML.replace('dataflow = "ws"', f'dataflow = "ws"\n{key} = 4').splitlines()
    error = device_error(write_file(tmp_path, "chip.toml", "\n".join(lines)))
    assert error.where.field == f"compute.{key}" and lines[error.where.line - 1] == f"{key} = 4", str(error)
    assert "need lanes" in str(error)


@pytest.mark.parametrize("written", ["1_000", "١٢٣", "４００"])
def test_a_real_number_takes_ascii_digits_as_an_integer_does(tmp_path, written):
    """A .cfg device file's ``hbm_gbps = 1_000`` (or Arabic-Indic or full-width digits) is refused, as ``arrays = 1_000``
    is (``parse_int``: ASCII digits only): one reading of a written number. Before the fix Python's ``float()`` read
    them, so ``hbm_gbps = ١٢٣`` trained at 123 GB/s where ``arrays = ٤`` was refused."""
    from archsim.value_parsers import parse_float

    for key, value in (("hbm_gbps = 400", f"hbm_gbps = {written}"), ("arrays = 4", f"arrays = {written}")):
        error = device_error(write_file(tmp_path, "chip.cfg", CHIP_CFG.replace(key, value)))
        assert f"got '{written}'" in str(error) and error.where.line is not None, str(error)
    with pytest.raises(ValueError, match="expected a number"):
        parse_float(written)
    assert [parse_float(text) for text in ("1", "1.", ".5", "4e2", "+2.5E-3", " 400 ")] == [1, 1, 0.5, 400, 0.0025, 400]


def test_a_device_toml_named_cfg_says_how_a_cfg_states_the_array(tmp_path, capsys):
    """The trial's TOML saved as ``chip.cfg`` is refused at its ``[compute]`` line with how a .cfg states the array
    (and that a TOML is named .toml). Before the fix the error listed SCALE-Sim's sections alone."""
    path = write_file(tmp_path, "chip.cfg", CHIP_TOML)
    assert main(["cost", "ffnn8", "--config", str(path), "--dtype", "fp16"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}, line 5: unknown section [compute]" in err, err
    assert "a .cfg states its array as [architecture_presets] ArrayHeight, ArrayWidth and Dataflow, [archsim] " \
           "ClockGHz and [device] arrays (or name a TOML file .toml)" in err, err


@pytest.mark.parametrize("command", ["train", "energy"])
def test_a_cfg_saved_as_toml_says_it_is_a_cfg(tmp_path, capsys, command):
    """The trial's .cfg saved as ``chip.toml`` is refused at its first non-TOML line saying it is a SCALE-Sim .cfg to
    name .cfg. Before the fix the error was TOML's alone (``not valid TOML (Invalid value, column 12)``)."""
    path = write_file(tmp_path, "chip.toml", CHIP_CFG)
    write_file(tmp_path, "cl.toml", '[cluster]\nname = "c"\n[[servers]]\ncount = 1\ngpus = 1\ndevice = "chip.toml"\n')
    args = (["train", "gpt2", "--cluster", str(tmp_path / "cl.toml"), "--global-batch", "8"] if command == "train"
            else ["energy", "ffnn8", "--config", str(path), "--dtype", "fp16"])
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}, line 2: not valid TOML (" in err, err
    assert err.rstrip().endswith("it has SCALE-Sim's [architecture_presets]: a .cfg, name it .cfg"), err


def test_a_cfg_with_bandwidth_but_no_hbm_gbps_is_told_the_figure(tmp_path):
    """A .cfg that states SCALE-Sim's ``Bandwidth = 200`` and no ``[memory] hbm_gbps`` is refused (train never reads
    Bandwidth) with the figure to write: 200 words/cycle × 2 B × 1 GHz = 400 GB/s (docs/formats.md, "Memory
    bandwidth, stated once"). Before the fix it said ``missing key in [memory]`` alone."""
    text = CHIP_CFG.replace("Dataflow : ws", "Dataflow : ws\nBandwidth : 200").replace("hbm_gbps = 400\n", "")
    error = device_error(write_file(tmp_path, "chip.cfg", text))
    assert error.where.field == "memory.hbm_gbps" and error.missing
    assert str(error).endswith("missing key in [memory] (hbm_gbps = GB/s of HBM bandwidth); [architecture_presets] Bandwidth = 200 words/cycle is 400 "
                               "GB/s at 2-byte words and 1 GHz, which only cost --engine cycle reads: write "
                               "hbm_gbps = 400"), str(error)
    plain = device_error(write_file(tmp_path, "plain.cfg", CHIP_CFG.replace("hbm_gbps = 400\n", "")))
    assert str(plain).endswith("missing key in [memory] (hbm_gbps = GB/s of HBM bandwidth)")  # no Bandwidth stated: nothing to convert


def test_a_cfg_energy_value_in_quotes_is_refused(tmp_path):
    """``[energy] table = "horowitz45"`` in a .cfg (a device TOML's spelling) is refused at its line saying to drop the
    quotes, as the .cfg's device sections' values are. Before the fix it was ``unknown energy table
    '"horowitz45"'``, the quotes read as part of the name."""
    from archsim.energy.file_energy import read_cfg_energy

    path = write_file(tmp_path, "chip.cfg", f'{CHIP_CFG}\n[energy]\ntable = "horowitz45"\n')
    with pytest.raises(InputError) as caught:
        read_cfg_energy(path)
    assert caught.value.where.line == 31 and caught.value.where.field == "energy.table", str(caught.value)
    assert str(caught.value).endswith("a .cfg's values take no quotes (it reads the text as written): write "
                                      "table = horowitz45")
