"""The reference for :func:`archsim.policies.pipeline.pipeline_problem`: archsim's original
builder, which made one Op and Dep object per op and dependency, kept as the oracle the columnar
builder must equal (tests/test_pipeline_columns.py). It is a refactor check, nothing more: what both
build from — the checked schedule, the layer graph and each op's stage and duration
(``pipeline_layout``, which also adds the δ of no time of a layer whose δ costs nothing) — is the
library's, not a copy, and its 1F1B window (the admission and alternation dependencies) states the
rule the library states (its ``1f1b`` is the library's ``1f1b-window``), so equal problems say the
columns were built right, not that the schedules are. Whether the 1F1B, LayerPipe and GPipe
timelines are right is checked against an independent timing of each schedule's order and the
papers' closed forms in tests/test_pipeline_oracle.py.

One rule changed since it was first written, in both builders alike: with links, an op's output
crosses to another processor once per micro-batch — one transfer per (source op, receiving stage,
micro-batch) into a receive op of no time there (``RECV_F``, ``RECV_B``), which every op of that
stage reading the output depends on. Before, every reading op had a transfer of its own, so a
layer's δ and G each had the consumer's δ sent (the link carried it twice). And, in both alike, two
or more δ sources on one other stage (a layer's readers there) are summed there by a ``SEND_B`` op
of no time and sent once, the layer's output size; before, each crossed on its own. A layer's stash
is its ``stash_bytes`` (what its G or δ reads: the first layer's input too), no longer its δ bytes
(0 for a layer that computes no δ). And, in both alike, a borrowed δ part (LayerPipe's δ′ or δ″ run on
another processor) is in its lender's admission, the stage holding its layer, not in that of the processor
that runs it (whose alternation still holds it): before, a processor of borrowed parts alone had no window and
fell behind without bound."""

from archsim.partition.profile import LayerProfile
from archsim.partition.result import Partition
from archsim.policies.pipeline import BACKWARD, pipeline_layout
from archsim.sim import Dep, Link, Op, Problem, Processor


