"""The SMs an overlapped collective takes from the compute beside it (archsim/training/comm_sms.py).

NCCL runs a collective's channels as CTAs that each hold an SM no compute kernel shares (NVIDIA/nccl #181, #689), so
compute overlapped with a collective runs on N − k SMs. Checked here against hand counts: tile waves on fewer SMs,
one overlap's timeline drawn by hand, a two-bucket queue stepped by hand; and the bounds every overlap must keep
(never faster than the free overlap, never slower than the serial sum). Runs without an overlap are unchanged.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from archsim.collectives import collective_seconds
from archsim.devices.catalog import NCCL_SMS
from archsim.devices.kernel_constants import KernelConstants
from archsim.devices.kernels import GemmPath, path_gemm_seconds
from archsim.errors import InputError
from archsim.training.cluster_file import single_node
from archsim.training.comm_sms import bucket_exposed, fewer_cores, hidden_seconds
from archsim.training.dp_overlap import exposed_seconds
from archsim.training.iteration import model_pieces
from archsim.training.layer_ops import block_work
from archsim.training.parallel import Parallelism
from archsim.workload.transformer import TransformerConfig

FLOPS = 1e12  # one SM's peak, FLOP/s
HAND = KernelConstants(gemm=1.0, feed=1.0, memory=1.0, softmax=1.0, layernorm=1.0, launch_s=0.0)
FOUR_SMS = GemmPath(cores=4, core_flops=FLOPS, tiles=((128, 128),), resident=128 * 128, needed_reuse=0, splits=(1,),
                    epilogue=True, hbm_bytes_per_s=1e30)


def test_a_gemm_of_one_tile_per_sm_takes_two_waves_with_one_sm_taken():
    """256 × 256 output = 4 tiles of 128 × 128 on 4 SMs: one wave; with 1 SM held by NCCL, ⌈4/3⌉ = 2 waves.
    One wave: 2·128·128·K FLOPs at one SM's 10¹² FLOP/s (HBM unbounded, no launch)."""
    k = 1024
    wave = 2 * 128 * 128 * k / FLOPS
    assert float(path_gemm_seconds(1, 256, 256, k, FOUR_SMS, HAND, 2)) == pytest.approx(wave, rel=1e-12)
    assert float(path_gemm_seconds(1, 256, 256, k, fewer_cores(FOUR_SMS, 1), HAND, 2)) == pytest.approx(2 * wave,
                                                                                                         rel=1e-12)
    # 3 tiles fit 3 SMs in one wave either way: taking an SM costs nothing there
    assert float(path_gemm_seconds(1, 128, 384, k, fewer_cores(FOUR_SMS, 1), HAND, 2)) == pytest.approx(wave, rel=1e-12)


def test_the_board_power_cap_bounds_the_kernels_average_power_on_the_sms_left():
    """A cap of 2·10¹² FLOP/s on 4 SMs of 10¹² each bounds the kernel's average power, not each SM's share: one
    tile (one busy SM) runs at its peak, one wave, before and after a collective takes an SM (the 3 SMs left
    keep 3/4 of the cap, 1.5·10¹²). Four tiles are capped: 4 tiles' FLOPs at 2·10¹² take 2 waves' time on 4 SMs; on
    the 3 SMs left 4 tiles' FLOPs at 1.5·10¹² take 8/3 waves' time, longer than their 2 waves at peak."""
    capped = replace(FOUR_SMS, sustained_flops=2 * FLOPS)
    wave = 2 * 128 * 128 * 64 / FLOPS
    assert float(path_gemm_seconds(1, 128, 128, 64, capped, HAND, 2)) == pytest.approx(wave, rel=1e-12)
    assert float(path_gemm_seconds(1, 128, 128, 64, fewer_cores(capped, 1), HAND, 2)) == pytest.approx(wave,
                                                                                                      rel=1e-12)
    assert float(path_gemm_seconds(1, 256, 256, 64, capped, HAND, 2)) == pytest.approx(2 * wave, rel=1e-12)
    assert float(path_gemm_seconds(1, 256, 256, 64, fewer_cores(capped, 1), HAND, 2)) == pytest.approx(8 / 3 * wave,
                                                                                                      rel=1e-12)


def test_a_collective_cannot_take_every_sm():
    with pytest.raises(InputError, match="at least one must compute"):
        fewer_cores(FOUR_SMS, 4)


def test_one_overlap_drawn_by_hand():
    """A 3 s collective beside 2 s of compute that runs at half speed beside it: in the 3 s the compute does 1.5 s
    of its work, then its last 0.5 s alone; the two end at 3.5 s (free overlap: 3 s, serial: 5 s), so 1.5 s of the
    collective is hidden. A 3 s collective beside 1 s at half speed: the compute ends at 2 s, under it: 1 s hidden,
    as without the SMs."""
    assert hidden_seconds(3.0, 2.0, 0.5) == pytest.approx(1.5)
    assert hidden_seconds(3.0, 1.0, 0.5) == pytest.approx(1.0)
    assert hidden_seconds(3.0, 2.0, 1.0) == pytest.approx(2.0)


