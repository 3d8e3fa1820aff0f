"""One concept, one implementation: each rule or name below was written in more than one place (and the T ≥ 2
rule's places had drifted apart). Each test fails on the code before its fix, except the two that hold what a move
keeps: T = 2 runs, and the --max-mflops defaults are the documented figures."""

from __future__ import annotations

import pytest

import archsim
from archsim.cli import main
from archsim.errors import InputError

# The T ≥ 2 rule's line (docs/papers/bppsa.md: T = 1 has no dependent backward step), typed out, not read from the code.
T_RULE = ("T must be at least 2: a 1-step sequence has no dependent backward step, so BP and the scan both take "
          "0 cycles and there is no speedup to report")


@pytest.mark.parametrize("value", [0, 0.0, 1, 1.0, -3, "0", "1", "-3"])
def test_a_sequence_length_below_two_is_told_the_same_line_by_every_reader(value, capsys) -> None:
    """``seq_len=0.0`` said 'expected a positive integer in 1…2147483647', where ``--seq-len 0`` and ``seq_len=0``
    said T ≥ 2, and ``rnn_backward(1, …)`` said the rule without the value: one check now, one line."""
    from archsim.bppsa.rnn_cost import rnn_backward

    with pytest.raises(InputError) as keyword:
        archsim.bppsa_rnn(seq_len=value, processors=[4])
    assert keyword.value.message == f"{T_RULE}, got {value!r}"
    if isinstance(value, str):
        assert main(["bppsa", "rnn", "--seq-len", value, "--processors", "4"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].endswith(f"argument --seq-len: {T_RULE}, got {value!r}"), err
    if type(value) is int:
        with pytest.raises(InputError) as direct:
            rnn_backward(value, 4)
        assert direct.value.message == f"{T_RULE}, got {value!r}"


def test_a_sequence_length_of_two_or_more_runs_as_written() -> None:
    """The rule's edge: T = 2 runs, as ``2``, ``"2"`` and ``2.0`` (a pandas float column's whole number)."""
    for value in (2, "2", 2.0):
        assert archsim.bppsa_rnn(seq_len=value, processors=[4]).table["seq_len"].tolist() == [2]


def test_each_rnn_study_function_is_named_for_what_it_returns() -> None:
    """Two functions were named ``rnn_study``: the package's returned a DataFrame, the command's run a table with its
    meta. The package's is ``rnn_frame`` now: the DataFrame of the same rows, one per (T, p), p outer."""
    import pandas as pd

    import archsim.bppsa
    from archsim.array.config import ArrayConfig
    from archsim.bppsa_run import StudyRun, rnn_study

    frame = archsim.bppsa.rnn_frame([10, 30], [4], batch=16)
    assert isinstance(frame, pd.DataFrame) and "rnn_study" not in archsim.bppsa.__all__
    run = rnn_study([10, 30], [4], hidden=20, batch=16, array=ArrayConfig(), dtype=None)
    assert isinstance(run, StudyRun)
    assert frame[["seq_len", "processors"]].values.tolist() == [[10, 4], [30, 4]]
    assert frame["speedup"].tolist() == [row["speedup"] for row in run.table.frame().to_dict("records")]


def _top_level_assigned(tree) -> set[str]:
    import ast

    return {target.id for node in tree.body if isinstance(node, ast.Assign | ast.AnnAssign)
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(target, ast.Name)}


@pytest.mark.long  # reads every module (a few seconds)
def test_bppsa_max_mflops_defaults_have_one_home() -> None:
    """``pruned-vgg11 --max-mflops``'s default lived in choices/bppsa.py, ``network --max-mflops``'s in bppsa_run.py:
    both are archsim.choices.bppsa's now, and no other module assigns a ``*MAX*MFLOPS`` name."""
    from import_graph import library, parsed

    homes = {module: sorted(name for name in _top_level_assigned(parsed(path)) if "MAX" in name and "MFLOPS" in name)
             for module, path in library()}
    assert {module: names for module, names in homes.items() if names} == {
        "archsim.choices.bppsa": ["DEFAULT_MAX_SCAN_MFLOPS", "NETWORK_MAX_MFLOPS"]}


def test_bppsa_max_mflops_defaults_are_the_documented_ones() -> None:
    """docs/papers/bppsa.md: ``network --max-mflops`` defaults to 10,000 M, ``pruned-vgg11 --max-mflops`` to
    100,000 M; the flags' defaults are those figures, read from the one home."""
    from archsim.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["bppsa", "network", "any.csv"]).max_mflops == 10_000
    assert parser.parse_args(["bppsa", "pruned-vgg11"]).max_mflops == 100_000


