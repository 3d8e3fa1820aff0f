"""A four-layer GPT and a four-A100 node, written to a test's folder: the small search the search-row tests
share (a row's columns, its MFU's dtype, its Megatron arguments)."""

from __future__ import annotations

GPT = """[transformer]
family = "gpt"
layers = 4
hidden = 256
heads = 4
vocab = 1000
seq = 128
"""
A100_NODE = """[cluster]
[[servers]]
gpus = 4
gpu = "a100-80gb"
"""


def tiny_files(folder, cluster: str = A100_NODE) -> tuple[str, str]:
    """(model, cluster) paths of :data:`GPT` and ``cluster`` written into ``folder``."""
    (folder / "gpt.toml").write_text(GPT)
    (folder / "cluster.toml").write_text(cluster)
    return str(folder / "gpt.toml"), str(folder / "cluster.toml")
