"""Every schedule archsim runs, in one table (:data:`SCHEDULE_TABLE`): the flag that takes it, its family and
where its order comes from. The flags' choices are read from it (``archsim pipeline --schedule``, ``archsim
schedule --policy``, ``archsim train``/``search --schedule``) and docs/cli.md's "Schedules" table is checked
against it (tests/test_schedule_table.py). A name under two flags is two schedules: ``gpipe`` is a partition's
fill-drain, out-of-order backprop's layer-wise baseline and train's GPipe."""

from __future__ import annotations

OOO = "Out-of-order backprop (Oh et al., EuroSys 2022)"
ZB = "Zero Bubble Pipeline Parallelism (Qi et al., ICLR 2024)"
PARTITION, POLICY, TRAINING = "pipeline --schedule", "schedule --policy", "train --schedule"

# the sources of the schedules both schedule --policy and train --schedule take, written once
SOURCES = {
    "interleaved-1f1b": "Megatron-LM's interleaved 1F1B (Narayanan et al., SC 2021)",
    "interleaved-zb": "torch's ScheduleInterleavedZeroBubble",
    "looped-bfs": "Breadth-First Pipeline Parallelism (Lamy-Poirier, MLSys 2023), torch's ScheduleLoopedBFS",
    "zb-v": "Pipeline Parallelism with Controllable Memory (Qi et al., NeurIPS 2024): ZB-V",
    "dualpipev": "DeepSeek-V3's DualPipe in its V form, torch's ScheduleDualPipeV",
}

# (the flag that takes it, its family, its name, where its order comes from), each flag's names in its choices' order
SCHEDULE_TABLE: tuple[tuple[str, str, str, str], ...] = (
    (PARTITION, "partition", "gpipe", "GPipe (Huang et al., NeurIPS 2019): fill-drain, torch's ScheduleGPipe"),
    (PARTITION, "partition", "1f1b", "PipeDream-Flush's 1F1B (Narayanan et al., ICML 2021), torch's Schedule1F1B"),
    (PARTITION, "partition", "layerpipe", ("LayerPipe (Unnikrishnan and Parhi, ICCAD 2021): δ before G before F in "
                                           "1F1B's window")),
    (PARTITION, "partition", "gpipe-newest-first", ("GPipe's figure: backwards newest micro-batch first (archsim's "
                                                    "earlier list schedule)")),
    (PARTITION, "partition", "1f1b-window", ("PipeDream (Narayanan et al., SOSP 2019): its admission window and "
                                             "alternation (archsim's earlier list schedule)")),
    (PARTITION, "partition", "1f1b-delta-before-g", "1f1b with each layer's δ pieces before its G (archsim's variant)"),
    (POLICY, "ooo", "mp", f"{OOO}: model parallelism, one micro-batch at a time"),
    (POLICY, "ooo", "gpipe", f"{OOO}: GPipe layer by layer, its baseline"),
    (POLICY, "ooo", "ooo-pipe1", f"{OOO}: its first pipeline, gradients reordered"),
    (POLICY, "ooo", "ooo-pipe2", f"{OOO}: its second pipeline, modulo layer allocation"),
    (POLICY, "dp", "dp-wfbp", f"{OOO} §5.1: wait-free backprop, each gradient synchronized when ready"),
    (POLICY, "dp", "dp-priority", f"{OOO} §5.1: earlier layers' gradients first on the network (BytePS)"),
    (POLICY, "dp", "dp-reverse-k", f"{OOO} §5.1, Algorithm 2: the first k weight gradients last"),
    (POLICY, "published", "1f1b", "PipeDream-Flush's 1F1B (Narayanan et al., ICML 2021), torch's Schedule1F1B"),
    (POLICY, "published", "interleaved-1f1b", SOURCES["interleaved-1f1b"]),
    (POLICY, "published", "zb-h1", f"{ZB}: ZB-H1"),
    (POLICY, "published", "zb-h2", f"{ZB}: ZB-H2"),
    (POLICY, "published", "zb-1p", f"{ZB}: ZB-1p, its automatic schedule"),
    (POLICY, "published", "zb-2p", f"{ZB}: ZB-2p, its automatic schedule"),
    (POLICY, "published", "interleaved-zb", SOURCES["interleaved-zb"]),
    (POLICY, "published", "zb-v", SOURCES["zb-v"]),
    (POLICY, "published", "dualpipev", SOURCES["dualpipev"]),
    (POLICY, "list", "list-1f1b", "1F1B's in-flight limit as a greedy list schedule (archsim's variant)"),
    (POLICY, "list", "list-zb-h1", f"{ZB}'s ZB-H1 limit as a greedy list schedule (archsim's variant)"),
    (POLICY, "list", "list-zb-h2", f"{ZB}'s ZB-H2 limit as a greedy list schedule (archsim's variant)"),
    (POLICY, "stage-only", "looped-bfs", SOURCES["looped-bfs"]),
    (POLICY, "stage-only", "zb-1p-exact", f"{ZB}: ZB-1p's problem searched exactly (archsim's)"),
    (POLICY, "stage-only", "zb-2p-exact", f"{ZB}: ZB-2p's problem searched exactly (archsim's)"),
    (POLICY, "multistream", "multistream", f"{OOO} §4.1, Algorithm 1: one device's weight gradients on a second stream"),
    (TRAINING, "training", "1f1b", "PipeDream-Flush's 1F1B (Narayanan et al., ICML 2021), Megatron-LM's default"),
    (TRAINING, "training", "gpipe", "GPipe (Huang et al., NeurIPS 2019): fill-drain"),
    (TRAINING, "training", "zb-h1", f"{ZB}: ZB-H1"),
    (TRAINING, "training", "zb-h2", f"{ZB}: ZB-H2"),
    (TRAINING, "training", "interleaved-1f1b", SOURCES["interleaved-1f1b"]),
    (TRAINING, "training", "interleaved-zb", SOURCES["interleaved-zb"]),
    (TRAINING, "training", "looped-bfs", SOURCES["looped-bfs"]),
    (TRAINING, "training", "zb-v", SOURCES["zb-v"]),
    (TRAINING, "training", "dualpipev", SOURCES["dualpipev"]),
)


def schedule_names(flag: str, *families: str) -> tuple[str, ...]:
    """The names ``flag`` takes (of ``families`` only, where given), in its choices' order."""
    return tuple(name for taken_by, family, name, _ in SCHEDULE_TABLE
                 if taken_by == flag and (not families or family in families))


OOO_POLICIES = schedule_names(POLICY, "ooo")  # out-of-order backprop's layer-wise pipelines (ooo.py)
DP_POLICIES = schedule_names(POLICY, "dp")  # data parallel (data_parallel.py)
# published per-stage orders (zero_bubble.py), and their greedy list-scheduled versions
ZB_SCHEDULES = schedule_names(POLICY, "published")
LIST_SCHEDULES = schedule_names(POLICY, "list")
STAGE_ONLY_POLICIES = schedule_names(POLICY, "stage-only")  # per-stage costs only, never a NETWORK's layers
POLICIES = schedule_names(POLICY)  # every --policy
# Micro-batch schedules of a partition (``archsim pipeline --schedule``, ``archsim.simulate``;
# :mod:`archsim.policies.pipeline` says what each runs)
PARTITION_SCHEDULES = schedule_names(PARTITION)
TRAINING_SCHEDULES = schedule_names(TRAINING)  # the orders the training model times (train, search)
