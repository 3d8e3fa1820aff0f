"""Devices for training: catalog GPUs and device files as one description (archsim.devices.device)."""

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from archsim import links
from archsim.cli import main
from archsim.devices.device import Arrays, catalog_device
from archsim.devices.device_file import load_device
from archsim.devices.kernel_constants import one_fraction
from archsim.devices.kernel_ops import array_gemm_seconds
from archsim.training import fitted
from archsim.training.parallel import Parallelism
from archsim.training.run import train
from archsim.workload.transformer import TransformerConfig
from tests.test_energy import ws_gemm_pj

ROOT = Path(__file__).resolve().parents[1]
DEVICES = ROOT / "configs" / "devices"
CLUSTERS = ROOT / "configs" / "clusters"
GPT = ROOT / "configs" / "transformers" / "gpt_1024h_24l.json"
NO_OVERHEAD = one_fraction(gemm=1.0, memory=1.0, launch_s=0.0)


def test_the_a100_device_file_is_the_catalog_a100():
    """The file states the catalog's figures and the fitted kernels: one device, not a look-alike."""
    written, catalog = load_device(DEVICES / "a100_80gb_as_arrays.toml"), catalog_device("a100-80gb")
    assert written.efficiency == fitted.kernels(catalog.name) and written.board_watts == 400  # the A100 SXM4's TDP
    assert written.catalog is None  # a file is no catalog board (archsim.devices.catalog.chip_of)
    assert replace(written, efficiency=None, catalog=catalog.catalog) == catalog


# the A100 file trains to the catalog A100's seconds, forward, backward, breakdown, memory and ops alike, under
# standard and flash attention: tests/test_device_file_flash.py


def _array_device(count: int, rows: int, cols: int, dataflow: str, hbm: float = 1e15):
    tpu = load_device(DEVICES / "tpu_v4_like.toml")
    return replace(tpu, arrays=Arrays(count, rows, cols, dataflow, 1e9, 1), hbm_bytes_per_s=hbm)


@pytest.mark.parametrize("m, k, n, count, arrays, dataflow, cycles", [
    # SCALE-Sim's per-fold cycles (archsim.array.analytic's table): ws 2R + C + M − 2 over
    # ⌈K/R⌉·⌈N/C⌉ folds; os R + C + K − 2 over ⌈M/R⌉·⌈N/C⌉ folds; waves = ⌈folds · count / arrays⌉,
    # counted as SCALE-Sim counts them (the last cycle's index): one less per GEMM run on the busiest
    # array, here one run each (no array runs more than one GEMM's folds).
    # 4 folds on 8 arrays: M split in two (each array of a pair streams 128 of the rows), 8 folds in one wave
    (256, 256, 256, 1, 8, "ws", 1 * (2 * 128 + 128 + 128 - 2) - 1),
    (256, 256, 256, 1, 2, "ws", 2 * (2 * 128 + 128 + 256 - 2) - 1),   # 4 folds on 2 arrays: two waves
    (256, 256, 256, 3, 8, "ws", 2 * (2 * 128 + 128 + 256 - 2) - 1),   # 12 folds on 8 arrays
    (100, 300, 129, 1, 1, "os", 2 * 1 * (128 + 128 + 300 - 2) - 1),   # ⌈100/128⌉·⌈129/128⌉ = 2 folds
])
def test_a_gemm_on_arrays_is_scalesim_folds_in_waves(m, k, n, count, arrays, dataflow, cycles):
    device = _array_device(arrays, 128, 128, dataflow)
    assert float(array_gemm_seconds(m, k, n, count, device, NO_OVERHEAD)) == pytest.approx(cycles / 1e9, rel=1e-12)


