"""PyTorch module → :class:`Network`, through ONNX export and :func:`load_onnx`.

Needs the optional ``archsim[torch]`` extra (``torch==2.13.0``; pinned because a plain ``torch``
requirement pulls a multi-GB CUDA build). The module is exported with TorchScript's ONNX exporter
in training mode — batch norm stays a layer of its own instead of being folded into the
convolution before it, as an inference export would — and the batch of ``example_inputs`` is
stripped: layers are per sample.
"""

from __future__ import annotations

import io
import warnings

from archsim.errors import InputError
from archsim.workload.layer import Network


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
    with warnings.catch_warnings():
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
