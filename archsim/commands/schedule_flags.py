"""Which ``archsim schedule`` runs take ``--group`` and ``--chunks``: given to any other, a flag would
be ignored, so it is refused (one line, exit 2) before anything is read, built or written."""

from __future__ import annotations

import argparse

from archsim.errors import InputError

GROUP_POLICIES = ("ooo-pipe2",)  # modulo layer allocation, ⌊l / group⌋ mod P (archsim.policies.ooo)
CHUNK_POLICIES = ("interleaved-1f1b", "interleaved-zb", "looped-bfs")  # v model chunks per rank (stage_orders)
DEFAULT_GROUP = 1  # layers per modulo group
DEFAULT_CHUNKS = 2  # model chunks per device


def _run_name(args: argparse.Namespace, per_stage: bool) -> tuple[str | None, str]:
    """The archsim order a run builds (None: not known yet, or an order read from a file) and its
    name as the user gave it, for the error line."""
    from archsim.policies.stage_orders import TORCH_SCHEDULES, torch_schedule_name

    if args.torch_schedule:
        cls = torch_schedule_name(args.torch_schedule)
        return TORCH_SCHEDULES[cls][0], f"--torch-schedule {cls}"
    if args.schedule_csv_in or args.torch_steps:
        return "", "an order read from --schedule-csv-in"
    policy = args.policy or ("1f1b" if per_stage else None)  # per-stage mode's default policy is 1f1b
    return policy, f"--policy {policy}"


def check_policy_flags(args: argparse.Namespace, per_stage: bool) -> None:
    """Refuse ``--group`` or ``--chunks`` given to a run that does not take it, then fill in their
    defaults (None on the parser, so that a flag given with its default value is seen)."""
    policy, name = _run_name(args, per_stage)
    rules = (("group", () if per_stage else GROUP_POLICIES, DEFAULT_GROUP,  # per-stage costs allocate no layers
              f"--group applies only to --policy {' / '.join(GROUP_POLICIES)} on a NETWORK"),
             ("chunks", CHUNK_POLICIES, DEFAULT_CHUNKS,
              f"--chunks applies only to --policy {' / '.join(CHUNK_POLICIES)} (or their torch classes)"))
    for field, takers, default, rule in rules:
        if getattr(args, field) is None:
            setattr(args, field, default)
        elif policy is not None and policy not in takers:
            raise InputError(f"{rule}; {name} does not take it", field=field)
