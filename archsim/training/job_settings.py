"""Which layout settings belong to which training job: ``train`` takes its layout (TP, PP, DP, CP), ``search``
tries every TP, PP and DP itself on a GPU count (or the TPs and PPs its ``--tp``, ``--pp`` name). Given to the other job, a setting is refused with what to give
instead, in one text for the command's flags and the library's keywords (:func:`elsewhere`); so is a Megatron-LM
flag a user brings from ``pretrain_gpt.py`` (``--tensor-model-parallel-size``, ``--bf16``), with archsim's name for
it. Imports nothing but the console, so a command's ``--help`` loads no model."""

from __future__ import annotations

from archsim.console import in_library, route, setting
from archsim.console import job as named

# Megatron-LM's flags (pretrain_gpt.py; the ones search rows' megatron_args write) for a setting train takes under
# another name: archsim's flag, and the value to give it where Megatron's flag is a switch for one (``--bf16``: ``bf16``),
# or what to give where it counts otherwise (``V``: chunks per rank, not layers per chunk).
_LAYOUT = (None, "N1,N2,…")
LAYOUT = "'LAYOUT'"  # a layout string: stage_layout.py reads Megatron's own, which a hint quotes as given (with_layout)
_CHUNKS = "V (chunks per rank: the layers ÷ (PP × Megatron's layers per virtual stage))"
_GROUP = ("V (model chunks per rank; archsim picks the micro-batch group itself, the smallest Megatron-LM accepts: PP "
          "where PP divides the micro-batches)")
MEGATRON_FLAGS: dict[str, tuple[str, str | None, str | None]] = {
    "tensor-model-parallel-size": ("tp", None, None), "pipeline-model-parallel-size": ("pp", None, None),
    "context-parallel-size": ("cp", None, None), "cp-comm-type": ("cp-comm", None, None),
    "hierarchical-context-parallel-sizes": ("cp-hierarchy", None, None),
    "expert-model-parallel-size": ("ep", None, None), "expert-tensor-parallel-size": ("etp", None, None),
    "micro-batch-size": ("micro-batch", None, None), "global-batch-size": ("global-batch", None, None),
    "seq-length": ("seq", None, None), "bf16": ("dtype", "bf16", None), "fp16": ("dtype", "fp16", None),
    "fp8-format": ("fp8", None, None), "use-distributed-optimizer": ("distributed-optimizer", None, None),
    "recompute-granularity": ("recompute", None, None), "recompute-activations": ("recompute", "selective", None),
    "virtual-pipeline-model-parallel-size": ("interleave", None, None),
    "num-layers-per-virtual-pipeline-stage": ("interleave", None, _CHUNKS),
    "microbatch-group-size-per-virtual-pipeline-stage": ("interleave", None, _GROUP),
    "overlap-grad-reduce": ("dp-overlap", "bucketed", None),
    "no-gradient-accumulation-fusion": ("grad-accumulation", "unfused", None),
    "use-flash-attn": ("attention", "flash", None), "decoder-first-pipeline-num-layers": ("stage-layers", *_LAYOUT),
    "decoder-last-pipeline-num-layers": ("stage-layers", *_LAYOUT),
    "pipeline-model-parallel-layout": ("stage-layers", None, f"{LAYOUT} (the layout string itself)"),
    "mtp-num-layers": ("mtp-layers", None, None), "use-torch-fsdp2": ("fsdp", None, None),
}
# Megatron-LM's flags for the model itself (search_rows.megatron_model_args writes them into a row's megatron_args):
# archsim reads the model from MODEL, so these name MODEL rather than a flag they resemble (--num-layers was told
# "did you mean '--mtp-layers'?", --num-attention-heads "'--attention'?")
MEGATRON_MODEL_FLAGS = (
    "num-layers", "hidden-size", "ffn-hidden-size", "num-attention-heads", "num-query-groups", "group-query-attention",
    "kv-channels", "max-position-embeddings", "vocab-size", "swiglu", "normalization", "position-embedding-type",
    "rotary-percent", "untie-embeddings-and-output-weights", "disable-bias-linear", "add-qkv-bias", "qk-layernorm",
    "window-size", "attention-dropout", "hidden-dropout", "num-experts", "moe-ffn-hidden-size", "moe-router-topk",
    "moe-layer-freq", "moe-router-score-function", "moe-router-topk-scaling-factor",
    "moe-shared-expert-intermediate-size", "moe-shared-expert-gate", "multi-latent-attention", "kv-lora-rank",
    "q-lora-rank", "qk-head-dim", "qk-pos-emb-head-dim", "v-head-dim")
