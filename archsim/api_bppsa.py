"""The face's BPPSA studies: ``archsim.bppsa_rnn``, ``archsim.bppsa_pruned_vgg11`` and ``archsim.bppsa_network``,
``archsim bppsa rnn``'s, ``archsim bppsa pruned-vgg11``'s and ``archsim bppsa network``'s flags as keywords of the
same names (``archsim.bppsa`` is the package, hence the names), run by the command's own :mod:`archsim.bppsa_run`;
nothing here computes a number of its own. Cycles are array clock cycles, FLOPs counted. Re-exported by
:mod:`archsim.api`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from archsim.api_inputs import build_array, unread_keys_notes
from archsim.api_keywords import check_choice, listed, positive_int, speaks_keywords
from archsim.bppsa_run import PAPER_SEQ_LENS, without_repeats
from archsim.console import library_note
from archsim.table_result import TableResult

if TYPE_CHECKING:
    from archsim.array.config import ArrayConfig
    from archsim.count_types import Count, Counts, Number
    from archsim.workload.layer import Network


def _warn(text: str) -> None:
    """A repeat the command warns of on stderr, as a UserWarning at the caller's line."""
    library_note(text, stacklevel=5)


@speaks_keywords
def bppsa_rnn(*, seq_len: Counts = PAPER_SEQ_LENS, hidden: Count = 20,
              batch: Count = 16, processors: Counts = "64,256,1024",
              array: str | int | Path | ArrayConfig | None = None, dataflow: str | None = None,
              config: str | Path | None = None,
              dtype: str | None = None, element_bytes: Count | None = None,
              report: str | Path | None = None) -> TableResult:
    """BPPSA's Fig. 8 as ``archsim bppsa rnn`` models it: a tanh RNN's backward pass (hidden size ``hidden``,
    ``batch`` samples) over each sequence length in ``seq_len`` (T ≥ 2) on each processor count in ``processors``,
    BP against the parallel scan on systolic arrays (the array keywords as :func:`archsim.array_config`); ``report``
    writes the command's HTML page there. Returns a :class:`~archsim.table_result.TableResult` (``.table``: the rows
    the command prints; ``.meta``; ``to_dict()``: its ``--format json`` document)."""
    from archsim.bppsa.rnn_cost import check_seq_len
    from archsim.bppsa_run import rnn_page, rnn_study

    lengths = [check_seq_len(value, "seq-len") for value in listed(seq_len, "seq-len")]
    counts = [positive_int(value, "processors") for value in listed(processors, "processors")]
    hidden, batch = positive_int(hidden, "hidden"), positive_int(batch, "batch")
    chosen = build_array(array, config=config, dataflow=dataflow, dtype=dtype, element_bytes=element_bytes, rated=True,
                         fp8=True)  # fp8 as cost's: the .cfg's fp8 rate, 1-byte words
    page = _page_path(report)
    lengths, counts = without_repeats(lengths, "seq-len", _warn), without_repeats(counts, "processors", _warn)
    done = rnn_study(lengths, counts, hidden=hidden, batch=batch, array=chosen, dtype=dtype)
    for note in unread_keys_notes(config, rates_read=True):  # as archsim bppsa rnn says it of its --config
        library_note(note, stacklevel=3)
    if page is not None:
        rnn_page(page, done, seq_lens=lengths, processors=counts, hidden=hidden, batch=batch, array=chosen, dtype=dtype,
                 config=None if config is None else str(config))
    return TableResult.of(done.table.frame(), done.meta)


def _page_path(report: str | Path | None) -> str | None:
    """``report`` as the command's ``--report`` takes it, checked before the study runs (a folder, a path no file can
    be written at: one line, nothing computed or written)."""
    from archsim.api_keywords import check_path
    from archsim.output_targets import check_target

    if report is None:
        return None
    check_path(report, "report", "an output path")
    check_target(str(report))
    return str(report)


