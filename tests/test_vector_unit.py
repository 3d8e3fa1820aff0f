"""A device file's vector unit (``[vector]``): where a fused kernel's exponentials and FP32 row work run, apart from
the ``lanes`` its fp32 GEMMs run on. Rates checked against hand products (cores × lanes × sublanes × clock), a file
without it against the rule it replaces (one lane per array row) and the figures documented before it."""

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archsim import links
from archsim.cli import main
from archsim.devices.device_file import load_device
from archsim.devices.nonmatmul import nonmatmul_rates
from archsim.training import fitted, flash_blocks
from archsim.training.iteration import clear_model_cache
from archsim.training.parallel import Parallelism
from archsim.training.run import train
from archsim.workload.transformer import TransformerConfig

ROOT = Path(__file__).resolve().parents[1]
DEVICES = ROOT / "configs" / "devices"
SHIPPED = (DEVICES / "tpu_v4_like.toml").read_text(encoding="utf-8")
# the shipped file's text with its [vector] table (the last one) removed: the file as it was before the key
WITHOUT = SHIPPED[:SHIPPED.index("[vector]")].rstrip("\n") + "\n"
CFG = (DEVICES / "scalesim_32x32_device.cfg").read_text(encoding="utf-8")
TINY = TransformerConfig("tiny", "gpt", layers=2, hidden=256, heads=4, vocab=1000, seq=512, ffn=1024, kv_heads=4)


