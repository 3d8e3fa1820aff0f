"""One transformer block costed alone, as docs/own-model.md shows it: a ``layers = 1`` config exported as a layers
CSV (``archsim import``), its final norm and LM head rows dropped, costed by ``cost``. The block's rows are a GPT
block's twelve, by hand (two norms, the QKV, scores, softmax, context and output of attention, a residual add, the
MLP's two GEMMs and GELU, a second add), and the CSV's costs are the config's own rows, the head's left out."""

from __future__ import annotations

from pathlib import Path

from api_parity_helpers import cli_json
from test_vector_assumption import CHIP  # 4 arrays of 128 × 128 ws at 1 GHz, no [vector]

from archsim.cli import main

BLOCK = ["ln1", "qkv", "scores", "softmax", "context", "out", "add1", "ln2", "ffn1", "gelu", "ffn2", "add2"]


def test_the_documented_recipe_costs_the_block_alone(tmp_path: Path, capsys):
    config = tmp_path / "one.toml"
    config.write_text('[transformer]\nfamily = "gpt"\nlayers = 1\nhidden = 256\nheads = 4\nvocab = 5000\nseq = 128\n',
                      encoding="utf-8")
    chip = tmp_path / "chip.toml"
    chip.write_text(CHIP, encoding="utf-8")
    assert main(["import", str(config), "-o", str(tmp_path / "one.csv")]) == 0
    lines = (tmp_path / "one.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    kept = [line for line in lines if not line.startswith(("ln_f,", "lm_head,"))]  # the docs' grep -v
    assert len(lines) - len(kept) == 2
    (tmp_path / "block.csv").write_text("".join(kept), encoding="utf-8")
    capsys.readouterr()
    block = cli_json(["cost", str(tmp_path / "block.csv"), "--config", str(chip), "--format", "json"], capsys)["rows"]
    whole = cli_json(["cost", str(config), "--config", str(chip), "--format", "json"], capsys)["rows"]
    assert [row["layer"] for row in block] == [f"l1_{name}" for name in BLOCK] + ["TOTAL"]
    by_name = {row["layer"]: row for row in whole}
    for row in block[:-1]:  # the same lowering: each block row is the config's own
        assert row == by_name[row["layer"]]
    head = sum(by_name[name]["chip_seconds"] for name in ("ln_f", "lm_head"))
    assert abs(block[-1]["chip_seconds"] - (by_name["TOTAL"]["chip_seconds"] - head)) <= 1e-12 * head