@speaks_keywords
def bppsa_pruned_vgg11(*, sparsity: Number = 0.97, seed: Count = 0, up_levels: Count = "2",
                       compare_levels: Counts = "0,1,2", width_divisor: Count = 1,
                       zeros: str = "pattern", max_mflops: Count | None = None,
                       report: str | Path | None = None) -> TableResult:
    """BPPSA's Fig. 10 as ``archsim bppsa pruned-vgg11`` counts it: the FLOPs of every scan step of a VGG-11
    pruned to ``sparsity`` (``seed``: the pruning's and the input's), up-swept ``up_levels`` deep (``"full"``:
    Algorithm 1), against BP; ``compare_levels`` are the depths the meta's ``*_by_up_levels`` compare; ``width_divisor``
    narrows every layer; ``zeros`` and ``max_mflops`` as their flags (None: its default); ``report`` writes the
    command's HTML page there. Returns a
    :class:`~archsim.table_result.TableResult` (``.table``: the steps the command prints; ``.meta``: the critical
    paths' FLOPs; ``to_dict()``: its ``--format json`` document)."""
    from archsim.bppsa.vgg import check_sparsity, check_width_divisor
    from archsim.bppsa_run import parse_up_levels, vgg_page, vgg_study
    from archsim.choices.bppsa import DEFAULT_MAX_SCAN_MFLOPS, ZEROS
    from archsim.errors import InputError
    from archsim.validate import SEED_MAX
    from archsim.value_parsers import parse_float

    try:
        fraction = parse_float(sparsity, low=-math.inf, what="a sparsity in [0, 1)")  # the range: check_sparsity's line
    except ValueError as exc:
        raise InputError(str(exc), field="sparsity") from None
    fraction = check_sparsity(fraction)
    seed = positive_int(seed, "seed", low=0, high=SEED_MAX, what="a seed")
    depth = parse_up_levels(str(up_levels).strip(), field="up_levels")
    given = [parse_up_levels(str(x).strip(), full=False, field="compare_levels") or 0
             for x in listed(compare_levels, "compare_levels")]
    compare = sorted({0, *without_repeats(given, "compare-levels", _warn)})
    divisor = check_width_divisor(positive_int(width_divisor, "width-divisor"), "width-divisor")
    check_choice(zeros, ZEROS, "zeros")
    limit = DEFAULT_MAX_SCAN_MFLOPS if max_mflops is None else positive_int(max_mflops, "max-mflops")
    page = _page_path(report)
    done = vgg_study(sparsity=fraction, seed=seed, up_levels=depth, compare=compare, width_divisor=divisor,
                     zeros=zeros, max_mflops=limit)
    if page is not None:
        vgg_page(page, done, compare_levels=given, width_divisor=divisor)
    return TableResult.of(done.table, done.meta)


@speaks_keywords
def bppsa_network(network: str | Path | Network, *, batch: Count = 1, up_levels: Count = "full",
                  seed: Count = 0, max_mflops: Count | None = None, report: str | Path | None = None,
                  only: str | Sequence[str] | None = None, shapes: str = "auto", unsupported: str = "error",
                  input_shape: str | None = None,
                  dim: Mapping[str, int] | Sequence[tuple[str, int] | str] | str | None = None) -> TableResult:
    """BPPSA on a network of your own as ``archsim bppsa network`` runs it: ``network`` (a shipped name, a layers
    CSV, an ONNX file… or a :class:`~archsim.workload.layer.Network`; the network keywords as
    :func:`archsim.load_network`) read as a chain of conv, fc, pool (max) and elementwise (ReLU, sigmoid, tanh: a row's
    operator, ReLU where it names none) operators with weights and one
    input drawn from ``seed``; scanned ``up_levels`` deep (``"full"``: Algorithm 1; 0: the linear scan) for a
    mini-batch of ``batch`` independent chains; ``max_mflops`` as its flag (None: its default); ``report`` writes
    the command's HTML page there. Returns a :class:`~archsim.table_result.TableResult` (``.table``: one row per
    sequential scan step, its FLOPs; ``.meta``: BP's steps and FLOPs against the scan's, the gradient check
    ``gradient_max_abs_diff`` and each operator's ``jacobian_density``; ``to_dict()``: its ``--format json``
    document)."""
    from archsim.api_inputs import load_network, warn_file_batch
    from archsim.bppsa_run import network_page, network_study
    from archsim.choices.bppsa import NETWORK_MAX_MFLOPS
    from archsim.validate import SEED_MAX

    batch = positive_int(batch, "batch")
    seed = positive_int(seed, "seed", low=0, high=SEED_MAX, what="a seed")
    limit = NETWORK_MAX_MFLOPS if max_mflops is None else positive_int(max_mflops, "max-mflops")
    page = _page_path(report)
    chain = load_network(network, only=only, shapes=shapes, unsupported=unsupported, input_shape=input_shape,
                         dim=dim)
    warn_file_batch(chain, batch)
    done = network_study(chain, batch=batch, depth_text=up_levels, seed=seed, max_mflops=limit, field="up_levels")
    if page is not None:
        network_page(page, done, network=str(network) if not hasattr(network, "layers") else chain.name)
    return TableResult.of(done.table, done.meta)


__all__ = ["bppsa_network", "bppsa_pruned_vgg11", "bppsa_rnn"]
