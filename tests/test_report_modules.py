"""The report package's modules import one way: none reaches back to a module that imports it, at module level
or inside a function (an import deferred into a function hides a cycle from Python, not from a reader). The
headline and the page read the sweep's order and array key from ``report/sweep_order.py``, below both."""

from import_graph import ROOT, imports_of, module_name


def _report_graph() -> dict[str, set[str]]:
    names = {module_name(path): path for path in sorted((ROOT / "report").glob("*.py"))}
    return {name: {other for other in names if other != name and other in imports_of(path)}
            for name, path in names.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each module that reaches itself, with the path it takes (a depth-first walk: the graph is small)."""
    found = []
    for start in sorted(graph):
        todo = [(start, [start])]
        seen: set[str] = set()
        while todo:
            node, path = todo.pop()
            for nxt in sorted(graph[node]):
                if nxt == start:
                    found.append([*path, start])
                elif nxt not in seen:
                    seen.add(nxt)
                    todo.append((nxt, [*path, nxt]))
    return found


def test_no_report_module_imports_one_that_imports_it():
    assert _cycles(_report_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b", "a"], ["b", "a", "b"]]
