"""Refuse before working: a job's size is estimated from its flags and refused (one line, exit 2, the
estimate and the flag that lifts the limit) before anything is built; flag combinations come first.

Each reproducer swaps the expensive builder for one that fails the test if called, so "refused first"
is checked, not timed.
"""

from __future__ import annotations

import math

import pytest

from archsim.cli import main
from archsim.policies import zb_exact
from archsim.policies.zb_exact import count_stage_orders, stage_orders


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _must_not_run(*_, **__):
    raise AssertionError("built before the size check")


def young_tableaux(m: int) -> int:
    """Standard Young tableaux of a 3 × m grid (hook length formula): the orders with no memory limit."""
    return 2 * math.factorial(3 * m) // (math.factorial(m) * math.factorial(m + 1) * math.factorial(m + 2))


@pytest.mark.parametrize("m", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("mb, mw, limit", [(1.0, 0.4, 100.0), (1.0, 0.4, 2.0), (1.0, 0.0, 1.0), (1.0, 0.4, 1.4),
                                           (1.0, 0.5, 3.0), (2.0, 1.0, 1.0)])
def test_counting_the_orders_equals_listing_them(m, mb, mw, limit):
    """Brute force (the enumeration the search uses) against the count that replaces it for the check."""
    listed = len(stage_orders(m, mb, mw, limit))
    assert count_stage_orders(m, mb, mw, limit) == listed
    if limit >= m * mb:  # no order ever holds more than m activations: the limit never binds
        assert listed == young_tableaux(m)


def test_young_tableaux_counts_match_the_module_docstring():
    assert [young_tableaux(m) for m in (2, 3, 4)] == [5, 42, 462]
    assert count_stage_orders(8, 1.0, 0.4, 1e9) == young_tableaux(8) == 23_371_634


def test_a_capped_count_stops_early_and_says_it_passed_the_cap():
    assert count_stage_orders(8, 1.0, 0.4, 1e9, cap=1000) == 1001
    assert count_stage_orders(3, 1.0, 0.4, 1e9, cap=1000) == 42


def test_zb_2p_exact_over_the_limit_is_refused_before_any_order_is_built(capsys, monkeypatch):
    """Issue reproducer: M = 8 was killed at 23 GB, M = 7 took 46 s and 2.9 GB before refusing."""
    monkeypatch.setattr(zb_exact, "stage_orders", _must_not_run)
    for m in (7, 8):
        code, out, err = run(["schedule", "--stages", "4", "--stage-times", "1,1,1", "--comm", "0.1",
                              "--microbatches", str(m), "--policy", "zb-2p-exact"], capsys)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
        per_stage = young_tableaux(m)  # 2p·M_B = 8 ≥ m: the memory limit does not bind
        assert f"{per_stage ** 4:,} combinations" in err and f"{per_stage:,} orders per stage" in err
        assert "300,000" in err and ("--max-orders" in err or "heuristic" in err)


def test_the_library_search_counts_before_listing(monkeypatch):
    from archsim.errors import InputError

    monkeypatch.setattr(zb_exact, "stage_orders", _must_not_run)
    with pytest.raises(InputError, match="300,000"):
        zb_exact.zb_optimal_order([1.0] * 4, [1.0] * 4, [1.0] * 4, 0.1, 8, 2)


def test_max_orders_lifts_and_lowers_the_exact_limit(capsys):
    argv = ["schedule", "--stages", "2", "--stage-times", "1,1,1", "--comm", "0.1", "--microbatches", "3",
            "--policy", "zb-2p-exact", "--format", "csv"]
    assert run(argv, capsys)[0] == 0  # 42² = 1,764 combinations: under the default
    code, _, err = run(argv + ["--max-orders", "1000"], capsys)
    assert code == 2 and "1,764 combinations" in err and "--max-orders 1764" in err


@pytest.mark.parametrize("flags", [["--stages", "4096", "--microbatches", "1000"],  # (10⁹ stages: over the flag's range)
                                   ["--stages", "4", "--microbatches", "2147483647"]])
def test_absurd_stage_runs_are_refused_before_the_profile_is_built(flags, capsys, monkeypatch):
    from archsim.policies.stage_profile import StageProfile

    monkeypatch.setattr(StageProfile, "uniform", _must_not_run)
    code, out, err = run(["schedule", "--stage-times", "1,1,1", "--policy", "zb-h1", *flags], capsys)
    assert code == 2 and out == "" and "--max-ops" in err and "above the limit of 1,000,000" in err


def test_pipeline_checks_flag_combinations_before_the_search(capsys, monkeypatch):
    """Issue reproducer: --gantt without --microbatches was refused only after the LayerPipe search."""
    from archsim.commands import pipeline

    monkeypatch.setattr(pipeline, "network_from_args", _must_not_run)
    monkeypatch.setattr(pipeline, "partition", _must_not_run)
    for extra in (["--gantt", "g.html"], ["--memory"], ["--capacity-gb", "8"], ["--split-axes", "bogus"]):
        code, out, err = run(["pipeline", "vgg16", "--processors", "4", *extra], capsys)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, extra


def test_pipeline_refuses_a_huge_simulation_before_partitioning(capsys, monkeypatch):
    from archsim.commands import pipeline

    monkeypatch.setattr(pipeline, "partition", _must_not_run)
    code, _, err = run(["pipeline", "vgg16", "--processors", "4", "--microbatches", "1000000"], capsys)
    assert code == 2 and "--max-ops" in err


def test_an_spp_search_too_large_is_refused_before_any_table(monkeypatch, capsys):
    """SPP's PRM grows as L²V³: its steps and tables are estimated from the profile and cluster sizes
    (176 layers, 32 GPUs, 32 stage counts: 31 · 176² · 32³ / 4 steps by hand, and as many again for the
    pipedream-prm baseline, which searches the same 32 stage counts) and refused first."""
    from archsim.spp import prm

    monkeypatch.setattr(prm, "prm_search", _must_not_run)
    argv = ["plan", "tests/data/pipedream/profiles/resnet50.txt", "--cluster", "configs/clusters/spp_sim.toml",
            "--microbatches", "4", "--max-search-steps", "1000"]
    code, out, err = run(argv, capsys)
    steps = 31 * 176**2 * 32**3 // 4
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert f"{steps:,} steps" in err and f"--max-search-steps {2 * steps}" in err


def test_spp_tables_over_4_gb_are_refused_before_any_table(monkeypatch, tmp_path, capsys):
    """1,024 GPUs, 22 layers, 2 stage counts by hand: 8 · 2 · 23 · 1025² B of values and 16 · 1 · 23 · 1025² B of
    choices (0.773 GB), the (V+1)³ tables of links and latencies between blocks, 2 · 8 · 1025³ B (17.23 GB, the
    largest), the paper's all-reduce table 8 · 23² B and 8 · (3 · 1025² + 2 · 23² + 2 · 1024² + 2 · 23 + 2 · 22 + 1025)
    B of other inputs (0.042 GB): 18.0 GB. The pipedream-prm baseline searches all 22 stage counts: 8 · 22 · 23 · 1025² B
    of values (4.25 GB) and 16 · 21 · 23 · 1025² B of choices (8.12 GB) beside the same rest, 29.6 GB, which
    --max-stages does not bound."""
    from archsim.spp import prm

    monkeypatch.setattr(prm, "prm_search", _must_not_run)
    cluster = tmp_path / "big.toml"
    cluster.write_text('[cluster]\nname = "big"\ninter_server_gbps = 100\n\n'
                       '[[servers]]\ncount = 128\ngpus = 8\nintra_server_gbps = 1000\n')
    code, out, err = run(["plan", "tests/data/pipedream/profiles/alexnet.txt", "--cluster", str(cluster),
                          "--microbatches", "4", "--max-stages", "2"], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "up to 2 stages is about 129,922,760,704 steps and 18 GB of tables" in err  # 1 · 22² · 1024³ / 4
    assert "up to 22 about 2,728,377,974,784 steps and 29.6 GB" in err  # 21 · 22² · 1024³ / 4
    assert "above the 4 GB bound (the links and latencies between blocks: 17.2 GB)" in err
    assert "use fewer GPUs (--max-stages bounds SPP's search, not the pipedream-prm baseline's)" in err
