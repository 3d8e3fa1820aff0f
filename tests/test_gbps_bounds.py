"""One bound for every Gbit/s figure of a cluster file, [1e-06, 1e+06] (:data:`archsim.cluster_keys.MAX_GBPS`, 125 TB/s: far
above any link), refused in one line naming file, line and key, by plan, train and search alike.

Before the fix ``inter_server_gbps = 1e9`` was refused only where plan drew it (2 or more servers, no ``[network]``):
on one server, or beside a ``[network]`` table (which replaces it), it was read without a word; and ``[network]
nic_gbps`` had no upper bound at all (1e9 Gb/s priced, with a warning only). Every case here failed before (exit 0).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from archsim.cli import main

GPT2 = str(Path(__file__).resolve().parents[1] / "configs" / "transformers" / "gpt2.json")
SERVERS = '[[servers]]\ncount = {count}\ngpus = 8\ngpu = "h100-sxm"\n'
CASES = {
    "one server": ("[cluster]\ninter_server_gbps = 1e9\n" + SERVERS.format(count=1), 2, "inter_server_gbps",
                   "expected a number in [1e-06, 1e+06] or a [low, high] range of them, got '1000000000.0'"),
    "beside [network]": ("[cluster]\ninter_server_gbps = 1e9\n[network]\nnics_per_server = 8\nnic_gbps = 400\n"
                         + SERVERS.format(count=2), 2, "inter_server_gbps",
                         "expected a number in [1e-06, 1e+06] or a [low, high] range of them, got '1000000000.0'"),
    "nic_gbps": ("[cluster]\n[network]\nnics_per_server = 8\nnic_gbps = 1e9\n" + SERVERS.format(count=2), 4,
                 "nic_gbps", "expected a number in [1e-06, 1e+06], got '1000000000.0'"),
}
COMMANDS = {
    "plan": ["plan", "layerpipe_sample", "--microbatches", "2", "--array", "32x32"],
    "train": ["train", GPT2, "--tp", "8", "--global-batch", "8", "--micro-batch", "1"],
    "search": ["search", GPT2, "--global-batch", "8", "--gpus", "8", "--top", "1"],
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("command", COMMANDS)
def test_a_gbps_figure_above_the_bound_is_refused_with_its_line(tmp_path, capsys, case, command):
    text, line, key, message = CASES[case]
    path = tmp_path / "c.toml"
    path.write_text(text, encoding="utf-8")
    out = tmp_path / "out.json"
    assert main([*COMMANDS[command], "--cluster", str(path), "--format", "json", "--out", str(out)]) == 2
    assert capsys.readouterr().err == f"archsim {command}: error: {path}, line {line}, field '{key}': {message}\n"
    assert not out.exists()


def test_the_bound_itself_is_accepted(tmp_path):
    """10⁶ Gbit/s on one server is read (the bound is inclusive, as intra_server_gbps's): only above it is refused."""
    path = tmp_path / "c.toml"
    path.write_text("[cluster]\ninter_server_gbps = 1e6\n" + SERVERS.format(count=1), encoding="utf-8")
    assert main([*COMMANDS["plan"], "--cluster", str(path), "--out", str(tmp_path / "p.txt")]) == 0
