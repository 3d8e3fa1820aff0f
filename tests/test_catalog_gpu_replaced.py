"""A catalog GPU with one figure changed by ``dataclasses.replace`` is still that chip (``Device.catalog``, which
replace keeps; :func:`archsim.devices.catalog.chip_of`): its architecture's mechanisms (the tensor cores' power cap,
the special-function units, PyTorch's kernels, the link's name, its price) stay, and the changed figure takes effect.

Failed before: the chip was looked up by the whole device's value, so an H100 with more HBM bandwidth was no H100 —
its flash attention's exponentials ran on a device file's "one lane per array row" (74.0 µs a forward, not the
H100's 84.2), its fp32 LayerNorm paid a device file's launch, its link was labelled a "fabric", and it had no
price."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import pytest

import archsim
from archsim.devices.catalog import GPUS, KNOWN_GPUS, chip_of
from archsim.devices.device_file import load_device
from archsim.devices.gpu_lookup import CHIP_OF_BOARD
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.rates import PRICE_PER_GPU_HOUR, dollars_per_hour

ROOT = Path(__file__).resolve().parents[1]
H100 = ROOT / "configs" / "clusters" / "h100_1gpu.toml"
GPT = ROOT / "configs" / "transformers" / "gpt3_1.3b.toml"
GEMMS = ("qkv", "proj", "fc1", "fc2", "lm_head", "flash_attention")  # compute-bound at 3.35 TB/s already
MEMORY_BOUND = ("norm1", "residual1", "bias_gelu", "final_norm", "cross_entropy")


def _rows(hbm_factor: float, **keywords) -> tuple[dict, dict]:
    """(row seconds by (piece, name, op), meta) of one GPT-3 1.3B iteration on one H100 whose HBM bandwidth is
    ``hbm_factor`` × the catalog's, the device given through the API."""
    cluster = load_gpu_cluster(H100)
    gpu = dataclasses.replace(cluster.gpu, hbm_bytes_per_s=hbm_factor * cluster.gpu.hbm_bytes_per_s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result, _ = archsim.train(GPT, cluster=dataclasses.replace(cluster, gpu=gpu, servers=(gpu,)), global_batch=1,
                                  **keywords)
    document = result.to_dict()
    return {(r["piece"], r["name"], r["op"]): r["seconds"] for r in document["rows"]}, document["meta"]


def test_every_catalog_gpu_is_its_tables_chip():
    """As built, a catalog device's chip is its table row's, unchanged (the figures read back from the device are
    the row's own)."""
    for key, device in GPUS.items():
        assert device.catalog == key and chip_of(device) == KNOWN_GPUS[CHIP_OF_BOARD[key]], key


def test_more_hbm_bandwidth_speeds_memory_bound_ops_alone():
    """t(B) = c + bytes / (η · B) for a memory-bound op (its launch c): B, 2B, 4B give t(B) − t(2B) = 2 · (t(2B) −
    t(4B)), and every such op is faster; the compute-bound GEMMs (and flash attention, matmul plus its
    exponentials) keep the catalog H100's seconds exactly, and the link stays NVLink."""
    (one, meta), (two, _), (four, _) = (_rows(f) for f in (1, 2, 4))
    assert one == _rows(1.0)[0]
    for name in GEMMS:
        for key in [k for k in one if k[1] == name]:
            assert two[key] == four[key] == one[key], key
    for name in MEMORY_BOUND:
        for key in [k for k in one if k[1] == name]:
            assert one[key] > two[key] > four[key], key
            assert one[key] - two[key] == pytest.approx(2 * (two[key] - four[key]), rel=1e-9), key
    assert meta["intra_server"]["link"] == "nvlink"


def test_the_changed_figure_reaches_the_chips_own_kernels():
    """fp32 in eager PyTorch runs a catalog GPU's own PyTorch kernels, queued (no launch): a LayerNorm's time is
    its bytes at the HBM bandwidth, so twice the bandwidth halves it exactly."""
    one, _ = _rows(1, dtype="fp32", implementation="pytorch-eager", attention="standard")
    two, _ = _rows(2, dtype="fp32", implementation="pytorch-eager", attention="standard")
    norms = [k for k in one if k[1] in ("ln_1", "ln_2") and k[2] == "F"]
    assert norms and all(two[k] == pytest.approx(one[k] / 2, rel=1e-12) for k in norms)


def test_a_replaced_gpu_keeps_its_price_and_a_device_file_gets_none():
    """The board's price follows the chip (a changed figure is the user's to price, ``price_per_gpu_hour``); the
    A100 written as a device file, of the catalog's very name, is no catalog board."""
    cluster = load_gpu_cluster(H100)
    larger = dataclasses.replace(cluster.gpu, memory_bytes=2 * cluster.gpu.memory_bytes)
    replaced = dataclasses.replace(cluster, gpu=larger, servers=(larger,))
    assert dollars_per_hour(replaced, 1) == pytest.approx(PRICE_PER_GPU_HOUR["h100-80gb-sxm"])
    written = load_device(ROOT / "configs" / "devices" / "a100_80gb_as_arrays.toml")
    assert written.catalog is None and chip_of(written) is None
