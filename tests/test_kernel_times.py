"""GPU kernels timed from op, shape and datasheet (archsim/devices/kernels.py) on NeuSight's measurements.

References: the CSV rows themselves (tests/data/neusight_kernels/, a sample of NeuSight's files read
with the csv module, not archsim's reader), NVIDIA's datasheets typed in below, and closed forms.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from archsim.cli import main
from archsim.devices.catalog import KNOWN_GPUS, GpuSpec
from archsim.devices.gpu_lookup import find_gpu
from archsim.devices.kernel_constants import KernelConstants, energy_per_flop, sustained_flops
from archsim.devices.kernels import (
    gemm_seconds,
    kernel_seconds,
    memory_bound_seconds,
    softmax_block_threads,
    softmax_tensors,
)
from archsim.errors import InputError
from archsim.validation.neusight import (
    CLASS_ORDER,
    ENERGY_START_PJ,
    ENERGY_TOLERANCE,
    FIT_FIELDS,
    FIT_START,
    fit_constants,
    is_neusight_file,
    leave_one_gpu_out,
    mape_by_class,
    parse_neusight_csv,
    predict,
    read_neusight_csv,
)
from tests.neusight_sample import KERNELS, csv_records

FILES = ("linear", "bmm", "elem", "softmax", "ln")

# CUDA device string → (SMs, FP32 lanes per SM, HBM GB/s, L2 MiB), from NVIDIA's datasheets and
# architecture whitepapers (docs/citations.md, "GPU training model"). NeuSight's device_configs/ list L4
# with 60 SMs (the full AD104); the L4 product has 58 (7,424 CUDA cores), and P4 as 40 SMs × 64
# lanes, where GP104 is 20 SMs × 128 lanes (the same 2,560 lanes).
DATASHEETS = {
    "Tesla P100-PCIE-16GB": (56, 64, 732, 4),
    "Tesla P4": (20, 128, 192, 2),
    "Tesla T4": (40, 64, 320, 4),
    "Tesla V100-PCIE-32GB": (80, 64, 900, 6),
    "NVIDIA A100-PCIE-40GB": (108, 64, 1555, 40),
    "NVIDIA A100-SXM4-40GB": (108, 64, 1555, 40),
    "NVIDIA A100 80GB PCIe": (108, 64, 1935, 40),
    "NVIDIA H100 80GB HBM3": (132, 128, 3350, 50),
    "NVIDIA L4": (58, 128, 300, 48),
}
# the datasheets' FP32 TFLOP/s, which lanes × 2 × clock must reproduce (H100 SXM: 66.9 at its 1,980 MHz
# maximum boost; the catalog's clock is the 1,830 MHz of its tensor peak, so 61.8 — see docs)
FP32_TFLOPS = {"Tesla P100-PCIE-16GB": 9.3, "Tesla P4": 5.5, "Tesla T4": 8.1, "Tesla V100-PCIE-32GB": 14,
               "NVIDIA A100-PCIE-40GB": 19.5, "NVIDIA A100 80GB PCIe": 19.5, "NVIDIA L4": 30.3,
               "NVIDIA H100 80GB HBM3": 61.8}


@pytest.mark.parametrize("device", sorted(DATASHEETS))
def test_every_neusight_device_string_finds_its_datasheet(device):
    assert find_gpu("NVIDIA GeForce RTX 4090") is None
    sms, lanes, hbm, l2 = DATASHEETS[device]
    spec = KNOWN_GPUS[find_gpu(device)]
    assert (spec.sm_count, spec.fp32_lanes_per_sm) == (sms, lanes)
    assert spec.memory_bytes_per_s == hbm * 1e9 and spec.l2_bytes == l2 * 2**20
    if device in FP32_TFLOPS:
        assert 2 * sms * lanes * spec.clock_hz / 1e12 == pytest.approx(FP32_TFLOPS[device], rel=0.02)


def test_every_device_config_of_the_data_is_a_catalog_gpu():
    configs = Path(__file__).resolve().parents[2] / "shared" / "gpu_kernels" / "device_configs"
    if not configs.is_dir():
        pytest.skip("the project's shared gpu_kernels/ data is not beside this checkout")
    names = [json.loads(p.read_text())["Device"] for p in sorted(configs.glob("*.json"))]
    assert set(names) == set(DATASHEETS)


def _tiny(sms: int = 4, lanes: int = 32, clock_hz: float = 1e9, hbm: float = 1e18) -> GpuSpec:
    return GpuSpec("tiny", sms, 1, 4, 8, clock_hz, hbm, "FP32 SIMD partition", None, 0.0, lanes)


FED = KernelConstants(gemm=0.5, feed=1.0, memory=1.0, softmax=0.5, layernorm=0.25, launch_s=3e-6)


def test_one_full_wave_of_tiles_is_flops_over_rate_plus_launch():
    spec = _tiny()
    k = 1000
    # 4 SMs, 4 output tiles of 128×128: one wave, each SM 2·128·128·k FLOPs at 32 lanes × 2 × 1 GHz × 0.5
    seconds = gemm_seconds(1, 256, 256, k, spec, FED)
    assert seconds == pytest.approx(2 * 128 * 128 * k / (32 * 2 * 1e9 * 0.5) + 3e-6)
    wave = seconds - 3e-6
    # one tile more than SMs: unsplit, a second wave (2 waves); split-K 4 ways (k = 1000 ≥ 4 × 128, 8 ways
    # would leave parts under 128) makes 20 quarter-depth parts, 5 waves of a quarter wave each (1.25
    # waves) plus the reduce kernel's launch, which beats 2 waves; every tile shape counts the same here
    assert gemm_seconds(1, 128, 128 * 5, k, spec, FED) == pytest.approx(1.25 * wave + 2 * 3e-6)
    # batched: 4 GEMMs of one tile each are the same wave
    assert gemm_seconds(4, 128, 128, k, spec, FED) == pytest.approx(seconds)


def test_split_k_parts_keep_the_minimum_depth():
    spec = _tiny(sms=32)
    # one tile, k = 255: no split leaves parts of 128 or more, so one SM works through all of K
    assert gemm_seconds(1, 128, 128, 255, spec, FED) == pytest.approx(2 * 128 * 128 * 255 / (32 * 2 * 1e9 * 0.5) + 3e-6)
    # k = 256: two parts of 128 on two SMs, plus the reduce kernel's launch
    assert gemm_seconds(1, 128, 128, 256, spec, FED) == pytest.approx(2 * 128 * 128 * 128 / (32 * 2 * 1e9 * 0.5)
                                                                      + 2 * 3e-6)


def test_split_k_fills_idle_sms_and_pays_a_second_kernel():
    spec = _tiny(sms=32)
    k = 32 * 1000
    # one 128×128 tile on 32 SMs: split 32 ways, each SM 2·128·128·(k/32); the reduce kernel's bytes are free here
    expected = 2 * 128 * 128 * (k / 32) / (32 * 2 * 1e9 * 0.5) + 2 * 3e-6
    assert gemm_seconds(1, 128, 128, k, spec, FED) == pytest.approx(expected)


def test_a_gemm_is_never_faster_than_its_operands_through_hbm():
    spec = _tiny(sms=1000, hbm=1e9)  # compute nearly free, HBM slow
    m, n, k = 128, 128, 64
    assert gemm_seconds(1, m, n, k, spec, FED) == pytest.approx((m * k + k * n + m * n) * 4 / 1e9 + 3e-6)
    # C is written once after the main loop, not hidden behind it: with the main loop slow, its time
    # plus C's bytes (and A, B's reads hidden under it); all GEMM traffic at gemm_memory × bandwidth
    slow = replace(_tiny(sms=1, lanes=1, hbm=1e9), l1_bytes=0.0)
    loop = 2 * 128 * 128 * k / (1 * 2 * 1e9 * 0.5)  # one SM of 1 lane, one 128×128 tile (or 16 of 32×32)
    half = replace(FED, gemm_memory=0.5)
    assert gemm_seconds(1, m, n, k, slow, half) == pytest.approx(loop + m * n * 4 / 0.5e9 + 3e-6)
    assert gemm_seconds(1, m, n, k, spec, FED, "fp16") < gemm_seconds(1, m, n, k, spec, FED)


# CUDA device string → (board power W, process node nm), from the datasheets and whitepapers
# (docs/citations.md): TSMC 16FF (Pascal), 12FFN (Volta, Turing), N7 (A100), 4N (Ada, Hopper).
BOARD_POWER = {"Tesla P100-PCIE-16GB": (250, 16), "Tesla P4": (75, 16), "Tesla T4": (70, 12),
               "Tesla V100-PCIE-32GB": (250, 12), "NVIDIA A100-PCIE-40GB": (250, 7),
               "NVIDIA A100-SXM4-40GB": (400, 7), "NVIDIA A100 80GB PCIe": (300, 7), "NVIDIA L4": (72, 4),
               "NVIDIA H100 80GB HBM3": (700, 4), "NVIDIA H100 PCIe": (350, 4)}


@pytest.mark.parametrize("device", sorted(BOARD_POWER))
def test_catalog_board_power_and_node_are_the_datasheets(device):
    spec = KNOWN_GPUS[find_gpu(device)]
    assert (spec.tdp_w, spec.process_nm) == BOARD_POWER[device]


def test_the_power_cap_slows_a_gemm_to_tdp_over_energy_per_flop():
    k = 1000
    free = gemm_seconds(1, 256, 256, k, _tiny(), FED) - 3e-6  # 4 SMs × 32 lanes × 2 × 1 GHz × 0.5 = 128 GFLOP/s
    # 12 nm, rated 1 GHz: 10 pJ per FLOP; 0.64 W allows 64 GFLOP/s, half the rate: twice the time
    capped = replace(_tiny(), tdp_w=0.64, process_nm=12)
    assert energy_per_flop(capped, replace(FED, energy_pj=10)) == pytest.approx(1e-11)
    assert sustained_flops(capped, replace(FED, energy_pj=10)) == pytest.approx(64e9)
    assert gemm_seconds(1, 256, 256, k, capped, replace(FED, energy_pj=10)) - 3e-6 == pytest.approx(2 * free)
    # a cap above the rate changes nothing; a GPU without a TDP in the catalog is not capped
    assert gemm_seconds(1, 256, 256, k, capped, replace(FED, energy_pj=1)) - 3e-6 == pytest.approx(free)
    assert sustained_flops(_tiny(), replace(FED, energy_pj=10)) == float("inf")
    # the energy scales with the node and the rated clock: 6 nm at 2 GHz costs what 12 nm at 1 GHz does
    same = replace(_tiny(clock_hz=2e9), tdp_w=0.64, process_nm=6)
    assert energy_per_flop(same, replace(FED, energy_pj=10)) == pytest.approx(1e-11)


def _measured_gemm_flops(device: str) -> list[float]:
    return [2 * int(r["B"]) * int(r["M"]) * int(r["N"]) * int(r["K"]) / (float(r["Latency"]) / 1e3)
            for name in ("linear", "bmm") for r in csv_records(name) if r["Device"] == device]


def test_the_fitted_power_cap_meets_the_t4s_measured_sgemm_rate():
    # the 70 W T4 runs its sgemms at about half its 8.1 TFLOP/s boost rate: the median of the sample's
    # measured rates is the cap within 20%; the 250 W V100's measured rates all stay under its cap
    t4 = sorted(_measured_gemm_flops("Tesla T4"))
    assert sustained_flops(KNOWN_GPUS["t4"]) == pytest.approx(t4[len(t4) // 2], rel=0.2)
    assert max(_measured_gemm_flops("Tesla V100-PCIE-32GB")) < sustained_flops(KNOWN_GPUS["v100-pcie"])


def test_memory_bound_kernels_are_their_bytes_at_the_achieved_fraction():
    spec = _tiny(hbm=1e11)
    b, h = 1000, 2000
    assert memory_bound_seconds("add", b, h, spec, FED) == pytest.approx(3 * b * h * 4 / 1e11 + 3e-6)
    assert memory_bound_seconds("relu", b, h, spec, FED) == pytest.approx(2 * b * h * 4 / 1e11 + 3e-6)
    # softmax of rows ≤ 1,024 (the warp softmax): one read, one write; longer rows (the block softmax) on a
    # GPU without a described L1: three reads (max, sum, output) and one write
    assert memory_bound_seconds("softmax", b, 1000, spec, FED) == pytest.approx(2 * b * 1000 * 4 / 0.5e11 + 3e-6)
    assert memory_bound_seconds("softmax", b, h, spec, FED) == pytest.approx(4 * b * h * 4 / 0.5e11 + 3e-6)
    # layer norm: two reads (Welford statistics, then normalize) and one write
    assert memory_bound_seconds("ln", b, h, spec, FED, "bf16") == pytest.approx(3 * b * h * 2 / 0.25e11 + 3e-6)
    with pytest.raises(InputError, match="unknown op"):
        kernel_seconds({"op": ["conv"], "B": [1], "H": [1]}, spec, FED)


@pytest.mark.parametrize("name", FILES)
def test_cli_json_rows_follow_the_csv(name, capsys):
    records = csv_records(name)
    assert main(["validate-gpu", "--csv", str(KERNELS / f"{name}.csv"), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["op"] for r in rows] == [r["OPName"] for r in records]
    assert [r["measured_seconds"] for r in rows] == pytest.approx([float(r["Latency"]) / 1e3 for r in records])
    shapes = ("B", "M", "N", "K") if name in ("linear", "bmm") else ("B", "H")
    for row, record in zip(rows, records, strict=True):
        assert {"op", "measured_seconds", "predicted_seconds", "relative_error", *shapes} <= set(row)
        assert [row[c] for c in shapes] == [int(record[c]) for c in shapes]
        assert row["predicted_seconds"] > 0
        assert row["relative_error"] == pytest.approx(row["predicted_seconds"] / row["measured_seconds"] - 1)
        assert find_gpu(row["gpu"]) == find_gpu(record["Device"])  # its catalog name: the same GPU


def test_cli_gpu_flag_overrides_the_device_column(capsys):
    path = str(KERNELS / "softmax.csv")
    assert main(["validate-gpu", "--csv", path, "--gpu", "NVIDIA H100 80GB HBM3", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert {r["gpu"] for r in rows} == {"h100-80gb-sxm"}


def test_cli_stats_give_mape_per_gpu_and_op_class(capsys):
    paths = [str(KERNELS / f"{name}.csv") for name in FILES]
    assert main(["validate-gpu", "--csv", *paths, "--format", "json", "--show", "stats"]) == 0
    stats = pd.DataFrame(json.loads(capsys.readouterr().out)["rows"])
    assert set(stats.op_class) == set(CLASS_ORDER)
    assert main(["validate-gpu", "--csv", *paths, "--format", "json"]) == 0
    rows = pd.DataFrame(json.loads(capsys.readouterr().out)["rows"])
    classes = {"linear": "linear", "bmm": "bmm", "softmax": "softmax", "ln": "layernorm"}
    rows["op_class"] = rows.op.map(lambda op: classes.get(op, "elementwise"))
    for r in stats.itertuples():
        mine = rows[(rows.gpu == r.gpu) & (rows.op_class == r.op_class)]
        assert r.kernel_count == len(mine)
        assert r.mape == pytest.approx(mine.relative_error.abs().mean())


def test_header_tells_the_formats_apart(tmp_path):
    assert is_neusight_file(KERNELS / "ln.csv")
    archsim_csv = tmp_path / "gpu_kernels_x.csv"
    archsim_csv.write_text("# gpu: NVIDIA H100\nnetwork,layer,batch,op,measured_ms\nvgg16,conv1_1,1,F,0.1\n")
    assert not is_neusight_file(archsim_csv)


def _grid_covers(rows: int, cols: int, record: dict[str, str]) -> bool:
    """Whether the observed grid (x · y CTAs) tiles a rows × cols output in the named kernel's tile."""
    tile = re.search(r"sgemm_(\d+)x(\d+)_", record["Kernel Name"])
    assert tile is not None, record["Kernel Name"]
    a, b = int(tile[1]), int(tile[2])
    grid = (int(record["Grid x"]), int(record["Grid y"]))
    return grid in {(-(-cols // a), -(-rows // b)), (-(-rows // a), -(-cols // b)),
                    (-(-cols // b), -(-rows // a)), (-(-rows // b), -(-cols // a))}


@pytest.mark.parametrize("name", ["bmm", "linear"])
def test_gemm_rows_are_read_with_the_output_the_observed_grids_tile(name):
    # The observed cuBLAS grid (read here only as the reference, never by the model) is one CTA per
    # output tile of the kernel it names: it tiles the reader's M × N output on every row whose kernel
    # is a tiled sgemm (the P4's maxwell 128x128x8 kernels grid otherwise), and not NeuSight's M × N.
    records = [r for r in csv_records(name) if re.search(r"sgemm_\d+x\d+_[nt]{2}$", r["Kernel Name"])]
    frame = read_neusight_csv(KERNELS / f"{name}.csv").frame.set_index("line")
    lines = [line for line, record in enumerate(csv_records(name), start=2) if record in records]
    assert len(records) >= 40
    for line, record in zip(lines, records, strict=True):
        m, n = int(frame.at[line, "M"]), int(frame.at[line, "N"])
        assert _grid_covers(m, n, record), (line, record["Kernel Name"], m, n)
        assert int(frame.at[line, "K"]) == int(record["N"])
    assert not all(_grid_covers(int(r["M"]), int(r["N"]), r) for r in records)


@pytest.mark.parametrize("row, field", [("bmm,0.1,Tesla T4,1,0,1,1", "M"), ("bmm,-1,Tesla T4,1,2,2,2", "Latency"),
                                        ("conv,0.1,Tesla T4,1,2,2,2", "OPName"), ("bmm,0.1,Tesla T4,1,2.5,2,2", "M")])
def test_bad_rows_name_line_and_field(row, field):
    with pytest.raises(InputError) as error:
        parse_neusight_csv(f"OPName,Latency,Device,B,M,N,K\n{row}\n", "x.csv")
    assert (error.value.where.line, error.value.where.field) == (2, field)


def test_cli_refuses_an_unknown_gpu_in_one_line(tmp_path, capsys):
    path = tmp_path / "k.csv"
    path.write_text("OPName,Latency,Device,B,H\nadd,0.1,Imaginary GPU 9000,4,4\n")
    assert main(["validate-gpu", "--csv", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and "unknown GPU" in err



def test_an_unknown_gpu_in_a_row_names_the_file_line_and_column(tmp_path, capsys):
    """The Device of line 3 not in the catalog was refused as "field 'gpu': unknown GPU …", naming no file
    or line (every other bad cell names them); with --gpu the rows' Device is not read."""
    path = tmp_path / "k.csv"
    path.write_text("OPName,Latency,Device,B,H\nadd,0.1,Tesla T4,4,4\nadd,0.1,Imaginary GPU 9000,4,4\n")
    assert main(["validate-gpu", "--csv", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}, line 3, field 'Device'" in err and "Imaginary GPU 9000" in err and "--gpu" in err
    assert main(["validate-gpu", "--csv", str(path), "--gpu", "t4"]) == 0


# Leave-one-GPU-out MAPE (%) per op class on the sample in tests/data/neusight_kernels (fit on the other
# four GPUs' rows of all eight files from FIT_START, 300 Nelder–Mead iterations over FIT_ROUNDS rounds),
# measured with softmax's two kernels, split-K wherever it finishes first and C's epilogue write: the
# largest over the five GPUs was linear 23.6, bmm 36.8, elementwise 20.9, softmax 13.9 (33.1 with one
# softmax read for every row length), layernorm 37.6.
# The bars add about a quarter as margin; the full files' figures are in docs/gpu-validation.md.
HELD_OUT_BARS = {"linear": 30, "bmm": 46, "elementwise": 26, "softmax": 18, "layernorm": 47}


@pytest.mark.long
def test_a_short_fit_moves_the_kernel_constants_and_never_the_host_time():
    # NeuSight times each kernel alone, so a fit on it has nothing to say of the host's time per op
    # (zero in the start, and no logarithm of it may enter the simplex); a few iterations from the start
    # may only lower the loss (Nelder–Mead keeps its best point), up to the energy grid's tie tolerance.
    frame = pd.concat([read_neusight_csv(KERNELS / f"{n}.csv").frame for n in FILES], ignore_index=True)
    fitted = fit_constants(frame, FIT_START, iterations=30)
    assert fitted.host_s == FIT_START.host_s == 0.0
    assert all(0 < getattr(fitted, name) < float("inf") for name in FIT_FIELDS)

    def loss(constants):
        return mape_by_class(predict(frame, constants)).mape.sum() / 100

    assert loss(fitted) <= loss(replace(FIT_START, energy_pj=ENERGY_START_PJ)) + ENERGY_TOLERANCE


@pytest.mark.slow
def test_leave_one_gpu_out_mape_stays_below_the_measured_bars():
    fit = pd.concat([read_neusight_csv(p).frame for p in sorted(KERNELS.glob("*.csv"))], ignore_index=True)
    check = pd.concat([read_neusight_csv(KERNELS / f"{n}.csv").frame for n in FILES], ignore_index=True)
    held = leave_one_gpu_out(fit, check, FIT_START, iterations=300)
    assert set(held.gpu) == {"p100-pcie-16gb", "p4-8gb", "t4-16gb", "v100-pcie-32gb", "a100-40gb-pcie"}
    worst = held.groupby("op_class").mape.max()
    for op_class, bar in HELD_OUT_BARS.items():
        assert worst[op_class] < bar, (op_class, worst[op_class])


@pytest.mark.parametrize(("hidden", "dtype", "threads"), [(1280, "fp32", 256), (2048, "fp32", 256), (2560, "fp32", 512),
                                                        (16384, "fp32", 512), (2560, "fp16", 256), (100, "fp32", 32)])
def test_block_softmax_threads_follow_pytorchs_rule(hidden, dtype, threads):
    # PyTorch's SoftMax_getBlockSize by hand: ILP = 16 bytes / element; max = min(hidden / ILP, 1024) / 2;
    # the power of two at or above it, at least a warp. NeuSight's observed blocks: 1280 → 256, 2560 → 512.
    assert softmax_block_threads(hidden, dtype) == threads


def test_block_softmax_rereads_miss_the_l1_by_the_resident_rows_it_cannot_hold():
    spec = replace(_tiny(sms=10, hbm=1e11), l1_bytes=64 * 1024, threads_per_sm=1024)
    # warp softmax (≤ 1,024 elements): 2 passes whatever the L1
    assert softmax_tensors(10_000, 1024, spec) == 2
    # 4,096 floats: 512-thread CTAs, 1024 / 512 = 2 rows resident per SM = 32 KiB ≤ 64 KiB of L1: re-reads hit
    assert softmax_tensors(10_000, 4096, spec) == 2
    # 16,384 floats: 2 rows × 64 KiB = 128 KiB resident, half of it in L1: the two re-reads miss half the time
    assert softmax_tensors(10_000, 16384, spec) == pytest.approx(2 + 2 * 0.5)
    # 20 rows over 10 SMs leave 2 per SM anyway; 10 rows leave 1 (64 KiB, held): the batch bounds the residents
    assert softmax_tensors(10, 16384, spec) == 2
    # no L1 described: both re-reads from HBM
    assert softmax_tensors(10_000, 4096, replace(spec, l1_bytes=0.0)) == 4
