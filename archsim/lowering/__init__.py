"""Layer → training ops: F, G and D (δ) as GEMMs plus the tensors they move (:mod:`.lower`, which
states the lowering rules), the types it produces (:mod:`.ops`), and δ's split into δ′/δ″ for
LayerPipe (:mod:`.delta_split`). Import from here; the modules are its parts."""

from archsim.lowering.delta_split import (
    DeltaSplit,
    delta_split_units,
    piece_weight_bytes,
    split_d1_bytes,
    split_d2_bytes,
    split_delta,
    split_row_gemms,
    vector_delta_bytes,
    whole_delta_bytes,
    whole_delta_weight_bytes,
)
from archsim.lowering.lower import delta_phases, lower_layer, lower_network
from archsim.lowering.ops import Gemm, LayerTensors, LoweredLayer, OpKind, TrainingOp, check_mode
from archsim.modes import MODES, Mode

__all__ = ["MODES", "DeltaSplit", "Gemm", "LayerTensors", "LoweredLayer", "Mode", "OpKind",
           "TrainingOp", "check_mode", "delta_phases", "delta_split_units", "lower_layer", "lower_network",
           "piece_weight_bytes", "split_d1_bytes", "split_d2_bytes", "split_delta", "split_row_gemms",
           "vector_delta_bytes", "whole_delta_bytes", "whole_delta_weight_bytes"]
