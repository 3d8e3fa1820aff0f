"""archsim's sparse layer costs equal the scalesim 3.0.0 package's with ``SparsitySupport`` on.

Every expected value comes from running SCALE-Sim itself (``scalesim_reference.scalesim_sparse_conv``:
its own .cfg format, its topology list with the layer's N:M, its ``single_layer_sim``). Compute
cycles, folds, SRAM reads and writes (the ifmap count is a float in SCALE-Sim: compared with ``==``)
and the three SPARSE_REPORT storage figures must be equal exactly; mapping efficiency and compute
utilization (per-fold float averages in SCALE-Sim, closed form here) to 1e-12 relative. Where
SCALE-Sim cannot run a setting (its asserts, its ragged-array failures) archsim must refuse it with
an InputError, and where archsim refuses SCALE-Sim must fail too.

The default tier runs a representative subset (every dataflow and representation, both mappings,
a few seconds); the grid — every dataflow × representation × N:M ratio × mapping × 3 arrays × 24
layer shapes — is in the slow tier (about a minute of CPU).
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

from archsim.array.sparse_network import read_sparse_run, sparse_table
from archsim.array.sparse_training import SparseTraining, backward_gemms, weight_mask
from archsim.array.sparsity import SparsityConfig, kept_rows, sparse_layer_cost
from archsim.errors import InputError

pytest.importorskip("scalesim")
from scalesim_reference import scalesim_run_files, scalesim_sparse_conv

DATAFLOWS = ("ws", "os", "is")
REPRESENTATIONS = ("csr", "csc", "ellpack_block")
RATIOS = [(1, 4), (2, 4), (3, 4), (1, 1), (1, 2), (2, 3), (4, 8), (3, 7)]
# (optimized mapping, BlockSize): layer-wise, and row-wise with blocks that divide 2R or do not
MAPPINGS = [(False, 4), (True, 2), (True, 4), (True, 8), (True, 3)]
ARRAYS = [(4, 4), (8, 4), (6, 5)]
LAYERS = [  # (H, W, fh, fw, C, M, stride), SCALE-Sim geometry (no padding)
    (6, 6, 3, 3, 2, 5, 1), (5, 5, 3, 3, 2, 6, 1), (9, 7, 3, 3, 2, 4, 2), (11, 10, 3, 3, 2, 3, 3),
    (8, 8, 1, 1, 17, 9, 2), (7, 5, 1, 1, 4, 6, 3), (10, 10, 7, 7, 1, 4, 1), (7, 7, 7, 7, 1, 5, 3),
    (6, 6, 2, 2, 1, 1, 1), (5, 5, 5, 5, 1, 2, 1),
    # GEMMs as SCALE-Sim's GEMM mode writes them: M×K input, a 1×K filter, 1 channel, N filters
    (1, 1, 1, 1, 1, 1, 1), (1, 8, 1, 8, 1, 3, 1), (3, 16, 1, 16, 1, 5, 1), (4, 19, 1, 19, 1, 7, 1),
    (1, 33, 1, 33, 1, 9, 1), (5, 4, 1, 4, 1, 11, 1), (2, 24, 1, 24, 1, 8, 1), (7, 13, 1, 13, 1, 2, 1),
    (9, 17, 1, 17, 1, 16, 1), (3, 31, 1, 31, 1, 29, 1), (13, 7, 1, 7, 1, 11, 1), (1, 48, 1, 48, 1, 4, 1),
    (6, 5, 1, 5, 1, 6, 1), (16, 12, 1, 12, 1, 3, 1),
]


def gemm_of(layer):
    """(T, K, N) of a SCALE-Sim conv row: output ⌈(H − f + s)/s⌉ per side."""
    h, w, fh, fw, c, m, s = layer
    return math.ceil((h - fh + s) / s) * math.ceil((w - fw + s) / s), fh * fw * c, m


def check(layer, ratio, rows, cols, dataflow, representation, optimized, block):
    t, k, n = gemm_of(layer)
    config = SparsityConfig(representation, optimized, block)
    try:
        reference = scalesim_sparse_conv(*layer, ratio, rows, cols, dataflow, representation, optimized, block)
    except Exception as scalesim_failure:  # noqa: BLE001 — SCALE-Sim fails by assert, ValueError, …
        with pytest.raises(InputError):
            sparse_layer_cost(t, k, n, rows, cols, dataflow, ratio, config)
        return f"refused ({type(scalesim_failure).__name__})"
    ours = sparse_layer_cost(t, k, n, rows, cols, dataflow, ratio, config)
    assert ours.cycles == reference.compute_cycles
    assert reference.stall_cycles == 0  # CALC mode
    assert ours.folds == reference.folds
    assert ours.ifmap_sram_reads == reference.ifmap_sram_reads
    assert ours.filter_sram_reads == reference.filter_sram_reads
    assert ours.ofmap_sram_writes == reference.ofmap_sram_writes
    assert (ours.original_storage, ours.new_storage, ours.metadata_storage) == \
        (reference.original_storage, reference.new_storage, reference.metadata_storage)
    assert ours.kept_weights == reference.kept_weights
    assert ours.mapping_efficiency * 100 == pytest.approx(reference.mapping_efficiency, rel=1e-12)
    assert ours.compute_utilization * 100 == pytest.approx(reference.compute_utilization, rel=1e-12)
    return "equal"


SUBSET = [  # every dataflow and representation; both mappings; a refusal of each kind
    ((6, 6, 3, 3, 2, 5, 1), (2, 4), 4, 4, "ws", "csr", False, 4),
    ((4, 19, 1, 19, 1, 7, 1), (3, 4), 8, 4, "ws", "ellpack_block", False, 4),
    ((9, 7, 3, 3, 2, 4, 2), (2, 3), 6, 5, "ws", "csc", False, 4),
    ((6, 6, 3, 3, 2, 5, 1), (2, 4), 4, 4, "os", "csc", False, 4),
    ((3, 16, 1, 16, 1, 5, 1), (1, 4), 8, 4, "is", "ellpack_block", False, 4),
    ((5, 5, 3, 3, 2, 6, 1), (1, 4), 4, 4, "ws", "ellpack_block", True, 4),
    ((3, 31, 1, 31, 1, 29, 1), (2, 4), 8, 4, "ws", "csr", True, 8),
    ((7, 13, 1, 13, 1, 2, 1), (1, 2), 6, 5, "ws", "csc", True, 3),
    ((1, 4, 1, 4, 1, 3, 1), (1, 4), 4, 4, "os", "csr", True, 4),  # K_c = K: output stationary runs it
    ((6, 6, 3, 3, 2, 5, 1), (2, 4), 4, 4, "is", "csr", True, 4),  # SCALE-Sim: dimension mismatch
    ((6, 6, 3, 3, 2, 5, 1), (2, 4), 4, 4, "ws", "csr", True, 3),  # 3 does not divide 2·4 rows
    ((6, 6, 3, 3, 2, 5, 1), (2, 4), 4, 4, "ws", "csr", True, 8),  # BlockSize above the rows
]


@pytest.mark.parametrize("case", SUBSET, ids=lambda c: "-".join(map(str, c[1:])))
def test_subset_equals_scalesim(case):
    check(*case)


def test_subset_has_both_outcomes():
    outcomes = {check(*case).split(" ")[0] for case in SUBSET}
    assert outcomes == {"equal", "refused"}


@pytest.mark.parametrize("ratio", [(0, 4), (5, 4)])
def test_ratios_scalesim_cannot_run_are_refused(ratio):
    with pytest.raises(Exception):  # noqa: B017 — SCALE-Sim's own failure, whatever its type
        scalesim_sparse_conv(6, 6, 3, 3, 2, 5, 1, ratio, 4, 4, "ws", "csr", False, 4)
    with pytest.raises(InputError, match="N:M"):
        sparse_layer_cost(16, 18, 5, 4, 4, "ws", ratio, SparsityConfig("csr"))


def test_unknown_representation_is_refused():
    with pytest.raises(Exception):  # noqa: B017 — SCALE-Sim never sets the metadata figure
        scalesim_sparse_conv(6, 6, 3, 3, 2, 5, 1, (2, 4), 4, 4, "ws", "coo", False, 4)
    with pytest.raises(InputError, match="SparseRep"):
        SparsityConfig("coo")


@pytest.mark.slow
@pytest.mark.parametrize("dataflow", DATAFLOWS)
@pytest.mark.parametrize("rows, cols", ARRAYS)
def test_grid_equals_scalesim(dataflow, rows, cols):
    """Every representation × ratio × mapping × layer on one dataflow and array; both outcomes seen."""
    outcomes = []
    for representation, ratio, (optimized, block), layer in itertools.product(REPRESENTATIONS, RATIOS, MAPPINGS,
                                                                              LAYERS):
        if optimized and ratio not in ((1, 4), (3, 7)):  # row-wise mapping reads M only for ELLPACK
            continue
        outcomes.append(check(layer, ratio, rows, cols, dataflow, representation, optimized, block))
    assert "equal" in outcomes and len(outcomes) >= 3 * 8 * 24


ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_CFG = ROOT / "configs" / "arrays" / "scalesim_sparsity_128x128_ws.cfg"
FORMATS = ROOT / "tests" / "data" / "scalesim_formats"


def check_files(config: Path, topology: Path, gemm: bool) -> int:
    """``archsim sparse``'s table for a .cfg and topology against SCALE-Sim's run of the same files."""
    reference = scalesim_run_files(config, topology, gemm)
    table = sparse_table(*read_sparse_run(config, topology))
    assert len(table) == len(reference)
    for row, theirs in zip(table.itertuples(), reference):
        assert row.F_cycles == theirs["total_cycles"] - theirs["stall_cycles"]
        for name in ("ifmap_sram_reads", "filter_sram_reads", "ofmap_sram_writes", "original_storage",
                     "new_storage", "metadata_storage"):
            assert getattr(row, name) == theirs[name], name
        assert row.mapping_efficiency * 100 == pytest.approx(theirs["mapping_efficiency"], rel=1e-12)
    return len(table)


@pytest.mark.parametrize("topology, gemm", [("sparsity_conv.csv", False), ("sparsity_gemm.csv", True)])
def test_scalesims_sparsity_example_runs_and_agrees(topology, gemm):
    """SCALE-Sim's own sparsity example (its configs/sparsity.cfg values, USER bandwidth, row-wise
    ELLPACK, B = 8) on its two small example topologies (topologies/sparsity/conv.csv, gemm.csv)."""
    assert check_files(EXAMPLE_CFG, FORMATS / topology, gemm) >= 1


@pytest.mark.slow
def test_scalesims_sparsity_example_on_alexnet_conv1():
    """The example's third topology (topologies/sparsity/alexnet_part.csv: AlexNet conv1 at 1:4), whose
    numbers SCALE-Sim's repository also keeps as golden reports (test/sparsity/golden_trace)."""
    assert check_files(EXAMPLE_CFG, FORMATS / "sparsity_alexnet_part.csv", False) == 1


