"""The types the library's functions take, in one place, so their annotations say what a run takes: a type
checker (mypy on a notebook's script) then accepts what the run accepts (docs/api.md). Annotations only: the
jobs import these names for the type checker alone (``if TYPE_CHECKING``), so importing archsim loads no numpy.

A count is read by one reader (:func:`archsim.api_keywords.positive_int`: :func:`~archsim.value_parsers.whole_number`,
then :func:`~archsim.value_parsers.parse_int`): a Python int, a float or numpy float that is a whole number (``8.0``,
what pandas gives for a float column), a numpy integer (``np.int64``, a pandas int column's cell), or its flag's
text (``"8"``, from a CSV or a widget); a number (:func:`~archsim.value_parsers.parse_float`) takes the same
types. A value of the right type may still be refused by its range (``tp=0``, ``tp=8.5``) in one line naming the
keyword; a bool, though Python counts it an int, is refused as a count.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from archsim.sweep.device_spec import DeviceSweepSpec
from archsim.sweep.spec import SweepSpec
from archsim.training.cluster import GpuCluster
from archsim.workload.transformer import TransformerConfig

Count: TypeAlias = int | float | str | np.integer | np.floating
"""A count keyword (``tp``, ``global_batch``, ``batch``, ``processors``): an int, a whole float, a numpy integer or
float, or the flag's text."""

Number: TypeAlias = float | str | np.integer | np.floating
"""A real-number keyword (``clock_ghz``, ``moe_load_imbalance``, ``nbytes``): an int or float, a numpy number, or
the flag's text."""

Counts: TypeAlias = Count | Sequence[Count] | npt.NDArray[Any]
"""A keyword that takes one count or several (search's ``gpus``, ``tp``, ``chunks``): a count, a list or tuple of
counts, a numpy array of them, or the flag's comma text (``"4,8"``)."""

Model: TypeAlias = str | Path | TransformerConfig
"""The model ``train`` and ``search`` take: a transformer config's path, a shipped config's name, or a config."""

Cluster: TypeAlias = str | Path | GpuCluster
"""The cluster ``train``, ``search`` and ``collective`` take: a cluster TOML's path or a loaded cluster."""

SweepSpecs: TypeAlias = str | Path | SweepSpec | DeviceSweepSpec
"""The spec ``run_sweep``, ``sweep_cache`` and ``write_report`` take: a sweep TOML's path, or a loaded spec."""
