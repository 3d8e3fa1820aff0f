"""Does the search pick what measurement picks? vTrain's single-node runs grouped by (model, GPUs,
global batch): in each group the search, held to the runs' own settings (full recompute, 1F1B, no
sequence parallelism) and to the configurations measured in the group, ranks them; its first choice is
compared with the measured best (shared by the benchmark and the tests)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from archsim.choices.training import DEFAULT_P2P
from archsim.training import fitted
from archsim.training.cluster_file import single_node
from archsim.training.measured import MeasuredRun
from archsim.training.search import search


@dataclass(frozen=True)
class GroupOutcome:
    hidden: int
    layers: int
    gpus: int
    global_batch: int
    configurations: int
    measured_best: tuple[int, int, int, int]  # tp, pp, dp, micro-batch
    ranked: tuple[tuple[int, int, int, int], ...]  # archsim's order, best first
    first_over_best: float  # measured time of archsim's first choice / the measured best − 1

    @property
    def held_out(self) -> bool:
        return not fitted.is_fit_run(self.layers)

    @property
    def first_within_5pct(self) -> bool:
        return self.first_over_best <= 0.05

    @property
    def best_in_top3(self) -> bool:
        return self.measured_best in self.ranked[:3]


def _key(tp, pp, dp, mb) -> tuple[int, int, int, int]:
    return tp, pp, dp, mb


def group_outcomes(runs: list[MeasuredRun], cluster=None, p2p: str = DEFAULT_P2P) -> list[GroupOutcome]:
    """One outcome per group with at least two measured configurations. A configuration measured
    more than once counts with its mean time. ``p2p``: the search's pipeline sends (``search --p2p``)."""
    cluster = cluster or single_node()
    groups: dict[tuple, dict[tuple, list[float]]] = defaultdict(lambda: defaultdict(list))
    sample: dict[tuple, MeasuredRun] = {}
    for r in runs:
        g = (r.hidden, r.heads, r.layers, r.seq, r.gpus, r.global_batch)
        groups[g][_key(r.tp, r.pp, r.dp, r.micro_batch)].append(r.milliseconds)
        sample[g] = r
    out = []
    for g, configs in sorted(groups.items()):
        if len(configs) < 2:
            continue
        measured = {k: sum(v) / len(v) for k, v in configs.items()}
        run = sample[g]
        result = search(run.config(), cluster, run.global_batch, run.gpus,
                        micro_batches=sorted({k[3] for k in measured}), recomputes=("full",), schedules=("1f1b",),
                        sequence_parallel=(False,), top=len(measured),
                        grad_accumulation=run.grad_accumulation or "fused", p2p=p2p,
                        only=lambda k, allowed=frozenset(measured): _key(k.tp, k.pp, k.dp, k.micro_batch) in allowed)
        ranked = tuple(_key(row["tp"], row["pp"], row["dp"], row["micro_batch"]) for row in result.rows)
        best = min(measured, key=lambda k: measured[k])
        first = measured[ranked[0]] / measured[best] - 1 if ranked else float("inf")
        out.append(GroupOutcome(run.hidden, run.layers, run.gpus, run.global_batch, len(measured), best, ranked,
                                first))
    return out


def fractions(outcomes: list[GroupOutcome]) -> dict[str, float]:
    """Share of groups whose first choice is within 5% of the measured best, and whose top 3 holds it."""
    n = len(outcomes)
    return {"groups": n, "first_within_5pct": sum(o.first_within_5pct for o in outcomes) / n if n else 0.0,
            "best_in_top3": sum(o.best_in_top3 for o in outcomes) / n if n else 0.0}


__all__ = ["GroupOutcome", "fractions", "group_outcomes"]