def test_a_spec_file_hash_is_named_for_any_file_it_hashes(tmp_path) -> None:
    """``network_sha256`` also hashed a device sweep's model and device files (``check_unchanged``'s ``what``): it is
    ``file_sha256_unless_shipped`` now. By hashlib on the bytes written; a shipped name hashes to ''."""
    import hashlib

    from archsim.sweep import spec_files

    data = b"name,ifmap_h\nconv1,8\n"
    path = tmp_path / "device.cfg"
    path.write_bytes(data)
    assert spec_files.file_sha256_unless_shipped(str(path), "device") == hashlib.sha256(data).hexdigest()
    assert spec_files.file_sha256_unless_shipped("resnet50") == ""
    assert not hasattr(spec_files, "network_sha256")


@pytest.mark.long  # reads every module (a few seconds)
def test_network_suffixes_is_one_concept() -> None:
    """sweep/spec_files.py's ``NETWORK_SUFFIXES`` (a spec's entry that names a file) was another set than
    workload/model_files.py's (the network files a MODEL flag refuses by kind): the sweep's is ``FILE_NAME_SUFFIXES``."""
    from import_graph import library, parsed

    assert [module for module, path in library() if "NETWORK_SUFFIXES" in _top_level_assigned(parsed(path))] == [
        "archsim.workload.model_files"]


@pytest.mark.long  # reads every module (a few seconds)
def test_the_printed_walk_is_named_borrow_paper_everywhere() -> None:
    """LayerPipe's default ``--borrow`` was spelt ``LAYERPIPE_BORROW[0]`` (report_sections), ``DEFAULT_BORROW[0]``
    (report, units) and ``BORROW_PAPER`` (partition, pipeline): one name now, ``BORROW_PAPER``; no module indexes
    either tuple for it."""
    import ast

    from import_graph import library, parsed

    indexed = sorted(f"{module}: {node.value.id}[…]" for module, path in library() for node in ast.walk(parsed(path))
                     if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
                     and node.value.id in ("LAYERPIPE_BORROW", "DEFAULT_BORROW"))
    assert indexed == []
    from archsim.choices.partitions import BORROW_PAPER
    from archsim.sweep.spec import DEFAULT_BORROW

    assert DEFAULT_BORROW == (BORROW_PAPER,) == ("paper",)


def _top_level_functions(tree) -> set[str]:
    import ast

    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}


@pytest.mark.long  # reads every module (a few seconds)
def test_a_public_name_defined_twice_was_two_concepts_and_one_is_renamed() -> None:
    """``check_capacity`` was a pipeline's bytes against a processor's memory (footprint) and a mixture of experts'
    capacity settings (workload); ``compute_seconds`` a GEMM main loop's seconds on a GPU path (devices.kernels)
    and one pipeline rank's compute and recompute seconds (training.stages); ``iteration_energy`` also a
    transformer iteration priced on a cluster (training.energy). Each second concept has a name of its own now.
    ``iteration_energy`` stays in two modules: ``archsim.iteration_energy``, the ``archsim energy`` face, runs
    ``archsim.energy``'s model (one concept, the face and its model)."""
    from import_graph import library, parsed

    homes = {"check_capacity": ["archsim.footprint"], "check_moe_capacity": ["archsim.workload.config_checks"],
             "compute_seconds": ["archsim.devices.kernels"], "rank_compute_seconds": ["archsim.training.stages"],
             "cluster_iteration_energy": ["archsim.training.energy"],
             "iteration_energy": ["archsim.api_array", "archsim.energy.model"]}
    found = {name: [module for module, path in library() if name in _top_level_functions(parsed(path))]
             for name in homes}
    assert found == homes
