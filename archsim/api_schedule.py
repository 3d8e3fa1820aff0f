"""The face's schedule job: ``archsim.schedule``, every policy and option of ``archsim schedule`` as keywords of the
flags' names, run by the command's own :func:`archsim.policies.schedule_run.run_schedule`; re-exported by
:mod:`archsim.api`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archsim.api_inputs import cfg_as_config
from archsim.api_keywords import (
    check_choice,
    check_path,
    check_switch,
    check_text,
    clock_ghz,
    positive_int,
    speaks_keywords,
    user_stacklevel,
)
from archsim.console import library_note, said_after
from archsim.read_only import plain
from archsim.validate import flag_text

if TYPE_CHECKING:
    import pandas as pd

    from archsim.array.config import ArrayConfig
    from archsim.count_types import Count, Counts, Number
    from archsim.partition.profile import LayerProfile
    from archsim.policies.actions import StageOrder
    from archsim.sim.timeline import Timeline
    from archsim.workload.layer import Network


@dataclass(frozen=True)
class ScheduleResult:
    """What :func:`schedule` returns: ``row`` and ``meta``, the one row ``archsim schedule`` prints and what it was
    computed on (:meth:`to_dict`: the command's ``--format json`` document); ``timeline``, the validated
    :class:`~archsim.sim.timeline.Timeline` (None for ``multistream``'s totals and ``torch_steps``' count); ``order``,
    a per-stage run's action order (:func:`archsim.policies.torch_csv.order_csv` writes torch's CSV of it);
    :meth:`to_frame`, the command's ``--format csv`` rows, as every result's. The timeline's other attributes answer
    on the result too (``result.makespan``, ``result.utilization()``), so code written for the Timeline ``schedule``
    used to return keeps working; its ops are ``result.timeline.to_frame()``; times in ``meta["unit"]``. ``row`` and
    ``meta`` are copies, as a table result's ``meta`` is: changing one changes no later read, ``to_dict()`` included."""

    _row: dict
    _meta: dict
    timeline: Timeline | None = field(repr=False)
    order: StageOrder | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        """The row and the meta frozen all the way down, as every API result's document (:mod:`archsim.read_only`)."""
        from archsim.read_only import read_only

        object.__setattr__(self, "_row", read_only(self._row))
        object.__setattr__(self, "_meta", read_only(self._meta))

    @property
    def row(self) -> dict:
        """The one row ``archsim schedule`` prints (an editable copy)."""
        return plain(self._row)

    @property
    def meta(self) -> dict:
        """What the row was computed on, the meta ``archsim schedule`` prints above it (an editable copy)."""
        return plain(self._meta)

    def __repr__(self) -> str:
        """One line, the row's figures and what they were run on (a notebook shows a cell's value by its repr; the
        dataclass's printed the meta's notes too, 450–600 characters): ``.row`` and ``.meta`` hold everything."""
        shown = ", ".join(f"{k}={int(v) if isinstance(v, float) and v.is_integer() else f'{v:.6g}'}"
                          if isinstance(v, float) else f"{k}={v}" for k, v in self._row.items())
        network = f"{self._meta['network']}: " if self._meta.get("network") else ""
        unit = f"; times in {self._meta['unit']}" if self._meta.get("unit") else ""
        return f"ScheduleResult({network}{shown}{unit})"

    def to_dict(self) -> dict:
        """The JSON document ``archsim schedule --format json`` prints for the same keywords; a copy, NaN as NaN
        (the CLI writes null)."""
        return plain({"meta": self._meta, "rows": [self._row]})

    def to_frame(self) -> pd.DataFrame:
        """The rows ``archsim schedule --format csv`` prints for the same keywords, as a DataFrame: its one row, then
        each single meta value as a column (:func:`archsim.outputs.csv_frame`, as every result's; imports pandas).
        Until 2026-12-03 this was the timeline's ops (``result.timeline.to_frame()`` now), and a run without a
        timeline (``multistream``, ``torch_steps``) raised an AttributeError."""
        from archsim.outputs import csv_frame
        from archsim.rows import Rows

        document = self.to_dict()
        return csv_frame(Rows.of(document["rows"]), document["meta"])

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_row", "_meta", "timeline", "order"):  # unpickling asks before fields
            raise AttributeError(name)
        if self.timeline is None:
            raise AttributeError(f"{name!r}: this run ({self._row.get('policy') or 'torch_steps'}) has no timeline; "
                                 f"its figures are in .row")
        return self._row[name] if name == "makespan" else getattr(self.timeline, name)  # the row's: 16 cycles, not 16.0


