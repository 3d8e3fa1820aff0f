"""Link energy in train's energy: a device file's ``[links] pj_per_bit`` × 8 × the bytes each chip sends on its links
(the collectives' own wire bytes, archsim.collective_bytes; archsim.training.link_energy), the ``links`` part, absent
without the key. Every test here failed before the key existed (a device file refused ``pj_per_bit`` as unknown)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from device_files import scalesim_chip_cfg
from test_docs import ROOT
from test_robustness import write

import archsim
from archsim.cli import main
from archsim.collective_bytes import sent_bytes
from archsim.collectives import LinkClass
from archsim.devices.device_file import load_device

MODEL = str(ROOT / "configs" / "transformers" / "gpt2.json")
DEVICE_TEXT = (ROOT / "configs" / "devices" / "tpu_v4_like.toml").read_text(encoding="utf-8")
PJ = 1.3  # pJ/bit: NVLink-C2C's stated figure (docs/formats.md)
GPT2_PARAMETERS = 50304 * 768 + 1024 * 768 + 12 * (12 * 768**2 + 13 * 768) + 2 * 768  # vocab padded to 128s
FP32 = 4  # bf16's gradient buffer is fp32 (Megatron reduces in it)


def cluster(tmp_path: Path, pj: float | None, name: str = "chip", chips: int = 4) -> str:
    """tpu_v4_like.toml stating ``pj`` pJ/bit on its links (None: as shipped) on a one-server cluster; its path."""
    text = DEVICE_TEXT if pj is None else DEVICE_TEXT.replace("[links]\n", f"[links]\npj_per_bit = {pj}\n", 1)
    write(tmp_path / f"{name}.toml", text)
    return str(write(tmp_path / f"{name}_cluster.toml", f'[cluster]\nname = "c"\n\n[[servers]]\ncount = 1\n'
                                                         f'gpus = {chips}\nintra_server_gbps = 4800\n'
                                                         f'device = "{name}.toml"\n'))


def run(tmp_path: Path, pj: float | None, name: str = "chip", **layout):
    """``archsim.train`` of GPT-2 on as many of the chip (:func:`cluster`) as ``layout`` lays out; its result."""
    keywords = {"tp": 1, "pp": 1, "dp": 2, "global_batch": 4, "micro_batch": 2, "dtype": "bf16",
                "attention": "standard"} | layout
    chips = keywords["tp"] * keywords["pp"] * keywords["dp"] * keywords.get("cp", 1)
    return archsim.train(MODEL, cluster=cluster(tmp_path, pj, name, chips), **keywords)[0]


def test_dp_allreduce_by_hand(tmp_path):
    """2 chips, DP 2: each sends its ring all-reduce's 2(2 − 1)/2 · S = S, S = GPT-2's parameters × 4 bytes; no TP,
    no pipeline: links = 2 chips × S × 8 bits × 1.3 pJ."""
    result = run(tmp_path, PJ)
    assert result.energy_breakdown_j["links"] == pytest.approx(2 * GPT2_PARAMETERS * FP32 * 8 * PJ * 1e-12, rel=1e-12)


def test_pipeline_hops_and_tied_embedding_by_hand(tmp_path):
    """2 chips, PP 2, 2 micro-batches of 2 × 1024 tokens: each rank sends one hop per micro-batch (rank 0 the
    activation, rank 1 its gradient: 1024 · 2 · 768 · 2 bytes), and both ends all-reduce the tied token table's
    gradient (50304 · 768 · 4 bytes, a ring of 2: S each)."""
    result = run(tmp_path, PJ, pp=2, dp=1)
    per_chip = 2 * 1024 * 2 * 768 * 2 + 50304 * 768 * FP32
    assert result.energy_breakdown_j["links"] == pytest.approx(2 * per_chip * 8 * PJ * 1e-12, rel=1e-12)


def test_tensor_parallel_collectives_by_hand(tmp_path):
    """2 chips, TP 2 without sequence parallelism, one micro-batch of 2 × 1024 tokens: each of 12 layers all-reduces
    A = 2048 · 768 · 2 bytes twice each way, the embedding once forward, the head its logits' gradient once back and
    the cross-entropy's max, sum and target (2048 · 4 bytes each) forward; a ring of 2 sends S per chip. Under full
    recompute (the default) each layer's two forward all-reduces run again."""
    activation = 2048 * 768 * 2
    per_chip = 12 * 4 * activation + activation + activation + 3 * 2048 * 4
    for recompute, again in (("none", 0), ("full", 12 * 2 * activation)):
        result = run(tmp_path, PJ, recompute, tp=2, dp=1, global_batch=2, sequence_parallel=False, recompute=recompute)
        assert result.energy_breakdown_j["links"] == pytest.approx(2 * (per_chip + again) * 8 * PJ * 1e-12, rel=1e-12)


