"""A capacity factor in memory: the bytes a mixture's MLP keeps for its backward and the zero-bubble split's M_W count
the rows the experts take under ``--moe-expert-capacity-factor`` (padded or dropped), as the op list does — against
hand counts from Megatron-Core's ``get_capacity`` (⌈(T·k/E)·C⌉), an order no capacity may break, and ``train``'s
peak for Mixtral 8x7B, by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from archsim.cli import main
from archsim.training.held_memory import weight_gradient_bytes
from archsim.training.layer_activations import layer_activation_bytes
from archsim.training.layer_ops import block_work
from archsim.training.moe_ops import mlp_activation_bytes
from archsim.workload.transformer import TransformerConfig

H, F, E, K, S = 64, 128, 8, 2, 32  # hidden, expert width, experts, top-k, tokens of one sequence
CLUSTER = Path(__file__).resolve().parents[1] / "configs" / "clusters" / "h100_2_servers.toml"
MIXTRAL = Path(__file__).parent / "data" / "hf_configs" / "mixtral_8x7b.json"


def _moe(**capacity) -> TransformerConfig:
    return TransformerConfig("small", "llama", 2, H, 4, 256, S, 512, 2, False, experts=E, experts_per_token=K,
                             expert_ffn=F, **capacity)


PADDED = {"moe_expert_capacity_factor": 1.25, "moe_pad_expert_input_to_capacity": True}
DROPPED = {"moe_expert_capacity_factor": 0.5}


def get_capacity(tokens: int, topk: int, experts: int, factor: float) -> int:
    """Megatron-Core's ``moe_utils.get_capacity``: ⌈tokens·topk/experts·factor⌉, rows an expert takes from a rank."""
    return math.ceil(tokens * topk / experts * factor)


