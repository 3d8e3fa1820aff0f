"""``[network] nvls = true`` on servers whose switch cannot reduce (A100: second-generation NVSwitch, no NVLink
SHARP) is refused by every command that reads the cluster file, with one line from one place
(:func:`archsim.links.check_nvls`, called by the shared reader :func:`archsim.spp.topology.build_topology`).

Before the fix ``archsim train`` and ``search`` refused it (their own check, after the topology was read), and so did
``archsim plan`` where it priced the layers on the servers' device (it loads train's cluster for that), but ``plan
--cluster FILE --array …`` read the same file and planned without a word, the flag silently dropped: the two
``--array`` cases here failed (exit 0, the plan written)."""

from __future__ import annotations

from pathlib import Path

import pytest

from archsim.cli import main

CLUSTERS = Path(__file__).resolve().parents[1] / "configs" / "clusters"
GPT2 = str(Path(__file__).resolve().parents[1] / "configs" / "transformers" / "gpt2.json")
MESSAGE = ("nvls = true, but the NVIDIA A100 SXM4 80GB's links do not reduce in the switch (NVLink SHARP needs "
           "third-generation NVSwitch: H100 or H200 SXM); write nvls = false")


def _superpod_with_nvls(tmp_path: Path) -> tuple[Path, int]:
    """The shipped DGX A100 SuperPOD, 2 servers of it, with ``nvls = true`` in its [network]; and that line."""
    text = (CLUSTERS / "dgx_a100_superpod.toml").read_text(encoding="utf-8")
    text = text.replace("count = 140", "count = 2").replace("nic_gbps = 200\n", "nic_gbps = 200\nnvls = true\n")
    path = tmp_path / "a100_nvls.toml"
    path.write_text(text, encoding="utf-8")
    line = text.splitlines().index("nvls = true") + 1
    return path, line


@pytest.mark.parametrize("command", [
    ["plan", "layerpipe_sample", "--microbatches", "2"],
    ["plan", "layerpipe_sample", "--microbatches", "2", "--links", "exact"],
    ["plan", "layerpipe_sample", "--microbatches", "2", "--array", "128x128"],  # planned before the fix
    ["plan", "layerpipe_sample", "--microbatches", "2", "--array", "128x128", "--links", "exact"],
    ["train", GPT2, "--tp", "2", "--pp", "2", "--dp", "4", "--global-batch", "16", "--micro-batch", "1"],
    ["search", GPT2, "--global-batch", "16", "--top", "1"],
])
def test_plan_train_and_search_refuse_nvls_on_a100_with_one_line(tmp_path, capsys, command):
    path, line = _superpod_with_nvls(tmp_path)
    out = tmp_path / "out.json"
    assert main([*command, "--cluster", str(path), "--format", "json", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    name = command[0]
    assert err == f"archsim {name}: error: {path}, line {line}, field 'nvls': {MESSAGE}\n"
    assert not out.exists()


def test_the_shipped_file_without_nvls_still_plans(tmp_path, capsys):
    """The same copy without the flag (what the error says to write) is planned: only the flag is refused."""
    path, _ = _superpod_with_nvls(tmp_path)
    path.write_text(path.read_text(encoding="utf-8").replace("nvls = true", "nvls = false"), encoding="utf-8")
    assert main(["plan", "layerpipe_sample", "--microbatches", "2", "--cluster", str(path)]) == 0
