"""``archsim bppsa network NETWORK``: BPPSA on a network of the user's own (until 2026-12-05 only from Python, the
command ran the paper's two networks alone). The counts are by hand from Algorithm 1 and sparse_cost's rules, the
command against ``archsim.bppsa_network`` (one study) and against the library parts docs/api.md's example runs."""

from __future__ import annotations

import json

import numpy as np
import pytest
from api_parity_helpers import same_json
from test_docs import ROOT
from test_robustness import clean_error

import archsim
from archsim.cli import main
from archsim.errors import InputError

CHAIN = str(ROOT / "docs" / "examples" / "bppsa_chain.csv")
HEADER = ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, "
          "Padding, Type, Inputs,\n")
# n = 4 operators: conv 1→2 channels (3×3, padding 1) on 4×4, ReLU, 2×2 max-pool stride 2, fc 2·2·2 = 8 → 3
TINY = HEADER + ("conv, 4, 4, 3, 3, 1, 2, 1, 1, conv, input,\nrelu, 4, 4, 1, 1, 2, 2, 1, 0, elementwise, conv,\n"
                 "pool, 4, 4, 2, 2, 2, 2, 2, 0, pool, relu,\nfc, 2, 2, 2, 2, 2, 3, 1, 0, fc, pool,\n")


