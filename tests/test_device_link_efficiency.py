"""A device file's fabric runs at the efficiency the file states (docs/formats.md, "Device files": ``[links]
efficiency``, default 1), not at NVIDIA's NCCL fit: a designer's chip's all-reduce over n chips of a stated
``intra_gbps`` B is the ring's 2(n − 1)/n · S / (η · B) plus its 2(n − 1) steps' latency, counted here by hand, with
no NCCL launch (52.7 µs) or copy cost (1.80 ps a byte). Until 2026-12-04 the A100 fit applied and the TPU-v4-like
slice's DP all-reduce took 1.29× the ideal ring of its 300 GB/s ICI. ``efficiency = "nccl"`` keeps the fit, as the
catalog A100 written as a device file does (hash-identical to the catalog GPU's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from archsim import links
from archsim.collectives import collective_seconds
from archsim.devices.device_file import load_device
from archsim.devices.gpu_lookup import gpu
from archsim.errors import InputError
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.parallel import Parallelism

ROOT = Path(__file__).resolve().parents[1]
DEVICES = ROOT / "configs" / "devices"
TPU = (DEVICES / "tpu_v4_like.toml").read_text(encoding="utf-8")
CFG = (DEVICES / "scalesim_32x32_device.cfg").read_text(encoding="utf-8")
GIB = 2**30


def _slice(folder: Path, added: str, chips: int = 16) -> Path:
    """One server of ``chips`` TPU-like chips, ``added`` written under the chip file's ``[links]``."""
    (folder / "chip.toml").write_text(TPU.replace("intra_gbps = 300", f"intra_gbps = 300\n{added}"), encoding="utf-8")
    cluster = folder / "slice.toml"
    cluster.write_text(f'[cluster]\nname = "s"\n[[servers]]\ncount = 1\ngpus = {chips}\ndevice = "chip.toml"\n',
                       encoding="utf-8")
    return cluster


def _dp_all_reduce(cluster: Path, nbytes: float, dp: int = 16) -> float:
    link = load_gpu_cluster(cluster).machine(Parallelism(dp=dp, global_batch=dp)).links.dp
    return float(collective_seconds("all-reduce", nbytes, dp, link))


@pytest.mark.parametrize("added, eta, step", [
    ("", 1.0, 3.15e-6),  # nothing stated: the ideal ring, each step the documented default α
    ("efficiency = 0.8", 0.8, 3.15e-6),
    ("efficiency = 0.9\nintra_latency_us = 2", 0.9, 2e-6),
])
def test_a_dp_all_reduce_is_the_ring_at_the_stated_efficiency(tmp_path, added, eta, step):
    """1 GiB over 16 chips of 300 GB/s: 2 · 15/16 · 2³⁰ / (η · 300 × 10⁹) + 30 steps (the ring: NCCL's tree's
    2 · 2³⁰ bytes are slower at this size)."""
    by_hand = 2 * 15 / 16 * GIB / (eta * 300e9) + 2 * 15 * step
    assert _dp_all_reduce(_slice(tmp_path, added), GIB) == pytest.approx(by_hand, rel=1e-12)


def test_the_shipped_tpu_slice_is_at_its_ideal_ring(tmp_path):
    """configs/clusters/tpu_v4_like_slice.toml, its device stating no efficiency: 5 GiB of gradients (4 bytes for
    each of 1.3 × 10⁹ parameters) at 300 GB/s and 3.15 µs a step; with the NCCL fit it is 1.29× that."""
    shipped = ROOT / "configs" / "clusters" / "tpu_v4_like_slice.toml"
    nbytes = 5 * GIB
    ideal = 2 * 15 / 16 * nbytes / 300e9 + 30 * 3.15e-6
    assert _dp_all_reduce(shipped, nbytes) == pytest.approx(ideal, rel=1e-12)
    fitted = _dp_all_reduce(_slice(tmp_path, 'efficiency = "nccl"'), nbytes)
    assert fitted / ideal == pytest.approx(1.29, abs=0.01)  # η 0.998, γ 1.80 ps/byte, α₀ 52.7 µs


def test_nccl_names_the_catalog_fit():
    """The A100 written as a device file states ``efficiency = "nccl"``: its NVLink class is the catalog A100's."""
    written = load_device(DEVICES / "a100_80gb_as_arrays.toml")
    assert written.link_efficiency is None
    group = tuple(range(8))
    assert links.nvlink_group(written, group) == links.nvlink_group(gpu("a100-80gb"), group)
    assert links.nvlink_group(gpu("a100-80gb"), group).launch_s == 52.7e-6  # the fit, not the ideal


def test_a_cfg_device_states_it_as_text(tmp_path):
    """A SCALE-Sim .cfg's ``[links]`` values are text: a number read as one, ``nccl`` as the fit."""
    for text, expected in (("0.75", 0.75), ("nccl", None)):
        path = tmp_path / f"chip_{text}.cfg"
        path.write_text(CFG.replace("[links]\n", f"[links]\nefficiency = {text}\n"), encoding="utf-8")
        assert load_device(path).link_efficiency == expected
    assert "[links]\n" in CFG


@pytest.mark.parametrize("value, shown", [("0", "0"), ("1.5", "1.5"), ('"fast"', "fast"), ('"0.9"', "0.9"),
                                          ("true", "true")])
def test_a_bad_efficiency_is_refused_naming_the_key(tmp_path, value, shown):
    path = tmp_path / "chip.toml"
    path.write_text(TPU.replace("intra_gbps = 300", f"intra_gbps = 300\nefficiency = {value}"), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_device(path)
    message = str(caught.value)
    assert "links.efficiency" in message and shown in message.lower() and "\n" not in message
    assert '"nccl"' in message or "fraction" in message