@speaks_keywords
def schedule(network: str | Path | Network | LayerProfile | None = None, *, policy: str | None = None, processors: Count | None = None,
             microbatches: Count | None = None, unit_costs: bool = False, flush: bool | None = None,
             group: Count | None = None, streams: str | None = None, region_size: Count | None = None,
             chunks: Count | None = None, reverse_k: Count | None = None, sync: str | None = None,
             comm_units: Number | None = None, array: str | int | Path | ArrayConfig | None = None, config: str | Path | None = None,
             dataflow: str | None = None, dtype: str | None = None, element_bytes: Count | None = None,
             engine: str | None = None, dram_bandwidth: Count | None = None,
             sram_kb: Counts | None = None, clock_ghz: Number | None = None,
             batch: Count | None = None, mode: str | None = None, only: str | Sequence[str] | None = None,
             shapes: str | None = None, unsupported: str | None = None, input_shape: str | None = None,
             dim: Mapping[str, int] | Sequence[tuple[str, int] | str] | str | None = None, max_ops: Count | None = None,
             stages: Count | None = None, stage_times: str | Sequence[Number] | None = None, comm: Number | None = None,
             stage_memory: str | Sequence[Number] | None = None, stage_profile: str | Path | None = None,
             link_bandwidth: Number | None = None, torch_schedule: str | None = None,
             schedule_csv_in: str | Path | None = None, max_orders: Count | None = None,
             torch_steps: bool = False) -> ScheduleResult:
    """``archsim schedule`` as a function: every policy (the out-of-order backprop pipelines ``mp``, ``gpipe``,
    ``ooo-pipe1``, ``ooo-pipe2``; data parallel ``dp-*``; the published zero-bubble orders ``1f1b``, ``zb-h1``, …,
    and their ``list-*`` versions; ``multistream``) on ``network`` (as :func:`load_network`, a block network such as
    ``bert_large_blocks`` for the out-of-order ones, or for those a :class:`LayerProfile` as is), or per-stage costs
    (``stages`` with ``stage_times``, or ``stage_profile``; ``torch_schedule``, ``schedule_csv_in``). Each keyword is
    its flag (``reverse_k`` is ``--reverse-k``; ``stage_times`` ``"F,B,W"`` or three numbers), None where not given:
    a default is filled in where the run reads it, a keyword the run would ignore is refused, and every refusal is
    the command's one line, naming keywords (``group``, ``policy='zb-h1'``) where the command names flags. Returns a :class:`ScheduleResult`: the command's row and meta (``to_dict()``: its JSON)
    and the validated timeline (``.makespan`` in cycles, or units with ``unit_costs=True``: F = D = G = 1).
    The notes and warnings the command prints on stderr (a device an allocation leaves idle, a device file's unread
    keys, …) warn (UserWarning)."""
    given = dict(locals())
    from archsim.partition.profile import LayerProfile

    settings = _on_profile(given) if isinstance(network, LayerProfile) else _checked(given)
    from archsim.array.device_sections import is_device_toml
    from archsim.device_toml import device_toml_dtype, device_toml_notes
    from archsim.planners import idle_line
    from archsim.policies.schedule_run import run_schedule

    if "dtype" in settings:  # a device TOML's default: train's, as cost's (one rule)
        settings["dtype"] = device_toml_dtype(settings.get("config"), settings["dtype"], settings.get("element_bytes"))
    # the run's notes, warned once it succeeds: a refused run raises its error alone; a device TOML read as cost's
    done = said_after(lambda hold: run_schedule(**settings, speak=hold, read_device=device_toml_notes), _warn)
    if settings.get("config") and not is_device_toml(settings["config"]):  # the reader said a TOML's notes
        from archsim.devices.unread_keys import config_unread_keys_note

        _warn("note", config_unread_keys_note(settings["config"], rates_read=True))  # [macs_per_pe] read
    if done.used is not None:
        _warn("note", idle_line(f"{policy}'s allocation", done.used, done.row["processors"]))
    timeline = None if done.timeline is None else replace(done.timeline, unit=done.unit)  # for to_frame's attrs
    return ScheduleResult(done.row, done.meta, timeline, done.order)


