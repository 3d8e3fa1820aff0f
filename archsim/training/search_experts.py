"""The expert layouts a training search tries for a mixture of experts: its EP degrees (:func:`expert_degrees`) and
its experts' tensor-parallel degrees, ETP (:func:`expert_tp_degrees`), each checked once before the grid is built
and refused on a dense model in the line ``archsim train`` refuses it with. Which of them a candidate runs at its
own TP is :func:`~archsim.training.search_space.etp_options`; which layouts Megatron-Core carves is
:func:`~archsim.training.search_space.rejection`'s."""

from __future__ import annotations

from archsim.choices.training import ETP_TP
from archsim.errors import InputError
from archsim.training.moe_ops import dense_refusal, moe_rule
from archsim.training.search_flags import check_distinct
from archsim.training.search_space import divisors
from archsim.workload.transformer import TransformerConfig


def expert_degrees(c: TransformerConfig, eps=None) -> tuple[int, ...]:
    """The EP degrees a search of ``c`` tries: ``eps``, or a mixture of experts' every divisor of its expert
    count (Megatron-Core asserts EP divides it; EP 1 included); a dense model's 1 alone (EP > 1 refused on it in
    one line, as train refuses it)."""
    if eps is None:
        return tuple(divisors(c.experts)) if c.moe else (1,)
    for ep in eps:
        rule = moe_rule(c, 1, ep, False)
        if rule is not None and rule[0] == "ep-needs-experts":
            raise InputError(rule[1], field="ep")
    return tuple(eps)


def expert_tp_degrees(c: TransformerConfig, etps=None) -> tuple[int | None, ...]:
    """The ETPs a search of ``c`` tries, None standing for each candidate's own TP: ``etps`` as given (integers and
    :data:`~archsim.choices.training.ETP_TP`, ``tp``, each once), or TP alone (None: Megatron-LM's default
    ``--expert-tensor-parallel-size``). An integer on a dense model is refused in one line, as ``train`` refuses
    an ``--etp`` other than TP: a dense search has no experts to split apart from its TP."""
    if etps is None:
        return (None,)
    check_distinct(etp=etps)
    for etp in etps:
        if etp != ETP_TP and not c.moe:
            raise InputError(dense_refusal(c, f"ETP {etp}"), field="etp")
    return tuple(None if etp == ETP_TP else etp for etp in etps)


def expert_tp_text(etps: tuple[int | None, ...]) -> str:
    """:func:`expert_tp_degrees`' values as the flag spells them, comma-separated (``1,tp``): a search's meta."""
    return ",".join(ETP_TP if etp is None else str(etp) for etp in etps)


__all__ = ["expert_degrees", "expert_tp_degrees", "expert_tp_text"]