def test_split_k_is_an_opt_in_mechanism_of_an_arrays_device(tmp_path):
    """One 2×2 output tile with K = 8 on four os arrays of 2×2 (by hand, SCALE-Sim's os fold is
    R + C + K − 2 cycles): whole, 2 + 2 + 8 − 2 = 10 cycles; cut into s = 3 sub-GEMMs of K = 3, one
    wave of 2 + 2 + 3 − 2 = 5 cycles plus ⌈2 · 4 / (4 · 2)⌉ = 1 cycle of adds = 6 cycles; each counted
    as SCALE-Sim counts a run, one less (9 and 5). Off unless the
    device file says ``split_k = true``; on a ws device it changes nothing (its folds tile K; a ws GEMM of fewer
    folds than arrays splits its streamed rows whether it is on or not, tests/test_streamed_split.py)."""
    assert load_device(DEVICES / "tpu_v4_like.toml").split_k is False
    (tmp_path / "chip.toml").write_text(GOOD_TOML.replace('gemm = "arrays"', 'gemm = "arrays"\nsplit_k = true'))
    assert load_device(tmp_path / "chip.toml").split_k is True
    device = _array_device(4, 2, 2, "os")
    assert float(array_gemm_seconds(2, 8, 2, 1, device, NO_OVERHEAD)) == pytest.approx(9e-9, rel=1e-12)
    split = replace(device, split_k=True)
    assert float(array_gemm_seconds(2, 8, 2, 1, split, NO_OVERHEAD)) == pytest.approx(5e-9, rel=1e-12)
    ws = replace(_array_device(4, 2, 2, "ws"), split_k=True)
    assert array_gemm_seconds(2, 8, 2, 1, ws, NO_OVERHEAD) == array_gemm_seconds(2, 8, 2, 1, replace(ws, split_k=False),
                                                                                NO_OVERHEAD)


def test_a_memory_bound_gemm_runs_at_hbm_bandwidth():
    device = _array_device(8, 128, 128, "ws", hbm=1e9)  # 1 GB/s: the traffic dominates
    seconds = float(array_gemm_seconds(64, 64, 64, 1, device, NO_OVERHEAD))
    assert seconds == pytest.approx(3 * 64 * 64 * 2 / 1e9)


TINY = TransformerConfig("tiny", "gpt", layers=4, hidden=256, heads=4, vocab=1000, seq=128, ffn=1024, kv_heads=4)


def _seconds(device, par: Parallelism) -> float:
    from archsim.training.machine import Links, Machine

    link = links.nvlink(device.nvlink_bytes_per_s)
    machine = Machine(device, device.efficiency or fitted.kernels(device.name), Links(link, link, link))
    return train(TINY, par, machine).iteration_seconds


@pytest.mark.long
@given(arrays=st.integers(1, 16), fewer=st.integers(1, 15), hbm=st.floats(1e10, 2e12), cut=st.floats(0.05, 1.0),
       dataflow=st.sampled_from(["ws", "os", "is"]), pp=st.sampled_from([1, 2]))
def test_fewer_arrays_or_less_hbm_bandwidth_is_never_faster(arrays, fewer, hbm, cut, dataflow, pp):
    par = Parallelism(1, pp, 1, 4, 1, "none")
    base = _array_device(arrays, 32, 32, dataflow, hbm)
    fast = _seconds(base, par)
    assert _seconds(replace(base, arrays=replace(base.arrays, count=max(arrays - fewer, 1))), par) >= fast
    assert _seconds(replace(base, hbm_bytes_per_s=hbm * cut), par) >= fast


def _train_json(capsys, cluster: Path, *extra: str) -> dict:
    code = main(["train", str(ROOT / "configs/transformers/gpt3_1.3b.toml"), "--cluster", str(cluster), "--tp", "2",
                 "--pp", "2", "--global-batch", "4", "--format", "json", *extra])
    assert code == 0
    return json.loads(capsys.readouterr().out)["meta"]