@pytest.mark.parametrize("representation, optimized", [("csr", "false"), ("csc", "true"), ("ellpack_block", "false")])
def test_the_example_with_every_representation_and_mapping(tmp_path, representation, optimized):
    text = EXAMPLE_CFG.read_text().replace("SparseRep : ellpack_block", f"SparseRep : {representation}")
    text = text.replace("OptimizedMapping : true", f"OptimizedMapping : {optimized}")
    text = text.replace("FilterOffset:   100", "FilterOffset:   10000000").replace("ArrayHeight : 128", "ArrayHeight : 8")
    text = text.replace("ArrayWidth :  128", "ArrayWidth :  8")
    config = tmp_path / "example.cfg"
    config.write_text(text)
    assert check_files(config, FORMATS / "sparsity_gemm.csv", True) == 2


TRAINING_CASES = [  # (layer, ratio, rows, cols, optimized, block)
    ((6, 6, 3, 3, 2, 5, 1), (2, 4), 4, 4, False, 4),
    ((6, 6, 3, 3, 4, 3, 1), (2, 4), 4, 4, False, 4),  # C a multiple of M: whole channels pruned
    ((5, 5, 3, 3, 8, 3, 2), (1, 4), 8, 4, False, 4),
    ((5, 5, 3, 3, 2, 6, 1), (1, 4), 4, 4, True, 4),
    ((6, 6, 2, 2, 8, 5, 1), (1, 4), 8, 4, True, 8),
]


