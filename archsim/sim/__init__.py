"""Event-driven list-scheduling simulator over op DAGs, and an independent timeline validator."""

from archsim.sim.engine import Policy, PriorityPolicy, simulate
from archsim.sim.problem import Dep, Link, Op, Problem, Processor
from archsim.sim.timeline import Slot, Timeline, Transfer
from archsim.sim.validate import assert_valid, validate_timeline

__all__ = ["Dep", "Link", "Op", "Policy", "PriorityPolicy", "Problem", "Processor", "Slot", "Timeline", "Transfer",
           "assert_valid", "simulate", "validate_timeline"]
