"""The notes ``train`` prints (and ``archsim.train`` warns) about a layout that runs but not as its settings
suggest: a sharding at DP 1, a K/V exchange at CP 1, selective recompute beside FlashAttention, an interleaved
schedule over one chunk, a pipeline given fewer micro-batches than stages."""

from __future__ import annotations

from typing import TYPE_CHECKING

from archsim.console import setting
from archsim.training.parallel import CHUNKED_SCHEDULES

if TYPE_CHECKING:
    from archsim.training.cluster import GpuCluster
    from archsim.training.parallel import Parallelism
    from archsim.workload.transformer import TransformerConfig

def unsharded_note(par: Parallelism) -> str:
    """The note that a state sharding ran at DP 1 ('' otherwise): one data-parallel rank shards nothing, so the
    distributed optimizer's figures are those without it, and FSDP's states are its 16 bytes per parameter plus
    the units in flight, whole on the one rank, with no collective. Accepted, as Megatron-LM and PyTorch run them
    (docs/training.md); ``train`` prints it, ``archsim.train`` warns it, naming the switch as its caller does."""
    from archsim.console import switch_on

    if par.replicas > 1 or not (par.distributed_optimizer or par.fsdp):  # CP's ranks share the shards too
        return ""
    if par.fsdp:
        return (f"{switch_on('fsdp')} with {setting('dp', 1)} shards nothing: each GPU keeps FSDP's 16 bytes per "
                "parameter whole, plus the units in flight, and no collective runs")
    return (f"{switch_on('distributed-optimizer')} with {setting('dp', 1)} shards nothing: the figures are those "
            "without it")


def cp_comm_note(par: Parallelism) -> str:
    """The note that a K/V exchange was named at CP 1 ('' otherwise): ``--cp-comm`` prices CP's exchange, and
    CP 1 exchanges nothing, so the run is the one without it; ``train`` prints it, ``archsim.train`` warns it."""
    if par.cp > 1 or par.cp_comm == "p2p":
        return ""
    return (f"{setting('cp-comm', par.cp_comm)} with {setting('cp', 1)} exchanges nothing: the figures are those "
            f"without it; give {setting('cp', placeholder='N')} (N ≥ 2) to split the sequence")


def sequence_parallel_run(tp: int, sequence_parallel: bool) -> tuple[bool, str]:
    """Sequence parallelism as ``train`` runs it at TP ``tp``, and the note saying so ('' when unchanged): at TP 1 it
    is turned off, as Megatron-LM's ``validate_args`` does ("Disabling sequence parallelism because tensor model
    parallelism is disabled"): it splits the activations over the TP group, and TP 1 has none to split them over, so
    the figures are those without it. Anything but ``True`` is returned as given (a library caller's non-bool is
    refused by :class:`~archsim.training.parallel.Parallelism`)."""
    if sequence_parallel is not True or tp != 1:
        return sequence_parallel, ""
    from archsim.console import switch_on

    return False, (f"{switch_on('sequence-parallel')} with {setting('tp', 1)} is turned off, as Megatron-LM turns it "
                   "off (\"Disabling sequence parallelism because tensor model parallelism is disabled\"): it splits "
                   "activations over the TP group, and TP 1 has none; the figures are those without it")


def eager_recompute_note(implementation: str, recompute_given: bool) -> str:
    """The note that ``--implementation pytorch-eager`` priced full recompute only because ``--recompute`` was left
    at its default ('' otherwise): the default is full recompute, as the measured Megatron-LM runs trained (not
    Megatron-LM's own default, none), but plain PyTorch (and Hugging Face's modules, which NeuSight's fp32
    iterations ran) keeps every activation unless the model is told to checkpoint its layers (``torch.utils.checkpoint``, ``gradient_checkpointing_enable()``), and a full recompute reruns each
    layer's forward in the backward: BERT-large at batch 2 on a V100's backward 160 ms without, 238 with."""
    if implementation != "pytorch-eager" or recompute_given:
        return ""
    return (f"{setting('implementation', 'pytorch-eager')} priced {setting('recompute', 'full')}, the default: every "
            "layer's forward runs again in the backward, which plain PyTorch does only when the model checkpoints its "
            f"layers (torch.utils.checkpoint); give {setting('recompute', 'none')} for a run without it (NeuSight's "
            f"measured iterations), or {setting('recompute', 'full')} to keep it")