def transposed_conv(weights, dout, h, w, stride):
    """dX of a conv by its definition (every tap scattered back), weights as SCALE-Sim orders its K
    rows: window index (r·fw + s)·C + c."""
    import numpy as np

    fh, fw, channels, _ = weights.shape
    dx = np.zeros((channels, h, w))
    for oy, ox in np.ndindex(dout.shape[1:]):
        for r, s in np.ndindex(fh, fw):
            y, x = oy * stride + r, ox * stride + s
            if y < h and x < w:
                dx[:, y, x] += weights[r, s] @ dout[:, oy, ox]
    return dx


@pytest.mark.parametrize("layer, ratio, rows, cols, optimized, block", TRAINING_CASES)
def test_delta_and_gradient_skip_exactly_what_only_pruned_weights_feed(layer, ratio, rows, cols, optimized, block):
    """SCALE-Sim's own K×N pattern is archsim's; with random weights on it, δ (the transposed conv,
    by definition) is zero in exactly the input channels ``delta="transposed"`` skips, and a masked G
    is zero in exactly the weight rows ``gradient="masked"`` skips."""
    import numpy as np

    from archsim.lowering import lower_layer
    from archsim.workload import Layer

    h, w, fh, fw, c, _, stride = layer
    t, k, n = gemm_of(layer)
    config = SparsityConfig("csr", optimized, block)
    reference = scalesim_sparse_conv(*layer, ratio, rows, cols, "ws", "csr", optimized, block)
    mask = weight_mask(k, n, ratio, config)
    assert np.array_equal(mask, np.asarray(reference.pattern, dtype=bool))
    rng = np.random.default_rng(0)
    weights = (rng.standard_normal((k, n)) * mask).reshape(fh, fw, c, n)
    oh, ow = math.ceil((h - fh + stride) / stride), math.ceil((w - fw + stride) / stride)
    dx = transposed_conv(weights, rng.standard_normal((n, oh, ow)), h, w, stride)
    live_channels = int(np.sum(np.any(dx != 0, axis=(1, 2))))
    grad = (rng.standard_normal((k, t)) @ rng.standard_normal((t, n))) * mask
    live_rows = int(np.sum(np.any(grad != 0, axis=1)))
    net_layer = Layer(name="conv", kind="conv", ifmap_h=h, ifmap_w=w, filter_h=fh, filter_w=fw, channels=c,
                      filters=n, stride=stride, inputs=("prev",), geometry="scalesim")
    lowered = lower_layer(net_layer, batch=1, mode="paper")
    pruned = backward_gemms(lowered, ratio, config, SparseTraining("transposed", "masked"))
    assert {g.n for g in pruned["D"]} == {live_channels}
    assert {g.m for g in pruned["G"]} == {live_rows}
    assert backward_gemms(lowered, ratio, config, SparseTraining("dense", "dense")) == \
        {"D": lowered.op("D").gemms, "G": lowered.op("G").gemms}


