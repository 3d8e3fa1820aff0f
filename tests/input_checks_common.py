"""The model and cluster the input-check tests (tests/test_input_checks_*.py) run ``train`` and ``search`` on,
and the writer of a Hugging Face ``config.json`` the model-config tests share."""

import json
from pathlib import Path

from archsim.workload.model_files import load_transformer
from archsim.workload.transformer import TransformerConfig

ROOT = Path(__file__).resolve().parents[1]
GPT2 = ROOT / "configs" / "transformers" / "gpt2.json"  # n_positions 1024, as the released GPT-2's config
NODE = ROOT / "configs" / "clusters" / "a100_node.toml"


def write_config(tmp_path: Path, fields: dict, name: str = "config") -> Path:
    """``fields`` as the Hugging Face config file ``tmp_path/<name>.json``."""
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(fields))
    return path


def load_config(tmp_path: Path, fields: dict, seq: int | None = None, name: str = "config") -> TransformerConfig:
    """``fields`` written as a config file and read back by archsim (``seq``: the sequence length asked for)."""
    path = write_config(tmp_path, fields, name)
    return load_transformer(path, seq=seq) if seq else load_transformer(path)
