"""A search result's len is its rows' count, as a table result's is (a user trial found len(SearchResult) a
TypeError); its truth stays that of its rows."""

from archsim.training.search_result import SearchResult


def test_len_counts_the_rows():
    rows = [{"tp": 1, "iteration_seconds": 1.0}, {"tp": 2, "iteration_seconds": 2.0}]
    assert len(SearchResult(rows, {}, 5, 2, [])) == 2
    empty = SearchResult([], {"memory": 5}, 5, 0, [])
    assert len(empty) == 0 and not empty
