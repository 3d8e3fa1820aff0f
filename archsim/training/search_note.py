"""Why a search costed no configuration (:func:`empty_search_note`), the one line ``archsim search`` prints
on stderr in place of a table."""

from __future__ import annotations

from collections.abc import Mapping

from archsim.console import in_library, setting, switch_on
from archsim.training.layout_problems import or_list
from archsim.training.search_result import ShardedFits
from archsim.training.search_space import Candidate, divisors, factorizations, rejection
from archsim.units import GIB
from archsim.workload.transformer import TransformerConfig

# rejections an --ep value answers (and the ETP rule an --etp value answers too)
EP_REASONS = ("ep-divides-experts", "ep-divides-dp", "etp-ep-divides-tp-cp-dp", "ep-beside-fsdp")
# the flags beyond --schedule, --recompute and --sequence-parallel whose other values answer a rejection, in the
# order the note names them (a CP that cannot split the sequence or the heads: --cp, and --cp-comm for a2a's heads)
REASON_FLAGS = {**{reason: ("ep",) for reason in EP_REASONS}, "etp-ep-divides-tp-cp-dp": ("ep", "etp"),
                "etp-divides-expert-ffn": ("etp",), "cp-splits-sequence": ("cp",), "cp-divides-heads": ("cp", "cp-comm"),
                "mla-beside-cp": ("cp",)}


def empty_search_note(c: TransformerConfig, cluster, global_batch: int, counts, rejected: Mapping[str, int],
                      balance: str = "even", sharded: ShardedFits | None = None) -> str:
    """Why a search costed no configuration, and what to give instead, in one line (``archsim search`` prints
    it on stderr). Either no TP × PP × DP of the GPU ``counts`` passes :func:`rejection`'s rules for any
    micro-batch, schedule or recompute — then the GPU counts nearest those asked (within the cluster's) that one
    does pass on (memory aside) are named for ``--gpus`` (:func:`nearest_passing`) —, or every configuration
    that passes the rules is out of memory (``sharded``:
    the search's :class:`~archsim.training.search_result.ShardedFits`, where ``--distributed-optimizer``
    would fit some of them, named first), or every one broke a rule the other flags leave (``rejected``'s
    counts, most first). (Until 2026-12-03 FSDP ran PP 1 only, and an ``fsdp`` search on GPUs of several types
    had a note of its own; each type now takes its own pipeline stages, as without FSDP.)"""
    uneven = balance == "planned"

    def passes(tp: int, pp: int, dp: int, stages_uneven: bool = uneven) -> bool:  # the grid's most permissive candidate
        k = Candidate(tp, pp, dp, 1, "none", "1f1b", 1, False)
        return rejection(c, k, global_batch, cluster.gpus_per_server, stages_uneven) is None

    named = ", ".join(f"{n:,}" for n in counts) + (" GPU" if list(counts) == [1] else " GPUs")
    unsplit = rejected.get("pp-divides-layers", 0) if not uneven else 0  # an uneven split would admit them
    planned = (f"; or {setting('balance', 'planned')}: its uneven stages admit the {unsplit:,} configurations refused "
               f"because PP × chunks does not divide the {c.layers} layers" if unsplit else "")
    if not any(passes(*split) for n in counts for split in factorizations(n)):
        near = nearest_passing(counts, cluster.gpus, lambda n: any(passes(*split) for split in factorizations(n)))
        # an uneven split admits a PP that does not divide the layers: 24 GPUs' TP 8 × PP 3 for 32 layers
        stages = not uneven and any(passes(*split, stages_uneven=True) for n in counts for split in factorizations(n))
        return (f"no configuration on {named}: no split of them into TP × PP × DP has DP dividing the global "
                f"batch ({global_batch:,}) with TP dividing the heads ({c.heads}) and PP the layers ({c.layers}); "
                f"give {setting('gpus', placeholder='N')} with such a split, e.g. "
                f"{' or '.join(setting('gpus', n) for n in near)}, the count{'' if len(near) == 1 else 's'} nearest "
                f"{named} (of the cluster's {cluster.gpus:,}) that {'has' if len(near) == 1 else 'have'} one"
                + (f"; or {setting('balance', 'planned')}, whose uneven stages give {named} a split with a PP that "
                   f"does not divide the {c.layers} layers" if stages else ""))
    if rejected.get("out-of-memory"):  # memory is checked last: every configuration the rules left
        more = (f"{setting('gpus', placeholder='N')} up to the cluster's {cluster.gpus:,}, or a larger cluster" if max(counts) < cluster.gpus
                else f"a cluster of more than its {cluster.gpus:,}")  # --gpus cannot go past the cluster's
        sharding = "" if sharded is None else (
            f"{switch_on('distributed-optimizer')} (the optimizer states sharded over DP) fits "
            f"{sharded.configurations:,} of them, the smallest at {sharded.smallest_bytes / GIB:.1f} GiB a GPU; or ")
        return (f"no configuration on {named} fits: the {rejected['out-of-memory']:,} that pass the rules are "
                f"all out of memory; {sharding}give more GPUs ({more}) or GPUs with more memory"
                f"{reserved_memory(cluster)}{planned}")
    reasons = ", ".join(f"{r}: {n:,}" for r, n in sorted(rejected.items(), key=lambda t: -t[1]))
    answering = {flag for reason, flags in REASON_FLAGS.items() if rejected.get(reason) for flag in flags}
    others = [name for name in ("ep", "etp", "cp", "cp-comm") if name in answering]  # other values are a fix
    flags = ", ".join(setting(name) for name in ("schedule", "recompute", "sequence-parallel", *others))
    divides = (f" (EP {or_list(divisors(c.experts))} divides its {c.experts} experts)"
               if rejected.get("ep-divides-experts") else "")
    return (f"no configuration on {named}: every one broke a rule its flags leave ({reasons}); give more "
            f"{flags} or {setting('max-micro-batch')} values{divides}{planned}")


