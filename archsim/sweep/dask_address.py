"""What ``--dask`` (and ``run_sweep(dask=…)``) may name: ``local`` or a dask.distributed scheduler's address.

Why: ``distributed.Client`` refuses an address without its port only once the sweep has claimed its folder;
checked here first, a typo costs nothing (the sweep runner calls it before it writes)."""

from __future__ import annotations

import re

from archsim.errors import InputError

_DASK_ADDRESS = re.compile(r"(?:[a-z][a-z0-9+.-]*://)?(?:\[[0-9A-Fa-f:.]+\]|[^\s/:\[\]]+):(\d{1,5})")


def check_dask_address(address: str) -> None:
    """Refuse, before the sweep writes anything, a ``--dask`` value that is neither ``local`` nor a scheduler
    address with its port (``[scheme://]host:port``, as ``distributed.Client`` needs one)."""
    match = _DASK_ADDRESS.fullmatch(address)
    if address != "local" and (match is None or not 0 < int(match.group(1)) < 65536):
        raise InputError(f"--dask takes 'local' or a scheduler address with its port, such as "
                         f"tcp://10.0.0.1:8786; got {address!r}", field="dask")
