"""How a network file is read (``--geometry``, ``--shapes``, ``--unsupported``; :mod:`archsim.workload`)."""

from __future__ import annotations

GEOMETRIES = ("archsim", "scalesim")  # a layer's output size: with padding, or SCALE-Sim's ceil without padding
SHAPE_CHECKS = ("auto", "check", "off")  # check each layer's input against its producers' outputs
UNSUPPORTED = ("error", "skip")  # an ONNX op archsim does not model: refuse, or skip it and list it
