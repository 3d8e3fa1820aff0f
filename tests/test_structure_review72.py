"""A name says what it is: each test here fails on the code before its fix (docs/architecture.md's map names the
modules; the structure review of 2026-12-05)."""

from __future__ import annotations

import pytest

import archsim.network
import archsim.training.cluster_file
import archsim.training.table_lines


def test_the_cluster_files_warnings_and_notes_are_named_for_them() -> None:
    """``network_lines`` named two unrelated functions: :mod:`archsim.training.table_lines`' (train's meta entries as
    one table line each, a dict) and :mod:`archsim.network`'s (a cluster document's warnings and notes, a pair of
    tuples); the second, and its caller on files with devices, are named for the pair they return now."""
    assert not hasattr(archsim.network, "network_lines")
    assert not hasattr(archsim.training.cluster_file, "cluster_file_lines")
    assert hasattr(archsim.training.table_lines, "network_lines")  # the meta's lines keep their name
    spec = {"cluster": {}, "servers": [{"gpus": 8, "gpu": "A100", "count": 2, "intra_server_gbps": 2400}],
            "network": {"nics_per_server": 8, "nic_gbps": 200, "switch_tiers": 3}}
    network = archsim.network.read_network(spec, 8)
    warnings, notes = archsim.network.network_warnings_and_notes(spec, network, 2)
    # docs/formats.md: switch_tiers other than 2 is said and not read (switch hops' latency is not modelled)
    assert warnings == () and len(notes) == 1 and notes[0].startswith("switch_tiers = 3 is not read")


def test_the_searchs_pareto_front_lives_with_its_rows() -> None:
    """``pareto_front`` sat in ``search_rows.py`` (a row's Megatron arguments and train line), used only by
    ``search_front.py``, which picks the front's rows: it is that module's now. The front by hand: of
    (seconds, bytes) (1, 9), (2, 5), (2, 7), (3, 5), (4, 1), the kept ones are those no faster entry is as small as."""
    from archsim.training import search_front, search_rows

    assert not hasattr(search_rows, "pareto_front")
    costed = [(3, None, 5, "c"), (1, None, 9, "a"), (2, None, 7, "x"), (2, None, 5, "b"), (4, None, 1, "d")]
    assert [t[3] for t in search_front.pareto_front(costed)] == ["a", "b", "d"]


def test_the_library_holds_no_code_only_its_tests_call() -> None:
    """Three names only tests reached: ``Layer.out_channels`` (a second name of ``filters``),
    ``DeltaCoster.largest_fitting_part`` (``fitting_split``'s first entry) and ``archsim.sim.optimal`` (the MILP
    that decides whether a greedy schedule is optimal: the tests' oracle, now ``tests/optimum_reference.py``)."""
    import importlib.util

    from archsim.partition.coster import DeltaCoster
    from archsim.workload.layer import Layer

    assert not hasattr(Layer, "out_channels") and not hasattr(DeltaCoster, "largest_fitting_part")
    assert importlib.util.find_spec("archsim.sim.optimal") is None


def test_trains_frame_reads_its_breakdown_from_the_document_alone() -> None:
    """``to_frame()`` took its rows and meta from ``to_dict()``'s copy but the breakdown from the result's own
    ``breakdown``, a dict docs/api.md leaves editable: an edited field changed the frame's ``breakdown_seconds`` and
    not the JSON's. One source now; the frame's cell names each part of the JSON's breakdown."""
    import warnings

    import archsim

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result, _ = archsim.train("configs/transformers/gpt_1024h_24l.json", cluster="configs/clusters/a100_node.toml",
                                  global_batch=16, tp=2, pp=2, dp=2)
    with pytest.raises(TypeError):  # read-only since 2026-12-05 (docs/api.md): the edit cannot reach either
        result.breakdown["compute"] = 1234.5
    cell = result.to_frame()["breakdown_seconds"].iloc[0]
    document = result.to_dict()["meta"]["breakdown_seconds"]
    assert "1234.5" not in cell and document["compute"] != 1234.5
    assert cell == ", ".join(f"{part}: {seconds!r}" for part, seconds in document.items())


def test_which_chunks_a_pipeline_rank_runs_is_written_once() -> None:
    """The search had its own copy of the V-shaped schedules (``V_SHAPED``, train's ``V_SCHEDULES``), of a rank's
    chunks (``rank_chunks``, the inverse of train's ``rank_of_stages``) and of the chunks a schedule runs (train's
    ``chunks_run``): one rule now, in ``training/parallel.py``. By hand (Narayanan et al.'s interleaving, chunk j on
    rank j mod p; ZB-V's V, chunks r and 2p − 1 − r on rank r) and read back over every small layout."""
    import itertools

    from archsim.training import search_space
    from archsim.training.parallel import Parallelism, rank_of_stages, rank_stages

    assert not hasattr(search_space, "V_SHAPED") and not hasattr(search_space, "rank_chunks")
    assert rank_stages("interleaved-1f1b", 4, 2, 1) == [1, 5] and rank_stages("1f1b", 4, 1, 3) == [3]
    assert rank_stages("zb-v", 4, 2, 1) == [1, 6] and rank_stages("dualpipev", 2, 2, 0) == [0, 3]
    for schedule, pp, interleave in itertools.product(("1f1b", "interleaved-1f1b", "zb-v", "dualpipev"), (2, 4),
                                                      (1, 2, 3)):
        if interleave > 1 and schedule != "interleaved-1f1b":
            continue
        par = Parallelism(pp=pp, interleave=interleave, schedule=schedule, global_batch=4 * pp)
        owner = rank_of_stages(par)
        assert sorted(s for r in range(pp) for s in rank_stages(schedule, pp, par.chunks, r)) == list(range(len(owner)))
        assert all(owner[s] == r for r in range(pp) for s in rank_stages(schedule, pp, par.chunks, r))
