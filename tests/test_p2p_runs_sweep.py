"""``train --runs`` and ``train --sweep`` (``archsim.train_runs``, ``archsim.train_sweep``) cost every row's pipeline
sends with ``--p2p``/``p2p=`` (until 2026-12-05 refused: "times one iteration"), and a runs file's ``p2p`` column
sets a row's own. The reference is one ``archsim.train(..., p2p=X)`` per row, and the modes' documented rule
(docs/training.md: ``megatron`` blocks on 1F1B alone, PP 1 has no hop to wait for, a wait never shortens)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_robustness import clean_error, json_rows

import archsim
from archsim.choices.training import DEFAULT_P2P, P2P_MODES

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = str(ROOT / "configs" / "clusters" / "a100_node.toml")
MODEL, SEQ, BATCH = "gpt3_1.3b", 512, 16
# (tp, pp, dp, interleave): PP 1, 2 and 4 on 1F1B, and PP 4 on the interleaved schedule
LAYOUTS = ((1, 1, 8, 1), (2, 2, 2, 1), (1, 4, 2, 1), (1, 4, 2, 2))
HEADER = "tp,pp,dp,micro_batch,global_batch,interleave"


def _runs(tmp_path: Path, cells=None, column: str = "") -> Path:
    """A runs file of :data:`LAYOUTS`, with a ``p2p`` column of ``cells`` where given."""
    lines = [HEADER + (",p2p" if cells is not None else "")]
    for n, (tp, pp, dp, chunks) in enumerate(LAYOUTS):
        lines.append(f"{tp},{pp},{dp},1,{BATCH},{chunks}" + (f",{cells[n]}" if cells is not None else ""))
    path = tmp_path / f"runs{column}.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _alone(layout, p2p: str) -> float:
    tp, pp, dp, chunks = layout
    result, _ = archsim.train(MODEL, cluster=CLUSTER, seq=SEQ, tp=tp, pp=pp, dp=dp, global_batch=BATCH,
                              interleave=chunks, p2p=p2p)
    return result.iteration_seconds


@pytest.fixture(scope="module")
def alone() -> dict[str, list[float]]:
    """Each layout's iteration by ``archsim.train`` under each mode."""
    return {mode: [_alone(layout, mode) for layout in LAYOUTS] for mode in P2P_MODES}


def test_the_modes_differ_as_documented(alone):
    """The reference itself: PP 1 never waits, a wait lengthens PP > 1, and megatron is blocking on 1F1B and
    overlapped on the interleaved schedule — so a path that dropped the mode would be seen below."""
    free, held, megatron = alone["overlapped"], alone["blocking"], alone["megatron"]
    assert free[0] == held[0] == megatron[0]
    assert all(h > f for h, f in zip(held[1:], free[1:]))
    assert megatron[1:3] == held[1:3] and megatron[3] == free[3]


@pytest.mark.parametrize("mode", P2P_MODES)
def test_runs_cost_every_row_with_the_flag_as_train_alone(tmp_path, capsys, alone, mode):
    meta, rows = json_rows(capsys, "train", MODEL, "--cluster", CLUSTER, "--seq", SEQ, "--runs", _runs(tmp_path),
                           "--p2p", mode)
    assert [row["predicted_seconds"] for row in rows] == pytest.approx(alone[mode], rel=1e-12)
    assert meta["p2p"] == mode and all("p2p" not in row for row in rows)  # the command's: said once


def test_train_runs_keyword_is_the_flag(tmp_path, alone):
    result = archsim.train_runs(MODEL, runs=str(_runs(tmp_path)), cluster=CLUSTER, seq=SEQ, p2p="megatron")
    assert [row["predicted_seconds"] for row in result] == pytest.approx(alone["megatron"], rel=1e-12)
    assert result.to_dict()["meta"]["p2p"] == "megatron"
    with pytest.raises(archsim.InputError, match="p2p"):
        archsim.train_runs(MODEL, runs=str(_runs(tmp_path)), cluster=CLUSTER, seq=SEQ, p2p="blocked")


