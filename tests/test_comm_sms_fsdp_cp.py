"""The SMs NCCL takes beside FSDP's prefetched collectives and context parallelism's p2p ring (the one rule of
archsim/training/comm_sms.py, applied in training/fsdp.py and training/context_parallel.py).

FSDP prefetches the next unit's all-gather (and in the backward queues the last unit's reduce-scatter) while a unit
computes; TransformerEngine's p2p ring issues each step's K/V send before that step's attention kernel and waits on
it after (``AttnFuncWithCPAndKVP2P``); both run as NCCL kernels on SMs no compute kernel shares (NVIDIA/nccl #181,
#689). Checked here: unit lists and ring steps timed by hand, the compute's speed on N − k SMs counted in tile
waves by hand; more SMs taken never faster; with the SMs free (``comm_sms`` 0) every figure is the free overlap's
max(0, a − c), to the bit, and a run with nothing overlapped is the same whatever ``comm_sms`` says.
"""

from __future__ import annotations

import random
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import pytest

import archsim
from archsim.collectives import collective_seconds
from archsim.devices.kernels import path_gemm_seconds
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.comm_sms import fewer_cores
from archsim.training.context_parallel import ring_exposed, ring_sends
from archsim.training.fsdp import Unit, exposed_seconds, machine_units
from archsim.training.iteration import clear_model_cache, model_pieces
from archsim.training.parallel import Parallelism
from archsim.workload.model_files import load_transformer
from tests.test_comm_sms import FOUR_SMS, HAND

ROOT = Path(__file__).resolve().parents[1]
GPT_350M = ROOT / "configs" / "transformers" / "gpt_1024h_24l.json"
NODE = ROOT / "configs" / "clusters" / "a100_node.toml"
LLAMA = ROOT / "tests" / "data" / "hf_configs" / "llama3_8b.json"
TWO_H100_SERVERS = ROOT / "configs" / "clusters" / "h100_2_servers.toml"


def _shares() -> tuple[float, float]:
    """The speed of two GEMMs on 4 SMs with 1 taken, by the wave count: 256 × 256 (4 tiles of 128 × 128) takes ⌈4/4⌉ = 1
    wave on 4 SMs and ⌈4/3⌉ = 2 on 3, so half speed; 256 × 512 (8 tiles) ⌈8/4⌉ = 2 and ⌈8/3⌉ = 3, two thirds. The
    kernel model agrees (the same counts as tests/test_comm_sms.py's one-wave case)."""
    k = 1024
    for n, full, left in ((256, 1, 2), (512, 2, 3)):
        wave = 2 * 128 * 128 * k / FOUR_SMS.core_flops
        assert float(path_gemm_seconds(1, 256, n, k, FOUR_SMS, HAND, 2)) == pytest.approx(full * wave, rel=1e-12)
        assert float(path_gemm_seconds(1, 256, n, k, fewer_cores(FOUR_SMS, 1), HAND, 2)) == pytest.approx(left * wave, rel=1e-12)
    return 1 / 2, 2 / 3


def test_fsdp_units_timed_by_hand_with_an_sm_taken():
    """A root (gathers 0.5 s, reduce-scatters 0.5 s, no compute) and two layers (gather 3 s, reduce-scatter 1 s,
    forward 2 s, backward 4 s). Forward at half speed beside a collective: the root's gather 0.5 exposed, the first
    layer's 3 (the root computes nothing), the second's gather of 3 s beside the first layer's 2 s forward does 1.5 s
    of its work, then 0.5 s alone: 3.5 s, 1.5 exposed (1 with the SMs free): 5.0. Backward at two thirds: the last
    layer's gather 3 exposed; under its 4 s backward the first layer's 3 s gather: 2 s of work in 3 s, 2 s alone,
    1 exposed (0 free); under the first layer's backward its neighbour's 1 s reduce-scatter: 2/3 s done, 10/3 s
    alone, 1/3 exposed (0 free); the root (no compute) the first layer's reduce-scatter 1, then its own 0.5: 35/6."""
    forward, backward = _shares()
    root, layer = Unit(0.5, 0.5, 0.0, 0.0, False), Unit(3.0, 1.0, 2.0, 4.0, True)
    assert exposed_seconds([root, layer, layer], forward, backward) == pytest.approx((5.0, 3 + 1 + 1 / 3 + 1 + 0.5),
                                                                                     rel=1e-12)
    assert exposed_seconds([root, layer, layer]) == pytest.approx((4.5, 4.5), rel=1e-12)  # the SMs free


def test_ring_steps_timed_by_hand_with_an_sm_taken():
    """Two ring steps: a 3 s send beside 2 s of attention (4 s on the SMs left: half speed) exposes 1.5 s, a 1 s send
    beside 4 s (6 s left: two thirds) exposes 1/3 s; with the SMs free 1 s and none."""
    half, two_thirds = _shares()
    assert ring_exposed([3.0, 1.0], [2.0, 4.0], [2.0 / half, 4.0 / two_thirds]) == pytest.approx(1.5 + 1 / 3, rel=1e-12)
    assert ring_exposed([3.0, 1.0], [2.0, 4.0]) == pytest.approx(1.0, rel=1e-12)


def test_lower_speed_never_hides_more_and_stays_between_free_and_serial():
    rng = random.Random(5)
    for _ in range(500):
        units = [Unit(*(rng.uniform(0, 2) for _ in range(4)), rng.random() < 0.8) for _ in range(rng.randint(1, 6))]
        a, b = sorted((rng.uniform(0.05, 1), rng.uniform(0.05, 1)))
        slow, fast, free = exposed_seconds(units, a, a), exposed_seconds(units, b, b), exposed_seconds(units)
        serial = (sum(u.all_gather for u in units),
                  sum(u.all_gather for u in units if u.gathers_backward) + sum(u.reduce_scatter for u in units))
        for s, f, z, w in zip(slow, fast, free, serial):
            assert z - 1e-12 <= f <= s + 1e-12 and s <= w + 1e-12


