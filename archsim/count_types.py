"""The count and number types the library's keywords take (:mod:`archsim.api_types` has the model, cluster and sweep
spec), below every layer so that the array jobs' own helpers annotate with them too. Annotations only: importers
take these names under ``TYPE_CHECKING``, so importing archsim loads no numpy.

A count is read by one reader (:func:`archsim.api_keywords.positive_int`: :func:`~archsim.value_parsers.whole_number`,
then :func:`~archsim.value_parsers.parse_int`): a Python int, a float or numpy float that is a whole number (``8.0``,
what pandas gives for a float column), a numpy integer (``np.int64``, a pandas int column's cell), or its flag's
text (``"8"``, from a CSV or a widget); a number (:func:`~archsim.value_parsers.parse_float`) takes the same
types. A value of the right type may still be refused by its range (``tp=0``, ``tp=8.5``) in one line naming the
keyword; a bool, though Python counts it an int, is refused as a count.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

Count: TypeAlias = int | float | str | np.integer | np.floating
"""A count keyword (``tp``, ``global_batch``, ``batch``, ``processors``): an int, a whole float, a numpy integer or
float, or the flag's text."""

Number: TypeAlias = float | str | np.integer | np.floating
"""A real-number keyword (``clock_ghz``, ``moe_load_imbalance``, ``nbytes``): an int or float, a numpy number, or
the flag's text."""

Counts: TypeAlias = Count | Sequence[Count] | npt.NDArray[Any]
"""A keyword that takes one count or several (search's ``gpus``, ``tp``, ``chunks``): a count, a list or tuple of
counts, a numpy array of them, or the flag's comma text (``"4,8"``)."""
