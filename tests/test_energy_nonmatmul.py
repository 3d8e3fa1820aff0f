"""Energy of a fused kernel's non-matmul work on array devices: FlashAttention-2's FP32 lane operations, exponentials
and its dropout mask's 32-bit integer instructions, each at a figure of Horowitz (ISSCC 2014, Fig. 1.1.9, 45 nm),
counted by hand from the kernel's tiles and Philox's definition; catalog GPUs keep board power × time."""

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archsim.api import train
from archsim.array.config import ArrayConfig
from archsim.devices.device_file import load_device
from archsim.energy.model import nonmatmul_picojoules, op_energy_columns
from archsim.energy.table import access_energies, load_table
from archsim.errors import InputError
from archsim.training.cluster_file import single_node
from archsim.training.energy import array_iteration_joules, device_array, device_energies, load_priced_device
from archsim.training.layer_ops import flash_attention_ops
from archsim.training.parallel import Parallelism
from archsim.workload.transformer import TransformerConfig

ROOT = Path(__file__).resolve().parents[1]
TPU = ROOT / "configs" / "devices" / "tpu_v4_like.toml"
# Horowitz ISSCC 2014, Fig. 1.1.9 (pJ): 32-bit FP mult and add, 32-bit int add and mult
FP32_MULT, FP32_ADD, INT32_ADD, INT32_MULT = 3.7, 0.9, 0.1, 3.1
FMA = FP32_MULT + FP32_ADD  # a lane operation (the shipped table's stated assumption)
EXP = 2 * FMA  # an exponential: the SFU's quadratic, two multiply-adds (the table's stated assumption)
NO_FUSED = (("exp_pj", 0.0), ("int_mult_pj", 0.0), ("int_pj", 0.0), ("lane_pj", 0.0))
# 4 GPT layers, h = 256 (4 heads of 64), s = 128; GPT's attention dropout on by default
GPT = TransformerConfig("gpt-small", "gpt", 4, 256, 4, 1024, 128, 1024, 4, True, 128)

# One head, s = 128, head dim 64, causal, dropout. Forward tiles 128 × 64 (flash_fwd_launch_template.h, hdim 64
# with dropout): one query block meets key blocks 0 and 1, 2 · 128 · 64 = 16,384 elements of P, 256 block rows,
# 128 query rows. exps: one a P element, one a block row (e^(m_old − m)), 2 a query row (1/ℓ, log ℓ) = 16,896;
# lane ops: 3 an element, hd + 1 a block row and a query row = 49,152 + 16,640 + 8,320 = 74,112. Dropout: 16,384
# / 16 = 1,024 Philox calls of 7 rounds, each round 2 wide multiplies, 2 xors (and one counter add a call):
# 29 + 32 mask instructions a call = 62,464, of them 1,024 · 14 = 14,336 multiplies. Backward tiles 128 × 128: one
# block, 16,384 elements: exps 16,384, lane ops 3 each = 49,152; 1,024 calls · (29 + 48) + 2 · 16,384 = 111,616
# integer instructions, 14,336 multiplies.
FORWARD = {"exps": 16_896, "lane_ops": 74_112, "int_ops": 62_464, "int_mults": 14_336}
BACKWARD = {"exps": 16_384, "lane_ops": 49_152, "int_ops": 111_616, "int_mults": 14_336}


def _hand_pj(work: dict[str, int]) -> float:
    """pJ of one op's non-matmul work at the paper's figures."""
    adds = work["int_ops"] - work["int_mults"]
    return work["lane_ops"] * FMA + work["exps"] * EXP + adds * INT32_ADD + work["int_mults"] * INT32_MULT


def _array() -> ArrayConfig:
    return ArrayConfig(rows=128, cols=128, dataflow="ws", element_bytes=2)


def test_the_shipped_figures_are_the_papers():
    energies = access_energies(_array())
    assert (energies.lane_pj, energies.int_pj, energies.int_mult_pj) == pytest.approx((FMA, INT32_ADD, INT32_MULT))
    assert energies.exp_pj == pytest.approx(EXP)
    assert access_energies(replace(_array(), element_bytes=4)).lane_pj == pytest.approx(FMA)  # FP32 at every dtype


def test_a_tiny_flash_kernel_by_hand():
    forward, backward = flash_attention_ops(128, 64, 1, 1, dropout=True)
    for op, work in ((forward, FORWARD), (backward, BACKWARD)):
        assert {key: getattr(op, key) for key in work} == work
        assert nonmatmul_picojoules([op], access_energies(_array())) == pytest.approx(_hand_pj(work), rel=1e-12)


