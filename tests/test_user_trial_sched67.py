"""A cluster-scheduling and heterogeneous-planning researcher on a cluster and a job file of their own: a refused
`plan` prints its error line alone (no note of the run it never made before it), `plan --help` says which
`--dtype` it prices a GPU-named cluster in, and `cluster`'s refusals and per-job times read as the caller wrote
them."""

from __future__ import annotations

import warnings

import pytest

import archsim
from archsim.cli import main
from archsim.errors import InputError

# two GPU kinds on servers of different links: 2 × 4 A100s (their NVLink), 2 × 2 V100 PCIe at 256 Gb/s, 100 Gb/s
# between servers. plan prices one layer profile for every GPU, so it plans this on one array per GPU (--array)
HETERO = """[cluster]
name = "mylab"
inter_server_gbps = 100

[[servers]]
count = 2
gpus = 4
gpu = "a100-40gb"

[[servers]]
count = 2
gpus = 2
gpu = "v100-pcie-32gb"
intra_server_gbps = 256
"""


def _cluster(tmp_path) -> str:
    path = tmp_path / "mylab.toml"
    path.write_text(HETERO)
    return str(path)


def test_a_refused_plan_prints_its_error_line_alone(tmp_path, capsys) -> None:
    """docs/cli.md: notes on what a run read follow the run, and a refused run prints its error line alone. The
    note that the servers' GPUs are set aside for `--array` was said as the layers were priced, before `--batch 4`
    (4 samples cannot make 8 micro-batches) was refused: two lines for one error."""
    cluster = _cluster(tmp_path)
    assert main(["plan", "ffnn8", "--cluster", cluster, "--array", "32x32", "--microbatches", "8",
                 "--batch", "4"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("archsim plan: error: field 'batch'"), err


def test_a_plan_that_runs_still_says_its_note_after_the_run(tmp_path, capsys) -> None:
    """The note is held, not dropped: a run that succeeds says it on stderr once, after the stdout table."""
    cluster = _cluster(tmp_path)
    assert main(["plan", "ffnn8", "--cluster", cluster, "--array", "32x32", "--microbatches", "2",
                 "--baselines", "none"]) == 0
    captured = capsys.readouterr()
    notes = [line for line in captured.err.splitlines() if "set aside" in line or "as --array asked" in line]
    assert len(notes) == 1 and "a100-40gb, v100-pcie-32gb" in notes[0], captured.err
    assert "# method: spp" in captured.out


def test_a_refused_plan_from_python_warns_nothing_before_its_error(tmp_path) -> None:
    """archsim.plan raises the same refusal with no UserWarning of a run that did not happen."""
    cluster = _cluster(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(InputError, match="does not split into"):
            archsim.plan("ffnn8", cluster=cluster, array="32x32", microbatches=8, batch=4)
    assert [str(w.message) for w in caught] == []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        archsim.plan("ffnn8", cluster=cluster, array="32x32", microbatches=2, baselines="none")
    assert sum("as array asked" in str(w.message) for w in caught) == 1
