"""A pipeline split as text, read and written in one place: ``--stage-layers`` takes the decoder layers of each
(virtual) stage as counts (``5,6,6,5``) or as Megatron-LM's ``--pipeline-model-parallel-layout`` string
(``Et*5|t*6|t*6|t*5L``), and search rows write the string back (:func:`megatron_layout`), so that reading what
was written gives the split again.

The grammar is Megatron-LM's, as ``PipelineParallelLayerLayout.parse_str_to_list`` reads it and its constructor
and ``validate_layer_layout`` check it (``megatron/core/transformer/pipeline_parallel_layer_layout.py``, commit
d98e8a6): commas are cosmetic and dropped; ``(…)*n`` (no nesting) is unrolled first, then ``x*n`` for the one
character before the star; ``|`` splits stages; ``E`` the embedding, ``t`` a decoder (transformer) layer, ``m`` a
multi-token-prediction layer, ``L`` the loss (final norm, LM head and cross-entropy); the stage count is
PP × the chunks per rank, stage s in pipeline order (Megatron's: chunk c of rank r is stage c·PP + r), the
embedding first and the loss last, each once, and every ``m`` after every ``t`` (``validate_layer_layout``: "decoder
layers must be placed before MTP layers"), as many as the model trains (:mod:`~archsim.training.mtp`). Stricter than
Megatron here: a stage with no decoder layer, which archsim's stage model does not price (:data:`NO_EMPTY`) — so the
``m``'s, after the last stage's last ``t``, stand in the last stage, where archsim places MTP."""

from __future__ import annotations

import re

from archsim.console import setting
from archsim.errors import InputError

LAYOUT_CHARACTERS = frozenset("EtmL|(),*0123456789")  # the layout's alphabet, digits and punctuation included
MARKS = frozenset("EtmL|()*")  # any of these: a layout string, not counts
MAX_EXPANDED = 1_000_000  # characters a layout may unroll to (a stage per layer of a 10⁶-layer model): no runaway `t*10**9`
NO_EMPTY = ("archsim's stage model prices no stage without a decoder layer (each stage's memory counts one "
            "layer's recomputation working set and its planner needs a layer per stage), so every stage needs a t")
_GROUP = re.compile(r"\(([^()]+)\)\*(\d+)")  # (…)*n, innermost text without parentheses
_SINGLE = re.compile(r"(.)\*(\d+)")  # x*n: the one character before the star


def _named(layout: str) -> str:
    """``layout`` quoted for an error line, a long one cut (:func:`~archsim.validate.shown`)."""
    from archsim.validate import shown

    return shown(layout, 100)


def is_layout(text: str) -> bool:
    """Whether ``text`` is a layout string (it holds a layer letter, ``|``, a parenthesis or a star), not counts."""
    return any(char in MARKS for char in text)


def _unrolled(text: str, layout: str) -> str:
    """``text`` with each match of the two repetition forms replaced by its body n times, bounded by
    :data:`MAX_EXPANDED` before any string that long is built."""
    for pattern in (_GROUP, _SINGLE):
        size = len(text)
        for match in pattern.finditer(text):  # a count of 8+ digits passes the bound whatever it repeats
            count = int(match.group(2)) if len(match.group(2)) < 8 else MAX_EXPANDED + 1
            size += len(match.group(1)) * count - len(match.group(0))
            if size > MAX_EXPANDED:
                raise InputError(f"layout {_named(layout)} unrolls to more than {MAX_EXPANDED:,} characters",
                                 field="stage-layers")
        text = pattern.sub(lambda m: m.group(1) * int(m.group(2)), text)
    return text


def layout_stages(layout: str) -> tuple[str, ...]:
    """Each stage of ``layout`` as its layer letters in order (``"Et*2|tL"`` → ``("Ett", "tL")``), unrolled by
    Megatron's rules; a character outside the alphabet, or a parenthesis or star left after unrolling (``(tt)``
    without ``*n``), is refused naming it."""
    odd = sorted({char for char in layout if char not in LAYOUT_CHARACTERS})
    if odd:
        raise InputError(f"layout {_named(layout)}: {', '.join(map(repr, odd))} is no layout character (E embedding, "
                         "t decoder layer, m MTP layer, L loss, | between stages, x*n and (…)*n repeats, commas)",
                         field="stage-layers")
    text = _unrolled(layout.replace(",", ""), layout)
    left = sorted({char for char in text if char not in "EtmL|"})
    if left:
        raise InputError(f"layout {_named(layout)}: {''.join(left)} left after unrolling (a repeat is (…)*n or x*n, "
                         "n a count; parentheses do not nest)", field="stage-layers")
    return tuple(text.split("|"))


