"""The library's jobs beside train and search (``archsim.gemm``, ``archsim.cost``, ...) say their notes through
:func:`archsim.console.library_note`, so :func:`archsim.console.notes_kept` keeps them, each thread its own: two
threads each costing their own device TOML at the same time each keep their own file's notes and none of the other's,
and nothing reaches the process's warnings.

Failed before the fix: the api modules called :func:`warnings.warn` themselves, so ``notes_kept`` kept nothing (the
notes went to the process's one warning filter, where a thread cannot tell its own from another's)."""

from __future__ import annotations

import threading
import warnings

import pytest
from device_files import device_toml

import archsim
from archsim.console import notes_kept


def _chip(tmp_path, name: str, arrays: int) -> str:
    path = tmp_path / f"{name}.toml"
    path.write_text(device_toml(name=name, arrays=arrays, rows=32, cols=32, clock_mhz=1000, sram_kib=768, hbm_gib=16,
                                hbm_gbps=800, intra_gbps=100), encoding="utf-8")
    return str(path)


JOBS = {
    "gemm": lambda chip: archsim.gemm(m=64, k=64, n=64, config=chip, engine="cycle"),
    "cost": lambda chip: archsim.cost("ffnn8", config=chip, engine="cycle"),
}


@pytest.mark.parametrize("job", sorted(JOBS))
def test_two_threads_each_keep_only_their_own_notes(tmp_path, job):
    chips = {"alpha": _chip(tmp_path, "alpha", 8), "beta": _chip(tmp_path, "beta", 4)}
    both_inside = threading.Barrier(2, timeout=60)
    kept: dict[str, list[str]] = {}
    errors: list[BaseException] = []

    def run(name: str) -> None:
        try:
            with notes_kept() as notes:
                both_inside.wait()  # each thread inside its own block while the other runs
                for _ in range(3):
                    JOBS[job](chips[name])
                both_inside.wait()
            kept[name] = list(notes)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the main thread
            errors.append(exc)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        threads = [threading.Thread(target=run, args=(name,)) for name in chips]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(300)
    assert not errors, errors
    assert not [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    for name, arrays in (("alpha", 8), ("beta", 4)):
        other = "beta" if name == "alpha" else "alpha"
        notes = kept[name]
        # each call's notes: the file's arrays (8 and 4 by hand), its unread 800 GB/s of HBM
        assert sum(f"{chips[name]} is a device of {arrays} arrays" in line for line in notes) == 3
        assert sum("hbm_gbps = 800 GB/s" in line for line in notes) == 3
        assert not any(chips[other] in line for line in notes)
