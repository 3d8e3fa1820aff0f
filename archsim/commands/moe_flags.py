"""A mixture of experts' routing flags, one wording for ``archsim train`` and ``archsim search``: how its tokens reach
its experts (Megatron-Core's expert capacity, train's alone) and how unevenly (the load imbalance a router leaves:
:func:`archsim.training.moe_ops.routed_rows`); and train's two overlaps of its all-to-alls with compute
(:mod:`archsim.training.moe_overlap`)."""

from __future__ import annotations

import argparse

from archsim.validate import INT32_MAX
from archsim.value_parsers import int_flag, positive_float_flag, ratio_flag


def add_routing_arguments(parser: argparse.ArgumentParser, capacity: bool = True, whose: str = "the") -> None:
    """The routing flags: the capacity's two where ``capacity`` (train), the load imbalance's, said of ``whose``
    busiest rank (search: "every configuration's")."""
    if capacity:
        parser.add_argument("--moe-expert-capacity-factor", type=positive_float_flag, default=None, metavar="C",
                            help="Megatron-Core's expert capacity: each expert takes at most ⌈(T·k/E)·C⌉ of a "
                                 "rank's routed rows, the rest dropped (default: dropless; under uniform routing "
                                 "nothing is dropped at C ≥ 1 unless padded)")
        parser.add_argument("--moe-pad-expert-input-to-capacity", action="store_true",
                            help="pad each expert's input to exactly its capacity (needs --moe-expert-capacity-factor): "
                                 "the expert GEMMs and all-to-alls carry the capacity's rows")
    parser.add_argument("--moe-load-imbalance", type=ratio_flag, default=None, metavar="R",
                        help=f"{whose} busiest EP rank's routed rows over the mean, R ≥ 1 (a router's per-expert "
                             "token counts: max over mean tokens per EP rank): its experts' rows, all-to-alls and "
                             "kept activations priced on every rank, at most what a capacity factor keeps "
                             "(default: uniform, 1; docs/training.md#mixture-of-experts)")


def add_mtp_argument(parser: argparse.ArgumentParser) -> None:
    """Multi-token prediction's module count (:mod:`archsim.training.mtp`), train's and search's."""
    parser.add_argument("--mtp-layers", type=int_flag(0, INT32_MAX, "a non-negative integer"), default=None, metavar="N",
                        help="multi-token prediction modules trained on the last pipeline stage (Megatron-LM's "
                             "--mtp-num-layers; each a layer like the model's last, a 2h → h projection and the LM "
                             "head again; default: the model's own, a DeepSeek config's num_nextn_predict_layers, "
                             "else 0)")


def add_overlap_arguments(parser: argparse.ArgumentParser) -> None:
    """Megatron-Core's two overlaps of the EP all-to-alls with compute, off by default."""
    parser.add_argument("--overlap-moe-expert-parallel-comm", action="store_true",
                        help="Megatron-Core's 1F1B all-to-all overlap: in the pipeline's steady state one micro-batch's "
                             "forward runs beside another's backward, each one's EP all-to-alls under the other's "
                             "compute (needs --ep > 1, --interleave > 1 at --pp > 1, bf16 or fp16, no full recompute)")
    parser.add_argument("--moe-shared-expert-overlap", action="store_true",
                        help="the shared expert's forward beside the dispatcher's all-to-alls (Megatron-Core's "
                             "--moe-shared-expert-overlap; nothing without a shared expert)")
