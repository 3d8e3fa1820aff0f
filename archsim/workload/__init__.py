"""Networks: layers, the topology CSV loader, and the shipped networks in ``layers/``."""

from archsim.workload.csv_loader import load_topology, parse_topology
from archsim.workload.layer import LAYER_KINDS, NETWORK_INPUT, Layer, Network
from archsim.workload.shipped import load_network, shipped_networks

__all__ = ["LAYER_KINDS", "NETWORK_INPUT", "Layer", "Network", "load_network", "load_topology",
           "parse_topology", "shipped_networks"]
