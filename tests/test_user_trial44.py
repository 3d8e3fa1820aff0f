"""An LLM training engineer's trial: planning a run on 4 servers × 8 H100 from Python and the CLI (a
Llama-2-13B-shaped model, a runs file written by hand or exported from a spreadsheet, the cluster TOML).

Each test here failed on the code before its fix (the docstring says how).
"""

from __future__ import annotations

from pathlib import Path

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
MODEL = str(ROOT / "configs/transformers/gpt_1024h_24l.json")
CLUSTER = str(ROOT / "configs/clusters/a100_node.toml")
HEADER = "tp,pp,dp,micro_batch,global_batch,recompute\n"


def _runs_csv(capsys, path: Path) -> tuple[int, list[str], str]:
    capsys.readouterr()
    status = main(["train", MODEL, "--cluster", CLUSTER, "--runs", str(path), "--attention", "standard",
                   "--format", "csv"])
    out, err = capsys.readouterr()
    return status, [line for line in out.splitlines() if line and not line.startswith("#")], err


def test_a_spreadsheet_row_of_empty_cells_is_a_blank_line(tmp_path, capsys):
    """Failed before: a spreadsheet saves a row it emptied as commas alone (``,,,,,``); the runs file refused
    it ("line 3, field 'tp': expected a positive integer, got ''") where it skips a blank line and the topology
    CSV reader skips such a row. Now it is skipped as a blank line is: the same runs, each still named by its
    own line in the file."""
    plain = tmp_path / "plain.csv"
    plain.write_text(HEADER + "2,2,2,1,16,full\n\n1,2,4,2,16,selective\n")
    spread = tmp_path / "spread.csv"
    spread.write_text(HEADER + "2,2,2,1,16,full\n,,,,,\n1,2,4,2,16,selective\n, ,\t,,,\n")
    status, want, _ = _runs_csv(capsys, plain)
    assert status == 0 and len(want) == 3, want  # the header and two runs
    status, got, err = _runs_csv(capsys, spread)
    assert status == 0, err
    assert got == want
    assert [row.split(",")[0] for row in got[1:]] == ["2", "4"]  # file lines 2 and 4