def selective_flash_note(recompute: str, attention: str, count: str = "", column: str | None = None) -> str:
    """The note that selective recompute ran beside FlashAttention ('' otherwise): selective reruns only the
    attention core's s² part (scores, softmax, dropout), which FlashAttention never stores — its backward recomputes
    the scores itself —, so nothing is left to rerun and the figures are exactly ``recompute none``'s (memory and
    time; :mod:`archsim.training.layer_activations`), which a user would otherwise read as the setting ignored.
    ``train`` prints it, ``archsim.train`` warns it, naming the settings as the caller spells them; ``count``: how
    many of a sweep's points or a runs file's rows it holds for (``"3 of the 6 points: "``), said once for them all;
    ``column``: a runs file's column that sets the recompute instead of the flag."""
    if recompute != "selective" or attention != "flash":
        return ""
    selective, none = (f"{column} selective", f"{column} none") if column else (setting("recompute", "selective"),
                                                                               setting("recompute", "none"))
    return (f"{count}{selective} with {setting('attention', 'flash')} recomputes nothing: selective reruns the "
            "attention core's s² scores, which FlashAttention never stores (its backward recomputes them itself), so "
            f"the figures are {none}'s")


def selective_flash_count_note(settings: list[tuple[str, str]], what: str, column: str | None = None) -> str:
    """:func:`selective_flash_note` once for many iterations (``settings``: each one's (recompute, attention); ``what``:
    their name, ``points`` or ``rows``; ``column`` as that function's), with how many it holds for; '' when none."""
    held = sum(1 for recompute, attention in settings if selective_flash_note(recompute, attention))
    return selective_flash_note("selective", "flash", f"{held} of the {len(settings)} {what}: ", column) if held else ""


def one_chunk_note(par: Parallelism, column: str | None = None) -> str:
    """The note that an interleaved schedule ran with one model chunk per rank ('' otherwise): ``--interleave``
    defaults to 1, and ``interleaved-1f1b`` then runs plain 1F1B, as Megatron-LM does (a virtual pipeline size of 1
    is none: :attr:`~archsim.training.parallel.Parallelism.schedule_name`), ``interleaved-zb``
    ZB-H1's order and ``looped-bfs`` GPipe's (every forward before any backward): none interleaves anything, which
    a user naming the schedule rarely meant. The note says what the schedule named runs (:data:`ONE_CHUNK_RUNS`). ``train`` prints it, ``archsim.train`` warns it, each naming the
    settings as its caller spells them (:func:`archsim.console.setting`: ``--interleave 1``, ``interleave=1``);
    ``column``: a runs file's column that sets the chunks instead (:func:`archsim.training.runs_notes.one_chunk_rows_note`)."""
    from archsim.console import setting

    if par.interleave > 1 or par.schedule not in CHUNKED_SCHEDULES or par.schedule == "1f1b":
        return ""
    one, more = (f"{column} 1", f"{column} V") if column else (setting("interleave", 1),
                                                               setting("interleave", placeholder="V"))
    return (f"{setting('schedule', par.schedule)} ran with one model chunk per pipeline rank ({one}): it "
            f"interleaves nothing ({par.schedule}: {ONE_CHUNK_RUNS[par.schedule]()}); {more} gives each rank V chunks")


# What each interleaved schedule runs over one chunk a rank (train's note, search's --chunks 1 refusal) (archsim.policies.stage_orders at v = 1), as a note says
# it: interleaved-1f1b runs as 1f1b (Megatron-LM's; until 2026-12-05 its warm-up of 2(PP − 1 − r) forwards, more
# activation memory); interleaved-zb's order is ZB-H1's, action for action, and looped-bfs' GPipe's fill and drain,
# so train's figures are those schedules'.
ONE_CHUNK_RUNS = {
    "interleaved-1f1b": lambda: f"Megatron-LM's plain 1F1B, the figures of {setting('schedule', '1f1b')}",
    "interleaved-zb": lambda: f"ZB-H1's order, the figures of {setting('schedule', 'zb-h1')}",
    "looped-bfs": lambda: f"GPipe's every forward before any backward, the figures of {setting('schedule', 'gpipe')}",
}