@pytest.mark.parametrize("case", SUBSET[:9:2], ids=lambda c: "-".join(map(str, c[1:])))  # cases SCALE-Sim runs
def test_energy_counts_compressed_weights_and_metadata(case):
    """F's counts use SCALE-Sim's own sparse figures: weights fetched = its New Storage (compressed
    weights + metadata), filter SRAM reads = its filter reads + metadata reads, MACs = T × kept weights."""
    from archsim.array.config import ArrayConfig
    from archsim.energy.sparse import sparse_layer_counts
    from archsim.lowering import lower_layer
    from archsim.workload import Layer

    layer, ratio, rows, cols, dataflow, representation, optimized, block = case
    h, w, fh, fw, c, m, stride = layer
    t, _, _ = gemm_of(layer)
    reference = scalesim_sparse_conv(*layer, ratio, rows, cols, dataflow, representation, optimized, block)
    lowered = lower_layer(Layer(name="conv", kind="conv", ifmap_h=h, ifmap_w=w, filter_h=fh, filter_w=fw, channels=c,
                                filters=m, stride=stride, geometry="scalesim"), batch=1)
    counts = sparse_layer_counts(lowered, ArrayConfig(rows, cols, dataflow), ratio,
                                 SparsityConfig(representation, optimized, block)).set_index("op")
    forward = counts.loc["F"]
    assert forward.cycles == reference.compute_cycles
    assert forward.filter_dram_reads == forward.filter_sram_writes == reference.new_storage
    assert forward.filter_sram_reads == reference.filter_sram_reads + reference.metadata_storage
    assert forward.ifmap_sram_reads == reference.ifmap_sram_reads
    assert forward.macs == t * reference.kept_weights
    # partial sums at the accumulator's width: one a kept MAC (ws, is), or the T·M outputs drained (os)
    assert forward.psum_register_words == (t * m if dataflow == "os" else t * reference.kept_weights)


