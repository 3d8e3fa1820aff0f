"""Networks: layers, the topology CSV loader, and the shipped networks in ``layers/``.

Names load on first use (PEP 562): importing :mod:`archsim.workload.layer` does not load the CSV
loader or the shipped networks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from archsim.lazy import lazy_exports

if TYPE_CHECKING:  # the names, for type checkers and the API docs
    from archsim.workload.csv_loader import load_topology, parse_topology
    from archsim.workload.layer import NETWORK_INPUT, Layer, Network
    from archsim.workload.layer_types import LAYER_KINDS
    from archsim.workload.shipped import load_network, shipped_networks


def from_torch(module, example_inputs, **kwargs):
    """A PyTorch module as a :class:`Network` (via ONNX export; needs ``archsim[torch]``)."""
    from archsim.workload.torch_import import from_torch as _from_torch

    return _from_torch(module, example_inputs, **kwargs)


def load_onnx(model, **kwargs):
    """An ONNX model (path or ``onnx.ModelProto``) as a :class:`Network`."""
    from archsim.workload.onnx_import import load_onnx as _load_onnx

    return _load_onnx(model, **kwargs)


# public name -> the module defining it
_EXPORTS = {
    "LAYER_KINDS": "archsim.workload.layer",
    "NETWORK_INPUT": "archsim.workload.layer",
    "Layer": "archsim.workload.layer",
    "Network": "archsim.workload.layer",
    "load_network": "archsim.workload.shipped",
    "load_topology": "archsim.workload.csv_loader",
    "parse_topology": "archsim.workload.csv_loader",
    "shipped_networks": "archsim.workload.shipped",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

__all__ = ["LAYER_KINDS", "NETWORK_INPUT", "Layer", "Network", "from_torch", "load_network", "load_onnx",
           "load_topology",
           "parse_topology", "shipped_networks"]
