"""SPP (001_655b4b8cd650573f.txt): cluster topologies, recursive device ordering (RDO), and the
partition/replication/mapping dynamic program (PRM)."""
