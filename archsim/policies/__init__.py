"""Schedule policies: how a partition's ops are ordered on processors over many micro-batches."""