def _warn(kind: str, text: str | None) -> None:
    """A note or warning the command prints on stderr, as a UserWarning at the caller's line, whether said from
    inside :func:`~archsim.policies.schedule_run.run_schedule` (a network's notes) or after it."""
    if text:
        library_note(text, stacklevel=user_stacklevel())


def _checked(given: dict[str, Any]) -> dict[str, Any]:
    """The keywords refused as their flags' types refuse them (argparse's checks in the command) and converted
    as the flags convert them; None stays None (not given)."""
    from archsim.choices.devices import ENGINES, FP8_ARRAY_DTYPES
    from archsim.choices.networks import SHAPE_CHECKS, UNSUPPORTED
    from archsim.modes import MODES
    from archsim.policies.multistream import SCHEDULES
    from archsim.policies.stage_profile import MAX_STAGE_VALUE
    from archsim.validate import MAX_PROCESSORS
    from archsim.value_parsers import parse_float

    settings = {name: value for name, value in given.items() if name != "network"}
    network = given["network"]
    if network is not None and not isinstance(network, _network_types()):
        check_path(network, "network", "a network name or path, a Network or a LayerProfile")
    settings["network"] = str(network) if isinstance(network, Path) else network
    check_choice_or_none = {"policy": _policies(), "streams": SCHEDULES, "sync": ("ring", "ps"), "engine": ENGINES,
                            "mode": MODES, "dataflow": ("ws", "os", "is"), "dtype": FP8_ARRAY_DTYPES,
                            "shapes": SHAPE_CHECKS, "unsupported": UNSUPPORTED}
    for name, choices in check_choice_or_none.items():
        if settings[name] is not None:
            check_choice(settings[name], tuple(choices), name.replace("_", "-"))
    check_switch(settings["unit_costs"], "unit-costs")
    check_switch(settings["torch_steps"], "torch-steps")
    check_switch(settings["flush"], "flush", none=True)
    settings["unit_costs"] = settings["unit_costs"] or None  # False: not given, as the command's absent switch
    for name in ("microbatches", "group", "region_size", "chunks", "element_bytes", "dram_bandwidth", "batch",
                 "max_ops", "max_orders"):
        if settings[name] is not None:
            settings[name] = positive_int(settings[name], name.replace("_", "-"))
    for name in ("processors", "stages"):  # a processor count: 1 … 4096
        if settings[name] is not None:
            settings[name] = positive_int(settings[name], name, high=MAX_PROCESSORS, what="a processor count")
    bounds = {"comm_units": (0.0, False, "a non-negative number", float("inf")),
              "comm": (0.0, False, "a non-negative time", MAX_STAGE_VALUE),
              "link_bandwidth": (0.0, True, "a positive number", float("inf"))}
    for name, (low, open_low, what, high) in bounds.items():
        if settings[name] is not None:
            settings[name] = _number(settings[name], name, lambda v, low=low, open_low=open_low, what=what, high=high:
                                     parse_float(v, low=low, high=high, low_open=open_low, what=what))
    if settings["clock_ghz"] is not None:  # --clock-ghz's line, an InputError (was a bare ValueError)
        settings["clock_ghz"] = clock_ghz(settings["clock_ghz"])
    for name in ("stage_times", "stage_memory"):  # "F,B,W" as the flag takes it, or the numbers themselves
        value = settings[name]
        if value is not None and not isinstance(value, str):
            settings[name] = flag_text(value)  # a list, tuple or numpy array of numbers joined by commas
    if settings["torch_schedule"] is not None:  # a name, read as --torch-schedule reads it
        check_text(settings["torch_schedule"], "torch-schedule", "a torch.distributed.pipelining schedule name (str)")
    for name in ("stage_profile", "schedule_csv_in", "config"):
        if settings[name] is not None:
            check_path(settings[name], name.replace("_", "-"), "a file path")
    array, config = cfg_as_config(settings["array"], settings["config"])  # cost's reading: 32 is "32"
    if settings["config"] is None and config is not None:  # a .cfg or device TOML given as array is --config
        config = str(config)
    settings["array"], settings["config"] = array, config
    if settings["dim"] is not None:
        settings["dim"] = list(settings["dim"].items()) if isinstance(settings["dim"], Mapping) else settings["dim"]
    return settings