def _json(capsys, *argv) -> dict:
    capsys.readouterr()
    assert main(["bppsa", "network", *map(str, argv), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_tiny_chain_counted_by_hand(tmp_path, capsys):
    """Eq. 5's array is n + 1 = 5 elements [g, J_fcᵀ, J_poolᵀ, J_reluᵀ, J_convᵀ]: K = ⌈log₂ 5⌉ = 3, Algorithm 1 runs
    up-sweep levels 0 and 1, then down-sweep levels 2, 1, 0: 5 steps; BP 4 (one per operator). Up level 0 is
    a[1] = J_fcᵀ·g (8×3 dense times a 3-vector: 24 multiplies, 24 − 8 adds = 40 FLOPs) and a[3] = J_reluᵀ·J_poolᵀ
    (a 32-entry diagonal times 32×8 with one entry per row: 32 multiplies, 32 entries, no add = 32 FLOPs): 72 per
    sample, 144 for a batch of 2, the critical op 80."""
    path = tmp_path / "tiny.csv"
    path.write_text(TINY, encoding="utf-8")
    done = _json(capsys, path, "--batch", "2")
    meta, rows = done["meta"], done["rows"]
    assert (meta["scan_steps"], meta["bp_steps"], len(rows)) == (5, 4, 5)
    assert [(r["phase"], r["level"]) for r in rows] == [("up", 0), ("up", 1), ("down", 2), ("down", 1), ("down", 0)]
    assert (rows[0]["operations"], rows[0]["flops"], rows[0]["critical_flops"]) == (2, 144, 80)
    assert meta["gradient_max_abs_diff"] < 1e-12
    linear = _json(capsys, path, "--up-levels", "0")  # depth 0: the linear scan, BP's own steps
    assert linear["meta"]["scan_steps"] == linear["meta"]["bp_steps"] == 4


def test_the_command_is_the_api(capsys):
    same_json(["bppsa", "network", CHAIN, "--up-levels", "1", "--batch", "3", "--seed", "2"], archsim.bppsa_network,
              {"network": CHAIN, "up_levels": 1, "batch": 3, "seed": 2}, capsys)


def test_the_command_counts_what_the_docs_example_counts(capsys):
    """docs/api.md's chain built by hand from the library's parts (the CSV is the same geometry): the same steps and
    FLOPs, which depend on the layers' patterns alone, not on the weights drawn."""
    from archsim.bppsa import Conv2d, Linear, MaxPool2d, ReLU, critical_path, forward_chain, scan_flops, scan_input

    rng = np.random.default_rng(5)
    layers = [Conv2d(rng.standard_normal((4, 3, 3, 3)), padding=(1, 1)), ReLU(), MaxPool2d((2, 2), (2, 2)),
              Conv2d(rng.standard_normal((8, 4, 3, 3)), padding=(1, 1)), ReLU(), MaxPool2d((2, 2), (2, 2)),
              Linear(rng.standard_normal((10, 8 * 2 * 2)))]
    activations = forward_chain(layers, rng.standard_normal((3, 8, 8)))
    totals = critical_path(scan_flops(scan_input(layers, activations, rng.standard_normal(10)), up_levels=1))
    meta = _json(capsys, CHAIN, "--up-levels", "1")["meta"]
    by = totals.set_index("method")
    assert (meta["scan_steps"], meta["scan_critical_path_flops"], meta["scan_work_flops"]) == (
        by.steps["bppsa"], by.critical_path_flops["bppsa"], by.work_flops["bppsa"])
    assert (meta["bp_steps"], meta["bp_critical_path_flops"]) == (by.steps["bp"], by.critical_path_flops["bp"])


@pytest.mark.parametrize(("row", "named"), [
    ("bn, 2, 2, 1, 1, 2, 2, 1, 0, batchnorm, pool,", "layer 'bn' (batchnorm)"),
    ("up, 2, 2, 2, 2, 2, 2, 2, 0, deconv, pool,", "layer 'up' (deconv)"),
    ("gconv, 2, 2, 1, 1, 2, 2, 1, 0, conv, pool,\ngconv2, 2, 2, 1, 1, 2, 2, 1, 0, conv, pool,",
     "layer 'gconv2' (conv) reads pool"),
])
def test_a_kind_without_a_jacobian_is_refused_in_one_line(tmp_path, capsys, row, named):
    path = tmp_path / "bad.csv"
    path.write_text(HEADER + "\n".join(TINY.splitlines()[1:4]) + "\n" + row + "\n", encoding="utf-8")
    line = clean_error(capsys, "bppsa", "network", path)
    assert named in line and "BPPSA's Jacobians cover" in line
    with pytest.raises(InputError, match=named.replace("(", r"\(").replace(")", r"\)")):
        archsim.bppsa_network(path)


def test_a_join_a_depth_past_the_chain_and_a_size_past_the_limits_are_refused(capsys):
    """Each refused in a fraction of a second, before a Jacobian is built. layerpipe_sample's conv Jacobians hold
    112·112·32·3·25 + 56·56·64·32·25 + 28·28·128·64·9 + 28·28·128·128·9 = 364,077,056 entries; ffnn8's eight
    1024 × 1024 layers 8,388,608, BP about twice that: 17 M FLOPs."""
    assert "layer 'add' (elementwise) joins 2 inputs" in clean_error(
        capsys, "bppsa", "network", ROOT / "docs" / "examples" / "tiny_resnet.csv")
    assert "is 7 operators" in clean_error(capsys, "bppsa", "network", CHAIN, "--up-levels", "3")  # ⌈log₂ 8⌉ − 1 = 2
    # the figure it would need at the measured 2.2 GB per 30 M entries: 364.08 M · 73.3 B = 26.7 GB, 364.08 / 40 = 9.1
    line = clean_error(capsys, "bppsa", "network", "layerpipe_sample")
    assert "up to 364 M entries per sample, about 27 GB to build" in line and "9.1× fewer entries fit" in line
    assert "about 17 M FLOPs in BP alone" in clean_error(capsys, "bppsa", "network", "ffnn8", "--max-mflops", "16")


# fc 64 → 8 → 64 → 2: Jacobians 512 + 512 + 128 = 1,152 entries; the up-sweep's J_1ᵀ·J_2ᵀ is (64×8)·(8×64): 32,768
# multiplies, 64·64 = 4,096 entries
FUNNEL = HEADER + ("fc1, 1, 1, 1, 1, 64, 8, 1, 0, fc, input,\nfc2, 1, 1, 1, 1, 8, 64, 1, 0, fc, fc1,\n"
                   "fc3, 1, 1, 1, 1, 64, 2, 1, 0, fc, fc2,\n")


@pytest.mark.parametrize(("limit", "refused"), [(4_095, True), (4_096, False)])
def test_a_scan_product_is_limited_by_the_entries_it_holds_not_its_multiplies(tmp_path, capsys, monkeypatch, limit,
                                                                              refused):
    """Until 2026-12-05 a product's multiplies were taken as its entries: ffnn8's 1024 × 1024 up-sweep products
    (1,074 M multiplies, 1 M entries, 8 MB) were refused as 'up to 1,074 M entries'. The limit scaled down to
    FUNNEL's product: 4,096 entries fit a limit of 4,096 (its 32,768 multiplies refused it before), not 4,095."""
    import archsim.bppsa_run

    monkeypatch.setattr(archsim.bppsa_run, "MAX_STORED_ENTRIES", limit)
    path = tmp_path / "funnel.csv"
    path.write_text(FUNNEL, encoding="utf-8")
    if refused:
        assert "a product of funnel's scan would hold" in clean_error(capsys, "bppsa", "network", path)
    else:
        assert _json(capsys, path)["meta"]["gradient_max_abs_diff"] < 1e-12


def test_a_product_s_entries_are_bounded_by_its_shape_and_its_multiplies():
    """Two dense 8 × 8: 512 multiplies, 64 entries; two 8 × 8 diagonals: 8 multiplies, 8 entries; a matrix times a
    vector: the rows."""
    import scipy.sparse as sp

    from archsim.bppsa.sparse_cost import pattern_of, product_entries_bound, product_multiplies

    dense, diagonal, vector = pattern_of(np.ones((8, 8))), pattern_of(sp.eye(8)), pattern_of(np.ones(8))
    assert (product_multiplies(dense, dense), product_entries_bound(dense, dense, 512)) == (512, 64)
    assert (product_multiplies(diagonal, diagonal), product_entries_bound(diagonal, diagonal, 8)) == (8, 8)
    assert product_entries_bound(pattern_of(np.ones((5, 8))), vector, 40) == 5


def test_a_scan_past_the_flop_limit_stops_before_the_product(capsys):
    """The example chain's scan counts 639,824 FLOPs per sample (the command's default run), so a batch of 2 passes
    1 M in its scans while BP's estimate stays under it."""
    line = clean_error(capsys, "bppsa", "network", CHAIN, "--batch", "2", "--max-mflops", "1")
    assert "in its scans" in line and "above the limit of 1" in line


def test_a_scan_stopped_at_the_flop_limit_names_a_limit_that_runs_it_whole(tmp_path, capsys):
    """FUNNEL's products, all dense, by hand: Algorithm 1 (n = 3) forms J_3ᵀ·g (64×2 by 2: 128 multiplies),
    J_1ᵀ·J_2ᵀ (64·8·64 = 32,768) and J_2ᵀ·(J_3ᵀ·g) (8·64 = 512); BP J_3ᵀ·g and J_2ᵀ·(J_3ᵀ·g) (640): 34,048 multiplies,
    68,096 FLOPs counted per sample, 68.1 M for a batch of 1,000. Under --max-mflops 3 (BP's estimate, twice the
    1,152 entries by 1,000, is 2.3 M) the scan stops before J_1ᵀ·J_2ᵀ passes it, at 65.8 M (until 2026-12-05 the
    line offered that, 66, which the next product passes again); the bound, 69, runs it whole, and 68 does not."""
    path = tmp_path / "funnel.csv"
    path.write_text(FUNNEL, encoding="utf-8")
    line = clean_error(capsys, "bppsa", "network", path, "--batch", "1000", "--max-mflops", "3")
    assert "over 66 M FLOPs in its scans" in line and "at most 69 M (every product dense)" in line
    assert "give --max-mflops 69 to run it whole" in line
    assert "above the limit of 68" in clean_error(capsys, "bppsa", "network", path, "--batch", "1000",
                                                  "--max-mflops", "68")
    meta = _json(capsys, path, "--batch", "1000", "--max-mflops", "69")["meta"]
    assert meta["scan_steps"] == 3 and meta["gradient_max_abs_diff"] < 1e-12
    with pytest.raises(InputError, match=r"give max_mflops=69 to run it whole"):
        archsim.bppsa_network(path, batch=1000, max_mflops=3)


def test_output_paths_are_checked_before_the_study(tmp_path, capsys):
    """A folder for --out or --report: one line, nothing written; a file: the rows and the page written."""
    assert "folder" in clean_error(capsys, "bppsa", "network", CHAIN, "--out", tmp_path).lower()
    assert "folder" in clean_error(capsys, "bppsa", "network", CHAIN, "--report", tmp_path).lower()
    assert list(tmp_path.iterdir()) == []
    out, page = tmp_path / "steps.csv", tmp_path / "steps.html"
    assert main(["bppsa", "network", CHAIN, "--format", "csv", "--out", str(out), "--report", str(page)]) == 0
    assert out.read_text(encoding="utf-8").startswith("step,phase,level,operations,flops") and page.stat().st_size > 0


def test_its_help_imports_no_heavy_package():
    """``archsim bppsa network --help`` stays light, as every command's (tests/test_help_imports.py)."""
    import subprocess
    import sys

    from test_help_imports import HEAVY

    code = ("import sys\nfrom archsim.cli import main\ntry:\n    main(['bppsa', 'network', '--help'])\n"
            "except SystemExit as stop:\n    assert stop.code == 0, stop.code\n"
            f"print('LOADED', sorted(m for m in {HEAVY!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.splitlines()[-1] == "LOADED []" and "archsim bppsa network" in done.stdout


# SCALE-Sim's topology form folds a conv's padding into its IFMAP size (no Padding column): conv2 declares conv1's
# 4×4 output plus a border of 1, conv3 the 4×4 plus 2 around a 5×5 filter. PADDED states the same chain's padding.
SCALESIM = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
FOLDED = SCALESIM + "conv1, 6, 6, 3, 3, 1, 2, 1,\nconv2, 6, 6, 3, 3, 2, 2, 1,\nconv3, 8, 8, 5, 5, 2, 3, 2,\n"
PADDED = HEADER + ("conv1, 6, 6, 3, 3, 1, 2, 1, 0, conv, input,\nconv2, 4, 4, 3, 3, 2, 2, 1, 1, conv, conv1,\n"
                   "conv3, 4, 4, 5, 5, 2, 3, 2, 2, conv, conv2,\n")


def test_a_padding_folded_into_the_input_is_read_as_the_conv_s_padding(tmp_path, capsys):
    """Refused until 2026-12-05 (conv2 'reads a 6x6x2 input, but conv1 gives 4x4x2'). The folded chain is the padded
    one: the same steps and FLOPs (they depend on each Jacobian's pattern, so on the padding), the same weights
    and input from the seed, so the same gradient check, and the scan's gradients equal plain BP's."""
    folded, padded = tmp_path / "folded.csv", tmp_path / "padded.csv"
    folded.write_text(FOLDED, encoding="utf-8")
    padded.write_text(PADDED, encoding="utf-8")
    ours, reference = _json(capsys, folded), _json(capsys, padded)
    assert ours["meta"]["gradient_max_abs_diff"] < 1e-12
    assert ours["rows"] == reference["rows"]
    assert {k: v for k, v in ours["meta"].items() if k != "network"} == {
        k: v for k, v in reference["meta"].items() if k != "network"}
    # n = 3: conv3's output is 3·((4 + 4 − 5)//2 + 1)² = 12 values; Algorithm 1 on n + 1 = 4 elements: 3 steps
    assert (ours["meta"]["operators"], ours["meta"]["scan_steps"], ours["meta"]["bp_steps"]) == (3, 3, 3)


@pytest.mark.parametrize(("conv2", "why"), [
    ("conv2, 5, 6, 3, 3, 2, 2, 1,", "odd border"),  # 4 + 1 rows: one side only
    ("conv2, 10, 10, 3, 3, 2, 2, 1,", "whole window on zeros"),  # a border of 3 around a 3×3 filter
])
def test_a_folded_border_that_cannot_be_read_so_is_refused_in_one_line(tmp_path, capsys, conv2, why):
    path = tmp_path / "odd.csv"
    path.write_text(SCALESIM + f"conv1, 6, 6, 3, 3, 1, 2, 1,\n{conv2}\n", encoding="utf-8")
    line = clean_error(capsys, "bppsa", "network", path)
    assert "layer 'conv2' (conv) reads a" in line and "'conv1' gives 4x4x2" in line and why in line


def test_a_folded_border_beside_a_stated_padding_is_refused(tmp_path, capsys):
    path = tmp_path / "both.csv"
    path.write_text(HEADER + "conv1, 6, 6, 3, 3, 1, 2, 1, 0, conv,,\nconv2, 6, 6, 3, 3, 2, 2, 1, 1, conv,,\n",
                    encoding="utf-8")
    line = clean_error(capsys, "bppsa", "network", path, "--shapes", "off")
    assert "beside Padding 1" in line and "'conv1' gives 4x4x2" in line


def test_a_folded_border_is_read_per_axis():
    """A 4×4×2 output read as 8×6: 2 rows and 1 column of zeros each side (the Conv2d's (h, w) padding)."""
    from archsim.bppsa.chain import folded_border
    from archsim.workload.layer import Layer

    row = Layer(name="c", kind="conv", ifmap_h=8, ifmap_w=6, filter_h=3, filter_w=3, channels=2, filters=1, stride=1)
    assert folded_border(row, (2, 4, 4)) == (2, 1)
    assert folded_border(row, (3, 4, 4)) is None  # other channels: not this output
    assert folded_border(row, (2, 8, 6)) is None  # no border: read as declared


def test_each_operator_s_jacobian_density_is_table_1_s(tmp_path, capsys):
    """TINY by hand (§3.3): the conv's Jᵀ is 16 × 32 and stores c_i·c_o·V_h·V_w = 1·2·10·10 = 200 (V = 3·4 − 2 taps
    in bounds per axis); ReLU's its diagonal, 1 of 32; the 2×2 pooling's every input once, 32 of 32 × 8, Table 1's
    h_f·w_f / (c·h·w) = 4/32 exactly; the fc is dense. Printed in the table as one name:value line."""
    path = tmp_path / "tiny.csv"
    path.write_text(TINY, encoding="utf-8")
    density = _json(capsys, path)["meta"]["jacobian_density"]
    assert density == {"conv": 200 / 512, "relu": 1 / 32, "pool": 4 / 32, "fc": 1.0}
    assert main(["bppsa", "network", str(path)]) == 0
    assert "# jacobian_density: conv:0.3906; relu:0.03125; pool:0.125; fc:1" in capsys.readouterr().out.splitlines()


def test_the_docs_chain_s_steps_and_densities_counted_by_hand(capsys):
    """docs/papers/bppsa.md's figures for docs/examples/bppsa_chain.csv, by hand. Steps: n = 7 operators make an
    array of n + 1 = 8 elements, K = ⌈log₂ 8⌉ = 3, Algorithm 1's 2K − 1 = 5 steps against BP's 7 (one per
    operator); with one up-sweep level, 1 up, a linear scan over the 8/2 = 4 block roots (3 steps), 1 down: 5 again.
    Densities (§3.3, stored entries of each Jᵀ over its size): a 3×3 padding-1 conv keeps V = 3·h − 2 taps in bounds
    per axis, so conv1 (3→4 channels on 8×8, Jᵀ 192 × 256) stores 3·4·22² and conv2 (4→8 on 4×4, Jᵀ 64 × 128)
    4·8·10²; a ReLU's Jᵀ is its diagonal (1/256, 1/128); a 2×2 stride-2 pooling stores each input once
    (256 of 256 × 64, 128 of 128 × 32); the fc is dense."""
    full = _json(capsys, CHAIN)["meta"]
    one = _json(capsys, CHAIN, "--up-levels", "1")["meta"]
    assert (full["scan_steps"], full["bp_steps"], one["scan_steps"]) == (5, 7, 5)
    assert full["jacobian_density"] == pytest.approx({
        "conv1": 3 * 4 * 22**2 / (192 * 256), "relu1": 1 / 256, "pool1": 1 / 64,
        "conv2": 4 * 8 * 10**2 / (64 * 128), "relu2": 1 / 128, "pool2": 1 / 32, "fc": 1.0}, rel=1e-12)
