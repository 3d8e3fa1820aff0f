"""Which ``archsim schedule`` runs read each policy-specific flag: given to any other run, a flag would
be ignored, so it is refused (one line, exit 2) before anything is read, built or written. Such flags
are None on the parser, so that one given with its default value is seen; their defaults are filled
in here, after the check."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from archsim.choices.schedules import DP_POLICIES, ZB_SCHEDULES
from archsim.errors import InputError

ALL = ("*",)  # every run of that kind reads the flag
CHUNK_POLICIES = ("interleaved-1f1b", "interleaved-zb", "looped-bfs")  # v model chunks per rank (stage_orders)
EXACT_POLICIES = ("zb-1p-exact", "zb-2p-exact")  # the exact searches (zb_exact)
DEFAULT_GROUP = 1  # layers per modulo group
DEFAULT_CHUNKS = 2  # model chunks per device
DEFAULT_STREAMS = "joint"  # multistream's Algorithm 1
DEFAULT_REGION_SIZE = 1  # multistream: δ ops per region
DEFAULT_REVERSE_K = "auto"  # dp-reverse-k: the paper's search for k
DEFAULT_SYNC = "ring"  # data-parallel synchronization
DEFAULT_COMM_UNITS = 1.0  # data parallel with --unit-costs: sync time of a layer, in units
DEFAULT_COMM = 0.0  # per-hop transfer time, in the stage times' unit (per-stage) or cycles (network)
DEFAULT_STAGE_MEMORY = "1,0.4"  # M_B,M_W of a micro-batch, per stage
EXACT_SEARCH_LIMIT = 300_000  # combinations of per-stage orders: about a minute of search, well under 4 GB


@dataclass(frozen=True)
class FlagRule:
    """A flag (argparse ``field``, typed as ``flag``) and the runs that read it: policies on a NETWORK,
    per-stage policies (``--policy``, 1f1b when none), and orders of ``--torch-schedule`` (archsim's
    name of the class's order) or ``--schedule-csv-in`` (""). ``default`` is filled in when not given
    (None: the run picks it, e.g. --flush by policy); ``profile_column``: a ``--stage-profile``'s own
    column sets it instead, so it is refused beside one; ``costs``: on a NETWORK it is read only with
    --unit-costs ("unit") or only with costs from the array model ("model"), "" either way."""

    field: str
    flag: str
    default: object
    network: tuple[str, ...] = ()
    per_stage: tuple[str, ...] = ()
    ordered: tuple[str, ...] = ()
    profile_column: bool = False
    costs: str = ""


# What reads each flag, in archsim/commands/schedule.py and stage_schedule.py.
RULES = (
    FlagRule("policy", "--policy", None, ALL, ALL),  # an order given by --torch-schedule/--schedule-csv-in
    FlagRule("group", "--group", DEFAULT_GROUP, ("ooo-pipe2",)),  # per-stage costs allocate no layers
    FlagRule("chunks", "--chunks", DEFAULT_CHUNKS, CHUNK_POLICIES[:2], CHUNK_POLICIES, CHUNK_POLICIES),  # looped-bfs: stages
    FlagRule("flush", "--flush/--no-flush", None, ("mp", "gpipe", "ooo-pipe1", "ooo-pipe2")),  # others fix order
    FlagRule("streams", "--streams", DEFAULT_STREAMS, ("multistream",)),
    FlagRule("region_size", "--region-size", DEFAULT_REGION_SIZE, ("multistream",)),
    FlagRule("k", "--reverse-k", DEFAULT_REVERSE_K, ("dp-reverse-k",)),
    FlagRule("sync", "--sync", DEFAULT_SYNC, DP_POLICIES, costs="model"),
    FlagRule("comm_units", "--comm-units", DEFAULT_COMM_UNITS, DP_POLICIES, costs="unit"),
    # on a network a link carries DP sync and the published schedules' hops (list-* model no communication)
    FlagRule("link_bandwidth", "--link-bandwidth", None, DP_POLICIES + ZB_SCHEDULES, ALL, ALL, costs="model"),
    FlagRule("comm", "--comm", DEFAULT_COMM, ZB_SCHEDULES, ALL, ALL, profile_column=True),
    FlagRule("stage_memory", "--stage-memory", DEFAULT_STAGE_MEMORY, (), ALL, ALL, profile_column=True),
    FlagRule("max_orders", "--max-orders", EXACT_SEARCH_LIMIT, (), EXACT_POLICIES),
)


def _run(args: argparse.Namespace, per_stage: bool) -> tuple[str, str | None, str]:
    """The kind of run ("network", "per_stage" or "ordered"), its policy or order name (None: not known
    yet) and its name as the user gave it, for the error line."""
    from archsim.policies.stage_orders import TORCH_SCHEDULES, torch_schedule_name

    if args.torch_schedule:
        cls = torch_schedule_name(args.torch_schedule)
        return "ordered", TORCH_SCHEDULES[cls][0], f"--torch-schedule {cls}"
    if args.schedule_csv_in or args.torch_steps:
        return "ordered", "", "an order read from --schedule-csv-in"
    if per_stage:
        policy = args.policy or "1f1b"  # per-stage mode's default policy is 1f1b
        return "per_stage", policy, f"--policy {policy} (per-stage costs)"
    return "network", args.policy, f"--policy {args.policy}"


def readers(rule: FlagRule) -> str:
    """The runs that read a flag, in words."""
    words = []
    if rule.network != ALL and rule.network == rule.per_stage:
        words.append(f"--policy {' / '.join(rule.network)} (on a NETWORK or per-stage costs)")
    else:
        for takers, where in ((rule.network, "on a NETWORK"), (rule.per_stage, "on per-stage costs")):
            if takers:
                words.append(f"any run {where}" if takers == ALL else f"--policy {' / '.join(takers)} {where}")
    if rule.ordered:
        words.append("--torch-schedule / --schedule-csv-in orders" if rule.ordered == ALL
                     else f"the torch classes of {' / '.join(rule.ordered)}")
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else words[0]


def check_policy_flags(args: argparse.Namespace, per_stage: bool) -> None:
    """Refuse a flag of :data:`RULES` given to a run that does not read it, then fill in the defaults."""
    kind, policy, name = _run(args, per_stage)
    for rule in RULES:
        given = getattr(args, rule.field)
        takers = getattr(rule, kind)
        if given is None:
            if rule.default is not None:
                setattr(args, rule.field, rule.default)
        elif policy is not None and takers != ALL and policy not in takers:
            raise InputError(f"{rule.flag} applies only to {readers(rule)}; {name} does not take it",
                             field=rule.flag.split("/")[0].lstrip("-"))
        elif kind == "network" and rule.costs and (rule.costs == "unit") != args.unit_costs:
            when = "only with --unit-costs" if rule.costs == "unit" else "only without --unit-costs"
            raise InputError(f"{rule.flag} is read {when}", field=rule.flag.lstrip("-"))
        elif rule.profile_column and kind != "network" and args.stage_profile:
            raise InputError(f"{rule.flag} is set by --stage-profile's own columns (comm, activation_bytes, "
                             "weight_bytes; 0 where absent): give it there", field=rule.flag.lstrip("-"))
