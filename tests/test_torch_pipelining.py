"""archsim's schedules through torch.distributed.pipelining's own reader, validator and simulator.

Needs ``torch`` (torch==2.13.0, CPU build; in the test extra): without it the session refuses to
start (tests/conftest.py) unless ``ARCHSIM_TESTS_WITHOUT=torch``, and then this module is skipped. torch's schedule classes are built on stand-in stages that carry only
the attributes the schedule constructors read (no process group, no model).
"""

from pathlib import Path

import pytest

torch_schedules = pytest.importorskip("torch.distributed.pipelining.schedules")

from archsim.cli import main
from archsim.errors import InputError
from archsim.policies import stage_orders as so
from archsim.policies.stage_profile import StageProfile
from archsim.policies.torch_csv import order_csv, parse_order_csv
from archsim.policies.zb_auto import zb_auto_order

S = torch_schedules
COMPUTE = {"F", "I", "W", "B"}


class StandInStage:
    """What torch's schedule constructors read from a pipeline stage."""

    def __init__(self, index: int, ranks: int, stages: int, rank: int) -> None:
        self.stage_index, self.num_stages, self.group_size, self.group_rank = index, stages, ranks, rank
        self.is_first, self.is_last = index == 0, index == stages - 1
        self.submod = None
        self.has_backward = True


def torch_order(cls, p: int, m: int, v: int) -> dict[int, list[str]]:
    """The compute actions torch's class lists for every rank (overlapped pairs as their two actions)."""
    order = {}
    for rank in range(p):
        if cls in (S.Schedule1F1B, S.ScheduleGPipe):
            actions = cls(StandInStage(rank, p, p, rank), m)._get_pipeline_order()[rank]
        elif cls in (S.ScheduleZBVZeroBubble, S.ScheduleDualPipeV):
            actions = cls([StandInStage(k, p, 2 * p, rank) for k in (rank, 2 * p - 1 - rank)], m).pipeline_order[rank]
        else:
            stages = [StandInStage(rank + k * p, p, p * v, rank) for k in range(v)]
            actions = cls(stages, m).pipeline_order[rank]
        flat = [sub for a in actions if a is not None for sub in (a.sub_actions or (a,))]
        order[rank] = [str(a) for a in flat if a.computation_type.value in COMPUTE]
    return order


@pytest.mark.parametrize("name", list(so.TORCH_SCHEDULES))
@pytest.mark.parametrize("p, m, v", [(2, 4, 2), (4, 8, 2), (4, 12, 3), (3, 9, 2), (4, 13, 2)])
def test_orders_are_torchs_own(name, p, m, v):
    cls = getattr(S, name)
    v = 1 if cls in (S.Schedule1F1B, S.ScheduleGPipe) else v
    try:
        theirs = torch_order(cls, p, m, v)
    except ValueError:  # torch refuses this micro-batch count: so does archsim
        with pytest.raises(InputError):
            so.published_order(name, p, m, v)
        return
    mine = {r: [str(a) for a in actions] for r, actions in enumerate(so.published_order(name, p, m, v).ranks)}
    if cls is S.Schedule1F1B:
        # torch 2.13's Schedule1F1B._get_pipeline_order numbers the last rank's forwards from 1 (its
        # counter starts at 0 and is bumped before the first use when there is no warm-up), so it lists
        # F1..Fm there; its runtime (_step_microbatches) runs F0..F(m-1). Compare the rest exactly.
        last = p - 1
        shifted = [a if "F" not in a else f"{last}F{int(a.split('F')[1]) + 1}" for a in mine[last]]
        assert theirs.pop(last) == shifted
        mine.pop(last)
    assert mine == theirs


