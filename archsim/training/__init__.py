"""Transformer training on GPU clusters: ops per GPU, tensor/pipeline/data parallelism, collectives,
memory and the iteration model behind ``archsim train``."""
