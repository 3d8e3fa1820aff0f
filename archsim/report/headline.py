"""The sweep report's first section: which schedule wins, by how much and where, read from the sweep's rows.

Why: a reader opens the report to learn whether LayerPipe beats PipeDream and GPipe; the figures below show
it, but only after scrolling and comparing boxes. Every number here is a count or a ratio of the speedups in
``results.csv`` (speedup: one processor's cycles over the pipeline's, dimensionless), nothing recomputed.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from archsim.report.html_page import esc
from archsim.report.html_page import table as html_table
from archsim.report.style import DESIGN_AXIS_WORDS, table_number
from archsim.report.sweep_order import array_key, network_order

# Where a lead is reported: the sweep axis, its words, how a value is written.
WHERE = (("array", "on {} arrays"), ("dataflow", "with the {} dataflow"), ("batch", "at batch {}"),
         ("processors", "on {} processors"))  # an axis of one value says nothing: left out


def configuration_key(results: pd.DataFrame) -> list[str]:
    """The columns that name one configuration (everything but the method): a row per method shares them."""
    key = ["network", "only", "mode", "array", "dataflow", "batch", "processors"]
    return key + [column for column in DESIGN_AXIS_WORDS if column in results.columns]


def speedups(results: pd.DataFrame) -> pd.DataFrame | None:
    """One row per configuration, one column per method: its speedup (NaN where the method did not run it);
    None where two rows share a configuration and method (an axis this key lacks: no headline beats a wrong one)."""
    frame = results.assign(array=array_key(results).str.strip())
    indexed = frame.set_index([*configuration_key(frame), "method"])["speedup"]
    if indexed.index.has_duplicates:
        return None
    return indexed.unstack("method")


def winners(table: pd.DataFrame) -> pd.Series:
    """Per configuration, the method of the highest speedup ("tie" where two share it)."""
    best = table.max(axis=1)
    counts = table.eq(best, axis=0).sum(axis=1)
    return table.idxmax(axis=1).where(counts == 1, "tie")


def _where(ratio: pd.Series, runner: str) -> str:
    """Where ``ratio`` (lead ÷ ``runner``, per configuration) is largest: per swept axis, the value of the
    highest median."""
    phrases = []
    for level, words in WHERE:
        by = ratio.groupby(level=level).median()
        if len(by) > 1:
            phrases.append(f"{words.format(esc(by.idxmax()))} (median {table_number(by.max(), 3)}×)")
    return f"; over {esc(runner)} its lead is largest " + ", ".join(phrases) if phrases else ""


def _best_at(table: pd.DataFrame, best: tuple) -> str:
    """Where a method's best speedup is: array, batch and processors, and each other axis that varies in
    ``table`` (a dataflow, an SRAM size, …), so that the configuration named is one the sweep ran."""
    where = dict(zip(table.index.names, best, strict=True))
    varies = {name for name in table.index.names if table.index.get_level_values(name).nunique() > 1}
    array = f"{where['array']} {where['dataflow']}" if "dataflow" in varies else f"{where['array']}"
    extra = [f"{name}={where[name]}" for name in table.index.names[7:] if name in varies]
    return ", ".join([array, f"batch {where['batch']}", f"{where['processors']} processor{'' if where['processors'] == 1 else 's'}", *extra])


def setting_headline(table: pd.DataFrame, title: str, order: Sequence[str] = ()) -> str:
    """One setting's sentence and table: wins per method, median speedup, and the leader's ratio to each other.
    The methods are ranked (most wins, then highest median: the leader first, as its ratio column reads); a tie
    keeps ``order``'s (the page's, :func:`archsim.report.sweep_order.method_order`), else alphabetical."""
    table = table.dropna(axis=1, how="all")
    won = winners(table).value_counts()
    place = {method: i for i, method in enumerate(order)}
    methods = sorted(table.columns, key=lambda m: (-int(won.get(m, 0)), -float(table[m].median()),
                                                   place.get(str(m), len(place)), str(m)))
    lead, total = methods[0], len(table)
    rows, ratios = [], {}
    for method in methods:
        ratio = (table[lead] / table[method]).dropna()
        ratios[method] = ratio
        best = table[method].idxmax()
        rows.append({"method": method, f"fastest in (of {total})": int(won.get(method, 0)),
                     "median speedup (×)": table[method].median(), "best speedup (×)": table[method].max(),
                     "best at": _best_at(table, best),
                     f"{lead} ÷ this method: median (×)": ratio.median() if method != lead else float("nan"),
                     "range (×)": f"{table_number(ratio.min(), 3)}–{table_number(ratio.max(), 3)}"
                     if method != lead else ""})
    others = [m for m in methods if m != lead]
    twins = [m for m in others if bool((table[m] == table[lead]).all())]  # the lead's speedup in every configuration
    ties = f", {int(won['tie'])} tied" if "tie" in won else ""
    # per method: a configuration here is one the methods share, where the intro counts each method's run of it
    sentence = f"<b>{esc(lead)}</b> is fastest in {int(won.get(lead, 0))} of {total} configurations per method{ties}"
    subject = "its"
    if others and int(won.get(lead, 0)) == 0:  # every configuration a tie: "x is fastest in 0 of N" named a winner
        sentence = f"no method is fastest in any configuration: all {total} per method are tied"
        subject = f"<b>{esc(lead)}</b>'s"
        if twins and len(twins) < len(others):  # the same methods share the top everywhere, the rest below them
            named = [f"<b>{esc(m)}</b>" for m in (lead, *twins)]
            sentence = (f"{', '.join(named[:-1])} and {named[-1]} tie as fastest in all {total} configurations per "
                        "method (the same speedup in each)")
    if others:
        runner = next((m for m in others if m not in twins), others[0])  # a lead over its twin is 1× everywhere
        sentence += (f"; {subject} speedup is a median " + ", ".join(
            f"{table_number(ratios[m].median(), 3)}× {esc(m)}'s" for m in others) + _where(ratios[runner], runner))
    partial = [f"{esc(m)} ran {int(table[m].notna().sum())}" for m in methods if table[m].notna().sum() < total]
    if partial:  # a skipped point (PipeDream above its layer groups): medians over fewer configurations
        sentence += (f"; of the {total}, {', '.join(partial)} (each method's median and best are over those it "
                     "ran, its ratios over those both ran)")
    body = html_table(pd.DataFrame(rows), lambda x: table_number(x, 3), na_rep="—")
    return f"<h3>{esc(title)}</h3><p>{sentence}.</p>{body}"


def headline(results: pd.DataFrame, networks: Sequence[str] = (), methods: Sequence[str] = ()) -> str:
    """The "at a glance" markup of a sweep of two or more methods, one block per network and setting; "" else.
    ``networks``: their order (the spec's; any other after them, alphabetically); a network's settings in
    alphabetical order; ``methods``: the page's order, which breaks a tie in a block's ranking."""
    if results.empty or results["method"].nunique() < 2:
        return ""
    table = speedups(results)
    if table is None:
        return ""
    rank = {name: i for i, name in enumerate(network_order(results, networks))}
    blocks = []
    for (network, only, mode), part in sorted(table.groupby(level=["network", "only", "mode"], sort=True),
                                              key=lambda group: rank[str(group[0][0])]):  # stable: settings stay sorted
        layers = "all layers" if only == "all" else f"{only} layers"
        blocks.append(setting_headline(part, f"{network} ({layers}, {mode} mode)", methods))
    axes = [words for column, words in DESIGN_AXIS_WORDS.items()
            if column in results.columns and results[column].nunique(dropna=False) > 1]
    also = f"; each of its {', '.join(axes)} a configuration of its own" if axes else ""
    dataflow = ", dataflow" if results["dataflow"].nunique(dropna=False) > 1 else ""
    return ("<p>Speedup: one processor's cycles over the pipeline's iteration cycles, per configuration (array"
            f"{dataflow}, batch, processor count{esc(also)}); a ratio of two methods' speedups is the inverse ratio of their "
            "iteration cycles.</p>" + "".join(blocks))


__all__ = ["headline", "speedups", "winners"]
