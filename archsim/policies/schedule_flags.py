"""Which ``archsim schedule`` runs read each policy-specific or cost flag: given to any other run, a flag
would be ignored, so it is refused (one line, exit 2) before anything is read, built or written, naming flags
from the command and keywords from ``archsim.schedule`` (:func:`archsim.console.setting`, one message for both). Such
flags are None on the parser (:func:`defer_defaults`), so that one given with its default value is seen;
their defaults are filled in here, after the check."""

from __future__ import annotations

import argparse
import copy
from dataclasses import dataclass
from types import SimpleNamespace

from archsim.choices.schedules import DP_POLICIES, LIST_SCHEDULES, OOO_POLICIES, ZB_SCHEDULES
from archsim.console import field_name, route, setting, switch_on
from archsim.errors import InputError

ALL = ("*",)  # every run of that kind reads the flag
NETWORK_POLICIES = OOO_POLICIES + DP_POLICIES + ZB_SCHEDULES + LIST_SCHEDULES + ("multistream",)
TIMED = NETWORK_POLICIES[:-1]  # multistream's arrays have no clock, DRAM or SRAM: cycles of the analytic model
# A run's costs: the array model's ("model"), --unit-costs ("unit"), per-stage times ("stages": --stage-times,
# --stage-profile, and the orders simulated on them), or none (--torch-steps counts steps).
UNIT, MODEL, STAGES = "unit", "model", "stages"
ANY_COSTS = (UNIT, MODEL, STAGES)
CHUNK_POLICIES = ("interleaved-1f1b", "interleaved-zb", "looped-bfs")  # v model chunks per rank (stage_orders)
EXACT_POLICIES = ("zb-1p-exact", "zb-2p-exact")  # the exact searches (zb_exact)
# archsim's names of the torch classes' orders (stage_orders.TORCH_SCHEDULES); an order read from a CSV is ""
TORCH_ORDERS = ("gpipe", "1f1b", "interleaved-1f1b", "interleaved-zb", "looped-bfs", "zb-v", "dualpipev")
DEFAULT_GROUP = 1  # layers per modulo group
DEFAULT_CHUNKS = 2  # model chunks per device
DEFAULT_STREAMS = "joint"  # multistream's Algorithm 1
DEFAULT_REGION_SIZE = 1  # multistream: δ ops per region
DEFAULT_REVERSE_K = "auto"  # dp-reverse-k: the paper's search for k
DEFAULT_SYNC = "ring"  # data-parallel synchronization
DEFAULT_COMM_UNITS = 1.0  # data parallel with --unit-costs: sync time of a layer, in units
DEFAULT_COMM = 0.0  # per-hop transfer time, in the stage times' unit (per-stage) or cycles (network)
DEFAULT_STAGE_MEMORY = "1,0.4"  # M_B,M_W of a micro-batch, per stage
DEFAULT_ENGINE = "analytic"
DEFAULT_BATCH = 32  # mini-batch
DEFAULT_MODE = "exact"
EXACT_SEARCH_LIMIT = 300_000  # combinations of per-stage orders: about a minute of search, well under 4 GB


@dataclass(frozen=True)
class FlagRule:
    """A flag (argparse ``field``, typed as ``flag``) and the runs that read it: policies on a NETWORK,
    per-stage policies (``--policy``, 1f1b when none), and orders of ``--torch-schedule`` (archsim's
    name of the class's order) or ``--schedule-csv-in`` (""). ``default`` is filled in when not given
    (None: the run picks it, e.g. --flush by policy); ``replaced_by``: flags (fields) that set it instead,
    so it is refused beside one; ``costs``: the runs' costs it is read with (a NETWORK's --unit-costs or
    array model, per-stage times; --torch-steps reads none, so refuses them all); ``engines``: the array
    model's engines that read it (the analytic one models no memory)."""

    field: str
    flag: str
    default: object
    network: tuple[str, ...] = ()
    per_stage: tuple[str, ...] = ()
    ordered: tuple[str, ...] = ()
    replaced_by: tuple[str, ...] = ()
    costs: tuple[str, ...] = ANY_COSTS
    engines: tuple[str, ...] = ALL


