"""BPPSA (002_88d3fab22770e73c.txt): back-propagation as a parallel scan.

Numerics: transposed Jacobians in CSR (:mod:`.jacobians`, counts in :mod:`.sparsity`), the scan
operator and the modified Blelloch scan (:mod:`.scan`), checked against plain numpy BP
(:mod:`.backprop`). Cost: step/work/space complexity (:mod:`.steps`), dense per-step cycles on
systolic arrays for the RNN (:mod:`.rnn_cost`), sparse per-step FLOPs from patterns
(:mod:`.sparse_cost`, :mod:`.vgg`). Pages: :mod:`.report`.
"""

from archsim.bppsa.backprop import RNNCell, backprop, rnn_backprop, rnn_forward, weight_gradient
from archsim.bppsa.jacobians import rnn_scan_input, scan_input, transposed_jacobian
from archsim.bppsa.layers import Conv2d, Linear, MaxPool2d, ReLU, forward_chain
from archsim.bppsa.rnn_cost import rnn_backward, rnn_study
from archsim.bppsa.scan import IDENTITY, ScanRun, blelloch_scan, diamond, linear_scan
from archsim.bppsa.sparse_cost import count_flops
from archsim.bppsa.steps import blelloch_level_count, level_census, per_worker_memory, steps_with_workers
from archsim.bppsa.vgg import critical_path, vgg11_conv_stack, vgg_flops

__all__ = [
    "IDENTITY", "Conv2d", "Linear", "MaxPool2d", "RNNCell", "ReLU", "ScanRun", "backprop", "blelloch_level_count",
    "blelloch_scan", "count_flops", "critical_path", "diamond", "forward_chain", "level_census", "linear_scan",
    "per_worker_memory", "rnn_backprop", "rnn_backward", "rnn_forward", "rnn_scan_input", "rnn_study", "scan_input",
    "steps_with_workers", "transposed_jacobian", "vgg11_conv_stack", "vgg_flops", "weight_gradient",
]
