"""The types the library's functions take for a model, a cluster and a sweep spec (its counts and numbers:
:mod:`archsim.count_types`), in one place, so their annotations say what a run takes: a type
checker (mypy on a notebook's script) then accepts what the run accepts (docs/api.md). Annotations only: the
jobs import these names for the type checker alone (``if TYPE_CHECKING``), so importing archsim loads no numpy.

"""

from __future__ import annotations

from pathlib import Path
from typing import TypeAlias

from archsim.sweep.device_spec import DeviceSweepSpec
from archsim.sweep.spec import SweepSpec
from archsim.training.cluster import GpuCluster
from archsim.workload.transformer import TransformerConfig

Model: TypeAlias = str | Path | TransformerConfig
"""The model ``train`` and ``search`` take: a transformer config's path, a shipped config's name, or a config."""

Cluster: TypeAlias = str | Path | GpuCluster
"""The cluster ``train``, ``search`` and ``collective`` take: a cluster TOML's path or a loaded cluster."""

SweepSpecs: TypeAlias = str | Path | SweepSpec | DeviceSweepSpec
"""The spec ``run_sweep``, ``sweep_cache`` and ``write_report`` take: a sweep TOML's path, or a loaded spec."""
