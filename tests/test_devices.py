"""GPU catalog against datasheet figures, and the GPU cost source's tile/wave quantization by hand."""

from pathlib import Path

import pytest

from archsim.devices.catalog import GPUS
from archsim.devices.device import catalog_device
from archsim.devices.gpu_lookup import gpu
from archsim.devices.kernel_constants import one_fraction
from archsim.devices.kernel_ops import device_gemm_seconds, op_seconds
from archsim.devices.kernels import stream_seconds
from archsim.errors import InputError
from archsim.lowering import Gemm, TrainingOp
from archsim.units import GIB

# name: (dense FP16 tensor TFLOP/s, SMs, tensor cores, HBM GiB, HBM GB/s, NVLink GB/s per direction)
# H100 PCIe (H100 datasheet: 1,513 TFLOP/s FP16 tensor with sparsity, "1/2 lower without"; 114 SMs × 4
# tensor cores; 80 GB HBM2e at 2,000 GB/s): a PCIe card here, its optional NVLink bridge not modelled
DATASHEET = {"v100-32gb": (125, 80, 640, 32, 900, 150), "v100-16gb": (125, 80, 640, 16, 900, 150),
             "a100-40gb": (312, 108, 432, 40, 1555, 300),
             "a100-80gb": (312, 108, 432, 80, 2039, 300), "h100-80gb-sxm": (989.4, 132, 528, 80, 3350, 450),
             "h200-141gb": (989.4, 132, 528, 143771 / 1024, 4800, 450),
             "h100-80gb-pcie": (1513 / 2, 114, 456, 80, 2000, 0)}
# NeuSight's PCIe cards (no NVLink): dense FP32 TFLOP/s, SMs, HBM GiB, HBM GB/s, PCIe GB/s per direction
PCIE_DATASHEET = {"v100-pcie-32gb": (14, 80, 32, 900, 16), "t4-16gb": (8.1, 40, 16, 320, 16),
                  "a100-80gb-pcie": (19.5, 108, 80, 1935, 32), "l4-24gb": (30.3, 58, 24, 300, 32),
                  "a100-40gb-pcie": (19.5, 108, 40, 1555, 32),
                  "p100-pcie-16gb": (9.3, 56, 16, 732, 16), "p4-8gb": (5.5, 20, 8, 192, 16),
                  "gtx-1080-ti-11gb": (11.3, 28, 11, 484, 16)}


@pytest.mark.parametrize("name", sorted(DATASHEET))
def test_catalog_matches_datasheets(name):
    peak, sms, tcs, memory, hbm, nvlink = DATASHEET[name]
    g = gpu(name)
    assert g.peak("fp16") == pytest.approx(peak * 1e12)
    # the tensor-core geometry × clock (the arrays GPU validation uses) gives the same peak
    assert g.arrays.peak_flops == pytest.approx(peak * 1e12, rel=0.01)
    assert (g.sms, g.arrays.count) == (sms, tcs)
    if name in CUDA_MEASURED:  # what CUDA gives a program, below the datasheet's GB read as GiB (next test)
        assert g.memory_bytes < memory * GIB
    else:
        assert g.memory_bytes == memory * GIB
    assert g.hbm_bytes_per_s == hbm * 1e9 and g.nvlink_bytes_per_s == nvlink * 1e9


# the GPUs whose total memory under CUDA (PyTorch's total_memory) a measured run recorded, and the file's header line
CUDA_MEASURED = {"h100-80gb-sxm": "gpu_train_measured_h100-80gb-hbm3.csv", "h200-141gb": "gpu_train_measured_h200.csv"}


