"""Networks: layers, the topology CSV loader, and the shipped networks in ``layers/``."""

from archsim.workload.csv_loader import load_topology, parse_topology
from archsim.workload.layer import LAYER_KINDS, NETWORK_INPUT, Layer, Network
from archsim.workload.shipped import load_network, shipped_networks


def from_torch(module, example_inputs, **kwargs):
    """A PyTorch module as a :class:`Network` (via ONNX export; needs ``archsim[torch]``)."""
    from archsim.workload.torch_import import from_torch as _from_torch

    return _from_torch(module, example_inputs, **kwargs)


def load_onnx(model, **kwargs):
    """An ONNX model (path or ``onnx.ModelProto``) as a :class:`Network`."""
    from archsim.workload.onnx_import import load_onnx as _load_onnx

    return _load_onnx(model, **kwargs)


__all__ = ["LAYER_KINDS", "NETWORK_INPUT", "Layer", "Network", "from_torch", "load_network", "load_onnx",
           "load_topology",
           "parse_topology", "shipped_networks"]
