"""The pruned network's profile: what a partitioner sees of a SCALE-Sim sparsity run
(:func:`archsim.array.sparse_network.sparse_table`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from archsim.partition.profile import LayerProfile, profile_from_costs


def pruned_profile(table: pd.DataFrame, dense: LayerProfile, element_bytes: int = 1) -> LayerProfile:
    """A partitioner's profile of the pruned network: F, G and δ cycles from :func:`sparse_table`,
    activation, δ and stash bytes of the dense layers (pruning weights changes none of them), weight bytes the
    compressed storage (weights + metadata, rounded up to whole words). δ is not split (its sub-GEMMs
    would be costed dense), so LayerPipe may only borrow whole δs."""
    words = table["new_storage"].to_numpy(dtype=float)
    return profile_from_costs(
        tuple(table["layer"]), table["F_cycles"], table["G_cycles"], table["D_cycles"],
        activation_bytes=dense.activation_bytes, delta_bytes=dense.delta_bytes,
        weight_bytes=np.ceil(words).astype(np.int64) * element_bytes, stash_bytes=dense.stash_bytes, edges=dense.edges)


__all__ = ["pruned_profile"]
