"""BPPSA (002_88d3fab22770e73c.txt): back-propagation as a parallel scan.

Numerics: transposed Jacobians in CSR (:mod:`.jacobians`, counts in :mod:`.sparsity`), the scan
operator and the modified Blelloch scan (:mod:`.scan`), checked against plain numpy BP
(:mod:`.plain_bp`). Cost: step/work/space complexity (:mod:`.steps`), dense per-step cycles on
systolic arrays for the RNN (:mod:`.rnn_cost`), sparse per-step FLOPs from patterns
(:mod:`.sparse_cost`, :mod:`.vgg`). Pages: :mod:`.report`.

Names load on first use (PEP 562): ``archsim bppsa rnn`` needs neither scipy's sparse matrices nor plotly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from archsim.lazy import lazy_exports

if TYPE_CHECKING:  # the names, for type checkers and the API docs
    from archsim.bppsa.jacobians import rnn_scan_input, scan_input, transposed_jacobian
    from archsim.bppsa.layers import Conv2d, Linear, MaxPool2d, ReLU, forward_chain
    from archsim.bppsa.plain_bp import RNNCell, backprop, rnn_backprop, rnn_forward, weight_gradient
    from archsim.bppsa.rnn_cost import rnn_backward, rnn_frame
    from archsim.bppsa.scan import IDENTITY, ScanRun, blelloch_scan, diamond, linear_scan
    from archsim.bppsa.sparse_cost import count_flops
    from archsim.bppsa.steps import blelloch_level_count, level_census, per_worker_memory, steps_with_workers
    from archsim.bppsa.vgg import critical_path, scan_flops, vgg11_conv_stack, vgg_flops

# public name -> the module defining it
_EXPORTS = {
    "Conv2d": "archsim.bppsa.layers",
    "IDENTITY": "archsim.bppsa.scan",
    "Linear": "archsim.bppsa.layers",
    "MaxPool2d": "archsim.bppsa.layers",
    "RNNCell": "archsim.bppsa.plain_bp",
    "ReLU": "archsim.bppsa.layers",
    "ScanRun": "archsim.bppsa.scan",
    "backprop": "archsim.bppsa.plain_bp",
    "blelloch_level_count": "archsim.bppsa.steps",
    "blelloch_scan": "archsim.bppsa.scan",
    "count_flops": "archsim.bppsa.sparse_cost",
    "critical_path": "archsim.bppsa.vgg",
    "diamond": "archsim.bppsa.scan",
    "forward_chain": "archsim.bppsa.layers",
    "level_census": "archsim.bppsa.steps",
    "linear_scan": "archsim.bppsa.scan",
    "per_worker_memory": "archsim.bppsa.steps",
    "rnn_backprop": "archsim.bppsa.plain_bp",
    "rnn_backward": "archsim.bppsa.rnn_cost",
    "rnn_forward": "archsim.bppsa.plain_bp",
    "rnn_frame": "archsim.bppsa.rnn_cost",
    "rnn_scan_input": "archsim.bppsa.jacobians",
    "scan_flops": "archsim.bppsa.vgg",
    "scan_input": "archsim.bppsa.jacobians",
    "steps_with_workers": "archsim.bppsa.steps",
    "transposed_jacobian": "archsim.bppsa.jacobians",
    "vgg11_conv_stack": "archsim.bppsa.vgg",
    "vgg_flops": "archsim.bppsa.vgg",
    "weight_gradient": "archsim.bppsa.plain_bp",
}

__all__ = [
    "IDENTITY", "Conv2d", "Linear", "MaxPool2d", "RNNCell", "ReLU", "ScanRun", "backprop", "blelloch_level_count",
    "blelloch_scan", "count_flops", "critical_path", "diamond", "forward_chain", "level_census", "linear_scan",
    "per_worker_memory", "rnn_backprop", "rnn_backward", "rnn_forward", "rnn_frame", "rnn_scan_input", "scan_flops",
    "scan_input", "steps_with_workers", "transposed_jacobian", "vgg11_conv_stack", "vgg_flops", "weight_gradient",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