def test_the_access_table_does_not_price_it_twice():
    """The per-op access energy (``archsim energy``'s columns) is the same with the non-matmul work or without it:
    the work is priced once, by :func:`nonmatmul_picojoules`."""
    forward, _ = flash_attention_ops(128, 64, 1, 1, dropout=True)
    bare = replace(forward, exps=0, lane_ops=0, int_ops=0, int_mults=0)
    energies = access_energies(_array())
    assert op_energy_columns([forward], _array(), energies)["energy_pj"][0] == \
        op_energy_columns([bare], _array(), energies)["energy_pj"][0]
    assert nonmatmul_picojoules([bare], energies) == 0.0


def test_an_iteration_adds_the_hand_counted_joules():
    """GPT-small, DP 4, 2 micro-batches of 1, no recompute: 4 devices × 2 micro-batches × 4 layers each run the
    forward and backward kernels of 4 heads (the tiny kernel above, per head)."""
    device = load_device(TPU)
    par = Parallelism(1, 1, 4, 8, 1, "none", attention="flash")
    added = array_iteration_joules(GPT, par, device, "bf16") - \
        array_iteration_joules(GPT, par, replace(device, energy_figures=NO_FUSED), "bf16")
    expected = 4 * 2 * 4 * 4 * (_hand_pj(FORWARD) + _hand_pj(BACKWARD)) * 1e-12
    assert added == pytest.approx(expected, rel=1e-9)


def test_dropout_costs_energy_on_an_array_device():
    """GPT-small with attention dropout spends more than without it, and its mask's integer work is part of it."""
    device = load_device(TPU)
    par = Parallelism(1, 1, 4, 8, 1, "none", attention="flash")
    plain = replace(GPT, attention_dropout=0.0)
    gap = array_iteration_joules(GPT, par, device, "bf16") - array_iteration_joules(plain, par, device, "bf16")
    masks = array_iteration_joules(GPT, par, device, "bf16") - \
        array_iteration_joules(GPT, par, replace(device, energy_figures=(("int_mult_pj", 0.0), ("int_pj", 0.0))), "bf16")
    assert masks > 0 and gap > 0


@settings(max_examples=40, deadline=None)
@given(s=st.integers(1, 2048), hd=st.sampled_from([32, 64, 80, 128, 256]), heads=st.integers(1, 8),
       causal=st.booleans())
def test_more_dropout_work_costs_more_energy(s, hd, heads, causal):
    """With dropout a kernel's non-matmul energy grows by its mask's integer work; a longer sequence costs more."""
    energies = access_energies(_array())
    plain = flash_attention_ops(s, hd, heads, heads, causal=causal)
    dropped = flash_attention_ops(s, hd, heads, heads, causal=causal, dropout=True)
    longer = flash_attention_ops(s + 1, hd, heads, heads, causal=causal, dropout=True)
    for op in dropped:
        assert 0 < 14 * op.int_ops / 109 <= op.int_mults <= 14 * op.int_ops / 61  # 14 multiplies a call, ≥ 61 ops
    assert nonmatmul_picojoules([dropped[1]], energies) > nonmatmul_picojoules([plain[1]], energies)
    assert nonmatmul_picojoules(longer, energies) >= nonmatmul_picojoules(dropped, energies)


def test_catalog_gpus_stay_at_board_power():
    """A100 SXM4 80GB: 400 W (NVIDIA's datasheet) × 4 GPUs × the iteration, with dropout or without."""
    for config in (GPT, replace(GPT, attention_dropout=0.0)):
        result, _ = train(config, cluster=single_node("a100-80gb", 4), global_batch=8, dp=4, recompute="none")
        assert result.energy_j == pytest.approx(400.0 * 4 * result.iteration_seconds, rel=1e-12)


def test_a_table_without_the_section_takes_the_shipped_figures(tmp_path):
    text = (ROOT / "configs" / "energy" / "horowitz45.toml").read_text()
    head = text[:text.index("[fused]")]
    (tmp_path / "old.toml").write_text(head)
    (tmp_path / "one.toml").write_text(head + "[fused]\nint_mult_pj = 1.5\n")
    assert load_table(tmp_path / "old.toml").fused == pytest.approx((FMA, 2.0, INT32_ADD, INT32_MULT))
    assert load_table(tmp_path / "one.toml").fused == pytest.approx((FMA, 2.0, INT32_ADD, 1.5))
    (tmp_path / "typo.toml").write_text(head + "[fused]\nint_mul_pj = 1.5\n")
    with pytest.raises(InputError, match="unknown key"):
        load_table(tmp_path / "typo.toml")


def test_a_device_file_overrides_a_figure(tmp_path):
    file = tmp_path / "chip.toml"
    file.write_text(TPU.read_text() + "\n[energy]\nint_mult_pj = 0.5\n")
    device = load_priced_device(file)
    energies = device_energies(device, device_array(device, "bf16"))
    assert (energies.int_mult_pj, energies.int_pj) == (0.5, pytest.approx(INT32_ADD))
