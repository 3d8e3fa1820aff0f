"""plan's Gantt caption names each of SPP's stages as a baseline's `stage_plan` does: a one-layer stage by its layer."""

from test_plan_memory import _files

from archsim.cli import main


def test_the_gantt_caption_names_a_one_layer_stage_once(tmp_path):
    """SPP's second stage is node3 alone: the Gantt's caption says `s2: node3 on g1`, as a baseline's stage_plan
    writes a one-layer stage, not `node3–node3`."""
    graph, cluster = _files(tmp_path, 0.3)
    page = tmp_path / "gantt.html"
    assert main(["plan", graph, "--cluster", cluster, "--microbatches", "4", "--gantt", str(page)]) == 0
    text = page.read_text()
    assert "Rows: s1: node1–node2 on g0; s2: node3 on g1." in text