def _number(value: object, field_name: str, parse) -> float:
    """A float keyword checked as its flag's type checks it: refused in one line naming the flag."""
    from archsim.errors import InputError

    try:
        return parse(value)
    except ValueError as exc:
        raise InputError(str(exc), field=field_name.replace("_", "-")) from None


def _network_types() -> tuple[type, ...]:
    from archsim.workload.layer import Network

    return (str, Path, Network)


def _policies() -> tuple[str, ...]:
    """Every ``--policy`` name, in the command's order (its ``choices``)."""
    from archsim.choices.schedules import DP_POLICIES, LIST_SCHEDULES, OOO_POLICIES, ZB_SCHEDULES
    from archsim.policies.stage_schedule import STAGE_ONLY

    return OOO_POLICIES + DP_POLICIES + ZB_SCHEDULES + LIST_SCHEDULES + STAGE_ONLY + ("multistream",)


def _on_profile(given: dict[str, Any]) -> dict[str, Any]:
    """The keywords of an out-of-order pipeline on a :class:`LayerProfile` as is (costs of your own, or
    :func:`archsim.profile`'s), checked as the keywords of a network are (:func:`_checked`) for the run that takes
    one (:func:`~archsim.policies.schedule_run.run_schedule`, which checks ``max_ops`` as for a network): a keyword
    that would cost a network is refused (the profile carries its costs)."""
    from archsim.choices.schedules import OOO_POLICIES, POLICIES, STAGE_ONLY_POLICIES, ZB_SCHEDULES
    from archsim.errors import InputError

    policy, group = given["policy"], given["group"]
    if isinstance(policy, str) and policy in POLICIES and policy not in OOO_POLICIES:  # a policy, not for a profile
        network = "a network (its name, path or Network, costed by this call's array keywords)"
        stages = "per-stage costs (stages=, stage_times=)"
        runs = stages if policy in STAGE_ONLY_POLICIES else f"{network} or {stages}" if policy in ZB_SCHEDULES \
            else network
        raise InputError(f"a LayerProfile runs the out-of-order pipelines ({', '.join(OOO_POLICIES)}) on its costs as "
                         f"is; {policy} runs on {runs}", field="policy")
    check_choice(policy, OOO_POLICIES, "policy")
    processors = positive_int(given["processors"], "processors")
    microbatches = None if given["microbatches"] is None else positive_int(given["microbatches"], "microbatches")
    check_switch(given["unit_costs"], "unit-costs")
    check_switch(given["flush"], "flush", none=True)
    ignored = [name for name, value in given.items() if value not in (None, False) and name not in (
        "network", "policy", "processors", "microbatches", "unit_costs", "flush", "group", "max_ops")]
    if ignored:
        raise InputError(f"a profile carries its costs: give {ignored[0]} to archsim.profile, or a network here",
                         field=ignored[0])
    if group is not None and policy != "ooo-pipe2":
        raise InputError(f"group is ooo-pipe2's modulo group; {policy} allocates layers contiguously: drop it",
                         field="group")
    return {"network": given["network"], "policy": policy, "processors": processors, "microbatches": microbatches,
            "unit_costs": given["unit_costs"] or None, "flush": given["flush"],
            "group": None if group is None else positive_int(group, "group"),
            "max_ops": None if given["max_ops"] is None else positive_int(given["max_ops"], "max-ops")}


__all__ = ["ScheduleResult", "schedule"]
