"""Every topology CSV in SCALE-Sim's own repositories that SCALE-Sim 3.0.0 loads, archsim loads too.

Slow and opt-in: set ``ARCHSIM_SCALESIM_REPOS`` to checkouts of scale-sim-v2 / scale-sim-v3 (paths
separated by ``os.pathsep``); none of their files is committed here. SCALE-Sim's own loader
(``scalesim.topology_utils.topologies``, conv mode, or GEMM mode for a ``Layer, M, N, K`` header)
is the reference: where it loads a file, archsim must load it with ``geometry="scalesim"`` and give
every layer SCALE-Sim's output size and MAC count. Files SCALE-Sim refuses must give archsim's
one-line InputError (never a traceback). Small files of each format are in tests/data/scalesim_formats.
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest

from archsim.errors import InputError
from archsim.workload import load_topology
from archsim.workload.csv_loader import is_gemm_header

ROOTS = [Path(p) for p in os.environ.get("ARCHSIM_SCALESIM_REPOS", "").split(os.pathsep) if p]
FILES = sorted(f for root in ROOTS for f in (root / "topologies").rglob("*.csv"))


def _scalesim(path: Path, gemm: bool):
    """SCALE-Sim's (name, ofmap_h, ofmap_w, macs) per layer, or None when SCALE-Sim cannot load the file."""
    from scalesim.topology_utils import topologies

    topo = topologies()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            topo.load_arrays(str(path), mnk_inputs=gemm)
            topo.topo_calc_hyperparams(str(path))
    except Exception:  # noqa: BLE001 — any exception SCALE-Sim's loader raises means it refuses the file (its asserts,
        # int(""), short rows, stride 0, and whatever else a repository's file provokes: not checked without the repos)
        return None
    return [(row[0], *params[:3]) for row, params in zip(topo.topo_arrays, topo.layers_calculated_hyperparams)]


def _is_gemm(path: Path) -> bool:
    first = path.read_text(encoding="utf-8-sig", errors="replace").splitlines()[:1]
    return bool(first) and is_gemm_header([c for c in first[0].split(",")])


@pytest.mark.slow
@pytest.mark.skipif(not FILES, reason="set ARCHSIM_SCALESIM_REPOS to SCALE-Sim checkouts")
def test_every_topology_scalesim_loads_loads_here():
    loaded = refused = 0
    failures = []
    for path in FILES:
        gemm = _is_gemm(path)
        reference = _scalesim(path, gemm)
        try:
            network = load_topology(path, geometry="scalesim")
        except InputError as exc:
            if reference is not None:
                failures.append(f"{path}: SCALE-Sim loads it, archsim says {exc}")
            refused += 1
            continue
        if reference is None:
            continue
        loaded += 1
        ours = [(layer.ofmap_h, layer.ofmap_w, layer.macs) for layer in network.layers]
        theirs = [tuple(r[1:]) for r in reference]
        if ours != theirs:
            failures.append(f"{path}: layers differ from SCALE-Sim's ({len(ours)} vs {len(theirs)})")
    assert not failures, "\n".join(failures)
    assert loaded > 0
