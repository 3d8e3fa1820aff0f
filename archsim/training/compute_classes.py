"""A model piece's GPU time by op class: GEMM, memory-bound, and the training fit's per-kernel gap.

Why: an iteration's compute is one figure, yet it rests on mechanisms of very different standing — GEMMs' tiles and
rooflines and memory-bound bytes (datasheet mechanisms at fitted efficiencies) against one fitted gap per kernel
(``launch_s``, 32.4 µs from vTrain's A100 runs). ``archsim train`` shows the split
(``compute_split_seconds``, :func:`archsim.training.run.compute_split`). Nothing here times an op: it sums
:func:`archsim.devices.kernel_ops.op_parts`, ``op_seconds``' own terms read apart.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace

import numpy as np

from archsim.devices.kernel_ops import KernelFamilies, OpParts, op_parts
from archsim.training.machine import Machine
from archsim.training.op_work import Work


@dataclass(frozen=True)
class ClassSeconds:
    """Seconds of an op list by class: ``gemm`` (compute or HBM roofline, launches excluded; fused
    ops' whole body), ``memory`` (memory-bound bytes at achieved HBM bandwidth), ``launch`` (one
    ``launch_s`` per kernel); their sum is :func:`~archsim.devices.kernel_ops.op_seconds`' sum (but for a
    split-K reduction kernel's launch, which :func:`~archsim.devices.kernel_ops.op_parts` neither times nor counts)."""

    gemm: float = 0.0
    memory: float = 0.0
    launch: float = 0.0

    @property
    def total(self) -> float:
        return self.gemm + self.memory + self.launch

    def __add__(self, other: ClassSeconds) -> ClassSeconds:
        return ClassSeconds(self.gemm + other.gemm, self.memory + other.memory, self.launch + other.launch)

    def times(self, k: float) -> ClassSeconds:
        """Each class × ``k`` (a piece's runs over an iteration)."""
        return ClassSeconds(self.gemm * k, self.memory * k, self.launch * k)


def summed_classes(parts: OpParts, launch_s: float, which: np.ndarray | None = None) -> ClassSeconds:
    """The ops' (those ``which`` selects; None: all) parts summed, one ``launch_s`` per kernel: the one sum behind
    :func:`archsim.training.op_classes.class_seconds` and :func:`piece_classes`."""
    gemm, memory, kernels = parts.gemm, parts.memory, parts.kernels
    if which is not None:
        gemm, memory, kernels = gemm[which], memory[which], kernels[which]
    return ClassSeconds(sum(gemm.tolist(), 0.0), sum(memory.tolist(), 0.0), int(kernels.sum()) * launch_s)


def pass_families(families: KernelFamilies, mine: int, theirs: int) -> KernelFamilies:
    """``families`` with each launch × ``theirs`` / ``mine``: a pass of ``mine`` ops paying the training fit's
    per-kernel gap as often in all as the ``theirs`` ops of the list the gap was fitted per (Megatron's;
    :func:`archsim.training.iteration.recounted_op_seconds`)."""
    share = theirs / max(mine, 1)
    return KernelFamilies(replace(families.gemm, launch_s=families.gemm.launch_s * share),
                          replace(families.memory_bound, launch_s=families.memory_bound.launch_s * share),
                          families.pytorch)


def piece_classes(work: Work, machine: Machine, counted: Work | None, recompute: str,
                  core: Collection[str]) -> ClassSeconds:
    """Per micro-batch GPU seconds of ``work``'s compute (forward, δ, weight gradients) and its recompute (the
    forward again under ``full``, its ops named in ``core`` under ``selective``) by class, each pass's kernels at
    its gap as :func:`archsim.training.iteration.piece_cost` times them (``counted``: Megatron's list of the piece,
    when ``work`` is another's). The families' GEMM launch stands for both: :attr:`Machine.kernels` states one
    launch for all of a step's kernels (the memory-bound family's differs only for kernels timed alone)."""
    out = ClassSeconds()
    for ops, theirs, again in ((work.forward, (counted or work).forward, True),
                               (work.backward, (counted or work).backward, False)):
        if not ops:
            continue
        families = machine.kernels if counted is None else pass_families(machine.kernels, len(ops), len(theirs))
        parts = op_parts(list(ops), machine.gpu, families, machine.dtype)
        launch = families.gemm.launch_s
        out += summed_classes(parts, launch)
        if again and recompute == "full":
            out += summed_classes(parts, launch)
        elif again and recompute == "selective":
            out += summed_classes(parts, launch, np.array([op.layer in core for op in ops], dtype=bool))
    return out


@dataclass(frozen=True)
class SplitPart:
    """One part of :func:`~archsim.training.run.compute_split`'s seconds: its key (``compute_split_seconds``' in JSON and csv), its name in
    train's table line (:func:`archsim.training.table_lines.split_line`) and whether that line names it at 0."""

    key: str
    label: str
    shown_at_zero: bool = True


# run.compute_split's parts in its order: the one list of their keys and names, so a part added here has its name
SPLIT_PARTS = (SplitPart("gemm", "gemm"), SplitPart("memory_bound", "memory-bound"),
               SplitPart("kernel_gaps", "kernel gaps"), SplitPart("host_floor", "host floor"),
               SplitPart("recompute_communication", "recompute's communication", shown_at_zero=False),
               SplitPart("other", "other", shown_at_zero=False))


__all__ = ["SPLIT_PARTS", "ClassSeconds", "SplitPart", "pass_families", "piece_classes", "summed_classes"]
