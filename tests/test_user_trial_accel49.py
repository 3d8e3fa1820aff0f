"""User trial 49, an accelerator designer (issue #37 item 6): own device files (a TOML and a SCALE-Sim
``.cfg`` of one chip: 4 output-stationary 64 × 64 arrays at 800 MHz, 768 KiB of SRAM per array, 8 GiB of
HBM at 300 GB/s, 50 GB/s links) through cost, energy, pipeline, train, search and a device sweep, the
figures checked against hand counts and SCALE-Sim 3.0.0."""

import json
from dataclasses import replace
from pathlib import Path

import pytest
from device_files import device_toml, scalesim_chip_cfg
from hypothesis import given
from hypothesis import strategies as st

from archsim.cli import main
from archsim.devices.device_file import load_device
from archsim.devices.kernel_constants import one_fraction

CHIP_TOML = device_toml(name="myacc", gemm="arrays", arrays=4, rows=64, cols=64, dataflow="os", clock_mhz=800,
                        sram_kib=768, hbm_gib=8, hbm_gbps=300, intra_gbps=50)


def chip_cfg_text(gib: float = 8) -> str:
    """The chip as a .cfg: its 768 KiB of SRAM as SCALE-Sim's three 256 KiB buffers, ``gib`` GiB of HBM."""
    return scalesim_chip_cfg(4, 0.8, 300, "myacc_cfg", "myacc", sram_kb=(256, 256, 256), dataflow="os",
                             hbm_gib=gib, intra_gbps=50)


# every per-event figure 0 but a MAC's 1 pJ: the energy model's joules are then the MACs, which can be counted
MAC_ONLY = "\n[energy]\nmac_pj = 1\n" + "".join(
    f"{key} = 0\n" for key in ("register_pj", "psum_register_pj", "vector_pj", "ifmap_read_pj", "filter_read_pj",
                               "ofmap_read_pj", "ifmap_write_pj", "filter_write_pj", "ofmap_write_pj", "dram_read_pj", "dram_write_pj",
                               "lane_pj", "exp_pj", "int_pj", "int_mult_pj"))

TINY = """[transformer]
family = "gpt"
layers = 1
hidden = 64
heads = 2
vocab = 100
seq = 16
"""


def _chip(tmp_path: Path, energy: str = "", gpus: int = 4, suffix: str = "toml", gib: float = 8) -> Path:
    """A cluster file of one server of ``gpus`` of the trial's chip, written as a TOML or a ``.cfg``."""
    text = CHIP_TOML + energy if suffix == "toml" else chip_cfg_text(gib)
    (tmp_path / f"myacc.{suffix}").write_text(text)
    cluster = tmp_path / f"cluster_{suffix}.toml"
    cluster.write_text(f'[cluster]\nname = "node"\n\n[[servers]]\ncount = 1\ngpus = {gpus}\ndevice = "myacc.{suffix}"\n')
    return cluster


def _train_meta(capsys, model: str | Path, cluster: Path, *flags: str) -> dict:
    assert main(["train", str(model), "--cluster", str(cluster), "--format", "json", *flags]) == 0
    return json.loads(capsys.readouterr().out)["meta"]


def test_one_gemm_on_the_array_is_scalesims_cycles_by_hand(capsys):
    """out[10×6] = A[10×5]·B[5×6] on a 4 × 4 array. SCALE-Sim's closed form (docs/concepts.md), by hand:
    os: Sr = M = 10, Sc = N = 6, T = K = 5: ⌈10/4⌉·⌈6/4⌉ = 6 folds of R + C + T − 2 = 11 cycles, 66 − 1 = 65;
    ws: Sr = K = 5, Sc = N = 6, T = M = 10: ⌈5/4⌉·⌈6/4⌉ = 4 folds of 2R + C + T − 2 = 20 cycles, 80 − 1 = 79.
    SCALE-Sim 3.0.0 run on the same GEMM gives the same (tests/scalesim_reference.py)."""
    from tests.scalesim_reference import scalesim_gemm

    for dataflow, folds, cycles in (("os", 6, 65), ("ws", 4, 79)):
        assert main(["gemm", "--m", "10", "--k", "5", "--n", "6", "--array", "4x4", "--dataflow", dataflow,
                     "--format", "json"]) == 0
        row = json.loads(capsys.readouterr().out)["rows"][0]
        assert (row["cycles"], row["folds"]) == (cycles, folds)
        reference = scalesim_gemm(10, 5, 6, 4, 4, dataflow)
        assert (reference.compute_cycles, reference.folds) == (cycles, folds)


