"""Event-driven list-scheduling simulator over op DAGs, and an independent timeline validator.

Build a :class:`Problem` (processors with streams, links, ops, deps), run :func:`simulate` under a
:class:`Policy` (a name and a key function; default :class:`PriorityPolicy`), and get a
:class:`Timeline`; :func:`validate_timeline` checks any timeline without trusting the engine.
"""

from archsim.sim.engine import KeyPolicy, Policy, PriorityPolicy, simulate
from archsim.sim.problem import Dep, Link, Op, Problem, Processor
from archsim.sim.timeline import Slot, Timeline, Transfer
from archsim.sim.validate import assert_valid, validate_timeline

__all__ = ["Dep", "KeyPolicy", "Link", "Op", "Policy", "PriorityPolicy", "Problem", "Processor", "Slot", "Timeline",
           "Transfer", "assert_valid", "simulate", "validate_timeline"]