def test_parts_add_to_the_total_and_nothing_else_moves(tmp_path):
    """With the key the parts still sum to energy_j, which grows by the links part alone; without it (or at 0)
    no ``links`` part and every figure as before."""
    bare, zero, priced = (run(tmp_path, pj, name, tp=2, pp=2, dp=2, global_batch=8)
                          for pj, name in ((None, "bare"), (0, "zero"), (PJ, "priced")))
    assert "links" not in bare.energy_breakdown_j and "links" not in zero.energy_breakdown_j
    assert zero.energy_j == bare.energy_j and zero.energy_breakdown_j == bare.energy_breakdown_j
    assert sum(priced.energy_breakdown_j.values()) == pytest.approx(priced.energy_j, rel=1e-12)
    assert priced.energy_breakdown_j["links"] > 0
    assert priced.energy_j == pytest.approx(bare.energy_j + priced.energy_breakdown_j["links"], rel=1e-12)
    assert priced.iteration_seconds == bare.iteration_seconds


def test_energy_line_names_links_only_with_the_key(tmp_path, capsys):
    argv = ["train", MODEL, "--tp", "2", "--pp", "2", "--dp", "1", "--global-batch", "8", "--cluster"]
    lines = []
    for pj, name in ((None, "bare"), (PJ, "priced")):
        assert main([*argv, cluster(tmp_path, pj, name)]) == 0
        lines.append(next(line for line in capsys.readouterr().out.splitlines() if line.startswith("energy:")))
    assert "links" not in lines[0] and "links" in lines[1]
    assert main([*argv, cluster(tmp_path, PJ, "json"), "--format", "json"]) == 0
    assert "links" in json.loads(capsys.readouterr().out)["meta"]["energy_breakdown_j"]


def test_cfg_device_file_reads_the_key(tmp_path):
    path = write(tmp_path / "chip.cfg", scalesim_chip_cfg() + "pj_per_bit = 0.54\n")
    assert load_device(path).link_pj_per_bit == 0.54


def test_refused_on_a_tiles_device_and_below_zero(tmp_path):
    tiles = DEVICE_TEXT.replace('gemm = "arrays"', 'gemm = "tiles"\nboard_watts = 200', 1)
    path = write(tmp_path / "tiles.toml", tiles.replace("[links]\n", "[links]\npj_per_bit = 1\n", 1))
    with pytest.raises(archsim.InputError, match="board power × time, which already counts its links"):
        load_device(path)
    negative = write(tmp_path / "neg.toml", DEVICE_TEXT.replace("[links]\n", "[links]\npj_per_bit = -1\n", 1))
    with pytest.raises(archsim.InputError, match="pj_per_bit"):
        load_device(negative)


def test_cp_layout_priced_with_its_exchange_and_the_time_unchanged(tmp_path):
    """CP's K/V exchange is counted (tests/test_link_energy_cp_fsdp_mtp.py; until 2026-12-05 its energy was None):
    the key adds the links part alone, the time as without it."""
    priced, bare = (run(tmp_path, pj, name, dp=1, cp=2, global_batch=2, micro_batch=1, attention="flash")
                    for pj, name in ((PJ, "priced"), (None, "bare")))
    assert priced.energy_j == pytest.approx(bare.energy_j + priced.energy_breakdown_j["links"], rel=1e-12)
    assert priced.iteration_seconds == bare.iteration_seconds


LINK = LinkClass("test", bandwidth=1e11, efficiency=1.0, alpha_s=1e-5, launch_s=0.0)


@pytest.mark.parametrize(("kind", "nbytes", "n", "link", "expected"), [
    ("all-reduce", 1e9, 4, LINK, 1.5e9),  # ring: 2(n − 1)/n · S
    ("all-reduce", 8.0, 8, LINK, 16.0),  # a small buffer on the tree: 2 · S
    ("all-gather", 1e9, 4, LINK, 0.75e9),
    ("reduce-scatter", 1e9, 4, LINK, 0.75e9),
    ("all-to-all", 1e9, 4, LINK, 0.75e9),
    ("p2p", 1e9, 2, LINK, 1e9),
    ("all-reduce", 1e9, 1, LINK, 0.0),
    ("all-to-all", 64.0, 16, LinkClass("torus", 1e11, 1.0, 1e-6, 0.0, torus=(4, 4)), 128.0),  # 2 rings: S·⌊16/4⌋/4
    ("all-reduce", 64.0, 16, LinkClass("torus", 1e11, 1.0, 1e-6, 0.0, torus=(4, 4)), 120.0),  # 2(n − 1)/n · S
])
def test_sent_bytes_by_algorithm(kind, nbytes, n, link, expected):
    assert sent_bytes(kind, nbytes, n, link) == pytest.approx(expected, rel=1e-12)