# Megatron-LM's flags for what archsim does one way only (recompute's method, the experts' kernels) or not at all
MEGATRON_FIXED = {
    "recompute-method": "archsim's full recompute is Megatron's uniform method, one layer a checkpoint",
    "recompute-num-layers": "archsim's full recompute is Megatron's uniform method, one layer a checkpoint",
    "moe-grouped-gemm": "archsim prices the experts as grouped GEMMs always",
    "moe-token-dispatcher-type": "archsim prices the alltoall dispatcher always",
    "tp-comm-overlap": "not modelled: TP's collectives run exposed, but for sequence parallelism's backward "
                       "re-gather under its GEMM (docs/training.md)",
    "overlap-param-gather": "not modelled: the distributed optimizer's all-gathers run after the step "
                            "(docs/training.md)",
}
# search's own flag where it differs from train's: it tries micro-batches up to a bound, chunks, planned splits and
# a2a+p2p's levels
SEARCH_FLAGS: dict[str, tuple[str, str | None, str | None]] = {
    "micro-batch": ("max-micro-batch", None, None), "interleave": ("chunks", None, "V (model chunks per rank)"),
    "stage-layers": ("balance", "planned", None),
    "cp-hierarchy": ("cp-comm", "a2a+p2p", None)}  # its levels: search tries every split of CP itself


def _megatron(job: str, layout: dict[str, str]) -> dict[str, str]:
    """Each Megatron-LM flag of :data:`MEGATRON_FLAGS`, as the caller spells it (``tensor_model_parallel_size`` in
    the library), with archsim's ``job``'s name for it; ``layout``: the job's text for a setting it does not take."""
    said = {}
    for megatron, (flag, value, placeholder) in MEGATRON_FLAGS.items():
        if job == "search":
            flag, value, placeholder = SEARCH_FLAGS.get(flag, (flag, value, placeholder))
        takes = layout[flag].partition(": ")[2] if flag in layout else \
            f"{named(job)} takes {setting(flag, value, placeholder=placeholder)}"
        said[setting(megatron).lstrip("-")] = f"is Megatron-LM's: {takes}"
    model = route("MODEL (a config.json or [transformer] TOML), not from flags",
                  "model= (a config.json or [transformer] TOML), not from keywords")
    for megatron in MEGATRON_MODEL_FLAGS:
        said[setting(megatron).lstrip("-")] = f"is Megatron-LM's: {named(job)} reads the model from {model}"
    for megatron, why in MEGATRON_FIXED.items():
        said[setting(megatron).lstrip("-")] = f"is Megatron-LM's: {why}"
    return said


def with_layout(hint: str, value: str | None) -> str:
    """``hint`` with its :data:`LAYOUT` stand-in replaced by ``value``, the layout the caller gave, shell-quoted
    (``--stage-layers 'Et*3|t*4|t*4|t*3L'``); unchanged without one."""
    import shlex

    return hint if not value or LAYOUT not in hint else \
        hint.replace(f"{LAYOUT} (the layout string itself)", shlex.quote(value))


def _other_jobs(job: str) -> dict[str, str]:
    """What ``job`` (``"train"``, ``"search"``) does not do but another job does, as the caller spells it: a runs
    file and a sweep (``archsim train --runs``/``--sweep``, from Python their own functions; ``search --runs`` was told
    "did you mean '--chunks'?"), search's ranking flags given to train, and (from Python) the command's outputs, which the
    functions return as objects to draw or print."""
    runs = route("is archsim train's: archsim train MODEL --cluster C.toml --runs RUNS.csv predicts each row of a runs file",
                 "is archsim train --runs': archsim.train_runs(model, runs=…, cluster=…) predicts each row of a runs file")
    sweep = route("is archsim train's: archsim train MODEL --cluster C.toml … --sweep KEY=V1,V2,… runs each point of a grid",
                  "is archsim train --sweep's: archsim.train_sweep(model, sweep={KEY: [V1, V2, …]}, cluster=…, "
                  "global_batch=…) runs each point of a grid")
    said = {"runs": runs, "sweep": sweep} if job == "search" or in_library() else {}  # archsim train has both flags
    if job == "search":  # train's expert capacity: search ranks dropless layouts (the flag was told nothing)
        said |= {setting(flag).lstrip("-"): f"is {named('train')}'s: {named('search')} ranks dropless layouts (no "
                                            f"expert capacity); {named('train')} prices a row with it"
                 for flag in ("moe-expert-capacity-factor", "moe-pad-expert-input-to-capacity")}
    if job == "search":  # train's op list: search ranks Megatron-LM's (--implementation was "did you mean '--placement'?")
        said[setting("implementation").lstrip("-")] = (
            f"is {named('train')}'s: {named('search')} ranks Megatron-LM's layouts only (its op list); "
            f"{named('train')} with {setting('implementation', 'pytorch-eager')} times plain PyTorch on one GPU")
    if job == "train":  # search's ranking: train runs the one layout it is given
        said |= {setting(flag).lstrip("-"): f"is {named('search')}'s: {named('train')} runs the one layout its "
                                            f"{route('flags', 'keywords')} give; {named('search')} ranks every layout"
                 for flag in ("top", "objective", "refine", "pareto-html")}
    if in_library():  # what a command prints or writes: its function returns the objects drawn from
        result = "the TrainResult" if job == "train" else "the SearchResult (a row's TrainResult: archsim.train)"
        said |= {name: f"is the command's output: {named(job)} returns {result}, whose to_dict() is the --format json "
                       "document and to_frame() its rows" for name in ("format", "precision", "out")}
        said |= {name: f"is the command's output: archsim.report.{writer}(result.timeline, PATH) writes it from "
                       f"{result}" for name, writer in (("gantt", "gantt.write_gantt"),
                                                        ("chrome_trace", "export.write_chrome_trace"),
                                                        ("schedule_csv", "export.write_pipeline_schedule_csv"))}
        if job == "search":
            said["pareto_html"] = ("is the command's output: archsim.report.search_front.write_front_page draws the "
                                   "SearchResult's pareto and rows")
    return said