def _device(tmp_path: Path, text: str, name: str = "chip.toml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return load_device(path)


def test_the_tpu_like_vpu_is_jaxs_table():
    """JAX's tpu_info for v4: 2 TensorCores × 128 lanes × 8 sublanes, at the MXUs' 1050 MHz, one result a clock."""
    assert nonmatmul_rates(load_device(DEVICES / "tpu_v4_like.toml")) == pytest.approx((2 * 128 * 8 * 1.05e9,) * 2)


def test_a_vector_unit_against_none(tmp_path):
    """Without [vector], one lane per array row (8 MXUs × 128 rows); with it, cores × lanes × sublanes × clock, each
    result rate its own; [compute] lanes stay the fp32 GEMMs' (their peak) and no longer run the non-matmul work."""
    bare = _device(tmp_path, WITHOUT)
    assert nonmatmul_rates(bare) == pytest.approx((8 * 128 * 1.05e9,) * 2)
    own = _device(tmp_path, WITHOUT + "[vector]\nlanes = 64\nsublanes = 4\ncores = 3\nclock_mhz = 940\n"
                  "exp_per_clock = 0.25\nfp32_per_clock = 2\n")
    assert nonmatmul_rates(own) == pytest.approx((3 * 64 * 4 * 0.94e9 * 0.25, 3 * 64 * 4 * 0.94e9 * 2))
    lanes = WITHOUT.replace("clock_mhz = 1050", "clock_mhz = 1050\nlanes = 16\nlane_rows = 4\nlane_cols = 8")
    with_lanes = _device(tmp_path, lanes)  # today's rule: the lanes run it, 16 × 4 × 8 at 1050 MHz
    assert nonmatmul_rates(with_lanes) == pytest.approx((16 * 4 * 8 * 1.05e9,) * 2)
    both = _device(tmp_path, lanes + "[vector]\nlanes = 128\n")  # cores: the arrays' (8 / 4 = 2)
    assert nonmatmul_rates(both) == pytest.approx((2 * 128 * 1.05e9,) * 2)
    assert both.peak("fp32") == with_lanes.peak("fp32") == pytest.approx(2 * 16 * 4 * 8 * 1.05e9)


def test_a_cfg_states_it_as_a_toml_does(tmp_path):
    """A .cfg device file's [vector], the same keys: 16 arrays (one per core) × 64 lanes × 2 sublanes at 500 MHz."""
    own = _device(tmp_path, CFG + "\n[vector]\nlanes = 64\nsublanes = 2\nclock_mhz = 500\n", "chip.cfg")
    assert nonmatmul_rates(own) == pytest.approx((16 * 64 * 2 * 0.5e9,) * 2)
    assert nonmatmul_rates(load_device(DEVICES / "scalesim_32x32_device.cfg")) == pytest.approx((16 * 32 * 1e9,) * 2)


def _meta(capsys, tmp_path: Path, text: str, *extra: str) -> dict:
    (tmp_path / "chip.toml").write_text(text, encoding="utf-8")
    cluster = tmp_path / "c.toml"
    cluster.write_text('[cluster]\nname = "x"\n[[servers]]\ngpus = 16\nintra_server_gbps = 4800\n'
                       'device = "chip.toml"\n', encoding="utf-8")
    assert main(["train", str(ROOT / "configs/transformers/gpt3_1.3b.toml"), "--cluster", str(cluster), *extra,
                 "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["meta"]


def test_a_file_without_it_keeps_its_figures(capsys, tmp_path):
    """The shipped file's text without [vector] trains as a file stating one lane per array row (8 cores of 128
    lanes, the fallback written out), to the second and joule."""
    args = ("--tp", "2", "--pp", "2", "--global-batch", "8", "--dtype", "bf16")
    bare = _meta(capsys, tmp_path, WITHOUT, *args)
    stated = _meta(capsys, tmp_path, WITHOUT + "[vector]\ncores = 8\nlanes = 128\n", *args)
    assert bare.pop("assumed_vector_lanes") == 8 * 128  # the assumption recorded, only where the file states none
    assert bare == stated
    assert _meta(capsys, tmp_path, SHIPPED, *args)["iteration_seconds"] < bare["iteration_seconds"]


@pytest.mark.long
def test_the_documented_figures_before_the_vector_unit(capsys, tmp_path, monkeypatch):
    """GPT-3 1.3B on 16 chips, DP 16, bf16 (docs/training.md until 2026-12-03): 3.592 s, 1.86e+04 J, 25.84 GiB,
    when a device file's links ran NVIDIA's NCCL fit (``efficiency = "nccl"`` since 2026-12-04), attention
    dropout's mask was not priced (``flash_blocks.dropout_int_ops`` since 2026-12-04, set to none here) and partial
    sums moved at the operands' 16 bits (at the 32-bit accumulator's since 2026-12-05: ``[energy] psum_register_pj``
    set to the default table's 16-bit register word here, 0.009 pJ per bit × 16)."""
    nccl = WITHOUT.replace("[links]\n", '[links]\nefficiency = "nccl"\n') + "[energy]\npsum_register_pj = 0.144\n"
    assert nccl != WITHOUT
    monkeypatch.setattr(flash_blocks, "dropout_int_ops", lambda elements, backward: 0)
    clear_model_cache()
    try:
        meta = _meta(capsys, tmp_path, nccl, "--dp", "16", "--global-batch", "512", "--recompute", "none",
                     "--dtype", "bf16")
    finally:
        clear_model_cache()
    assert round(meta["iteration_seconds"], 3) == 3.592 and round(meta["peak_memory_gib"], 2) == 25.84
    assert f"{meta['energy_j']:.3g}" == "1.86e+04"


@pytest.mark.parametrize("key, value", [("lanes", "0"), ("lanes", "-8"), ("lanes", "2.5"), ("sublanes", "0"),
                                        ("sublanes", "-1"), ("sublanes", "1.5"), ("cores", "0"), ("cores", "3.5"),
                                        ("clock_mhz", "0"), ("clock_mhz", "-1"), ("exp_per_clock", "0"),
                                        ("fp32_per_clock", "-2"), ("lanes", '"128"')])
@pytest.mark.parametrize("suffix", [".toml", ".cfg"])
def test_bad_values_are_one_line_at_their_line(tmp_path, capsys, key, value, suffix):
    if suffix == ".cfg" and value.startswith('"'):
        value = "eight"  # a .cfg's values are text: a word, not a quoted number
    good = {"lanes": "128", "sublanes": "8", "cores": "2", "clock_mhz": "1050", "exp_per_clock": "1",
            "fp32_per_clock": "1"}
    good[key] = value
    section = "[vector]\n" + "".join(f"{k} = {v}\n" for k, v in good.items())
    text = (WITHOUT if suffix == ".toml" else CFG + "\n") + section
    (tmp_path / f"chip{suffix}").write_text(text, encoding="utf-8")
    line = 1 + next(n for n, row in enumerate(text.splitlines()) if row.startswith(f"{key} = {value}")
                    and n > text.splitlines().index("[vector]"))
    cluster = tmp_path / "c.toml"
    cluster.write_text('[cluster]\nname = "x"\n[[servers]]\ngpus = 2\nintra_server_gbps = 100\n'
                       f'device = "chip{suffix}"\n')
    assert main(["train", str(ROOT / "configs/transformers/gpt3_1.3b.toml"), "--cluster", str(cluster),
                 "--global-batch", "4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"chip{suffix}, line {line}, field 'vector.{key}'" in err, err


def test_a_vector_unit_without_lanes_is_refused(tmp_path):
    with pytest.raises(Exception, match=re.escape("field 'vector.lanes': missing key in [vector]")):
        _device(tmp_path, WITHOUT + "[vector]\nsublanes = 8\n")


def _iteration(device) -> float:
    from archsim.training.machine import Links, Machine

    link = links.nvlink(device.nvlink_bytes_per_s)
    machine = Machine(device, device.efficiency or fitted.kernels(device.name), Links(link, link, link), dtype="bf16")
    return train(TINY, Parallelism(1, 1, 1, 2, 1, "none", attention="flash"), machine).iteration_seconds


@pytest.mark.long
@settings(max_examples=15, deadline=None)
@given(lanes=st.integers(1, 256), sublanes=st.integers(1, 8), wider=st.integers(1, 4), exp=st.floats(0.05, 4))
def test_a_wider_vector_unit_is_never_slower(tmp_path_factory, lanes, sublanes, wider, exp):
    tmp = tmp_path_factory.mktemp("v")
    narrow, wide = (_device(tmp, WITHOUT + f"[vector]\nlanes = {lanes * k}\nsublanes = {sublanes}\n"
                                           f"exp_per_clock = {exp}\n") for k in (1, wider))
    assert _iteration(wide) <= _iteration(narrow)
    if wider > 1:  # FlashAttention's non-matmul work is priced on it: the narrow unit is the slower
        assert _iteration(wide) < _iteration(narrow)