def test_an_overlap_is_never_faster_than_free_nor_slower_than_serial():
    rng = random.Random(7)
    for _ in range(2000):
        comm, compute, share = rng.uniform(0, 5), rng.uniform(0, 5), rng.uniform(0.05, 1.0)
        together = comm + compute - hidden_seconds(comm, compute, share)
        assert max(comm, compute) - 1e-12 <= together <= comm + compute + 1e-12
        assert hidden_seconds(comm, compute, share) <= hidden_seconds(comm, compute, 1.0) + 1e-12


def test_two_buckets_stepped_by_hand():
    """Buckets of 1 s under a 2 s backward that runs at half speed beside a bucket: bucket 0 is ready at 1 s and
    runs 1–2 s; in that second the backward does 0.5 s of its work, its last 0.5 s alone, so it ends at 2.5 s;
    bucket 1 runs 2.5–3.5 s: 1.5 s after the backward's own 2 s (1 s with the SMs free, 2 s in series)."""
    assert bucket_exposed(2, 1.0, 2.0, 0.5) == pytest.approx(1.5)
    assert exposed_seconds(2, 1.0, 2.0) == pytest.approx(1.0)


def test_buckets_keep_the_bounds_and_the_closed_form_with_every_sm():
    rng = random.Random(11)
    for _ in range(2000):
        n, bucket, window, share = rng.randint(1, 12), rng.uniform(0, 1), rng.uniform(0, 5), rng.uniform(0.05, 1.0)
        free = exposed_seconds(n, bucket, window)
        assert bucket_exposed(n, bucket, window, 1.0) == pytest.approx(free, abs=1e-9)
        assert free - 1e-9 <= bucket_exposed(n, bucket, window, share) <= n * bucket + 1e-9


GPT_22B = TransformerConfig("gpt-22b", "gpt", layers=48, hidden=6144, heads=64, vocab=51200, seq=2048, ffn=4 * 6144,
                            kv_heads=64, tied_embeddings=True, positions=2048)


def _layer(sp: bool, comm_sms: int):
    par = Parallelism(8, 1, 1, 4, 4, "none", sp, attention="standard")
    machine = single_node("a100-80gb", 8).machine(par)
    assert machine.collective_sms == NCCL_SMS
    return model_pieces(GPT_22B, par, replace(machine, comm_sms=comm_sms))["layer"]


def test_the_sequence_parallel_regather_now_costs_its_gemms_waves():
    """Korthikanti et al.'s 22B layer (TP 8, micro-batch 4) on A100s: each re-gather sits under a δ GEMM about
    twice its length, hidden free before; with NCCL's SMs taken part of it shows, never more than the whole
    all-gather (its time in series), and the δ GEMMs' own rows are as they were."""
    free, taken = _layer(True, 0), _layer(True, NCCL_SMS)
    par = Parallelism(8, 1, 1, 4, 4, "none", True, attention="standard")
    link = single_node("a100-80gb", 8).machine(par).links.tp
    under = [c for c in block_work(GPT_22B, 4, 8, True).backward_collectives if c.under]
    serial = [float(collective_seconds(c.kind, c.bytes, 8, link)) for c in under]
    shown = [t for name, kind, t in taken.ops if kind == "B" and "exposed beyond" in name]
    assert [t for name, kind, t in free.ops if kind == "B" and "exposed beyond" in name] == [0.0, 0.0]
    assert len(shown) == 2 and all(0 < t < whole for t, whole in zip(shown, serial))
    assert taken.tp_backward - free.tp_backward == pytest.approx(sum(shown), rel=1e-9)
    assert taken.backward_input == free.backward_input


def test_runs_without_an_overlap_are_unchanged():
    """Without sequence parallelism no TP collective overlaps compute here: every figure is bit-identical."""
    free, taken = _layer(False, 0), _layer(False, NCCL_SMS)
    assert (taken.forward, taken.backward_input, taken.backward_weight, taken.tp_forward, taken.tp_backward) == (
        free.forward, free.backward_input, free.backward_weight, free.tp_forward, free.tp_backward)


def test_no_op_runs_faster_beside_a_collective_and_memory_bound_ops_keep_their_time():
    """The 22B layer's ops re-timed on the 92 SMs NCCL leaves of 108: every GEMM op at least as long (waves only
    grow), the memory-bound ops (no GEMM) exactly as long, and some GEMM longer."""
    layer = _layer(True, NCCL_SMS)
    rows = list(zip(layer.ops, layer.slowed, layer.gemms))
    assert rows and all(slowed >= t for (_, _, t), slowed, _ in rows)
    assert all(slowed == t for (_, _, t), slowed, gemms in rows if not gemms)
    assert any(slowed > t for (_, _, t), slowed, gemms in rows if gemms)
