"""PyTorch module → :class:`Network`, through ONNX export and :func:`load_onnx`.

Needs the optional ``archsim[torch]`` extra (``torch==2.13.0``; pinned because a plain ``torch``
requirement pulls a multi-GB CUDA build). The module is exported with TorchScript's ONNX exporter
in training mode — batch norm stays a layer of its own instead of being folded into the
convolution before it, as an inference export would — called with ``example_inputs`` alone
(:func:`given_inputs_only`: ``forward``'s defaults stay Python's), and the batch of ``example_inputs`` is
stripped: layers are per sample.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from archsim.errors import InputError
from archsim.workload.layer import Network


@contextmanager
def given_inputs_only(module) -> Iterator[None]:
    """Export ``module`` called with the given inputs alone. Why: TorchScript's exporter fills every
    parameter of the top module's ``forward`` that the inputs leave out with its default and traces it as
    an input, so a bool default reaches the code as a tensor — ``nn.TransformerEncoderLayer`` as the
    class itself (its ``is_causal=False``) failed in ``scaled_dot_product_attention`` ("argument
    'is_causal' must be bool, not Tensor"). A ``forward(*inputs)`` on the instance, calling the class's own,
    leaves the defaults Python's; the module and its scope names are unchanged."""
    own = vars(module).get("forward")
    forward = module.forward
    module.forward = lambda *inputs: forward(*inputs)
    try:
        yield
    finally:
        del module.forward
        if own is not None:
            module.forward = own


def from_torch(module, example_inputs, *, name: str | None = None, unsupported: str = "error",
               opset: int = 17) -> Network:
    """Export ``module`` on ``example_inputs`` (a tensor or tuple of tensors) and import the graph."""
    try:
        import onnx
        import torch
    except ImportError:
        raise InputError("from_torch needs PyTorch: pip install 'archsim[torch]'") from None
    from archsim.workload.onnx_import import load_onnx

    args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    buffer = io.BytesIO()
    was_training = module.training
    with warnings.catch_warnings(), given_inputs_only(module):
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and in-place notices
        try:
            # a file object: torch's annotation omits it; its TorchScript exporter writes to one
            torch.onnx.export(module, args, buffer, dynamo=False, opset_version=opset,  # type: ignore[arg-type]
                              training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
        except Exception as exc:  # the exporter's own errors: the module cannot be traced or exported
            raise InputError(f"torch.onnx.export failed: {' '.join(str(exc).split())[:300]}") from None
        finally:
            module.train(was_training)
    model = onnx.load_from_string(buffer.getvalue())
    return load_onnx(model, name=name or type(module).__name__.lower(), unsupported=unsupported)
