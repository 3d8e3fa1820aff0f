"""``train`` and ``search`` state a mixture of experts' active parameters beside its total, as model cards do;
a dense model's meta has no such key (its active count is its total)."""

from __future__ import annotations

import json
from pathlib import Path

from archsim.cli import main

DATA = Path(__file__).parent / "data" / "hf_configs"
CLUSTER = str(Path(__file__).parent.parent / "configs" / "clusters" / "a100_node.toml")
# the small Mixtral run: two layers of the published shape, one server, EP 8
SMALL = ["--tp", "1", "--pp", "1", "--dp", "8", "--ep", "8", "--global-batch", "8", "--micro-batch", "1", "--seq", "512",
         "--dtype", "bf16"]


def _two_layers(tmp_path: Path, name: str) -> str:
    path = tmp_path / name
    path.write_text(json.dumps({**json.loads((DATA / name).read_text()), "num_hidden_layers": 2}))
    return str(path)


def _meta(capsys, argv: list[str]) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)["meta"]


def test_mixtral_active_parameters_are_the_cards(capsys):
    # Mistral AI's Mixtral 8x7B announcement: "46.7B total parameters but only uses 12.9B parameters per token"
    meta = _meta(capsys, ["train", str(DATA / "mixtral_8x7b.json"), "--cluster", CLUSTER, "--tp", "8", "--pp", "1",
                          "--dp", "1", "--global-batch", "8", "--micro-batch", "1", "--seq", "512", "--dtype", "bf16",
                          "--sequence-parallel", "--format", "json"])
    assert round(meta["parameters"] / 1e9, 1) == 46.7
    assert round(meta["active_parameters"] / 1e9, 1) == 12.9


def test_active_count_by_hand_on_two_layers(tmp_path, capsys):
    # two Mixtral layers: each routes a token through 2 of its 8 experts (3 matrices of 4096 × 14336 each), so
    # 6 experts a layer, 12 in all, are idle
    meta = _meta(capsys, ["train", _two_layers(tmp_path, "mixtral_8x7b.json"), "--cluster", CLUSTER, *SMALL,
                          "--format", "json"])
    assert meta["parameters"] - meta["active_parameters"] == 12 * 3 * 4096 * 14336


def test_search_states_it_too_and_the_table_prints_both(tmp_path, capsys):
    model = _two_layers(tmp_path, "mixtral_8x7b.json")
    search = _meta(capsys, ["search", model, "--cluster", CLUSTER, "--global-batch", "8", "--seq", "512", "--dtype",
                            "bf16", "--ep", "8", "--format", "json"])
    train = _meta(capsys, ["train", model, "--cluster", CLUSTER, *SMALL, "--format", "json"])
    assert search["active_parameters"] == train["active_parameters"]
    assert main(["train", model, "--cluster", CLUSTER, *SMALL]) == 0
    table = capsys.readouterr().out
    assert f"active_parameters: {train['active_parameters'] / 1e9:.3g} B ({train['active_parameters']:,})" in table


def test_a_dense_model_has_no_active_key(capsys):
    meta = _meta(capsys, ["train", str(DATA / "llama3_8b.json"), "--cluster", CLUSTER, "--tp", "8", "--pp", "1",
                          "--dp", "1", "--global-batch", "8", "--micro-batch", "1", "--seq", "512", "--format", "json"])
    assert meta["parameters"] == 8_030_261_248 and "active_parameters" not in meta