def torch_accepts(text: str, tmp_path, p: int) -> dict[int, list]:
    """torch's _load_csv (reader + _validate_schedule), then _add_send_recv + _simulate_comms_compute."""
    path = tmp_path / "schedule.csv"
    path.write_text(text)
    cells = [c for line in text.splitlines() for c in line.split(",") if c]
    actions = [sub for c in cells for sub in (S._Action.from_str(c).sub_actions or (S._Action.from_str(c),))]
    assert len(actions) == len(set(actions)), "repeated action"
    stages = 1 + max(a.stage_index for a in actions)
    m = 1 + max(a.microbatch_index for a in actions)
    assert stages % p == 0
    holder = S.ScheduleLoopedBFS([StandInStage(k * p, p, stages, 0) for k in range(stages // p)], m)
    holder._load_csv(str(path))
    order = holder.pipeline_order
    assert sorted(order) == list(range(p))
    rank_of = holder.stage_index_to_group_rank
    with_comms = S._add_send_recv({r: list(order[r]) for r in order}, stage_to_rank=rank_of.__getitem__,
                                  num_stages=stages)
    if any(a is not None and a.sub_actions for r in order for a in order[r]):
        # torch 2.13's dry-run simulator has no case for OVERLAP_F_B (it looks up stage -1), not even
        # for its own ScheduleDualPipeV order: check that, and stop after _add_send_recv.
        own = S.ScheduleDualPipeV([StandInStage(k, p, 2 * p, 0) for k in (0, 2 * p - 1)], 2 * p)
        own_comms = S._add_send_recv({r: [a for a in own.pipeline_order[r] if a] for r in own.pipeline_order},
                                     stage_to_rank=own.stage_index_to_group_rank.__getitem__, num_stages=2 * p)
        with pytest.raises(KeyError):
            S._simulate_comms_compute(own_comms, stage_to_rank=own.stage_index_to_group_rank.__getitem__,
                                      num_stages=2 * p)
        return with_comms
    return S._simulate_comms_compute(with_comms, stage_to_rank=rank_of.__getitem__, num_stages=stages)


ORDER_CASES = [(name, p, m) for name in so.ORDERS for p, m in [(2, 4), (4, 8), (4, 12)]]


@pytest.mark.parametrize("name, p, m", ORDER_CASES)
def test_published_orders_pass_torchs_checks(name, p, m, tmp_path):
    torch_accepts(order_csv(so.published_order(name, p, m, 2)), tmp_path, p)


@pytest.mark.parametrize("k", (1, 2))
def test_zb_auto_orders_pass_torchs_checks(k, tmp_path):
    profile = StageProfile.uniform(4, 3.0, 2.0, 1.5, 0.2, activation=10, weight_memory=4)
    order = zb_auto_order(profile.forward, profile.backward_input, profile.backward_weight, 0.2, 12, k,
                          profile.activation, profile.weight_memory)
    torch_accepts(order_csv(order), tmp_path, 4)
    assert parse_order_csv(order_csv(order)).ranks == order.ranks  # archsim reads back what it wrote


NETWORK_CASES = [
    ["schedule", "ffnn8", "--policy", policy, "--processors", "2", "--microbatches", "3", "--unit-costs", *flush]
    for policy in ("mp", "gpipe", "ooo-pipe1", "ooo-pipe2") for flush in ([], ["--no-flush"])
    if not (policy == "gpipe" and flush)  # gpipe is the flush: --no-flush refused
] + [
    ["schedule", "ffnn16", "--policy", "ooo-pipe2", "--processors", "2", "--microbatches", "4", "--unit-costs",
     "--group", "2", "--no-flush"],
    *[["schedule", "ffnn8", "--policy", policy, "--processors", "2", "--microbatches", "4", "--unit-costs"]
      for policy in ("1f1b", "zb-h1", "zb-h2", "zb-1p", "zb-2p", "interleaved-1f1b", "interleaved-zb",
                     "list-1f1b", "list-zb-h1", "list-zb-h2")],
    *[["schedule", "--stages", "4", "--stage-times", "1,1,1", "--microbatches", "8", "--policy", policy]
      for policy in ("gpipe", "looped-bfs", "1f1b", "zb-h2", "zb-2p", "interleaved-1f1b")],
    ["pipeline", "ffnn8", "--processors", "2", "--microbatches", "3", "--method", "layerpipe"],
    ["pipeline", "ffnn8", "--processors", "2", "--microbatches", "3", "--method", "pipedream"],
    ["pipeline", "ffnn8", "--processors", "2", "--microbatches", "3", "--method", "gpipe"],
    pytest.param(["plan", "vgg16", "--only", "conv", "--cluster",
                  str(Path(__file__).resolve().parents[1] / "configs" / "clusters" / "spp_sim.toml"),
                  "--microbatches", "4", "--array", "64x64"], marks=pytest.mark.slow),  # SPP with its fused FB
]


@pytest.mark.parametrize("argv", NETWORK_CASES, ids=lambda argv: "-".join(argv[:5]))
def test_every_policy_csv_passes_torchs_checks(argv, tmp_path, capsys):
    out = tmp_path / "order.csv"
    assert main([*argv, "--schedule-csv", str(out)]) == 0, capsys.readouterr().err
    text = out.read_text()
    torch_accepts(text, tmp_path, len(text.splitlines()))


@pytest.mark.parametrize("name", ["ScheduleInterleaved1F1B", "ScheduleInterleavedZeroBubble", "ScheduleZBVZeroBubble",
                                  "ScheduleDualPipeV"])
def test_schedule_dumped_by_torch_simulates_like_archsims_own(name, tmp_path, capsys):
    """torch writes its order (_dump_csv); archsim reads it back (--schedule-csv-in) and times it
    exactly as it times its own copy of the schedule (--torch-schedule)."""
    import json

    p, m = 4, 8
    cls = getattr(S, name)
    if cls in (S.ScheduleZBVZeroBubble, S.ScheduleDualPipeV):
        stages = [StandInStage(k, p, 2 * p, 0) for k in (0, 2 * p - 1)]
    else:
        stages = [StandInStage(k * p, p, 2 * p, 0) for k in range(2)]
    path = tmp_path / "torch.csv"
    cls(stages, m)._dump_csv(str(path))
    common = ["schedule", "--stages", str(p), "--stage-times", "1.5,1,0.75", "--comm", "0.25", "--format", "json"]
    assert main([*common, "--schedule-csv-in", str(path)]) == 0  # the order fixes the micro-batches
    theirs = json.loads(capsys.readouterr().out)["rows"][0]
    assert theirs["microbatches"] == m
    assert main([*common, "--torch-schedule", name, "--microbatches", str(m)]) == 0
    mine = json.loads(capsys.readouterr().out)["rows"][0]
    assert (theirs["makespan"], theirs["peak_memory"]) == (mine["makespan"], mine["peak_memory"])


@pytest.mark.parametrize("name", [n for n in so.ORDERS if n != "dualpipev"] + ["zb-1p", "zb-2p"])
@pytest.mark.parametrize("p, m", [(2, 4), (4, 8), (3, 6)])
def test_unit_steps_equal_torchs_simulator(name, p, m):
    """Every action one step, a RECV sharing its SEND's step: archsim's simulation of torch's
    schedule (with torch's own SEND/RECV placement) takes exactly as many steps as torch's simulator."""
    from archsim.policies.torch_steps import parse_comm_schedule, torch_steps

    if name.startswith("zb-") and name[3:] in ("1p", "2p"):
        ones = [1.0] * p
        order = zb_auto_order(ones, ones, ones, 0.0, m, int(name[3]), ones, [0.5] * p)
    else:
        order = so.published_order(name, p, m, 2)
    rank_of = order.rank_of_stage()
    compute = {r: [S._Action.from_str(str(a)) for a in actions] for r, actions in enumerate(order.ranks)}
    with_comms = S._add_send_recv(compute, stage_to_rank=rank_of.__getitem__, num_stages=order.stages)
    text = "".join(",".join(str(a) for a in with_comms[r]) + "\n" for r in sorted(with_comms))
    simulated = S._simulate_comms_compute({r: list(v) for r, v in with_comms.items()},
                                          stage_to_rank=rank_of.__getitem__, num_stages=order.stages)
    assert torch_steps(parse_comm_schedule(text)) == max(len(v) for v in simulated.values())


def test_torch_steps_from_a_csv_torch_dumped(tmp_path, capsys):
    """torch dumps a runtime schedule with its SEND/RECV actions; archsim counts its steps as torch's
    simulator does on the same actions (torch's own REDUCE_GRAD/UNSHARD, which its simulator cannot
    step, are left out of both)."""
    import json

    p, m = 4, 8
    schedule = S.ScheduleInterleaved1F1B([StandInStage(k * p, p, 2 * p, 0) for k in range(2)], m)
    path = tmp_path / "comms.csv"
    schedule._dump_csv(str(path))
    assert main(["schedule", "--schedule-csv-in", str(path), "--torch-steps", "--format", "json"]) == 0
    steps = json.loads(capsys.readouterr().out)["rows"][0]["steps"]
    kept = {r: [a for a in actions if a.computation_type.value in COMPUTE | {"SEND_F", "RECV_F", "SEND_B", "RECV_B"}]
            for r, actions in schedule.pipeline_order_with_comms.items()}
    rank_of = schedule.stage_index_to_group_rank
    simulated = S._simulate_comms_compute(kept, stage_to_rank=rank_of.__getitem__, num_stages=2 * p)
    assert steps == max(len(v) for v in simulated.values())
