"""A device sweep's report plots energy in the unit of the table beside it (``energy_j``, joules): before, the
figure drew kJ (0.028 for a GPT-2 design) beside a table of J (28), so the two read 1000× apart."""

from __future__ import annotations

import pandas as pd

from archsim.report.pareto import device_pareto_figure

# two designs by hand: 28 J and 35 J an iteration, both fit, the faster one also the cheaper (alone on the front)
ROWS = pd.DataFrame({"model": ["gpt2"] * 2, "gpu": ["chip"] * 2, "arrays": ["4x128x128", "2x256x256"],
                     "hbm_gbps": [600.0, 600.0], "gpus": [4, 4], "peak_memory_gib": [3.0, 3.0],
                     "iteration_seconds": [0.5, 0.7], "energy_j": [28.0, 35.0],
                     "fits_memory": [True, True], "pareto_optimal": [True, False]})


def test_the_figure_plots_joules_as_the_table_shows_them() -> None:
    fig = device_pareto_figure(ROWS)
    assert fig.layout.yaxis.title.text == "energy per iteration (J)"
    points = {(float(x), float(y)) for trace in fig.data if trace.mode == "markers" for x, y in zip(trace.x, trace.y)}
    assert points == {(0.5, 28.0), (0.7, 35.0)}
    assert [float(a.y) for a in fig.layout.annotations] == [28.0]  # the front point's name, at its marker
    assert all(" J<extra>" in trace.hovertemplate for trace in fig.data if trace.mode == "markers")


def test_the_markdown_table_prints_joules_as_the_report_plots_them() -> None:
    """bench_device_sweep's markdown table (``device_markdown``) printed kJ ("0.02800") beside the report's J:
    its energy column must be headed J and hold each row's joules (28 J, 35 J, 4,216.3 J), to four figures at
    least, a large one not in exponent notation."""
    from archsim.sweep.device_report import device_markdown

    rows = [{**row, "energy_j": joules} for row, joules in
            zip(ROWS.to_dict("records") * 2, (28.0, 35.0, 4216.3, 66.1))]
    lines = device_markdown(rows).splitlines()
    head = [cell.strip() for cell in lines[0].strip("|").split("|")]
    assert "energy J" in head and not any("kJ" in cell for cell in head)
    column = head.index("energy J")
    printed = [line.strip("|").split("|")[column].strip() for line in lines[2:]]
    assert printed == ["28.00", "35.00", "4216", "66.10"]