@pytest.mark.parametrize("name", sorted(CUDA_MEASURED))
def test_a_measured_gpus_memory_is_what_cuda_gave_the_run(name):
    """The fits check compares with the memory a program can have: the ``# gpu_memory_gib`` a measured run wrote
    (torch.cuda.get_device_properties(0).total_memory / 2³⁰, to 0.1 GiB), not the datasheet's 80 GB."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / CUDA_MEASURED[name]
    (line,) = [line for line in path.read_text().splitlines() if line.startswith("# gpu_memory_gib:")]
    assert gpu(name).memory_bytes / GIB == pytest.approx(float(line.split(":")[1]), abs=0.05)


@pytest.mark.parametrize("name", sorted(PCIE_DATASHEET))
def test_pcie_cards_match_datasheets(name):
    fp32, sms, memory, hbm, pcie = PCIE_DATASHEET[name]
    g = gpu(name)
    assert g.peak("fp32") == pytest.approx(fp32 * 1e12)
    # the FP32 lanes × 2 × clock the kernel model's SIMT path reads give the same peak (within rounding)
    from archsim.devices.catalog import chip_of
    from archsim.devices.kernel_constants import sm_flops

    chip = chip_of(g)
    assert chip is not None and sm_flops(chip) * chip.sm_count == pytest.approx(fp32 * 1e12, rel=0.02)
    assert (g.sms, g.memory_bytes, g.hbm_bytes_per_s) == (sms, memory * GIB, hbm * 1e9)
    assert g.nvlink_bytes_per_s == 0 and g.pcie_bytes_per_s == pcie * 1e9


@pytest.mark.parametrize(("cuda_name", "key"), [("Tesla V100-PCIE-32GB", "v100-pcie-32gb"), ("Tesla_T4", "t4-16gb"),
                                                ("NVIDIA L4", "l4-24gb"), ("NVIDIA_H100_80GB_HBM3", "h100-80gb-sxm"),
                                                ("Tesla P4", "p4-8gb"), ("NVIDIA A100-PCIE-40GB", "a100-40gb-pcie"),
                                                ("NVIDIA_A100-PCIE-40GB", "a100-40gb-pcie"),
                                                ("NVIDIA A100-SXM4-40GB", "a100-40gb"),
                                                ("NVIDIA A100 80GB PCIe", "a100-80gb-pcie"),
                                                ("NVIDIA H100 PCIe", "h100-80gb-pcie")])
def test_cuda_device_names_are_catalog_names(cuda_name, key):
    assert gpu(cuda_name) is GPUS[key]


# board power (W, the datasheets' maximum TDP) and form factor: A100 SXM4 40 GB 400 W on NVLink 3 (600 GB/s
# total); A100 PCIe 40 GB 250 W, PCIe 4.0 (64 GB/s total); H100 PCIe 350 W, PCIe 5.0 (128 GB/s total)
BOARDS = {"a100-40gb": (400, 300, 32), "a100-40gb-pcie": (250, 0, 32), "h100-80gb-pcie": (350, 0, 64)}


@pytest.mark.parametrize("key", sorted(BOARDS))
def test_each_40gb_and_h100_pcie_entry_is_one_real_board(key):
    watts, nvlink, pcie = BOARDS[key]
    board = GPUS[key]
    assert board.board_watts == watts
    assert (board.nvlink_bytes_per_s, board.pcie_bytes_per_s) == (nvlink * 1e9, pcie * 1e9)
    # the name says the form factor its power and links are: no SXM4 name on a PCIe card's figures
    assert ("PCIe" in board.name) == (nvlink == 0)


def test_catalog_names():
    assert set(GPUS) == set(DATASHEET) | set(PCIE_DATASHEET)
    assert gpu("A100") is GPUS["a100-80gb"]
    with pytest.raises(InputError, match="unknown GPU"):
        gpu("tpu-v4")
    with pytest.raises(InputError, match="no fp8"):
        gpu("a100-80gb").peak("fp8")


PLAIN = one_fraction(gemm=1.0, memory=1.0, launch_s=0.0)


def test_wave_quantization_by_hand():
    a100 = catalog_device("a100-80gb")
    per_sm = 312e12 / 108
    # 108 output tiles of 128×256 (m = 128·108, n = 256): one wave of 2·128·256·k FLOPs per SM
    k = 4096
    one_wave = 2 * 128 * 256 * k / per_sm
    assert device_gemm_seconds(128 * 108, k, 256, 1, a100, PLAIN) == pytest.approx(one_wave)
    # one more row: 109 tiles of 128×256 need 2 waves; 128×128 or 256×64 tiles 3 half-size waves (1.5×);
    # 128×64 tiles 5 quarter-size waves (1.25×) at the L2-fed rate of a 128×64 tile:
    # 5120/108 bytes/clock × 128·64/(192·2) MACs/byte over 312e12/(2·1.41e9·108) MACs/clock = 0.987;
    # 64×64 tiles 9 eighth-size waves (1.125×) at 0.740 (1.52×). Best: 128×64.
    fed = 5120 / 108 * 128 * 64 / (192 * 2) / (312e12 / (2 * 1.41e9 * 108))
    assert device_gemm_seconds(128 * 109, k, 256, 1, a100, PLAIN) == pytest.approx(1.25 * one_wave / fed)
    # batched: count multiplies the tiles (108 → one wave), but each of the 108 GEMMs moves its own
    # operands, (128·k + k·256 + 128·256)·2 bytes, at 2039 GB/s: memory-bound
    traffic = 108 * (128 * k + k * 256 + 128 * 256) * 2 / 2039e9
    assert traffic > one_wave
    assert device_gemm_seconds(128, k, 256, 108, a100, PLAIN) == pytest.approx(traffic)


def test_memory_floor_and_overheads_by_hand():
    a100 = catalog_device("a100-80gb")
    # a skinny GEMM is bound by moving its operands: (m·k + k·n + m·n)·2 bytes / bandwidth
    m, k, n = 1_000_000, 8, 8
    traffic = (m * k + k * n + m * n) * 2 / 2039e9
    assert device_gemm_seconds(m, k, n, 1, a100, PLAIN) == pytest.approx(traffic)
    eff = one_fraction(gemm=0.5, memory=0.5, launch_s=5e-6)
    assert stream_seconds(2e9, a100.hbm_bytes_per_s, eff) == pytest.approx(2e9 / (0.5 * 2039e9) + 5e-6)
    ops = [TrainingOp("x", "F", (Gemm(128 * 108, 4096, 256),)), TrainingOp("y", "F", (), vector_elements=10**9)]
    got = op_seconds(ops, a100, eff)
    assert got[0] == pytest.approx(2 * 128 * 256 * 4096 / (0.5 * 312e12 / 108) + 5e-6)  # 256×128 and 128×256 run at full rate
    assert got[1] == pytest.approx(2e9 / (0.5 * 2039e9) + 5e-6)


@pytest.mark.parametrize(("board", "lanes", "fp32_tflops"), [("a100-80gb", 64, 19.5), ("h200-141gb", 128, None)])
def test_sxm_boards_know_their_fp32_lanes(board, lanes, fp32_tflops):
    """`train --dtype fp32` on the A100 SXM4 80GB and the H200 was refused ("FP32 lanes per SM not in the
    catalog") though their chips' lanes are the datasheets': GA100 64 FP32 lanes per SM (19.5 TFLOP/s =
    108 SMs × 64 × 2 × 1.41 GHz), GH100 128 (the H200 is the H100 SXM's processor)."""
    from archsim.devices.catalog import chip_of
    from archsim.devices.kernel_constants import sm_flops

    chip = chip_of(gpu(board))
    assert chip is not None and chip.fp32_lanes_per_sm == lanes
    if fp32_tflops:
        assert sm_flops(chip) * chip.sm_count == pytest.approx(fp32_tflops * 1e12, rel=0.01)


# one GPU of each new board, by CUDA's name: (board W, dense FP16 TFLOP/s, memory GiB), typed from the
# datasheets (A100 PCIe 40 GB: 250 W, 312, 40 GB; H100 PCIe: 350 W, 1,513 with sparsity / 2, 80 GB)
ONE_GPU = {"NVIDIA A100-PCIE-40GB": (250, 312, 40), "NVIDIA H100 PCIe": (350, 1513 / 2, 80),
           "NVIDIA A100-SXM4-40GB": (400, 312, 40)}


@pytest.mark.parametrize("cuda_name", sorted(ONE_GPU))
def test_archsim_train_runs_on_one_gpu_of_each_board(cuda_name, tmp_path, capsys):
    import json
    from pathlib import Path

    from archsim.cli import main

    watts, tflops, memory = ONE_GPU[cuda_name]
    cluster = tmp_path / "one.toml"
    cluster.write_text(f'[cluster]\nname = "one"\n\n[[servers]]\ncount = 1\ngpus = 1\nintra_server_gbps = 128\n'
                       f'gpu = "{cuda_name}"\n')
    model = Path(__file__).resolve().parents[1] / "configs" / "transformers" / "gpt2.json"
    assert main(["train", str(model), "--cluster", str(cluster), "--global-batch", "8", "--micro-batch", "8",
                 "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert meta["gpu"] == gpu(cuda_name).name and meta["fits_memory"]
    assert meta["memory_capacity_gib"] == memory
    # one GPU at its board power for the iteration, and MFU against its own datasheet peak
    assert meta["energy_j"] == pytest.approx(watts * meta["iteration_seconds"], rel=1e-9)
    assert meta["mfu"] * tflops == pytest.approx(meta["tflops_per_gpu"], rel=1e-9)
