"""Which layout settings belong to which training job: ``train`` takes its layout (TP, PP, DP, CP), ``search``
tries every TP, PP and DP itself on a GPU count. Given to the other job, a setting is refused with what to give
instead, in one text for the command's flags and the library's keywords (:func:`elsewhere`). Imports nothing but
the console, so a command's ``--help`` loads no model."""

from __future__ import annotations

from archsim.console import job as named
from archsim.console import route, setting


def elsewhere(job: str) -> dict[str, str]:
    """The other training job's layout settings that ``job`` (``"train"``, ``"search"``; any other: none) does not
    take, each with what to give instead, as the caller spells it (``search --tp`` from a command, ``archsim.search(tp=2)``
    from the library): the command's line for argparse's refusal (:attr:`archsim.commands.Command.elsewhere`) and the
    library's for :func:`archsim.api_keywords.check_keywords`, written once."""

    if job == "search":
        return {name: f"is {named('train')}'s: {route('search', named('search'))} tries every {name.upper()} itself, "
                      f"on {setting('gpus', placeholder='N')} or the cluster's GPUs" for name in ("tp", "pp", "dp")}
    if job == "train":
        layout = ", ".join(setting(name) for name in ("tp", "pp", "dp"))
        return {"gpus": f"is {named('search')}'s: {route('train', named('train'))} takes its layout as {layout} and "
                        f"{setting('cp')}, their product the GPUs it runs on"}
    return {}


__all__ = ["elsewhere"]