# What reads each flag, in archsim/policies/schedule_run.py and stage_schedule.py.
RULES = (
    FlagRule("policy", "--policy", None, ALL, ALL),  # an order given by --torch-schedule/--schedule-csv-in
    FlagRule("group", "--group", DEFAULT_GROUP, ("ooo-pipe2",)),  # per-stage costs allocate no layers
    FlagRule("chunks", "--chunks", DEFAULT_CHUNKS, CHUNK_POLICIES[:2], CHUNK_POLICIES, CHUNK_POLICIES),  # looped-bfs: stages
    FlagRule("flush", "--flush/--no-flush", None, ("mp", "gpipe", "ooo-pipe1", "ooo-pipe2")),  # others fix order
    FlagRule("streams", "--streams", DEFAULT_STREAMS, ("multistream",)),
    FlagRule("region_size", "--region-size", DEFAULT_REGION_SIZE, ("multistream",)),
    FlagRule("k", "--reverse-k", DEFAULT_REVERSE_K, ("dp-reverse-k",)),
    FlagRule("sync", "--sync", DEFAULT_SYNC, DP_POLICIES, costs=(MODEL,)),
    FlagRule("comm_units", "--comm-units", DEFAULT_COMM_UNITS, DP_POLICIES, costs=(UNIT,)),
    # on a network a link carries DP sync and the published schedules' hops (list-* model no communication)
    FlagRule("link_bandwidth", "--link-bandwidth", None, DP_POLICIES + ZB_SCHEDULES, ALL, ALL, costs=(MODEL, STAGES)),
    FlagRule("comm", "--comm", DEFAULT_COMM, ZB_SCHEDULES, ALL, ALL, replaced_by=("stage_profile",)),
    FlagRule("stage_memory", "--stage-memory", DEFAULT_STAGE_MEMORY, (), ALL, ALL, replaced_by=("stage_profile",)),
    FlagRule("max_orders", "--max-orders", EXACT_SEARCH_LIMIT, (), EXACT_POLICIES),
    # the costs themselves: per-stage times, or the array model's flags (array/options.py, build_profile)
    FlagRule("processors", "--processors", None, ALL, ALL, ALL, replaced_by=("stages", "stage_profile")),  # per-stage:
    # --stages' other name
    FlagRule("microbatches", "--microbatches", 1, ALL, ALL, TORCH_ORDERS),  # a CSV's order fixes them
    FlagRule("stages", "--stages", None, (), ALL, ALL, costs=(STAGES,)),
    FlagRule("stage_times", "--stage-times", None, (), ALL, ALL, costs=(STAGES,)),
    FlagRule("stage_profile", "--stage-profile", None, (), ALL, ALL, costs=(STAGES,)),
    FlagRule("torch_schedule", "--torch-schedule", None, (), (), ALL),
    FlagRule("unit_costs", "--unit-costs", False, ALL),
    FlagRule("array", "--array", None, ALL, costs=(MODEL,)),
    FlagRule("dataflow", "--dataflow", None, ALL, costs=(MODEL,)),
    FlagRule("config", "--config", None, ALL, costs=(MODEL,)),
    FlagRule("dtype", "--dtype", None, ALL, costs=(MODEL,)),  # the width (default 1 byte, int8): array_from_args
    FlagRule("element_bytes", "--element-bytes", None, ALL, costs=(MODEL,)),
    FlagRule("engine", "--engine", DEFAULT_ENGINE, ALL, costs=(MODEL,)),
    FlagRule("batch", "--batch", DEFAULT_BATCH, ALL, costs=(MODEL,)),
    FlagRule("mode", "--mode", DEFAULT_MODE, ALL, costs=(MODEL,)),
    FlagRule("dram_bandwidth", "--dram-bandwidth", None, TIMED, costs=(MODEL,)),
    FlagRule("sram_kb", "--sram-kb", None, TIMED, costs=(MODEL,), engines=("cycle",)),
    FlagRule("clock_ghz", "--clock-ghz", None, TIMED, costs=(MODEL,)),
    # loading a NETWORK (network_args.add_network_arguments): runs without one load none
    FlagRule("only", "--only", None, ALL),
    FlagRule("shapes", "--shapes", "auto", ALL),
    FlagRule("unsupported", "--unsupported", "error", ALL),
    FlagRule("input_shape", "--input-shape", None, ALL),
    FlagRule("dim", "--dim", [], ALL),  # argparse appends to a copy of its default
)


def _replaced_words(field: str) -> str:
    """What sets a flag in its stead, as the caller spells it."""
    if field == "stages":
        return f"{setting('stages')} (its other name)"
    return f"{setting('stage-profile')}'s own rows and columns (comm, activation_bytes, weight_bytes; 0 where absent)"


def _cost_words(costs: str) -> str:
    """The runs' costs a flag is read with, in words."""
    return {UNIT: f"with {switch_on('unit-costs')}",
            MODEL: f"with the array model's costs ({route('a NETWORK', 'a network')} without {switch_on('unit-costs')})",
            STAGES: "with per-stage costs"}[costs]


def _run_words(costs: str) -> str:
    """Why this run reads no such flag, in words."""
    return {UNIT: f"{switch_on('unit-costs')} replaces the array model",
            MODEL: f"this run costs {route('a NETWORK', 'a network')} on the array model",
            STAGES: "this run has per-stage costs",
            "": f"{switch_on('torch-steps')} counts steps and reads no costs"}[costs]


def _named(rule: FlagRule) -> str:
    """A rule's flag as the caller spells it: ``--flush/--no-flush`` from a command, ``flush`` from the library."""
    return route(rule.flag, setting(_name(rule)))


def _name(rule: FlagRule) -> str:
    """The flag's name (``reverse-k``; ``flush`` for ``--flush/--no-flush``): the field of its refusals."""
    return rule.flag.split("/")[0].lstrip("-")