def test_one_gemm_on_the_chip_deals_its_folds_in_waves_over_the_four_arrays(tmp_path):
    """The chip's GEMM out[1×1024] = A[1×1024]·B[1024×1024]: os on 64 × 64, ⌈1/64⌉·⌈1024/64⌉ = 16 folds of
    64 + 64 + 1024 − 2 = 1150 cycles (SCALE-Sim: 16 · 1150 − 1 = 18,399 on one array, as `archsim cost ffnn8
    --config myacc.cfg` prints for fc1's F); on 4 arrays ⌈16/4⌉ = 4 waves, 4600 cycles, one less in SCALE-Sim's
    count: 4599 cycles at 800 MHz = 5.74875 µs. Its HBM traffic, (1024 + 1024² + 1024) · 2 bytes at 300 GB/s,
    is 7.0042 µs: more, so the GEMM takes the traffic's time (docs/training.md: at least its three tensors once)."""
    from archsim.devices.kernel_ops import array_gemm_seconds

    (tmp_path / "myacc.toml").write_text(CHIP_TOML)
    device = load_device(tmp_path / "myacc.toml")
    none = one_fraction(gemm=1.0, memory=1.0, launch_s=0.0)
    fast = replace(device, hbm_bytes_per_s=1e15)  # no roofline: the arrays' time alone
    assert float(array_gemm_seconds(1, 1024, 1024, 1, fast, none)) == pytest.approx(4599 / 800e6, rel=1e-12)
    one = replace(fast, arrays=replace(fast.arrays, count=1))
    assert float(array_gemm_seconds(1, 1024, 1024, 1, one, none)) == pytest.approx(18399 / 800e6, rel=1e-12)
    traffic = (1024 + 1024 * 1024 + 1024) * 2 / 300e9
    assert float(array_gemm_seconds(1, 1024, 1024, 1, device, none)) == pytest.approx(traffic, rel=1e-12)


@pytest.mark.parametrize(("recompute", "attention", "picojoules"), [
    # one layer's forward MACs, 16 tokens: 12·h² = 49,152 a token (QKV 3h², projection h², MLP 8h²) → 786,432;
    # attention QKᵀ and AV, s·s·h each: 2 · 16 · 16 · 64 = 32,768; the head, the vocabulary padded to 128 as
    # Megatron pads it: 16 · 64 · 128 = 131,072. Forward 950,272; backward twice that: 2,850,816 pJ.
    ("none", "standard", 3 * 950_272),
    ("full", "standard", 3 * 950_272 + 786_432 + 32_768),  # the layer's forward again
    # FlashAttention-2 at head dim 32 runs 128 × 128 tiles both ways; 16 tokens are one causal block, zero-filled to
    # the full tile: each of its GEMMs (2 forward, 5 backward: the backward recomputes QKᵀ) is 128 · 32 · 128 MACs
    # a head, 1,048,576 for 2 heads, in place of standard attention's 32,768 forward and 65,536 backward.
    ("none", "flash", 3 * 950_272 - 3 * 32_768 + 7 * 1_048_576),
    ("full", "flash", 3 * 950_272 - 3 * 32_768 + 7 * 1_048_576 + 786_432 + 2 * 1_048_576),
])
def test_trains_energy_is_the_energy_model_on_the_ops_macs_counted_by_hand(capsys, tmp_path, recompute, attention,
                                                                           picojoules):
    """A one-layer GPT (h 64, 2 heads, s 16, vocabulary 100) on one chip priced at 1 pJ a MAC and nothing else
    (the device file's [energy]): train's energy_j is the MACs counted by hand, each at 1 pJ."""
    (tmp_path / "tiny.toml").write_text(TINY)
    meta = _train_meta(capsys, tmp_path / "tiny.toml", _chip(tmp_path, MAC_ONLY, gpus=1), "--global-batch", "1",
                       "--recompute", recompute, "--attention", attention)
    assert meta["energy_source"] == "energy model on the ops' accesses (archsim.energy, the device file's [energy])"
    assert meta["energy_j"] == pytest.approx(picojoules * 1e-12, rel=1e-12)


