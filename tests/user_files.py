"""A user's own small files, written where a test runs: a cluster of two servers in the TOML a user writes,
and a network CSV beside it (the trials of `plan`, `pipeline` and `sweep` on a researcher's own setup)."""

from __future__ import annotations

from pathlib import Path


def two_server_cluster(name: str, inter_server_gbps: float, *servers: tuple[int, float]) -> str:
    """A cluster TOML of ``[[servers]]`` ``(gpus, intra_server_gbps)`` each (Gb/s), ``inter_server_gbps``
    between them."""
    tables = "".join(f"\n[[servers]]\ngpus = {gpus}\nintra_server_gbps = {gbps:g}\n" for gpus, gbps in servers)
    return f'[cluster]\nname = "{name}"\ninter_server_gbps = {inter_server_gbps:g}\n{tables}'


def write_user_files(tmp_path: Path, network: tuple[str, str], cluster: tuple[str, str]) -> tuple[Path, Path]:
    """``network`` and ``cluster`` (file name, text) written into ``tmp_path``: their paths."""
    paths = tmp_path / network[0], tmp_path / cluster[0]
    for path, (_, text) in zip(paths, (network, cluster), strict=True):
        path.write_text(text)
    return paths