# tokens a sample from which a search not told --cp says it searched CP 1 alone: Llama 3 trains its 128k stage with CP,
# and at 32k a 70B model's activations already fill most of a GPU (cp_not_searched_note's Llama 3 70B: CP 2 faster)
LONG_SEQ = 32_768


def cp_not_searched_note(c: TransformerConfig, cp_given: bool, attention: str) -> str:
    """The note that a long-sequence search tried CP 1 alone ('' otherwise): ``cp_given`` False (no ``--cp``), the
    sequence :data:`LONG_SEQ` tokens or more, and CP 2 able to run the model (:func:`cp_problem`: the sequence in four
    equal chunks, flash attention, a causal decoder). Why: CP is searched only when asked, and at long sequences it
    can be the fastest layout or the only one that fits (``llama3_70b --gpus 32 --global-batch 8 --seq 131072 --dtype bf16 --distributed-optimizer``
    on the H100 SuperPOD: TP 8 CP 2 PP 2 at 103.7 s with ``--cp 1 2 4``, CP 1's best 109.6 s), with nothing else to hint at it."""
    from archsim.training.layout_problems import cp_problem

    if cp_given or c.seq < LONG_SEQ or cp_problem(c, 2, attention):
        return ""
    return (f"the sequence is {c.seq:,} tokens and context parallelism was not searched (CP 1 alone, "
            f"{setting('cp')} not given): at {LONG_SEQ:,} tokens or more CP can be faster or the only layout that "
            f"fits; give {setting('cp', placeholder='1 2 4') if not in_library() else 'cp=[1, 2, 4]'} to search it too")


def reserved_memory(cluster) -> str:
    """The out-of-memory note's words on the cluster file's own ``usable_memory_gib`` (GiB a job may allocate on a
    GPU), where it holds a GPU below its board's memory: the file, not the GPUs, may be what leaves no room."""
    boards = {device.name: device.memory_bytes for device in (*cluster.servers, cluster.gpu)}
    below = [(name, usable, boards[name]) for name, usable in cluster.usable if usable < boards.get(name, 0)]
    if not below:
        return ""
    stated = ", ".join(f"{usable / GIB:g} of the {name}'s {board / GIB:.1f} GiB" for name, usable, board in below)
    return f", or a larger usable_memory_gib in the cluster file's [[servers]] (it allows {stated})"


def nearest_passing(counts, most: int, passes) -> list[int]:
    """The GPU counts in 1 … ``most`` nearest to any of ``counts`` (none of which passes) for which ``passes``
    holds, ascending: those at the least distance, one below and one above where both are. One GPU always
    passes (1 × 1 × 1), so the search ends by the smallest count's distance to 1."""
    for distance in range(1, max(counts)):
        found = sorted({n + step for n in counts for step in (-distance, distance)
                        if 1 <= n + step <= most and passes(n + step)})
        if found:
            return found
    return [1]


__all__ = ["EP_REASONS", "LONG_SEQ", "REASON_FLAGS", "cp_not_searched_note", "empty_search_note", "nearest_passing", "reserved_memory"]