# USER bandwidth mode: layers whose im2col repeats no ifmap word (GEMMs, 1×1 convs), 1 KiB SRAMs so they stall
USER_LAYERS = [(64, 40, 1, 40, 1, 48, 1), (33, 27, 1, 27, 1, 19, 1), (50, 45, 1, 45, 1, 30, 1),
               (8, 8, 1, 1, 17, 9, 2), (10, 10, 1, 1, 24, 20, 1)]
USER = (1, 4, 8)  # SRAM KiB, ofmap Bandwidth, ifmap/filter bank bandwidth


# conv layers whose windows overlap (f > stride; SCALE-Sim's im2col repeats ifmap words), the last three with
# windows past the ifmap's edge ((H − f) not a multiple of the stride: null taps)
USER_CONV_LAYERS = [(16, 16, 3, 3, 4, 8, 1), (17, 17, 3, 3, 6, 6, 2), (19, 19, 5, 5, 3, 5, 2), (14, 18, 3, 5, 5, 9, 1),
                    (21, 21, 7, 7, 2, 4, 2), (15, 15, 4, 4, 4, 6, 1), (16, 17, 3, 3, 4, 8, 2), (18, 18, 5, 5, 3, 5, 3),
                    (20, 20, 7, 7, 2, 4, 4)]


def check_user_mode(layer, ratio, rows, cols, dataflow):
    from archsim.array.config import ArrayConfig
    from archsim.array.sparse_network import kept_windows, memory_columns
    from archsim.workload import Layer

    t, k, n = gemm_of(layer)
    reference = scalesim_sparse_conv(*layer, ratio, rows, cols, dataflow, "csr", False, 4, user=USER)
    kb, bandwidth, read = USER
    array = ArrayConfig(rows, cols, dataflow, kb, kb, kb, (bandwidth,), True, (read, read))
    condensed = sparse_layer_cost(t, k, n, rows, cols, dataflow, ratio, SparsityConfig("csr", False, 4)).filter_rows
    h, w, fh, fw, c, filters, stride = layer
    windows = kept_windows(Layer(name="l", kind="conv", ifmap_h=h, ifmap_w=w, filter_h=fh, filter_w=fw, channels=c,
                                 filters=filters, stride=stride, geometry="scalesim"), t, k, ratio)
    assert windows is not None
    ours = memory_columns(t, condensed, n, 1, array, windows)
    assert (ours["F_total_cycles"], ours["F_stall_cycles"]) == (reference.compute_cycles, reference.stall_cycles)
    assert (ours["ifmap_dram_reads"], ours["filter_dram_reads"], ours["ofmap_dram_writes"]) == reference.memory[1:]
    return reference