@pytest.mark.parametrize("cluster", ["tpu_v4_like_slice.toml", "scalesim_32x32_device.toml"])
def test_train_runs_on_device_files_with_time_memory_and_energy(capsys, cluster):
    half = _train_json(capsys, CLUSTERS / cluster, "--dtype", "bf16")
    assert half["energy_source"].startswith("energy model")
    assert 0 < half["forward_seconds"] < half["backward_seconds"] < half["iteration_seconds"]
    assert half["fits_memory"] and half["peak_memory_gib"] > 0 and half["energy_j"] > 0
    doubled = _train_json(capsys, CLUSTERS / cluster, "--dtype", "bf16", "--dp", "2", "--global-batch", "8")
    assert doubled["energy_j"] == pytest.approx(2 * half["energy_j"])  # twice the replicas, twice the work
    full = _train_json(capsys, CLUSTERS / cluster, "--dtype", "fp32")
    # Adam's states: 16 B/parameter in fp32, 18 in bf16 (Megatron's fp32 gradient buffer, memory.state_bytes);
    # activations: the 2-byte values double, the 1-byte dropout masks do not (s·b·h = 2048 · 1 · 2048 bytes each):
    # full recompute, the first rank the recomputed layer's two residual masks and 2 in-flight embedding masks,
    # the last rank the recomputed layer's two; the last rank's logits (s·b·V/t = 2048 · 50,432/2) 4 bytes each in
    # fp32 against bf16's 6 (the cross-entropy's softmax overwrites fp32 logits: memory.logit_bytes), 8 fewer than
    # twice bf16's; and the recomputed layer's FlashAttention log-sum-exp, fp32 in every dtype (a·s·b/t = 16 · 2048 / 2
    # rows of 4 bytes: layer_activations.layer_lse_bytes), 4 bytes a row fewer than twice bf16's; so are the fp32 buffers of its
    # FlashAttention backward (flash_api.cpp mha_bwd: softmax_d, 2048 rows × 8 heads a rank, and dq_accum, those
    # rows × kHeadDim 128: memory's working set)
    sbh_gib, logits_gib, lse_gib = 2048 * 2048 / 2**30, 2048 * 50432 / 2 / 2**30, 16 * 2048 / 2 * 4 / 2**30
    buffers_gib = (2048 * 8 + 2048 * 8 * 128) * 4 / 2**30
    for mixed, single, masks, logits in zip(half["memory_per_rank"], full["memory_per_rank"], (4, 2), (0, 8),
                                            strict=True):
        assert (single["states_gib"], single["activations_gib"]) == pytest.approx(
            (mixed["states_gib"] * 16 / 18,
             2 * mixed["activations_gib"] - masks * sbh_gib - logits * logits_gib - lse_gib - buffers_gib))
    assert full["iteration_seconds"] > half["iteration_seconds"]  # twice the bytes, the same arrays


@pytest.mark.parametrize(("cluster", "flags"), [
    ("tpu_v4_like_slice.toml", {"dtype": "bf16"}), ("tpu_v4_like_slice.toml", {"dtype": "fp32"}),
    ("a100_node.toml", {"implementation": "pytorch-eager", "tp": 1, "pp": 1, "attention": "standard"})])
def test_the_api_takes_trains_dtype_and_implementation(capsys, cluster, flags):
    """``archsim.train`` takes ``archsim train``'s flags by the same names (docs/api.md) and runs the same run."""
    import archsim

    shape = {"tp": 2, "pp": 2, **flags}
    argv = [f"--{name}={value}" for name, value in shape.items()]
    printed = _train_json(capsys, CLUSTERS / cluster, *argv)
    result, rates = archsim.train(ROOT / "configs/transformers/gpt3_1.3b.toml", cluster=CLUSTERS / cluster,
                                  global_batch=4, **shape)
    assert result.iteration_seconds == pytest.approx(printed["iteration_seconds"], rel=1e-12)
    assert result.peak_memory_gib == pytest.approx(printed["peak_memory_gib"], rel=1e-12)
    assert rates.mfu == pytest.approx(printed["mfu"], rel=1e-12)