def _kept_by_hand(rows: int, etp: int, local: int) -> int:
    """A rank's MLP bytes kept for the backward (2 a value) at TP = 2: each of the ETP·rows gathered rows' fc1 input (h),
    fc1's gate and up output (2f/ETP) and SwiGLU's product (f/ETP); the ``rows`` permuted rows unpermute keeps (h);
    the router's fp32 probabilities of the ``local`` tokens (E)."""
    return etp * rows * 2 * (H + 3 * F // etp) + rows * 2 * H + local * E * 4


def test_get_capacity_of_the_small_mixture():
    # TP 2 under SP: a rank routes 16 of the 32 tokens, 32 rows over 8 experts, 4 an expert
    assert get_capacity(16, K, E, 1.25) == 5 and get_capacity(16, K, E, 0.5) == 2


@pytest.mark.parametrize("capacity,rows", [({}, 32), (PADDED, 5 * E), (DROPPED, 2 * E)])
def test_kept_bytes_count_the_rows_the_experts_take(capacity, rows):
    # dropless 32 rows; padded 5 from the rank to each of 8 experts, 40; dropped at C = 0.5, 2 each, 16
    kept = _kept_by_hand(rows, 2, 16)
    assert kept == {32: 37376, 40: 46592, 16: 18944}[rows]
    assert mlp_activation_bytes(_moe(**capacity), 2, 16) * S == kept
    # the layer's other tensors do not move: the layer's bytes move by the MLP's alone
    assert layer_activation_bytes(_moe(**capacity), 1, 2, "selective", True) - \
        layer_activation_bytes(_moe(), 1, 2, "selective", True) == kept - 37376


def test_kept_bytes_at_etp_1_take_whole_experts_rows():
    # ETP 1 beside TP 2: no gather, the 40 padded rows each f wide (fc1 input h, gate and up 2f, product f)
    assert mlp_activation_bytes(_moe(**PADDED), 2, 16, 1) * S == 40 * 2 * (H + 3 * F) + 40 * 2 * H + 16 * E * 4


def test_m_w_counts_the_rows_the_experts_take():
    # W reads, per gathered row, fc1's input (h) and output gradient (2f/ETP), fc2's input (f/ETP) and output
    # gradient (h): 2·(2·64 + 3·64) = 640 bytes at ETP = TP = 2, on 2 × the rank's 32, 40 or 16 rows
    dropless = weight_gradient_bytes(_moe(), 1, 2, True)
    assert weight_gradient_bytes(_moe(**PADDED), 1, 2, True) - dropless == 2 * (40 - 32) * 640
    assert dropless - weight_gradient_bytes(_moe(**DROPPED), 1, 2, True) == 2 * (32 - 16) * 640


def test_memory_reads_the_rows_the_op_list_runs():
    # the experts' fc1 GEMM's rows (a local expert's, times E/EP local experts at EP 1) are the rows memory keeps
    for capacity, rows in (({}, 32), (PADDED, 40), (DROPPED, 16)):
        fc1 = next(op for op in block_work(_moe(**capacity), 1, 2, True).forward if op.layer == "experts.fc1")
        assert fc1.gemms[0].m * fc1.gemms[0].count == 2 * rows  # ETP = 2 ranks' rows gathered


@pytest.mark.parametrize("micro_batch,tp,sp,etp", [(1, 1, False, None), (3, 2, True, None), (2, 4, True, 1),
                                                   (1, 2, True, 2)])
@pytest.mark.parametrize("factor", [0.3, 0.75, 0.99])
@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_padded_keeps_at_least_dropless_which_keeps_at_least_dropped(micro_batch, tp, sp, etp, factor, recompute):
    """Padding to C ≥ 1 never keeps less than dropless, which never keeps less than dropping at C < 1 (the same where
    the ceiling keeps every row: ⌈4 · 0.99⌉ = 4); strictly at C = 0.3, where every shape here drops rows."""
    def figures(**capacity):
        c = _moe(**capacity)
        local = S * micro_batch // tp if sp else S * micro_batch
        return (mlp_activation_bytes(c, tp, local, etp), layer_activation_bytes(c, micro_batch, tp, recompute, sp),
                weight_gradient_bytes(c, micro_batch, tp, sp, etp))

    padded, dropless, dropped = figures(**PADDED), figures(), figures(moe_expert_capacity_factor=factor)
    for i in (0, 2):  # the MLP's bytes a token and M_W, whatever the recompute
        assert padded[i] > dropless[i] >= dropped[i]
        assert factor != 0.3 or dropless[i] > dropped[i]
    if recompute != "full":
        assert padded[1] > dropless[1] >= dropped[1]
    else:  # full recompute keeps the layer's input alone: the rows are the rerun layer's working set
        assert padded[1] == dropless[1] == dropped[1]


def test_train_peak_for_mixtral_rises_by_the_padded_rows(capsys):
    """Mixtral 8x7B (h 4096, f 14336, E 8, k 2) at seq 1024, PP 4 × DP 4, EP 4, selective recompute: a rank routes
    1024 tokens, 2048 rows, 256 an expert; C = 1.25 padded takes ⌈256 · 1.25⌉ = 320 from each, 2560 rows (+512);
    C = 0.5 dropped 128, 1024 rows (−1024). Each row keeps fc1's input (2h), gate and up (4f), their product (2f) and
    the permuted row (2h): 102,400 bytes. The first stage's 8 layers hold 4 micro-batches (1F1B over 4 stages)."""
    layout = ["--cluster", str(CLUSTER), "--seq", "1024", "--dtype", "bf16", "--pp", "4", "--dp", "4", "--ep", "4",
              "--global-batch", "16", "--recompute", "selective", "--format", "json"]
    peaks = []
    for flags in ([], ["--moe-expert-capacity-factor", "1.25", "--moe-pad-expert-input-to-capacity"],
                  ["--moe-expert-capacity-factor", "0.5"]):
        assert main(["train", str(MIXTRAL), *layout, *flags]) == 0
        peaks.append(json.loads(capsys.readouterr().out)["meta"]["peak_memory_gib"])
    per_row = 2 * 4096 + 6 * 14336 + 2 * 4096
    assert get_capacity(1024, 2, 8, 1.25) == 320 and get_capacity(1024, 2, 8, 0.5) == 128
    assert peaks[1] - peaks[0] == pytest.approx(8 * 4 * 512 * per_row / 2**30, rel=1e-9)  # 1.5625 GiB
    assert peaks[0] - peaks[2] == pytest.approx(8 * 4 * 1024 * per_row / 2**30, rel=1e-9)  # 3.125 GiB


def test_train_peak_under_full_recompute_rises_by_one_rerun_layers_rows(capsys):
    # full recompute keeps each layer's input; the padded rows are the rerun layer's alone: 512 × 102,400 bytes
    layout = ["--cluster", str(CLUSTER), "--seq", "1024", "--dtype", "bf16", "--pp", "4", "--dp", "4", "--ep", "4",
              "--global-batch", "16", "--format", "json"]
    peaks = []
    for flags in ([], ["--moe-expert-capacity-factor", "1.25", "--moe-pad-expert-input-to-capacity"]):
        assert main(["train", str(MIXTRAL), *layout, *flags]) == 0
        peaks.append(json.loads(capsys.readouterr().out)["meta"]["peak_memory_gib"])
    assert peaks[1] - peaks[0] == pytest.approx(512 * (4 * 4096 + 6 * 14336) / 2**30, rel=1e-9)  # 0.0488 GiB


def test_a_cp_ranks_memory_routes_its_own_tokens():
    # CP 2 beside TP 2 (SP): a CP rank holds 16 of the 32 tokens and routes 8, 16 rows, 2 an expert; C = 1.25 padded
    # takes ⌈2 · 1.25⌉ = 3 from each: 24 rows, which the op list runs and the CP rank's memory keeps
    from archsim.training.context_parallel import rank_config

    assert get_capacity(8, K, E, 1.25) == 3
    fc1 = next(op for op in block_work(_moe(**PADDED), 1, 2, True, "flash", cp=2).forward if op.layer == "experts.fc1")
    assert fc1.gemms[0].m * fc1.gemms[0].count == 2 * 24
    padded, dropless = (layer_activation_bytes(rank_config(c, 2), 1, 2, "selective", True) for c in (_moe(**PADDED), _moe()))
    assert padded - dropless == _kept_by_hand(24, 2, 8) - _kept_by_hand(16, 2, 8)