def _choices(name: str, values: tuple[str, ...] | list[str]) -> str:
    """A setting with the values it takes here: ``--policy a / b`` from a command, ``policy='a' / 'b'`` from the
    library."""
    return route(f"--{name} {' / '.join(values)}", f"{setting(name)}=" + " / ".join(repr(v) for v in values))


def defer_defaults(parser: argparse.ArgumentParser) -> None:
    """Make the parser's default of every :data:`RULES` flag None (so a flag given at its default is seen),
    its default stated in its help instead; the rule's default must be the parser's."""
    fields = {rule.field: rule for rule in RULES}
    for action in parser._actions:
        rule = fields.get(action.dest)
        if rule is None or action.default is None:
            continue
        if action.default != rule.default:
            raise ValueError(f"{rule.flag}: parser default {action.default!r}, rule default {rule.default!r}")
        if action.default not in (False, []) and action.help and "default" not in action.help:
            action.help = f"{action.help} (default: {action.default})"
        action.default = None


def _run(args: argparse.Namespace | SimpleNamespace, per_stage: bool) -> tuple[str, str | None, str]:
    """The kind of run ("network", "per_stage" or "ordered"), its policy or order name (None: not known
    yet) and its name as the user gave it, for the error line."""
    from archsim.policies.stage_orders import TORCH_SCHEDULES, torch_schedule_name

    if args.torch_steps:
        return "ordered", "", switch_on("torch-steps")
    if args.torch_schedule:
        cls = torch_schedule_name(args.torch_schedule)
        return "ordered", TORCH_SCHEDULES[cls][0], setting("torch-schedule", cls)
    if args.schedule_csv_in:
        return "ordered", "", f"an order read from {setting('schedule-csv-in')}"
    if per_stage:
        policy = args.policy or "1f1b"  # per-stage mode's default policy is 1f1b
        return "per_stage", policy, f"{setting('policy', policy)} (per-stage costs)"
    return "network", args.policy, setting("policy", args.policy)


def readers(rule: FlagRule) -> str:
    """The runs that read a flag, in words, as the caller spells them."""
    words = []
    network = route("a NETWORK", "a network")
    if rule.network != ALL and rule.network == rule.per_stage:
        words.append(f"{_choices('policy', rule.network)} (on {network} or per-stage costs)")
    else:
        for takers, where in ((rule.network, f"on {network}"), (rule.per_stage, "on per-stage costs")):
            others = [p for p in NETWORK_POLICIES if p not in takers]
            if takers == ALL:
                words.append(f"any run {where}")
            elif takers and len(others) <= 2:  # the few a long list leaves out
                words.append(f"any {setting('policy')} but {' / '.join(others)} {where}")
            elif takers:
                words.append(f"{_choices('policy', takers)} {where}")
    if rule.ordered:
        words.append(f"{setting('torch-schedule')} / {setting('schedule-csv-in')} orders" if rule.ordered == ALL
                     else f"{setting('torch-schedule')} orders" if rule.ordered == TORCH_ORDERS
                     else f"the torch classes of {' / '.join(rule.ordered)}")
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else words[0]


def check_policy_flags(args: argparse.Namespace | SimpleNamespace, per_stage: bool) -> None:
    """Refuse a flag of :data:`RULES` given to a run that does not read it, then fill in the defaults."""
    kind, policy, name = _run(args, per_stage)
    costs = (UNIT if args.unit_costs else MODEL) if kind == "network" else "" if args.torch_steps else STAGES
    for rule in RULES:
        given = getattr(args, rule.field)
        takers = getattr(rule, kind)
        if given is None:
            if rule.default is not None:
                setattr(args, rule.field, copy.copy(rule.default))
        elif rule.field == "policy" and kind == "ordered":  # "applies only to any run on per-stage costs" misled
            raise InputError(f"{_named(rule)} picks the order to run, and so does {name}: give one of the two",
                             field=field_name(_name(rule)))
        elif policy is not None and takers != ALL and policy not in takers:
            raise InputError(f"{_named(rule)} applies only to {readers(rule)}; {name} does not take it",
                             field=field_name(_name(rule)))
        elif costs not in rule.costs:
            when = "where a run has costs" if rule.costs == ANY_COSTS else " or ".join(_cost_words(c) for c in rule.costs)
            raise InputError(f"{_named(rule)} is read only {when}; {_run_words(costs)}", field=field_name(_name(rule)))
        elif rule.engines != ALL and args.engine not in rule.engines:  # engine is filled in above (MODEL costs)
            raise InputError(f"{_named(rule)} is read only with {_choices('engine', rule.engines)}; "
                             f"{_choices('engine', [args.engine])} models no memory", field=field_name(_name(rule)))
        elif replacers := [other for other in rule.replaced_by if getattr(args, other) is not None]:
            raise InputError(f"{_named(rule)} is set by {_replaced_words(replacers[0])} in this run: drop it",
                             field=field_name(_name(rule)))