def few_microbatches_note(par: Parallelism, columns: tuple[str, str, str] | None = None) -> str:
    """The note that a pipeline runs fewer micro-batches than it has stages ('' otherwise): the last stage starts
    its first forward after the PP − 1 before it, so with m < PP micro-batches the pipeline never fills, and under
    1F1B and GPipe each rank idles (PP − 1) / (m + PP − 1) of the iteration, at least half; a small
    ``--global-batch`` for its DP does it with nothing in the output but a low MFU. Accepted, as Megatron-LM's
    1F1B runs it; ``train`` prints it, ``archsim.train`` warns it, naming the settings as its caller does;
    ``columns``: a runs file's columns of PP, the global batch and the micro-batch, named instead of the flags
    (``pp 4``, ``global_batch``: :func:`archsim.training.runs_notes.few_microbatches_rows_note`)."""
    if par.pp == 1 or par.microbatches >= par.pp:
        return ""
    split = f"{par.global_batch} ÷ ({par.micro_batch} × {par.dp})"
    pp, batch, micro = (f"{columns[0]} {par.pp}", *columns[1:]) if columns else \
        (setting("pp", par.pp), setting("global-batch"), setting("micro-batch"))
    return (f"{par.microbatches} micro-batch{'es' if par.microbatches > 1 else ''} per pipeline (global batch ÷ "
            f"(micro-batch × DP) = {split}) for {pp}: "
            "fewer than the stages, so the pipeline never fills and each rank idles while the others run; a larger "
            f"{batch} or a smaller {micro} fills it")


def breakdown_rank_note(par: Parallelism, config: TransformerConfig, rank: int) -> str:
    """The note that the breakdown's pipeline ``rank`` (the one that ends the iteration) holds none of a mixture's
    MoE layers ('' otherwise): with dense first layers (DeepSeek's) and EP > 1 its ``ep_communication`` is 0 though
    the other ranks' all-to-alls pace the pipeline, which that rank sees as waiting (``pipeline_bubble_and_p2p``)."""
    from archsim.training.parallel import layers_per_stage, rank_of_stages
    from archsim.workload.layer_kinds import LAYER, stage_kinds

    if par.ep == 1 or par.pp == 1 or not config.dense_layers:
        return ""
    kinds = stage_kinds(config, layers_per_stage(config.layers, par.pp * par.chunks, par.stage_layers))
    owners = rank_of_stages(par)
    if any(dict(kinds[j]).get(LAYER, 0) for j in range(len(kinds)) if owners[j] == rank):
        return ""
    holders = sorted({owners[j] for j in range(len(kinds)) if dict(kinds[j]).get(LAYER, 0)})
    return (f"the breakdown is pipeline rank {rank}'s, the rank that ends the iteration, which holds only dense "
            f"layers: its ep_communication is 0, and the EP {par.ep} all-to-alls of the ranks holding the MoE layers "
            f"({_ranks(holders)}) show in its pipeline_bubble_and_p2p, as its wait for them")


def _ranks(ranks: list[int]) -> str:
    """``ranks`` as ``1–15`` where consecutive, else ``1, 3, 4``."""
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}–{ranks[-1]}"
    return ", ".join(map(str, ranks))


def layout_notes(par: Parallelism, config: TransformerConfig, cluster: GpuCluster, placement: str) -> list[str]:
    """Every note above that applies to one laid-out iteration, with MoE's padding note and a planned placement's
    orders note, in the order ``train`` prints them and ``archsim.train`` warns them (one list for both)."""
    from archsim.training.moe_ops import padding_note
    from archsim.training.placement import orders_note

    lines = (one_chunk_note(par), few_microbatches_note(par), unsharded_note(par), cp_comm_note(par),
             selective_flash_note(par.recompute, par.attention), padding_note(config),
             orders_note(cluster) if placement == "planned" else "")
    return [line for line in lines if line]


__all__ = ["breakdown_rank_note", "cp_comm_note", "few_microbatches_note", "layout_notes", "one_chunk_note", "selective_flash_count_note",
           "selective_flash_note", "sequence_parallel_run", "unsharded_note"]
