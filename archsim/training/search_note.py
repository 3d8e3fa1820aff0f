"""Why a search costed no configuration (:func:`empty_search_note`), the one line ``archsim search`` prints
on stderr in place of a table."""

from __future__ import annotations

from bisect import bisect_right

from archsim.console import setting, switch_on
from archsim.training.parallel import tp_split_problem
from archsim.training.search_result import ShardedFits
from archsim.training.search_space import Candidate, divisors, factorizations, rejection
from archsim.workload.transformer import TransformerConfig


def empty_search_note(c: TransformerConfig, cluster, global_batch: int, counts, rejected: dict[str, int],
                      balance: str = "even", sharded: ShardedFits | None = None, fsdp: bool = False) -> str:
    """Why a search costed no configuration, and what to give instead, in one line (``archsim search`` prints
    it on stderr). Either no TP × PP × DP of the GPU ``counts`` passes :func:`rejection`'s rules for any
    micro-batch, schedule or recompute — then the most GPUs of the cluster one does pass on (memory aside)
    is named for ``--gpus`` —, or every configuration that passes the rules is out of memory (``sharded``:
    the search's :class:`~archsim.training.search_result.ShardedFits`, where ``--distributed-optimizer``
    would fit some of them, named first), or every one broke a rule the other flags leave (``rejected``'s
    counts, most first) — with ``fsdp`` on GPUs of several types, the PP = 1 that FSDP is modelled on, whose one
    stage mixes them: then the cluster's first GPUs of one type are named for ``--gpus``."""
    uneven = balance == "planned"

    def passes(tp: int, pp: int, dp: int) -> bool:  # the grid's most permissive candidate of this split
        k = Candidate(tp, pp, dp, 1, "none", "1f1b", 1, False)
        return rejection(c, k, global_batch, cluster.gpus_per_server, uneven) is None

    named = ", ".join(f"{n:,}" for n in counts) + (" GPU" if list(counts) == [1] else " GPUs")
    if not any(passes(*split) for n in counts for split in factorizations(n)):
        dps = divisors(global_batch)

        def most_with(tp: int, pp: int) -> int:  # the most GPUs, within the cluster's, of a passing TP × PP × DP
            fitting = dps[:bisect_right(dps, cluster.gpus // (tp * pp))]
            return next((tp * pp * dp for dp in reversed(fitting) if passes(tp, pp, dp)), 0)

        most = max(most_with(tp, pp) for tp in range(1, c.heads + 1) if not tp_split_problem(c, tp)
                   for pp in range(1, c.layers + 1) if passes(1, pp, 1))  # 1 × 1 × 1 always passes
        return (f"no configuration on {named}: no split of them into TP × PP × DP has DP dividing the global "
                f"batch ({global_batch:,}) with TP dividing the heads ({c.heads}) and PP the layers ({c.layers}); "
                f"give {setting('gpus', placeholder='N')} with such a split, e.g. {setting('gpus', most)}, the most "
                "of this cluster's GPUs that have one")
    if rejected.get("out-of-memory"):  # memory is checked last: every configuration the rules left
        more = (f"{setting('gpus', placeholder='N')} up to the cluster's {cluster.gpus:,}, or a larger cluster" if max(counts) < cluster.gpus
                else f"a cluster of more than its {cluster.gpus:,}")  # --gpus cannot go past the cluster's
        sharding = "" if sharded is None else (
            f"{switch_on('distributed-optimizer')} (the optimizer states sharded over DP) fits "
            f"{sharded.configurations:,} of them, the smallest at {sharded.smallest_bytes / 2**30:.1f} GiB a GPU; or ")
        return (f"no configuration on {named} fits: the {rejected['out-of-memory']:,} that pass the rules are "
                f"all out of memory; {sharding}give more GPUs ({more}) or GPUs with more memory")
    reasons = ", ".join(f"{r}: {n:,}" for r, n in sorted(rejected.items(), key=lambda t: -t[1]))
    if fsdp and rejected.get("stage-mixes-gpu-types"):  # PP 1: no stage of one type to put each type in
        first = next((i for i in range(1, cluster.gpus) if cluster.gpu_at(i).name != cluster.gpu_at(0).name),
                     cluster.gpus)
        return (f"no configuration on {named}: {switch_on('fsdp')} runs PP 1 only, so one stage holds every GPU, and "
                f"these are of several types ({reasons}); give {setting('gpus', first)} (the cluster's first "
                f"{first:,}, all {cluster.gpu_at(0).name}), or leave {setting('fsdp')} off to put each type in its "
                "own pipeline stage")
    flags = ", ".join(setting(name) for name in ("schedule", "recompute", "sequence-parallel"))
    return (f"no configuration on {named}: every one broke a rule its flags leave ({reasons}); give more "
            f"{flags} or {setting('max-micro-batch')} values")


__all__ = ["empty_search_note"]
