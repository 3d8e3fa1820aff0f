"""The model and cluster the input-check tests (tests/test_input_checks_*.py) run ``train`` and ``search`` on."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GPT2 = ROOT / "configs" / "transformers" / "gpt2.json"  # n_positions 1024, as the released GPT-2's config
NODE = ROOT / "configs" / "clusters" / "a100_node.toml"
