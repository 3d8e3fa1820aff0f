"""User trial 34 (an accelerator designer's afternoon): each test failed on the code before its fix."""

from __future__ import annotations

import warnings

import pytest
from device_files import device_toml

from archsim.cli import main

CFG = """[general]
run_name = huge

[architecture_presets]
ArrayHeight: {rows}
ArrayWidth: {cols}
IfmapSramSzkB: 64
FilterSramSzkB: 64
OfmapSramSzkB: 64
IfmapOffset: 0
FilterOffset: 10000000
OfmapOffset: 20000000
Dataflow: ws
Bandwidth: 10
"""


def warnings_of(capsys, *argv: str) -> list[str]:
    """Run the CLI (it must succeed) and return its stderr lines."""
    assert main(list(argv)) == 0
    return capsys.readouterr().err.splitlines()


@pytest.mark.parametrize("command", [["cost", "layerpipe_sample"], ["energy", "layerpipe_sample"],
                                     ["pipeline", "layerpipe_sample", "--processors", "2"],
                                     ["gemm", "--m", "8", "--k", "8", "--n", "8"],
                                     ["schedule", "ffnn8", "--policy", "1f1b", "--processors", "2"]])
def test_a_huge_array_is_warned_not_costed_silently(capsys, command):
    """Before the fix `--array 100000x100000` (10^10 PEs: 7.1 m² of int8 PEs at the energy table's 419 + (2 · 8 +
    32) · 5.98 = 706.0 µm² each) printed its table with nothing on stderr."""
    lines = warnings_of(capsys, *command, "--array", "100000x100000")
    prefix = f"archsim {command[0]}: warning: --array 100000x100000: a 100000 × 100000 array is 10,000,000,000 PEs"
    assert len(lines) == 1 and lines[0].startswith(prefix), lines


def test_the_plausible_limit_is_1024_by_1024(capsys):
    """16 × the TPU v1's 256 × 256 (65,536 PEs) is still quiet; one row more is warned."""
    assert warnings_of(capsys, "gemm", "--m", "8", "--k", "8", "--n", "8", "--array", "1024x1024") == []
    assert warnings_of(capsys, "gemm", "--m", "8", "--k", "8", "--n", "8", "--array", "1025x1024")[0].endswith(
        "1,049,600 PEs, above any chip's one array (≤ 1,048,576: 1024 × 1024, 16 times the TPU v1's 256 × 256); "
        "costed as given: check the shape")


def test_a_cfg_of_a_huge_array_names_its_keys(capsys, tmp_path):
    path = tmp_path / "huge.cfg"
    path.write_text(CFG.format(rows=4096, cols=4096), encoding="utf-8")
    lines = warnings_of(capsys, "cost", "layerpipe_sample", "--config", str(path))
    assert lines == [(f"archsim cost: warning: {path}: ArrayHeight and ArrayWidth: a 4096 × 4096 array is "
                     "16,777,216 PEs, above any chip's one array (≤ 1,048,576: 1024 × 1024, 16 times the TPU v1's "
                     "256 × 256); costed as given: check the shape")]


def test_the_library_warns_the_same_line():
    import archsim

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        archsim.cost("layerpipe_sample", array="100000x100000", batch=1)
    texts = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert texts and texts[0].startswith("array='100000x100000': a 100000 × 100000 array is 10,000,000,000 PEs")


def test_import_of_a_transformer_states_the_models_parameter_count_too(capsys, tmp_path):
    """Before the fix `archsim import configs/transformers/gpt2.json -o F` said "123,653,376 parameters" where
    `archsim train` on the same config says 124,439,808, GPT-2 small's published count (Hugging Face's
    `GPT2LMHeadModel.num_parameters()`): the CSV has no row for the 1024 × 768 position table (786,432)."""
    out = tmp_path / "gpt2.csv"
    lines = warnings_of(capsys, "import", "configs/transformers/gpt2.json", "-o", str(out))
    written = [line for line in lines if "wrote" in line]
    assert len(written) == 1 and "123,653,376 parameters in its layers" in written[0], lines
    assert "the model has 124,439,808" in written[0]
    assert 124_439_808 - 123_653_376 == 1024 * 768


def test_import_of_a_topology_keeps_its_one_count(capsys, tmp_path):
    out = tmp_path / "tiny.csv"
    lines = warnings_of(capsys, "import", "docs/examples/tiny_resnet.csv", "-o", str(out))
    written = next(line for line in lines if "wrote" in line)
    assert written.endswith(" parameters)") and "in its layers" not in written, written


def device_lines(tmp_path, arrays: int, rows: int, cols: int, sram: int = 1024) -> tuple[str, ...]:
    from archsim.devices.device_file import implausible_figures, load_device

    path = tmp_path / "mine.toml"
    path.write_text(device_toml(name="Mine", arrays=arrays, rows=rows, cols=cols, clock_mhz=1000, sram_kib=sram,
                                hbm_gib=16, hbm_gbps=800, intra_gbps=100), encoding="utf-8")
    return implausible_figures(load_device(path))


