"""The sweep report's "speedup by array size" boxes: one box per array the sweep ran, never two chips in one."""

from __future__ import annotations

import pandas as pd

from archsim.report.sweep_report import distribution_figure


def _results() -> pd.DataFrame:
    rows = []
    for rows_, cols, dataflow, path, speedup in ((64, 16, "ws", "", 1.5), (64, 16, "os", "/x/mychip.cfg", 2.5),
                                                  (32, 32, "ws", "", 1.8)):
        for method in ("layerpipe", "pipedream"):
            rows.append({"network": "net", "method": method, "rows": rows_, "cols": cols, "dataflow": dataflow,
                         "batch": 16, "speedup": speedup, "array_path": path})
    return pd.DataFrame(rows).replace({"array_path": {"": None}})


def _categories(fig) -> set[str]:
    return {str(x) for trace in fig.data for x in trace.x}


def test_a_cfg_and_a_plain_array_of_one_shape_are_two_boxes():
    """A sweep of `arrays = ["64x16", "mychip.cfg"]` where the .cfg is a 64×16 output-stationary chip ran two
    arrays; the report once labelled both "64x16", so one box mixed the ws array's speedups (1.5) with the
    .cfg chip's (2.5). Fails before the fix: categories were {"64x16", "32x32"}."""
    fig = distribution_figure(_results(), "net", "array")
    assert _categories(fig) == {"64x16 ws", "64x16 os (mychip.cfg)", "32x32 ws"}
    by_label = {str(x): y for trace in fig.data if trace.name == "layerpipe" for x, y in zip(trace.x, trace.y)}
    assert by_label == {"64x16 ws": 1.5, "64x16 os (mychip.cfg)": 2.5, "32x32 ws": 1.8}


def test_dataflows_of_one_shape_are_two_boxes():
    """`dataflows = ["ws", "os"]` on one shape runs two arrays: each gets its box, named by its dataflow
    (fails before the fix: one "32x32" box)."""
    frame = pd.DataFrame([{"network": "net", "method": "layerpipe", "rows": 32, "cols": 32, "dataflow": d,
                           "batch": 16, "speedup": s} for d, s in (("ws", 1.5), ("os", 2.0))])
    assert _categories(distribution_figure(frame, "net", "array")) == {"32x32 ws", "32x32 os"}


def test_one_dataflow_of_plain_arrays_keeps_the_shape_alone():
    """The paper's sweep (ws only, no .cfg) keeps its labels: "32x32", "64x64"."""
    frame = pd.DataFrame([{"network": "net", "method": "layerpipe", "rows": r, "cols": r, "dataflow": "ws",
                           "batch": 16, "speedup": 1.5} for r in (32, 64)])
    fig = distribution_figure(frame, "net", "array")
    assert _categories(fig) == {"32x32", "64x64"}
    assert fig.layout.xaxis.title.text == "array (PE rows × columns)"