def test_the_chip_as_a_toml_and_as_a_cfg_trains_alike(capsys, tmp_path):
    """768 KiB per array as one TOML figure is the .cfg's three 256 KiB SRAMs: the same seconds, memory and joules."""
    toml = _train_meta(capsys, "gpt2", _chip(tmp_path), "--dp", "4", "--global-batch", "8")
    cfg = _train_meta(capsys, "gpt2", _chip(tmp_path, suffix="cfg"), "--dp", "4", "--global-batch", "8")
    assert toml == cfg and toml["gpu"] == "myacc" and toml["memory_capacity_gib"] == 8


def test_a_run_over_the_chips_memory_says_so_in_one_stderr_line(capsys, tmp_path):
    """GPT-2 needs 2.651 GiB a chip at DP 4 (train's peak_memory_gib on the 8 GiB chip; 2.648 until 2026-12-03, before
    FlashAttention's backward buffers); with 1 GiB it does not fit."""
    (tmp_path / "myacc.cfg").write_text(chip_cfg_text(1))
    meta = _train_meta(capsys, "gpt2", _chip(tmp_path, suffix="cfg", gib=1), "--dp", "4", "--global-batch", "8")
    assert not meta["fits_memory"] and meta["memory_capacity_gib"] == 1
    assert main(["train", "gpt2", "--cluster", str(tmp_path / "cluster_cfg.toml"), "--dp", "4", "--global-batch", "8"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines[1:] == [("archsim train: note: myacc states no [vector] unit: FlashAttention's exponentials and FP32 "
                         "row work run on an assumed 256 lanes, one per array row (4 arrays × 64 rows, one result a "
                         "lane and clock); state the chip's vector unit as [vector] lanes (docs/formats.md, Device "
                         "files)")]  # since 2026-12-06: the chip states no [vector]
    assert lines[:1] == ["archsim train: warning: does not fit: pipeline rank 0 needs 2.7 GiB per device, its myacc has 1.0 GiB"]


@pytest.mark.long
@given(arrays=st.integers(2, 16), fewer=st.integers(1, 15), cut=st.floats(0.05, 1.0), tp=st.sampled_from([1, 2]))
def test_fewer_arrays_or_less_bandwidth_is_never_faster_with_split_k_and_tp(arrays, fewer, cut, tp):
    """tests/test_device_file.py's property holds without split-K and at TP 1 only; a split-K os chip picks its
    split from the arrays it has, and TP halves the GEMMs: neither may make a smaller or slower chip faster."""
    from archsim import links
    from archsim.devices.device import Arrays
    from archsim.training.machine import Links, Machine
    from archsim.training.parallel import Parallelism
    from archsim.training.run import train
    from archsim.workload.transformer import TransformerConfig

    tpu = load_device(Path(__file__).resolve().parents[1] / "configs" / "devices" / "tpu_v4_like.toml")
    base = replace(tpu, arrays=Arrays(arrays, 32, 32, "os", 1e9, 1), split_k=True, hbm_bytes_per_s=4e11)
    model = TransformerConfig("tiny", "gpt", layers=2, hidden=128, heads=4, vocab=1000, seq=64, ffn=512, kv_heads=4)
    par = Parallelism(tp, 1, 1, 2, 1, "none")

    def seconds(device) -> float:
        link = links.nvlink(device.nvlink_bytes_per_s)
        return train(model, par, Machine(device, device.efficiency, Links(link, link, link))).iteration_seconds

    fast = seconds(base)
    assert seconds(replace(base, arrays=replace(base.arrays, count=max(arrays - fewer, 1)))) >= fast
    assert seconds(replace(base, hbm_bytes_per_s=base.hbm_bytes_per_s * cut)) >= fast


def test_pipeline_memory_on_a_device_cfg_names_the_capacity_flag_its_hbm_gib_needs(capsys, tmp_path):
    """Defect: `pipeline --memory --config myacc.cfg` checked no processor against the file's `[memory] hbm_gib`
    and said nothing, so a designer read a plan of 0.92 GiB a processor as checked against the chip. Now a note
    names the flag and the figure in its unit (8 GiB = 8 · 2³⁰ bytes = 8.589934592 GB); given, it is checked."""
    _chip(tmp_path, suffix="cfg", gib=8)
    flags = ["pipeline", "vgg16", "--config", str(tmp_path / "myacc.cfg"), "--dtype", "fp16", "--processors", "4",
             "--batch", "8", "--microbatches", "4", "--memory", "--format", "json"]
    assert main(flags) == 0
    captured = capsys.readouterr()
    assert "fits_memory" not in json.loads(captured.out)["meta"]
    assert (f"archsim pipeline: note: {tmp_path / 'myacc.cfg'} states [memory] hbm_gib = 8: pipeline checks memory "
            "against --capacity-gb alone (GB, 10⁹ bytes), so no processor was checked against it: add --capacity-gb "
            "8.589934592 to check each processor against 8 GiB") in captured.err.splitlines()
    assert main([*flags, "--capacity-gb", "8.589934592"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["meta"]["memory_capacity_bytes"] == pytest.approx(8 * 2**30, rel=1e-15)
    assert "hbm_gib" not in captured.err


def test_search_help_says_how_an_array_device_is_priced_under_the_energy_objective(capsys):
    """Defect: `search --help` said `--objective energy` minimises GPU board power × time, which an array device file
    is not priced by (docs/training.md: train's and search's energy model since 2026-11-29): a designer read that
    their chip's energy was its board_watts × time. The help now names both."""
    with pytest.raises(SystemExit):
        main(["search", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "on a gemm = \"arrays\" device file the energy model on the ops' accesses, plus its static_watts × time" in text


def test_energy_help_says_its_config_takes_a_device_toml(capsys, tmp_path):
    """Defect: `energy --help` named `--config FILE.cfg`, "SCALE-Sim .cfg file for the array", though energy prices a
    device TOML as train does (docs/formats.md, Device files): a designer with only a TOML read it as refused. The
    help now names the TOML (cost's, pipeline's and schedule's too, which read it by the same reader); the other
    array commands, which refuse one, keep FILE.cfg."""
    for command in ("energy", "cost", "pipeline", "schedule"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert "--config FILE.cfg|FILE.toml SCALE-Sim .cfg file for the array or a device TOML" in text
    with pytest.raises(SystemExit):
        main(["bppsa", "rnn", "--help"])
    assert "--config FILE.cfg SCALE-Sim .cfg file for the array (overrides" in " ".join(capsys.readouterr().out.split())
    (tmp_path / "myacc.toml").write_text(CHIP_TOML)
    assert main(["energy", "ffnn8", "--config", str(tmp_path / "myacc.toml"), "--dtype", "fp16", "--batch", "1"]) == 0


@pytest.mark.long
def test_a_device_sweep_marks_the_pareto_front_brute_force_finds(tmp_path):
    """Array shape × HBM bandwidth × chips over the trial's chip: `pareto_optimal` is exactly the fitting points no
    fitting point beats in both seconds and joules (checked pair by pair), and more HBM bandwidth never trains slower."""
    import csv

    (tmp_path / "myacc.toml").write_text(CHIP_TOML)
    (tmp_path / "spec.toml").write_text('[sweep]\nname = "mine"\nmodel = "gpt2"\ndevice = "myacc.toml"\n'
                                        "array_sides = [32, 64, 128]\nhbm_gbps = [150, 300, 600]\nchips = [1, 2, 4]\n"
                                        "global_batch = 8\n")
    assert main(["sweep", str(tmp_path / "spec.toml"), "--out", str(tmp_path / "res"), "--quiet"]) == 0
    rows = list(csv.DictReader((tmp_path / "res" / "results.csv").open()))
    assert len(rows) == 27
    points = [(float(r["iteration_seconds"]), float(r["energy_j"]), r["fits_memory"] == "True") for r in rows]
    for row, (s, j, fits) in zip(rows, points):
        beaten = any(f and s2 <= s and j2 <= j and (s2, j2) != (s, j) for s2, j2, f in points)
        assert (row["pareto_optimal"] == "True") == (fits and not beaten)
    by_point = {(r["arrays"], r["gpus"], float(r["hbm_gbps"])): float(r["iteration_seconds"]) for r in rows}
    for (arrays, gpus, gbps), seconds in by_point.items():
        if gbps < 600:
            assert by_point[(arrays, gpus, gbps * 2)] <= seconds


@pytest.mark.parametrize(("flags", "method"), [(["--memory-constraint"], "spp"), (["--straight-pipeline"], "gpipe"),
                                               (["--use-fewer-machines"], "dp"),
                                               (["--activation-compression-ratio", "2"], "pipedream-prm")])
def test_plan_refuses_pipedreams_own_flags_beside_another_method(capsys, tmp_path, flags, method):
    """Defect: `plan resnet50 --cluster mychip.toml --memory-constraint` (default --method spp) printed SPP's plan and
    said nothing, so a designer read it as checked against the chip's 8 GiB; no method but pipedream reads these four
    flags (its group in `plan --help`), the `--baselines paper` pipedream baseline neither. Now one line refuses them."""
    argv = ["plan", "resnet50", "--cluster", str(_chip(tmp_path)), "--microbatches", "4", "--batch", "32",
            "--method", method, *flags]
    assert main(argv) == 2
    flag, shown = flags[0], " ".join(flags).replace(" 2", " 2.0")
    assert capsys.readouterr().err == (
        f"archsim plan: error: argument {flag}: {shown} is an option of PipeDream's optimizer (--method pipedream); "
        f"--method {method} does not read it: drop it\n")


def test_trains_gemm_rows_are_the_chips_waves_by_hand(capsys, tmp_path):
    """GPT-2 (h 768, s 1024, micro-batch 1) on the trial's chip, each GEMM os on 64 × 64: ⌈m/64⌉·⌈n/64⌉ folds of
    64 + 64 + k − 2 cycles, ⌈folds/4⌉ waves on the 4 arrays, less 1 (SCALE-Sim's count), at 800 MHz. Each is
    compute-bound: qkv's traffic, (1024·768 + 768·2304 + 1024·2304) · 2 B at 300 GB/s, is 32.8 µs of its 160.9."""
    def seconds(m: int, k: int, n: int) -> float:
        folds = -(-m // 64) * -(-n // 64)
        return (-(-folds // 4) * (64 + 64 + k - 2) - 1) / 800e6

    assert main(["train", "gpt2", "--cluster", str(_chip(tmp_path)), "--dp", "4", "--global-batch", "8",
                 "--format", "json"]) == 0
    rows = {(r["name"], r["op"]): r["seconds"] for r in json.loads(capsys.readouterr().out)["rows"]}
    expected = {("qkv", "F"): seconds(1024, 768, 2304),  # 576 folds, 144 waves of 894: 128,735 cycles
                ("proj", "F"): seconds(1024, 768, 768),  # 192 folds, 48 waves of 894: 42,911
                ("fc1", "F"): seconds(1024, 768, 3072),  # 768 folds, 192 waves of 894: 171,647
                ("fc2", "F"): seconds(1024, 3072, 768),  # 192 folds, 48 waves of 3198: 153,503
                ("fc2", "G"): seconds(3072, 1024, 768),  # dW = Xᵀ·dY: 576 folds, 144 waves of 1150: 165,599
                ("fc2", "D"): seconds(1024, 768, 3072)}  # dX = dY·Wᵀ, fc1's forward shape
    assert expected[("qkv", "F")] == pytest.approx(128_735 / 800e6, rel=1e-15)
    for key, value in expected.items():
        assert rows[key] == pytest.approx(value, rel=1e-12), key


def test_the_cycle_engine_runs_a_device_cfgs_hbm_gbps_and_says_so(capsys, tmp_path):
    """Defect: `cost --engine cycle --config myacc.cfg` (hbm_gbps = 300, no SCALE-Sim Bandwidth) ran the DRAM at the
    default 10 words/cycle — 16 GB/s of fp16 words at 0.8 GHz, 19× below the file's figure. Now the file's rate is the
    engine's, every operand buffer's, and a note says so: 300 GB/s ÷ (2 B × 0.8 GHz) = 187.5, 188 whole (300.8 GB/s,
    within the 1% the file's own Bandwidth must keep); in int8's 1-byte words 375 (300 GB/s)."""
    import warnings

    import archsim

    _chip(tmp_path, suffix="cfg")
    cfg = tmp_path / "myacc.cfg"

    def line(words: int, width: int, gbps: str, flag: str) -> str:
        return (f"{cfg}: the cycle engine ran at {words} words/cycle per operand buffer, [memory] hbm_gbps = 300 GB/s "
                f"in {width}-byte words at the file's 0.8 GHz ({gbps} GB/s; each of ifmap, filter and ofmap at the "
                f"chip's whole rate, as SCALE-Sim's Bandwidth is per buffer); {flag} overrides it")

    fp16 = line(188, 2, "300.8", "--bandwidth WORDS")
    assert main(["cost", "ffnn8", "--config", str(cfg), "--dtype", "fp16", "--batch", "1", "--engine", "cycle",
                 "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert f"archsim cost: note: {fp16}" in err.splitlines()
    assert json.loads(out)["meta"]["bandwidth_words_per_cycle"] == 188
    assert main(["schedule", "ffnn8", "--config", str(cfg), "--dtype", "fp16", "--engine", "cycle", "--policy", "gpipe",
                 "--processors", "2", "--microbatches", "2"]) == 0
    assert (f"archsim schedule: note: {line(188, 2, '300.8', '--dram-bandwidth WORDS')}"
            in capsys.readouterr().err.splitlines())
    assert main(["gemm", "--m", "64", "--k", "64", "--n", "64", "--config", str(cfg), "--engine", "cycle"]) == 0
    assert f"archsim gemm: note: {line(375, 1, '300', '--bandwidth WORDS')}" in capsys.readouterr().err.splitlines()
    assert main(["cost", "ffnn8", "--config", str(cfg), "--dtype", "fp16", "--batch", "1", "--engine", "cycle",
                 "--bandwidth", "188"]) == 0
    assert "hbm_gbps" not in capsys.readouterr().err  # given: the flag's rate, nothing to say
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        archsim.cost("ffnn8", config=cfg, engine="cycle", dtype="fp16", batch=1)
    assert line(188, 2, "300.8", "bandwidth=WORDS") in [str(w.message) for w in said]


def test_plan_prices_a_network_on_the_chip_as_counted_by_hand(capsys, tmp_path):
    """ffnn8 (8 fc layers of 1024 × 1024) on one chip at micro-batch 64, fp16 (`plan`, the layers priced on the cluster's
    device). Forward, each layer out[64×1024] = X[64×1024]·W: 16 folds of 64 + 64 + 1024 − 2 = 1150 cycles in 4 waves,
    4599 cycles = 5.749 µs, under its traffic (64·1024 + 1024² + 64·1024) · 2 B = 2,359,296 B at 300 GB/s = 7.864 µs:
    8 · 7.86432 µs. Backward: each G, dW[1024×1024] = Xᵀ·dY with k = 64: 256 folds of 190 cycles in 64 waves, 12,159
    cycles = 15.19875 µs (its traffic is the same 7.864 µs); each D but the first layer's (exact mode) fc's forward."""
    one = _chip(tmp_path, gpus=1)
    assert main(["plan", "ffnn8", "--cluster", str(one), "--microbatches", "1", "--micro-batch", "64",
                 "--format", "json"]) == 0
    stage = json.loads(capsys.readouterr().out)["rows"][0]
    traffic = (64 * 1024 + 1024 * 1024 + 64 * 1024) * 2 / 300e9
    assert stage["microbatch_forward_seconds"] == pytest.approx(8 * traffic, rel=1e-12)
    assert stage["microbatch_backward_seconds"] == pytest.approx(8 * 12_159 / 800e6 + 7 * traffic, rel=1e-12)