def _gpt_fsdp(comm_sms: int):
    cluster = replace(load_gpu_cluster(NODE, "fp16"), comm_sms=comm_sms)
    result, _ = archsim.train(str(GPT_350M), cluster=cluster, dp=8, global_batch=64, micro_batch=2,
                              recompute="full", fsdp=True)
    return result


def test_fsdp_more_sms_taken_never_faster():
    """GPT 350M, FSDP over one DGX A100's 8 GPUs: as NCCL takes 0, 8, 16, 32, 64 of the 108 SMs the exposed FSDP
    seconds and the iteration never shrink, and 16 exposes more than the free overlap."""
    runs = [_gpt_fsdp(k) for k in (0, 8, 16, 32, 64)]
    exposed = [r.breakdown["fsdp_exposed_communication"] for r in runs]
    assert all(a <= b for a, b in pairwise(exposed)) and exposed[2] > exposed[0]
    assert all(a.iteration_seconds <= b.iteration_seconds for a, b in pairwise(runs))


def test_fsdp_with_the_sms_free_is_the_free_overlap_to_the_bit():
    """``comm_sms`` 0: each prefetch exposes max(0, a − c), written out here over the run's own units."""
    run = _gpt_fsdp(0)
    c = load_transformer(GPT_350M)
    par = Parallelism(1, 1, 8, 64, 2, recompute="full", fsdp=True)
    machine = replace(load_gpu_cluster(NODE, "fp16").machine(par), comm_sms=0)
    units = machine_units(c, par, machine, run.memory[0].parameters, run.forward_seconds / 4,
                          run.backward_seconds / 4)[0]
    forward = units[0].all_gather + sum(max(0.0, u.all_gather - prev.forward) for prev, u in pairwise(units))
    order = units[::-1]
    backward = order[0].all_gather
    for k, unit in enumerate(order):
        ahead = order[k + 1].all_gather if k + 1 < len(order) and order[k + 1].gathers_backward else 0.0
        behind = order[k - 1].reduce_scatter if k > 0 else 0.0
        backward += max(0.0, ahead + behind - unit.backward)
    assert run.breakdown["fsdp_exposed_communication"] == 4 * (forward + backward + order[-1].reduce_scatter)


def _llama_layer(comm_sms: int, cp_comm: str = "p2p", seq: int = 32768):
    """Llama-3-8B's layer at TP 2 × CP 8 on two 8-GPU H100 servers: each CP group spans both, so the ring's sends
    cross the network and outlast some attention steps."""
    c = load_transformer(str(LLAMA), seq=seq)
    par = Parallelism(2, 1, 1, 1, cp=8, cp_comm=cp_comm, attention="flash", recompute="none")
    machine = replace(load_gpu_cluster(str(TWO_H100_SERVERS), "bf16").machine(par), comm_sms=comm_sms)
    clear_model_cache()
    layer = model_pieces(c, par, machine)["layer"]
    clear_model_cache()
    return c, par, machine, layer


def test_ring_more_sms_taken_never_faster():
    """The ring's exposed seconds (forward and backward) as NCCL takes 0, 8, 16, 32, 64 of the H100's 132 SMs."""
    layers = [_llama_layer(k)[3] for k in (0, 8, 16, 32, 64)]
    exposed = [layer.cp_forward + layer.cp_backward for layer in layers]
    assert all(a <= b for a, b in pairwise(exposed)) and exposed[2] > exposed[0]


def test_ring_with_the_sms_free_is_the_free_overlap_to_the_bit():
    """``comm_sms`` 0: each step exposes max(0, send − attention), the sends priced over the ring's hop here."""
    c, par, machine, layer = _llama_layer(0)
    sends_f, sends_b = ring_sends(c, par)
    hop = machine.links.cp_hop
    t_f = [float(collective_seconds("p2p", b, 2, hop)) if b else 0.0 for b in sends_f]
    t_b = [float(collective_seconds("p2p", b, 2, hop)) for b in sends_b]
    steps_f = [t for name, kind, t in layer.ops if name == "flash_attention" and kind == "F"]
    steps_b = [t for name, kind, t in layer.ops if name == "flash_attention" and kind == "D"][::-1]
    assert layer.cp_forward == sum(max(0.0, t - s) for t, s in zip(t_f, steps_f, strict=True)) > 0
    assert layer.cp_backward == sum(max(0.0, t - s) for t, s in zip(t_b, steps_b, strict=True))


def test_a_run_with_nothing_overlapped_is_the_same_whatever_comm_sms_says():
    """all_gather's K/V collectives block the compute stream (no overlap): without sequence parallelism, bucketed DP
    or FSDP nothing else overlaps, so the whole iteration is identical with 0 or 64 SMs taken."""
    keys = {"tp": 2, "cp": 8, "global_batch": 1, "seq": 32768, "cp_comm": "all_gather", "dtype": "bf16",
            "recompute": "none"}
    cluster = load_gpu_cluster(str(TWO_H100_SERVERS), "bf16")
    runs = [archsim.train(str(LLAMA), cluster=replace(cluster, comm_sms=k), **keys)[0] for k in (0, 64)]
    assert runs[0].iteration_seconds == runs[1].iteration_seconds
    assert runs[0].breakdown == runs[1].breakdown
