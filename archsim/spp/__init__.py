"""SPP (001_655b4b8cd650573f.txt): cluster topologies, recursive device ordering (RDO), and the
partition/replication/mapping dynamic program (PRM)."""

# The search's size limits, here so that a command's parser reads them without loading the planner.
SEARCH_STEP_LIMIT = 10_000_000_000  # PRM steps refused above: ≈ 9 s at the ≈ 0.9 ns a step measured (numba)
SEARCH_BYTES_LIMIT = 4_000_000_000  # PRM tables: the 4 GB every accepted job stays under (docs/cli.md)