def test_the_optimizer_step_costs_its_bytes_at_the_dram_energy():
    """32 bytes per parameter (fp16 mixed-precision Adam) × 8 bits × the table's DRAM pJ per bit (bf16's 34:
    tests/test_bf16_gradients.py)."""
    from archsim.energy.table import load_table
    from archsim.training.energy import array_iteration_joules

    tpu, par = load_device(DEVICES / "tpu_v4_like.toml"), Parallelism(1, 1, 1, 1, 1, "none")
    extra = array_iteration_joules(TINY, par, tpu, "fp16", parameters=1e6) - array_iteration_joules(TINY, par, tpu,
                                                                                                      "fp16")
    assert extra == pytest.approx(1e6 * 32 * 8 * load_table().dram_pj_per_bit * 1e-12)


def test_the_energy_is_of_the_attention_the_iteration_runs():
    """FlashAttention never moves an s × s tensor through HBM, and the energy model charges every HBM
    word: at 2,048 tokens a flash iteration spends less than a standard one (the timed op lists differ,
    so the energy's must too)."""
    from archsim.training.energy import array_iteration_joules

    tpu, long = load_device(DEVICES / "tpu_v4_like.toml"), replace(TINY, seq=2048)
    joules = {attention: array_iteration_joules(long, Parallelism(1, 1, 1, 1, 1, "none", attention=attention),
                                                tpu, "bf16") for attention in ("standard", "flash")}
    assert joules["flash"] < joules["standard"]
    assert joules["standard"] - joules["flash"] == pytest.approx(_flash_saving_by_hand() * 1e-12, rel=1e-9)