def test_a_device_of_implausibly_many_pes_is_warned(tmp_path):
    """Before the fix a device file of 10^8 arrays of 64 × 64 (4.1 · 10^11 PEs: 2 · 4.1e11 · 1 GHz = 819,200
    PFLOP/s per chip) trained GPT-3 1.3B in 0.39 s without a word on stderr."""
    assert device_lines(tmp_path, 16, 64, 64) == ()
    assert device_lines(tmp_path, 64, 1024, 1024, sram=6144) == ()  # 2^26 PEs: the limit, quiet
    (line,) = device_lines(tmp_path, 100_000_000, 64, 64)
    assert line.startswith("Mine: [compute] arrays × rows × cols = 100000000 × 64 × 64 is 409,600,000,000 PEs")


def test_a_device_of_one_huge_array_is_warned_as_the_array_commands_warn(tmp_path):
    lines = device_lines(tmp_path, 1, 2048, 1024, sram=12288)
    assert lines == (("Mine: [compute] rows × cols = 2048 × 1024 is 2,097,152 PEs in one array, above any chip's "
                      "one array (≤ 1,048,576: 1024 × 1024, 16 times the TPU v1's 256 × 256): check [compute] rows "
                      "and cols (a .cfg's ArrayHeight and ArrayWidth)"),)


SWEEP = """[sweep]
name = "huge"
networks = ["layerpipe_sample"]
arrays = ["32x32", "5000x5000"]
batches = [8]
processors = [2]
methods = ["layerpipe"]
"""


def test_a_sweep_of_a_huge_array_warns_as_cost_does(capsys, tmp_path, monkeypatch):
    """Before the fix a spec's `arrays = ["5000x5000"]` (25,000,000 PEs) was swept without a word, where
    `archsim cost --array 5000x5000` warns (the fix above)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "huge.toml").write_text(SWEEP, encoding="utf-8")
    lines = warnings_of(capsys, "sweep", "huge.toml", "--quiet")
    warned = [line for line in lines if "warning" in line]
    assert warned == [("archsim sweep: warning: huge.toml: arrays '5000x5000': a 5000 × 5000 array is 25,000,000 "
                       "PEs, above any chip's one array (≤ 1,048,576: 1024 × 1024, 16 times the TPU v1's 256 × 256); "
                       "costed as given: check the shape")], lines


def test_run_sweep_warns_the_same_line(tmp_path):
    import archsim

    (tmp_path / "huge.toml").write_text(SWEEP, encoding="utf-8")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        archsim.run_sweep(str(tmp_path / "huge.toml"), out=tmp_path / "results")
    assert any("a 5000 × 5000 array is 25,000,000 PEs" in str(w.message) for w in caught)


def test_a_sweeps_sram_kb_in_bytes_warns_as_sram_kb_does(capsys, tmp_path, monkeypatch):
    """Before the fix a design sweep's `sram_kb = [2000000]` (three buffers of 2,000,000 KiB: 5.7 GiB beside one
    array, 1 MiB typed in bytes) was swept without a word, where `archsim cost --sram-kb 2000000` warns."""
    monkeypatch.chdir(tmp_path)
    spec = SWEEP.replace('"5000x5000"', '"64x64"') + "sram_kb = [64, 2000000]\n"
    (tmp_path / "bytes.toml").write_text(spec, encoding="utf-8")
    warned = [line for line in warnings_of(capsys, "sweep", "bytes.toml", "--quiet") if "warning" in line]
    assert warned == [("archsim sweep: warning: bytes.toml: sram_kb = 2000000: 6000000 KiB of SRAM beside the array "
                       "(ifmap, filter and ofmap together) is above 256 MiB per array: if it is in bytes, write "
                       "sram_kb = 1953")], warned


def test_row_wise_sparsity_says_the_topologys_ratios_do_not_set_the_kept_weights(capsys, tmp_path):
    """Before the fix, under OptimizedMapping: true, a layer written 1:4 printed `sparsity 1:4` beside 144 packed
    filter rows of its 288 (half, not a quarter: B·⌈K/2B⌉ = 8·⌈288/16⌉ = 144, the rows SCALE-Sim packs each filter's
    random per-block ratio into) and a layer written 3:4 printed the same cycles, without a word."""
    import json

    topology = tmp_path / "sp.csv"
    topology.write_text("Layer name,IFMAP Height,IFMAP Width,Filter Height,Filter Width,Channels,Num Filter,Strides,"
                        "Sparsity\nc2,14,14,3,3,32,32,1,1:4\n", encoding="utf-8")
    assert main(["sparse", str(topology), "--config", "configs/arrays/scalesim_sparsity_128x128_ws.cfg",
                 "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["rows"][0]["filter_rows"] == 144
    assert document["meta"]["ratios"] == (
        "row-wise mapping (OptimizedMapping): each filter keeps n of every block of 8 weights, n drawn from the seed "
        "in 1…4, as SCALE-Sim does; the topology's Sparsity ratios (1:4) do not set the kept weights (only their M "
        "sizes ELLPACK's metadata): set OptimizedMapping false to cost them")
