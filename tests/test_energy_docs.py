"""What the docs say of energy and SRAM sizes, checked against what the commands give.

* docs/formats.md: every ``sram_kb`` column (a design sweep's axis and rows, ``energy``'s meta) is KiB, 1,024 bytes.
* docs/own-model.md: ``archsim energy`` and ``archsim train`` differ on one chip because ``train`` adds the optimizer
  step's HBM traffic and its memory-bound kernels' HBM words to its DRAM part; the example's figures are the
  commands' own, and the optimizer's share is the hand count parameters × bytes per parameter ÷ bytes a word × pJ a
  word."""

from __future__ import annotations

import warnings

import pytest
from test_docs import ROOT

import archsim

MODEL = str(ROOT / "configs" / "transformers" / "gpt2.json")
DEVICE = str(ROOT / "configs" / "devices" / "scalesim_32x32_device.cfg")
CLUSTER = str(ROOT / "configs" / "clusters" / "scalesim_32x32_device.toml")
GPT2_PARAMETERS = 124_439_808  # GPT-2 small: Hugging Face's count, tied embeddings
# per parameter, Megatron-LM's fp16 Adam step: fp32 master, m and v read and written (24), the fp16 weight written (2),
# the fp16 gradient read by Adam, the norm and the loss scaler (3 × 2)
ADAM_FP16_BYTES = 24 + 2 + 3 * 2
FP16_WORD = 2
DRAM_PJ_PER_WORD = 20.3125 * 16  # configs/energy/horowitz45.toml's [dram] pj_per_bit (1,300 pJ / 64 bits), 16 bits


def _text(name: str) -> str:
    return (ROOT / "docs" / name).read_text(encoding="utf-8")


def test_every_sram_kb_column_is_stated_as_kib_of_1024_bytes():
    text = _text("formats.md")
    rows = [line for line in text.splitlines() if line.startswith("| `sram_kb` |")]
    assert len(rows) == 2 and all("KiB (1,024 bytes)" in row for row in rows)
    design = next(line for line in text.splitlines() if "Design sweeps add the design columns" in line)
    assert "`sram_kb` is each of the three SRAMs' size in KiB, 1,024 bytes" in design


@pytest.fixture(scope="module")
def both():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # train's note: 1 of the cluster's 8 chips used
        energy = archsim.iteration_energy(MODEL, config=DEVICE, dtype="fp16", batch=8).to_dict()
        trained, _ = archsim.train(MODEL, cluster=CLUSTER, tp=1, pp=1, dp=1, global_batch=8, micro_batch=8,
                                   dtype="fp16", recompute="none", attention="standard")
    return energy, trained.to_dict()["meta"]


def test_the_documented_gap_is_the_optimizer_and_the_memory_bound_words(both):
    energy, meta = both
    total = energy["rows"][-1]
    assert total["op"] == "TOTAL"
    parts = meta["energy_breakdown_j"]
    sram = sum(v for k, v in total.items() if "_sram_" in k and k.endswith("_pj")) * 1e-12
    for mine, theirs in ((parts["mac"], total["mac_pj"] * 1e-12), (parts["register"], total["register_pj"] * 1e-12),
                         (parts["sram"], sram)):
        assert mine == pytest.approx(theirs, rel=3e-4)  # the same GEMMs: within 0.03%
    dram_gap = parts["dram"] - (total["dram_read_pj"] + total["dram_write_pj"]) * 1e-12
    optimizer = GPT2_PARAMETERS * ADAM_FP16_BYTES / FP16_WORD * DRAM_PJ_PER_WORD * 1e-12
    memory_bound = dram_gap - optimizer
    assert memory_bound > 5 * optimizer > 0  # the memory-bound kernels' HBM words dominate the gap here
    gap = meta["energy_j"] - total["energy_pj"] * 1e-12
    assert gap - dram_gap == pytest.approx(0.0, abs=0.02)  # all but 0.01 J of the gap is DRAM

    page = _text("own-model.md")
    section = page[page.index("**Why `archsim energy` and `archsim train` differ on one chip.**"):]
    section = section[:section.index("\n## ")]
    assert f"`energy` gives {total['energy_pj'] * 1e-12:.2f} J" in section
    assert f"`train` {meta['energy_j']:.2f} J" in section
    assert f"{optimizer:.2f} J of optimizer step" in section and f"{memory_bound:.2f} J of memory-bound" in section
    assert f"{GPT2_PARAMETERS:,} parameters" in section