def test_a_p2p_column_sets_its_rows_sends(tmp_path, capsys, alone):
    """Empty: the flag's; any case, as every choice cell; the rows then carry each one's mode."""
    cells = ("", "Blocking", "overlapped", "")
    _, rows = json_rows(capsys, "train", MODEL, "--cluster", CLUSTER, "--seq", SEQ, "--runs", _runs(tmp_path, cells),
                        "--p2p", "megatron")
    ran = ("megatron", "blocking", "overlapped", "megatron")
    assert [row["p2p"] for row in rows] == list(ran)
    assert [row["predicted_seconds"] for row in rows] == \
        pytest.approx([alone[mode][n] for n, mode in enumerate(ran)], rel=1e-12)


def test_a_bad_p2p_cell_is_refused_naming_its_line(tmp_path, capsys):
    line = clean_error(capsys, "train", MODEL, "--cluster", CLUSTER, "--seq", SEQ, "--runs",
                       _runs(tmp_path, ("", "", "blocked", "")))
    assert "line 4, field 'p2p'" in line and "blocked" in line and "overlapped, blocking, megatron" in line


def test_the_flag_beside_a_p2p_on_every_row_is_refused(tmp_path, capsys):
    """It would set no row, as ``--schedule`` beside a schedule on every row (a flag told from its default)."""
    flag = next(mode for mode in P2P_MODES if mode not in (DEFAULT_P2P, "blocking"))
    line = clean_error(capsys, "train", MODEL, "--cluster", CLUSTER, "--seq", SEQ, "--runs",
                       _runs(tmp_path, ("blocking",) * len(LAYOUTS)), "--p2p", flag)
    assert f"--p2p {flag}: every row of the runs file names its own pipeline sends" in line


def test_sweep_costs_every_point_with_the_flag_as_train_alone(capsys, alone):
    _, rows = json_rows(capsys, "train", MODEL, "--cluster", CLUSTER, "--seq", SEQ, "--global-batch", BATCH,
                        "--sweep", "pp=1,4", "--sweep", "dp=fill", "--p2p", "blocking")  # LAYOUTS[0] and [2]
    assert [(row["pp"], row["dp"], row["p2p"]) for row in rows] == [(1, 8, "blocking"), (4, 2, "blocking")]
    assert [row["iteration_seconds"] for row in rows] == \
        pytest.approx([alone["blocking"][0], alone["blocking"][2]], rel=1e-12)


def test_train_sweep_keyword_and_axis(alone):
    """``p2p=`` prices every point; a ``p2p`` axis gives each point its own mode."""
    layout = LAYOUTS[3]  # interleaved: megatron overlaps, blocking waits
    kwargs = {"cluster": CLUSTER, "seq": SEQ, "global_batch": BATCH, "tp": layout[0], "pp": layout[1],
              "dp": layout[2], "interleave": layout[3]}
    frame = archsim.train_sweep(MODEL, sweep={"micro_batch": [1]}, p2p="blocking", **kwargs)
    assert frame["iteration_seconds"].tolist() == pytest.approx([alone["blocking"][3]], rel=1e-12)
    frame = archsim.train_sweep(MODEL, sweep={"p2p": list(P2P_MODES)}, **kwargs)
    assert frame["p2p"].tolist() == list(P2P_MODES)
    assert frame["iteration_seconds"].tolist() == pytest.approx([alone[mode][3] for mode in P2P_MODES], rel=1e-12)


@pytest.mark.parametrize("given", [None, *P2P_MODES])
def test_a_single_trains_meta_names_its_p2p_as_runs_and_sweeps_do(capsys, given):
    """Failed before: ``archsim train --format json``'s meta had no ``p2p`` (its ``--runs`` and ``--sweep`` meta and
    points did), so a saved document did not say how its pipeline sends were priced. The reference: the flag given,
    else the documented default (docs/training.md: megatron since 2026-12-05)."""
    flag = [] if given is None else ["--p2p", given]
    meta, _ = json_rows(capsys, "train", MODEL, "--cluster", CLUSTER, "--seq", SEQ, "--pp", 2, "--dp", 4,
                        "--global-batch", BATCH, *flag)
    assert meta["p2p"] == (given or "megatron")