@pytest.mark.parametrize("dataflow", DATAFLOWS)
def test_user_mode_stalls_of_a_sparse_gemm_equal_scalesim(dataflow):
    assert check_user_mode(USER_LAYERS[0], (2, 4), 8, 8, dataflow).stall_cycles > 0


@pytest.mark.parametrize("dataflow", DATAFLOWS)
def test_user_mode_stalls_of_a_sparse_conv_with_overlapping_windows_equal_scalesim(dataflow):
    """The condensed ifmap keeps each ifmap word once per window that reads it through a kept tap, and
    SCALE-Sim hits on any active copy: equal with the windows; the plain condensed GEMM stalls otherwise."""
    from archsim.array.config import ArrayConfig
    from archsim.array.sparse_network import memory_columns

    layer = USER_CONV_LAYERS[0]
    reference = check_user_mode(layer, (2, 4), 8, 8, dataflow)
    t, k, n = gemm_of(layer)
    kb, bandwidth, read = USER
    plain = memory_columns(t, kept_rows(k, 2, 4), n, 1, ArrayConfig(8, 8, dataflow, kb, kb, kb, (bandwidth,), True,
                                                                     (read, read)))
    assert plain["F_stall_cycles"] != reference.stall_cycles


@pytest.mark.slow
@pytest.mark.parametrize("dataflow", DATAFLOWS)
@pytest.mark.parametrize("ratio", [(1, 4), (2, 4), (3, 4), (1, 2), (3, 7)])
@pytest.mark.parametrize("layer", USER_LAYERS + USER_CONV_LAYERS)
def test_user_mode_stalls_every_dataflow_and_ratio(layer, ratio, dataflow):
    for rows, cols in ((8, 8), (4, 8)):
        check_user_mode(layer, ratio, rows, cols, dataflow)


def test_archsim_sparse_in_user_mode_runs_the_files_as_scalesim(tmp_path):
    """The .cfg and topology through both readers: Total and Stall Cycles per layer equal."""
    from scalesim_reference import sparse_config_text

    cfg, topology = tmp_path / "user.cfg", tmp_path / "gemms.csv"
    cfg.write_text(sparse_config_text(8, 8, "ws", "ellpack_block", False, 4, user=USER))
    topology.write_text("Layer, M, N, K, Sparsity,\ng1, 64, 48, 40, 2:4,\ng2, 33, 19, 27, 1:4,\n")
    reference = scalesim_run_files(cfg, topology, gemm=True)
    table = sparse_table(*read_sparse_run(cfg, topology))
    assert table.F_total_cycles.tolist() == [r["total_cycles"] for r in reference]
    assert table.F_stall_cycles.tolist() == [r["stall_cycles"] for r in reference]
    assert (table.F_total_cycles - table.F_stall_cycles).tolist() == table.F_cycles.tolist()


def test_archsim_sparse_in_user_mode_runs_a_conv_topology_as_scalesim(tmp_path):
    """A conv topology (overlapping windows; the second layer's run past the ifmap's edge) through both
    readers in USER mode: Total and Stall Cycles and DRAM counts per layer equal."""
    from scalesim_reference import sparse_config_text

    cfg, topology = tmp_path / "user.cfg", tmp_path / "convs.csv"
    cfg.write_text(sparse_config_text(8, 8, "is", "csr", False, 4, user=USER))
    topology.write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
                        "Strides, Sparsity,\nc1, 16, 16, 3, 3, 4, 8, 1, 2:4,\nc2, 18, 18, 5, 5, 3, 5, 3, 3:4,\n")
    reference = scalesim_run_files(cfg, topology, gemm=False)
    table = sparse_table(*read_sparse_run(cfg, topology))
    assert table.F_total_cycles.tolist() == [r["total_cycles"] for r in reference]
    assert table.F_stall_cycles.tolist() == [r["stall_cycles"] for r in reference]
    assert sum(table.F_stall_cycles) > 0