def _flash_saving_by_hand() -> float:
    """pJ standard attention spends above FlashAttention-2 in one iteration of TINY at s = 2,048 (4 layers, 4 heads
    of 64, micro-batch 1, attention dropout on) on the TPU-v4-like chip, from the documented op lists
    (archsim/training/layer_ops.py) and energy model (archsim/training/energy.py); everything else in the
    iteration is the same op both ways. Standard's GEMMs, 4 heads each, (m, k, n): the scores S = QKᵀ (s, 64, s)
    and context (s, s, 64) forward, and backward the context's two (s, s, 64), (s, 64, s) and the scores' (64, s,
    s), (s, s, 64). Flash computes only the causal blocks, in FlashAttention-2's tiles at head dim 64: forward
    128 × 64 with dropout, query block i (of 16) over key blocks 0 … 2i + 1, Σ (2i + 2) = 272 blocks; backward
    128 × 128, key blocks 0 … i, Σ (i + 1) = 136. Stacked along the short side each GEMM is (64 · 272, 64, 128)
    forward (two) and (128 · 136, 64, 128) backward (five): seven (17,408, 64, 128). HBM words: standard's
    softmax 2 + 3 and dropout 2.5 + 2.5 per score (s² × 4 heads); flash's Q, K, V, O (s × 64 × 4 heads each, q)
    and fp32 log-sum-exp (2 units a row, lse): forward 4q + lse; backward, its main kernel Q, K, V, dO, dK, dV
    (6q), the log-sum-exp and D (2 lse), dQ's fp32 accumulator read and written (2 · 2q), the D kernel dO, O,
    D and the accumulator's zeroing (2q + lse + 2q), dQ's conversion the accumulator and dQ (2q + q): 17q +
    3 lse (FlashAttention-2's backward launch, flash_bwd_launch_template.h). Each such word costs the
    vector add (0.4 pJ, bf16) and a DRAM word (1300 / 64 × 16 pJ). A GEMM on one 128 × 128 ws array: bf16 MAC
    1.1 + 0.9 pJ, register 16 × 0.009 pJ, SRAM a 16-bit quarter of a 64-bit access of a 4096 / 3 → 1365 KiB
    buffer (Horowitz's 32 KiB → 1 MiB segment, 20 → 100 pJ, extended). Flash's non-matmul work costs more (Horowitz's
    figures, configs/energy/horowitz45.toml [fused]): per head, the forward's 272 · 128 · 64 elements of P one
    exponential and 3 FP32 lane ops each, its 272 · 128 block rows and 2,048 rows one exponential and hd + 1 lane ops
    each and the rows 2 exponentials more; the backward's 136 · 128² elements one exponential and 3 lane ops; a lane
    op an FMA (3.7 + 0.9 pJ), an exponential two; the dropout mask one Philox call per 16 elements each way, 14
    multiplies (3.1 pJ) and 15 other instructions a call, the forward's mask 32 more a call, the backward's 48 a call
    and 2 an element (0.1 pJ each)."""
    s, heads, hd, layers = 2048, 4, 64, 4
    sram = 20.0 * (1365 / 32) ** (math.log(5) / math.log(32)) / 4
    dram = 1300 / 64 * 16

    def gemm(m: int, k: int, n: int) -> float:
        return heads * ws_gemm_pj(m, k, n, 128, 128, mac=1.1 + 0.9, register=16 * 0.009, sram=sram, dram=dram)

    forward_blocks, backward_blocks = sum(2 * i + 2 for i in range(16)), sum(i + 1 for i in range(16))
    assert 64 * forward_blocks == 128 * backward_blocks == 17408
    standard = 2 * gemm(s, hd, s) + 3 * gemm(s, s, hd) + gemm(hd, s, s)
    flash = 7 * gemm(17408, hd, 128)
    q, lse = s * hd * heads, 2 * s * heads
    words = (2 + 3 + 2.5 + 2.5) * s * s * heads - (4 * q + lse) - (17 * q + 3 * lse)
    fma, p_forward, rows, p_backward = 3.7 + 0.9, 272 * 128 * 64, 272 * 128, 136 * 128 * 128
    exps, lanes = p_forward + rows + 2 * s + p_backward, 3 * p_forward + (rows + s) * (hd + 1) + 3 * p_backward
    calls = p_forward // 16 + p_backward // 16
    ints = calls * (14 * 3.1 + 15 * 0.1) + (p_forward // 16 * 32 + p_backward // 16 * 48 + 2 * p_backward) * 0.1
    nonmatmul = heads * (lanes * fma + exps * 2 * fma + ints)
    return layers * (standard - flash - nonmatmul + words * (0.4 + dram))


def test_train_prices_energy_on_the_attention_it_times(capsys):
    flash = _train_json(capsys, CLUSTERS / "tpu_v4_like_slice.toml", "--dtype", "bf16")
    standard = _train_json(capsys, CLUSTERS / "tpu_v4_like_slice.toml", "--dtype", "bf16", "--attention", "standard")
    assert flash["attention"] == "flash" and flash["energy_j"] < standard["energy_j"]


def test_catalog_gpus_keep_board_power_energy(capsys):
    meta = _train_json(capsys, CLUSTERS / "a100_node.toml")
    assert meta["energy_source"] == "board power × iteration time"
    assert meta["energy_j"] == pytest.approx(400.0 * 4 * meta["iteration_seconds"])  # 4 GPUs at 400 W


GOOD_TOML = (DEVICES / "tpu_v4_like.toml").read_text()


@pytest.mark.parametrize("text, field", [
    (GOOD_TOML.replace("rows = 128", "rows = 0"), "compute.rows"),
    (GOOD_TOML.replace("hbm_gbps = 1200", "hbm_gbps = -1"), "memory.hbm_gbps"),
    (GOOD_TOML.replace("hbm_gbps = 1200", "hbm_gbps = nan"), "memory.hbm_gbps"),
    (GOOD_TOML.replace("clock_mhz = 1050", "clock_mhz = 1050\nwarp_size = 32"), "compute.warp_size"),
    (GOOD_TOML.replace("[links]", "[link]"), "[link]"),
    (GOOD_TOML.replace('dataflow = "ws"', 'dataflow = "rs"'), "dataflow"),
    (GOOD_TOML.replace('gemm = "arrays"', 'gemm = "magic"'), "device.gemm"),
    (GOOD_TOML.replace('name = "TPU v4-like"', 'name = " "'), "field 'device.name'"),
    (GOOD_TOML.replace('name = "TPU v4-like"', 'name = "tpu/v4"'), "field 'device.name'"),
    (GOOD_TOML.replace("arrays_per_core = 4", "arrays_per_core = 3"), "per_core"),
    (GOOD_TOML.split("[links]")[0], "[links]"),
    (GOOD_TOML.replace("[memory]", "[compute.peak_tflops]\nfp4 = 9\n[memory]"), "peak_tflops"),
    (GOOD_TOML.replace('gemm = "arrays"', 'gemm = "arrays"\nsplit_k = "maybe"'), "device.split_k"),
    (GOOD_TOML.replace('gemm = "arrays"', 'gemm = "tiles"\nsplit_k = true'), "device.split_k"),
])
def test_bad_device_files_are_one_line(tmp_path, capsys, text, field):
    (tmp_path / "chip.toml").write_text(text)
    cluster = tmp_path / "c.toml"
    cluster.write_text('[cluster]\nname = "x"\n[[servers]]\ngpus = 2\nintra_server_gbps = 100\ndevice = "chip.toml"\n')
    assert main(["train", str(GPT), "--cluster", str(cluster), "--global-batch", "4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and field in err, err


@pytest.mark.parametrize("edit, field", [
    (lambda t: t.replace("[links]\nintra_gbps = 100\n", ""), "[links]"),
    (lambda t: t.replace("hbm_gib = 16", "hbm_gib = 16\nbanks = 4"), "memory.banks"),
    (lambda t: t.replace("arrays = 16", "arrays = many"), "device.arrays"),
    (lambda t: t.replace("name = scalesim_32x32_x16", "name ="), "field 'device.name'"),
    (lambda t: t.replace("[archsim]\nClockGHz = 1.0\n", ""), "ClockGHz"),
])
def test_bad_cfg_device_files_are_one_line(tmp_path, capsys, edit, field):
    (tmp_path / "chip.cfg").write_text(edit((DEVICES / "scalesim_32x32_device.cfg").read_text()))
    cluster = tmp_path / "c.toml"
    cluster.write_text('[cluster]\nname = "x"\n[[servers]]\ngpus = 2\nintra_server_gbps = 100\ndevice = "chip.cfg"\n')
    assert main(["train", str(GPT), "--cluster", str(cluster), "--global-batch", "4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and field in err, err


def test_a_missing_device_file_is_one_line(tmp_path, capsys):
    cluster = tmp_path / "c.toml"
    cluster.write_text('[cluster]\nname = "x"\n[[servers]]\ngpus = 2\nintra_server_gbps = 100\ndevice = "no.toml"\n')
    assert main(["train", str(GPT), "--cluster", str(cluster), "--global-batch", "4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no.toml" in err


@pytest.mark.long
def test_search_plans_on_a_device_file(capsys):
    argv = ["search", str(ROOT / "configs/transformers/gpt3_1.3b.toml"), "--cluster",
            str(CLUSTERS / "tpu_v4_like_slice.toml"), "--global-batch", "32", "--top", "3", "--format", "json"]
    assert main([*argv, "--objective", "energy"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = out["rows"]
    assert len(rows) == 3 and rows[0]["tp"] * rows[0]["pp"] * rows[0]["dp"] <= 16
    energies = [row["energy_j"] for row in rows]  # the energy model's joules on array chips, as train's
    assert energies == sorted(energies) and all(e > 0 for e in energies)  # (tests/test_search_objectives.py)
    assert main([*argv, "--objective", "cost"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "price_per_gpu_hour" in err


def test_fp32_on_a_tiles_device_runs_at_its_fp32_peak():
    """On a device file whose GEMMs are library tiles (here the A100's figures under another name and no
    catalog board, as a file's: no SIMT lanes described), a compute-bound GEMM (8192³, whole waves of every tile)
    takes the fp16 : fp32 peak ratio longer in fp32 (312 : 19.5 TFLOP/s)."""
    from archsim.devices.kernel_ops import op_seconds
    from archsim.lowering import Gemm, TrainingOp

    a100 = replace(catalog_device("a100-80gb"), name="a100-like file", catalog=None)
    efficiency = fitted.kernels("a100-80gb")
    op = [TrainingOp("gemm", "F", (Gemm(8192, 8192, 8192),))]
    half, single = (float(op_seconds(op, a100, efficiency, dtype)[0]) - efficiency.launch_s
                    for dtype in ("fp16", "fp32"))
    assert single / half == pytest.approx(312 / 19.5)
    waves = -(-(8192 // 256) * (8192 // 128) // 108)  # 256 × 128 tiles over 108 SMs
    assert single == pytest.approx(waves * 108 * 2 * 256 * 128 * 8192 / (19.5e12 * efficiency.gemm))


@pytest.mark.parametrize("cluster, argv, message", [
    ("v100", ["--dtype", "bf16"], "no bf16 peak"),
    ("a100", ["--dtype", "fp32", "--pp", "2", "--balance", "planned"], "2 bytes per element"),
])
def test_dtypes_a_device_cannot_run_are_one_line(tmp_path, capsys, cluster, argv, message):
    path = tmp_path / "c.toml"
    path.write_text(f'[cluster]\nname = "x"\n[[servers]]\ngpus = 2\nintra_server_gbps = 100\ngpu = "{cluster}"\n')
    assert main(["train", str(GPT), "--cluster", str(path), "--global-batch", "4", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_a_server_names_a_gpu_or_a_device_not_both(tmp_path, capsys):
    cluster = tmp_path / "c.toml"
    cluster.write_text('[cluster]\nname = "x"\n[[servers]]\ngpus = 2\nintra_server_gbps = 100\ngpu = "a100"\n'
                       f'device = "{DEVICES / "tpu_v4_like.toml"}"\n')
    assert main(["train", str(GPT), "--cluster", str(cluster), "--global-batch", "4"]) == 2
    assert "one of the two" in capsys.readouterr().err


def test_the_device_sweep_front_is_what_brute_force_finds():
    from benchmark_scripts import load_benchmark

    bench = load_benchmark("bench_device_sweep")
    rows = bench.with_front(bench.sweep(str(DEVICES / "tpu_v4_like.toml"), str(ROOT / "configs/transformers/gpt2.json"),
                                        16, static_watts=60.0))
    assert len(rows) == len(bench.SIDES) * len(bench.HBM_GBPS) * len(bench.CHIPS)

    def beaten(r):
        return any(o["fits_memory"] and o["iteration_seconds"] <= r["iteration_seconds"] and o["energy_j"] <= r["energy_j"]
                   and (o["iteration_seconds"], o["energy_j"]) != (r["iteration_seconds"], r["energy_j"]) for o in rows)

    assert [r["pareto_optimal"] for r in rows] == [r["fits_memory"] and not beaten(r) for r in rows]
    assert any(r["pareto_optimal"] for r in rows)


def test_a_device_file_given_as_the_cluster_says_where_it_goes(capsys):
    argv = ["train", str(ROOT / "configs/transformers/gpt3_1.3b.toml"), "--cluster", str(DEVICES / "tpu_v4_like.toml"),
            "--global-batch", "4"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "device file" in err and "[[servers]]" in err and 'device = "' in err
