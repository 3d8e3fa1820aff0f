"""Parameter sweeps: spec files, per-configuration cached results, executors, summaries."""

from archsim.sweep.runner import run_sweep
from archsim.sweep.spec import SweepSpec, load_spec
from archsim.sweep.summary import summarize

__all__ = ["SweepSpec", "load_spec", "run_sweep", "summarize"]