ARRAY_JOBS = ("cost", "energy", "iteration_energy", "gemm")  # the jobs that read a device file as --config


def _device_flags(job: str) -> dict[str, str]:
    """Where ``job`` takes a device file when it is given to another job's flag or to a ``device`` flag no job has:
    train and search a cluster file naming it (``--config`` is the array commands'), the array commands the file
    itself (``--cluster`` is train's)."""
    if job in ("train", "search"):
        takes = (f"{named(job)} takes {setting('cluster', placeholder='CLUSTER.toml')}, a cluster file whose "
                 '[[servers]] table names the device file (device = "FILE", gpus = N)')
        return {"config": f"is the array commands': {takes}", "device": f"is no {named(job)} setting: {takes}"}
    takes = (f"{named(job)} takes the device file itself as {setting('config', placeholder='FILE.toml')} (the file a "
             "cluster's [[servers]] device = names)")
    return {"cluster": f"is {named('train')}'s and {named('search')}'s: {takes}",
            "device": f"is no {named(job)} setting: {takes}"}


def elsewhere(job: str) -> dict[str, str]:
    """The other training job's layout settings that ``job`` (``"train"``, ``"search"``; any other: none) does not
    take, each with what to give instead, as the caller spells it (``search --tp`` from a command, ``archsim.search(tp=2)``
    from the library), and Megatron-LM's flags with archsim's name for each (``--bf16``: ``--dtype bf16``): the
    command's line for argparse's refusal (:attr:`archsim.commands.Command.elsewhere`) and the library's for
    :func:`archsim.api_keywords.check_keywords`, written once."""

    if job == "search":
        # TP and PP: search tries every one, or those --tp, --pp name; DP is what the GPUs leave
        layout = {name: f"is {named('train')}'s: {route('search', named('search'))} tries every {name.upper()} itself, "
                        f"on {setting('gpus', placeholder='N')} or the cluster's GPUs" for name in ("dp",)}
        own = {setting(flag).lstrip("-"): f"is {named('train')}'s: {named('search')} takes "  # --interleave: --chunks V
                                          f"{setting(theirs, value, placeholder=placeholder)}"
               for flag, (theirs, value, placeholder) in SEARCH_FLAGS.items()}
        return {**_megatron(job, layout), **own, **layout, **_other_jobs(job), **_device_flags(job)}
    if job == "train":
        flags = ", ".join(setting(name) for name in ("tp", "pp", "dp"))
        layout = {"gpus": f"is {named('search')}'s: {route('train', named('train'))} takes its layout as {flags} and "
                          f"{setting('cp')}, their product the GPUs it runs on"}
        # search's flags train lacks (balance and cp-comm are both jobs'): --chunks 2 was told "did you mean '--runs'?"
        own = {setting(theirs).lstrip("-"): f"is {named('search')}'s: {named('train')} takes "
                                            f"{setting(flag, placeholder=placeholder or 'B (the micro-batch size)')}"
               for flag, (theirs, _, placeholder) in SEARCH_FLAGS.items() if theirs in ("chunks", "max-micro-batch")}
        return {**_megatron(job, {}), **own, **layout, **_other_jobs(job), **_device_flags(job)}
    if job in ARRAY_JOBS:
        return _device_flags(job)
    return {}


__all__ = ["ARRAY_JOBS", "LAYOUT", "MEGATRON_FIXED", "MEGATRON_FLAGS", "MEGATRON_MODEL_FLAGS", "elsewhere",
           "with_layout"]