def layout_counts(layout: str) -> tuple[int, ...]:
    """The decoder layers of each stage of ``layout`` (:func:`layout_stages`), after Megatron's checks — the
    embedding at the head of the first stage and the loss at the tail of the last, once each, no ``t`` after an
    ``m`` — and archsim's: no stage without a ``t`` (:data:`NO_EMPTY`). The ``m``'s: :func:`layout_mtp`."""
    stages = layout_stages(layout)
    flat = "".join(stages)
    if flat.count("E") != 1 or not stages[0].startswith("E"):
        raise InputError(f"layout {_named(layout)}: E (the embedding) must open the first stage, once "
                         f"(it has {flat.count('E')})", field="stage-layers")
    if flat.count("L") != 1 or not stages[-1].endswith("L"):
        raise InputError(f"layout {_named(layout)}: L (the loss) must close the last stage, once "
                         f"(it has {flat.count('L')})", field="stage-layers")
    if "m" in flat and "t" in flat[flat.index("m"):]:
        raise InputError(f"layout {_named(layout)}: a t (decoder layer) after an m (MTP layer); Megatron-LM places "
                         "the MTP layers after every decoder layer", field="stage-layers")
    empty = [s for s, stage in enumerate(stages) if "t" not in stage]
    if empty:
        raise InputError(f"layout {_named(layout)}: stage {empty[0]} ({_named(stages[empty[0]] or 'empty')}) has no decoder "
                         f"layer: {NO_EMPTY}", field="stage-layers")
    return tuple(stage.count("t") for stage in stages)


def layout_mtp(layout: str) -> int:
    """The MTP layers (``m``) of ``layout``, unrolled (:func:`layout_stages`)."""
    return "".join(layout_stages(layout)).count("m")


def megatron_layout(split: tuple[int, ...], mtp: int = 0) -> str:
    """Megatron-LM's ``--pipeline-model-parallel-layout`` for ``split``, the decoder layers of each pipeline
    (virtual) stage in pipeline order (chunk c of rank r is stage c·PP + r: Megatron's order too); the stage count
    over ``--pipeline-model-parallel-size`` is the chunks per rank. ``(4, 2, 3)`` → ``Et*4|t*2|t*3L``: what
    :func:`layout_counts` reads back as ``split``; ``mtp``: the MTP layers before the loss (``t*3,mL``)."""
    stages = [f"t*{layers}" for layers in split]
    tail = "" if not mtp else ",m" if mtp == 1 else f",m*{mtp}"
    return "|".join(["E" + stages[0], *stages[1:-1], stages[-1] + tail + "L"] if len(stages) > 1 else
                    ["E" + stages[0] + tail + "L"])


def _counts(text: str) -> tuple[int, ...]:
    """``5,6,6,5`` → (5, 6, 6, 5)."""
    from archsim.value_parsers import comma_items, parse_int

    try:  # ASCII digits, bounded length
        counts = tuple(parse_int(part, low=-2**31) for part in comma_items(text, "stage-layers"))
    except ValueError:
        raise InputError(f"expected comma-separated layer counts such as 5,6,6,5 or a Megatron layout string such "
                         f"as 'Et*5|t*6|t*6|t*5L', got {text!r}", field="stage-layers") from None
    if not counts or min(counts) < 1:
        raise InputError(f"every stage needs at least one layer, got {text!r}", field="stage-layers")
    return counts


def parse_stage_layers(text: str, *, layers: int | None = None, pp: int | None = None, interleave: int = 1,
                       schedule: str = "1f1b", mtp: int | None = None) -> tuple[int, ...]:
    """``--stage-layers`` → the decoder layers of each stage: counts as given (``5,6,6,5``; checked against the
    model and the layout by :class:`~archsim.training.parallel.Parallelism`), or a layout string
    (:func:`layout_counts`) checked here against the ``layers`` of the model, ``pp`` and the chunks per rank that
    ``interleave`` and ``schedule`` run, and its ``m``'s against the ``mtp`` layers the model trains, each refusal
    naming the layout (each left unchecked when None)."""
    if not is_layout(text):
        return _counts(text)
    counts = layout_counts(text)
    if pp is not None:
        from archsim.training.parallel import V_SCHEDULES, chunks_run

        stages, chunks = len(counts), chunks_run(schedule, interleave)
        if stages % pp:
            raise InputError(f"layout {_named(text)} has {stages} stages, not a multiple of {setting('pp', pp)} (its "
                             "stages are PP × the chunks per rank)", field="stage-layers")
        if stages != pp * chunks:
            runs, fix = (f"{schedule} runs {chunks}", "give ") if schedule in V_SCHEDULES else \
                (f"{setting('interleave', interleave)} runs {chunks}", f"give {setting('interleave', stages // pp)} or ")
            raise InputError(f"layout {_named(text)} has {stages} stages: {stages // pp} per rank at {setting('pp', pp)}, "
                             f"and {runs} chunks a rank; {fix}a layout of {pp * chunks} stages",
                             field="stage-layers")
    if layers is not None and sum(counts) != layers:
        raise InputError(f"layout {_named(text)} has {sum(counts)} decoder layers (t), the model {layers}",
                         field="stage-layers")
    if mtp is not None and layout_mtp(text) != mtp:
        raise InputError(f"layout {_named(text)} has {layout_mtp(text)} MTP layers (m), the model trains {mtp} "
                         f"({setting('mtp-layers', mtp)}); give as many", field="stage-layers")
    return counts


__all__ = ["LAYOUT_CHARACTERS", "MAX_EXPANDED", "NO_EMPTY", "is_layout", "layout_counts", "layout_mtp",
           "layout_stages", "megatron_layout", "parse_stage_layers"]