def pipeline_problem(plan: Partition, profile: LayerProfile, microbatches: int, schedule: str | None = None,
                     bandwidth: float | None = None, latency: float = 0.0) -> Problem:
    """The op DAG of ``microbatches`` micro-batches through ``plan``.

    bandwidth: bytes per time unit of a link between any two processors (None: free transfers).
    """
    layout = pipeline_layout(plan, profile, microbatches, schedule)
    schedule, proc_of_stage, index, producers, consumers, where, cycles = layout
    stages = len(plan.stages)

    def kinds_of(layer: str, family: str) -> list[str]:
        if family == "D":
            return [k for k in ("D", "D1", "D2") if (layer, k) in where]
        return [family] if (layer, family) in where else []

    def oid(layer: str, kind: str, b: int) -> str:
        return f"{kind}:{layer}:{b}"

    links: dict[tuple[int, int], Link] = {}

    def link(src: int, dst: int) -> str | None:
        if bandwidth is None or src == dst:
            return None
        key = (src, dst)
        if key not in links:
            links[key] = Link(f"{proc_of_stage[src]}->{proc_of_stage[dst]}", proc_of_stage[src], proc_of_stage[dst],
                              bandwidth, latency)
        return links[key].name

    rank = {"gpipe": {"F": 0, "D": 1, "D1": 1, "D2": 1, "G": 1},
            "1f1b": {"D": 0, "D1": 0, "D2": 0, "G": 0, "F": 1},
            "layerpipe": {"D": 0, "D1": 0, "D2": 0, "G": 1, "F": 2}}[schedule]
    stash_weights = schedule != "gpipe"
    ops: list[Op] = []
    deps: list[Dep] = []
    sums: dict[tuple[str, str], tuple[int, str]] = {}  # a SEND_B op → its stage and the layer it sends for
    for b in range(microbatches):
        receives: dict[str, Op] = {}  # this micro-batch's receive ops by id, in the order they are made

        def received(src: tuple[str, str], at: int, size: int, gradient: bool, b: int = b,
                     receives: dict[str, Op] = receives) -> str:
            """The id of what an op on stage ``at`` reads ``src``'s output from (``src`` itself, or the
            one receive op of it on that stage, made with its transfer on first use)."""
            on, layer = sums[src] if src in sums else (where[src], src[0])
            channel = link(on, at)
            if channel is None:
                return oid(*src, b)
            kind = "RECV_B" if gradient else "RECV_F"
            name = oid(f"{src[1]}.{src[0]}>{proc_of_stage[at]}", kind, b)
            if name not in receives:
                k = index[layer]
                if schedule == "gpipe":
                    order = (-1, -b if gradient else b, -k if gradient else k)
                else:
                    order = (-1, b, -k if gradient else k)
                receives[name] = Op(name, proc_of_stage[at], 0.0, priority=order,
                                    tags=(("layer", layer), ("kind", kind), ("microbatch", b), ("stage", at + 1)))
                deps.append(Dep(oid(*src, b), name, size, channel))
            return name

        def summed(layer: str, parts: list[tuple[str, str]], on: int, b: int = b,
                   receives: dict[str, Op] = receives) -> tuple[str, str]:
            """The op of no time on stage ``on`` that sums ``layer``'s consumers' δ there and sends it."""
            src = (f"{layer}@{proc_of_stage[on]}", "SEND_B")
            name = oid(*src, b)
            if name not in receives:
                k = index[layer]
                order = (-1, -b, -k) if schedule == "gpipe" else (-1, b, -k)
                receives[name] = Op(name, proc_of_stage[on], 0.0, priority=order,
                                    tags=(("layer", layer), ("kind", "SEND_B"), ("microbatch", b), ("stage", on + 1)))
                sums[src] = (on, layer)
                deps.extend(Dep(oid(*part, b), name) for part in parts)
            return src

        for (layer, kind), stage in where.items():
            k = index[layer]
            if schedule == "gpipe":
                order = (rank[kind], b if kind == "F" else -b, k if kind == "F" else -k)
            else:
                order = (rank[kind], b, k if kind == "F" else -k)
            alloc = free = 0
            if kind == "F":
                alloc = int(profile.stash_bytes[k]) + (int(profile.weight_bytes[k]) if stash_weights else 0)
            if kind == "G":
                free = int(profile.stash_bytes[k]) + (int(profile.weight_bytes[k]) if stash_weights else 0)
            ops.append(Op(oid(layer, kind, b), proc_of_stage[stage], cycles[(layer, kind)], priority=order,
                          alloc_bytes=alloc, free_bytes=free,
                          tags=(("layer", layer), ("kind", kind), ("microbatch", b), ("stage", stage + 1))))
        for layer in profile.names:
            k = index[layer]
            f_stage = where[(layer, "F")]
            for parent in producers[layer]:  # activations forward
                size = int(profile.activation_bytes[index[parent]])
                deps.append(Dep(received((parent, "F"), f_stage, size, False), oid(layer, "F", b)))
            # δ of this layer's output comes from its consumers' δ ops (or from the loss after F).
            sources = [(c, kd) for c in consumers[layer] for kd in kinds_of(c, "D")] or [(layer, "F")]
            for kind in kinds_of(layer, "D") + kinds_of(layer, "G"):
                dst_stage = where[(layer, kind)]
                for c, kd in sources:
                    # two or more sources on one other stage: their sum, sent once (the layer's output size)
                    group = [x for x in sources if where[x] == where[(c, kd)]]
                    if len(group) > 1 and link(where[(c, kd)], dst_stage) is not None:
                        if (c, kd) == group[0]:
                            size = int(profile.activation_bytes[k])
                            total = summed(layer, group, where[(c, kd)])
                            deps.append(Dep(received(total, dst_stage, size, True), oid(layer, kind, b)))
                        continue
                    size = int(profile.delta_bytes[index[c]]) if kd != "F" else 0
                    deps.append(Dep(received((c, kd), dst_stage, size, True), oid(layer, kind, b)))
            deps.append(Dep(oid(layer, "F", b), oid(layer, "G", b)))
        ops.extend(receives.values())
        if schedule != "gpipe":
            for stage in plan.stages:
                window = stages - stage.index  # stage s of S keeps at most S − s + 1 micro-batches in flight
                forwards = [op.layer for op in stage.ops if op.kind == "F"]
                # admission waits for the stage's layers' backward ops wherever they run (a borrowed δ part:
                # its lender's); alternation holds the backward ops the stage's processor runs
                owned = [key for key in where if key[1] in BACKWARD and where[(key[0], "F")] == stage.index]
                backwards = [key for key, on in where.items() if on == stage.index and key[1] in BACKWARD]
                if not forwards:  # an idle stage, or one of borrowed δ parts only: in its lenders' windows
                    continue
                # the forward action begins with its layers that read no layer of the stage, ends
                # with those no layer of the stage reads (a chain: its first and its last)
                begins = [x for x in forwards if not set(producers[x]) & set(forwards)]
                ends = [x for x in forwards if not set(consumers[x]) & set(forwards)]
                if b - window >= 0:  # admission: F(b) after the backward of b − window
                    for layer, kind in owned:
                        deps.extend(Dep(oid(layer, kind, b - window), oid(first, "F", b)) for first in begins)
                if b + window - 1 < microbatches:  # alternation: B(b) after F(b + window − 1)
                    for layer, kind in backwards:
                        deps.extend(Dep(oid(last, "F", b + window - 1), oid(layer, kind, b)) for last in ends)
    processors = tuple(Processor(name) for name in proc_of_stage)
    return Problem(processors=processors, links=tuple(links.values()), ops=tuple(ops), deps=tuple(deps))
