"""A transformer's training work on one GPU, as archsim ops: F (forward), D (δ, input gradient) and
G (weight gradient), plus the collectives tensor parallelism adds.

Per micro-batch of b sequences of s tokens, hidden h, a heads (kv heads for Llama's grouped-query
attention), FFN width f, TP degree t (Megatron's column-parallel QKV and first MLP GEMMs, row-parallel
projection and second MLP GEMM, Shoeybi et al. 2019 §3). T = s·b tokens; with sequence
parallelism the norms, dropouts and residual adds work on T/t tokens.

GEMMs (m, k, n, count) for Y = X·W, X: m×k: F (m, k, n); D = dY·Wᵀ (m, n, k); G = Xᵀ·dY (k, m, n).
Attention's scores S = Q·Kᵀ and context P·V are batched over b·a/t heads; both of their backward
GEMMs are δ work (there are no weights), as :mod:`archsim.lowering` lowers ``matmul`` layers.

Memory-bound ops count the elements of the training dtype they read and write
(:attr:`~archsim.lowering.TrainingOp.vector_elements`, priced by :mod:`archsim.devices.kernel_ops`; the norms',
softmax's, GeLU's and residual add's by :func:`archsim.lowering.streamed.streamed_elements`, the count ``cost``'s
and ``energy``'s chip seconds take too): a 1-byte
dropout mask is ½ element in fp16/bf16 and ¼ in fp32, an fp32 value (RoPE's angles, the log-sum-exp) 2 and 1
(:func:`~archsim.training.kernel_bytes.dtype_elements`); below, "mask" is the mask's share:

======================  ==================  ====================================
op                      forward             backward
======================  ==================  ====================================
layer/RMS norm          read x, write y: 2  read dy, x, write dx: 3
softmax (fused scale,   read, write: 2      read y, dy, write dx: 3
mask)
dropout                 read, write, mask:  read, mask, write: 2 + mask
                        2 + mask
bias + GeLU (fused)     read, write: 2      read dy, x, write dx: 3
bias + dropout + add    read x, residual,   read dy, mask, write dx, add residual
                        write, mask:        grad: 3 + mask
                        3 + mask
residual add (no       read x, residual,   read dy, write dx, add residual grad: 3
dropout)                write: 3
RoPE (q, k: one fused   read, write, fp32   read dy, write dx, fp32 angles
kernel each)            angles              (:func:`rope_elements`)
======================  ==================  ====================================

The attention dropout runs only when the model drops attention probabilities
(:attr:`~archsim.workload.transformer.TransformerConfig.drops_attention`: at probability 0 PyTorch
launches no kernel), the residual and embedding dropouts only when it drops hidden states
(:attr:`~archsim.workload.transformer.TransformerConfig.drops_hidden`: without, the bias-dropout-add
is the residual add alone, no mask read or written, and the embedding runs no dropout), RoPE only for rotary models (Llama, Mistral: ``rotary_dims``), as Megatron-LM
(Megatron-Core 0.20.0, commit d98e8a6) runs them: ``apply_rope_fusion`` is on by default in its
training arguments (``--no-rope-fusion`` turns it off), so q and k each take Transformer Engine's fused
kernel, not the unfused ``_apply_rotary_pos_emb_bshd``. The angles' own computation (once per
forward, not per layer) is left out.

Megatron's fused scale-mask-softmax kernel runs only on some shapes and never in fp32 (:func:`fused_softmax`);
elsewhere the softmax is PyTorch's kernels in fp32, five each way in fp16/bf16, three in fp32
(:func:`~archsim.training.kernel_bytes.unfused_softmax`).

Collectives (bytes at 2 per element): without sequence parallelism, an all-reduce of T·h after the
attention projection and after the second MLP GEMM in the forward, and after the QKV and first MLP
δ in the backward; with it, each becomes an all-gather before the column-parallel GEMM and a
reduce-scatter after the row-parallel one (Korthikanti et al. 2022 §4.2.2), and each column-parallel
GEMM's backward all-gathers its input a second time for the weight gradient (:data:`SP_REGATHER`),
under that GEMM's δ.
"""

from __future__ import annotations

from archsim.lowering import TrainingOp
from archsim.lowering.streamed import streamed_elements
from archsim.training.context_parallel import flash_steps
from archsim.training.flash_blocks import (
    dq_accum_values,
    flash_backward_kernels,
    flash_gemms,
    flash_gqa_sums,
    flash_nonmatmul,
    flash_tiles,
)
from archsim.training.flash_smem import flash_smem_bytes
from archsim.training.fp8_ops import fp8_layer_work
from archsim.training.kernel_bytes import cross_entropy_elements, dtype_elements, fused_softmax, unfused_softmax
from archsim.training.mla_ops import mla_work
from archsim.training.moe_ops import moe_work
from archsim.training.op_work import Collective, Work, gemm_ops, memory_op, vector_op
from archsim.training.parallel import padded_vocab
from archsim.workload.transformer import LayerWidths, TransformerConfig, layer_widths


def block_work(c: TransformerConfig, micro_batch: int, tp: int = 1, sequence_parallel: bool = False,
               attention: str = "standard", dtype: str = "fp16", cp: int = 1, cp_comm: str = "p2p",
               cp_hierarchy: tuple[int, int] | None = None, ep: int = 1, etp: int | None = None,
               fp8: str | None = None) -> Work:
    """One layer's work on one GPU of its TP group for one micro-batch in ``dtype`` (its memory-bound ops count its
    elements); ``attention`` ``flash``: scores, softmax, dropout and context as one FlashAttention-2 kernel each way
    (:func:`flash_attention_ops`), its backward's small kernels beside it (and grouped-query attention's dK, dV sums
    after); ``cp`` > 1: a CP rank's s/CP tokens, its attention in steps as ``cp_comm`` runs it (``cp_hierarchy``: a2a+p2p's A, P; :mod:`~archsim.training.context_parallel`); a mixture of experts: its
    MLP :func:`~archsim.training.moe_ops.moe_work` over ``ep`` expert-parallel ranks, experts split over ``etp``;
    ``fp8`` (a recipe, :data:`~archsim.choices.training.FP8_RECIPES`): its linear layers in Transformer Engine's fp8
    (:func:`~archsim.training.fp8_ops.fp8_layer_work`), ``dtype`` the higher precision."""
    s, h, b, t = c.seq, c.hidden, micro_batch, tp
    tokens = s * b // cp
    local = tokens // t if sequence_parallel else tokens  # tokens the norms/dropouts see
    w = layer_widths(c, t)
    ffn = w.ffn
    forward: list[TrainingOp] = []
    backward: list[TrainingOp] = []

    def mem(name: str, fwd: float, bwd: float, kernel: tuple[str, int, int] | tuple[()] = ()) -> None:
        f, d = memory_op(name, fwd, bwd, kernel)
        forward.append(f)
        backward.append(d)

    def gemm(name: str, *args, weights: bool = True) -> None:
        f, d, g = gemm_ops(name, *args, weights=weights)
        forward.append(f)
        backward.extend((d, g))

    mem("norm1", *streamed_elements("norm", local * h), ("ln", local, h))
    if c.mla:  # DeepSeek's latent projections, RoPE and attention core (mla_ops.py)
        mla = mla_work(c, tokens, local, t, sequence_parallel, dtype)
        forward.extend(mla.forward)
        backward.extend(mla.backward)
    else:
        _projections(c, w, tokens, dtype, mem, gemm)
    _core(c, w, b, attention, dtype, cp, cp_comm, cp_hierarchy, mem, gemm, forward, backward)
    gemm("proj", tokens, w.attention, h)
    residual = residual_elements(c, dtype)
    mem("residual1", residual * local * h, residual * local * h)
    mem("norm2", *streamed_elements("norm", local * h), ("ln", local, h))
    moe = moe_work(c, tokens, local, t, ep, dtype, etp) if c.moe else None  # routed experts in the MLP's place
    if moe is not None:
        forward.extend(moe.forward)
        backward.extend(moe.backward[::-1])  # reversed below with the rest
    elif w.gated:
        gemm("gate", tokens, h, ffn)
        gemm("up", tokens, h, ffn)
        mem("silu_mul", 3 * tokens * ffn, 5 * tokens * ffn)
    else:
        gemm("fc1", tokens, h, ffn)
        mem("bias_gelu", *streamed_elements("unary", tokens * ffn))
    if moe is None:
        gemm("fc2", tokens, ffn, h)
    mem("residual2", residual * local * h, residual * local * h)
    backward.reverse()  # backward runs the ops last-first (order only matters for a timeline)
    first_mlp = ("gate", "up") if w.gated else ("fc1",)  # a gated MLP's one linear_fc1, two ops here
    shared = moe is not None and c.shared_expert_ffn > 0  # a shared expert keeps the dense MLP's TP collectives
    tp_f, tp_b = _tp_collectives(tokens * h * 2, tp, sequence_parallel,
                                 {"attn": ("qkv",), "mlp": ("shared_expert.fc1",) if shared else first_mlp})
    if c.mla:  # MLA's own TP collectives (its output projection's among them) in place of the attention's
        tp_f, tp_b = (tuple(x for x in colls if not x.name.startswith("attn.")) for colls in (tp_f, tp_b))
        tp_f, tp_b = mla.forward_collectives + tp_f, tp_b + mla.backward_collectives
    if moe is not None:  # the dispatcher's collectives in (or, with a shared expert, beside) the dense MLP's TP ones
        tp_f, tp_b = (tuple(x for x in colls if shared or not x.name.startswith("mlp.")) for colls in (tp_f, tp_b))
        tp_f, tp_b = tp_f + moe.forward_collectives, moe.backward_collectives + tp_b
    work = Work(tuple(forward), tuple(backward), tp_f, tp_b)
    return fp8_layer_work(work, tp, sequence_parallel, dtype) if fp8 else work


def _projections(c: TransformerConfig, w: LayerWidths, tokens: int, dtype: str, mem, gemm) -> None:
    """The QKV projection, Qwen3's q and k norms and RoPE of :func:`block_work` (its ``mem`` and ``gemm`` appenders)."""
    heads, kv, hd = w.heads, w.kv_heads, w.head_dim
    gemm("qkv", tokens, w.hidden, w.qkv)
    if c.qk_norm:  # Qwen3: an RMS norm over head_dim on each local query and key head (all tokens), before RoPE
        for name, normed in (("q_norm", heads), ("k_norm", kv)):
            rows = tokens * normed
            mem(name, *streamed_elements("norm", rows * hd), ("ln", rows, hd))
    if c.rotary_dims:  # rotary positions on the local q and k heads, one fused kernel each way per tensor
        for name, rotated in (("rope_q", heads), ("rope_k", kv)):
            moved = rope_elements(tokens, rotated, hd, c.rotary_dims, dtype)
            mem(name, moved, moved)


def _core(c: TransformerConfig, w: LayerWidths, b: int, attention: str, dtype: str, cp: int, cp_comm: str,
          cp_hierarchy: tuple[int, int] | None, mem, gemm, forward: list, backward: list) -> None:
    """The attention core of :func:`block_work`: scores over the q and k heads' ``head_dim``, context over the value
    heads' width (MLA's v_head_dim), standard or FlashAttention-2's kernels."""
    s, heads, kv, hd, vd, mask = c.seq, w.heads, w.kv_heads, w.head_dim, w.value_dim, dtype_elements(1, dtype)
    if attention == "flash":  # one kernel each way (a CP rank: one per step); backward reversed below: D's
        for n, qh, kvh, causal in flash_steps(s, b * heads, b * kv, cp, c.family != "bert", cp_comm, cp_hierarchy):  # kernel, the main
            f, d = flash_attention_ops(n, hd, qh, kvh, c.sliding_window, dtype, causal, c.drops_attention,
                                       vd if vd != hd else None)
            dot, convert = flash_backward_kernels(n, hd, qh, dtype)  # one, dQ's conversion, the dK, dV sums
            forward.append(f)
            backward.extend((*flash_gqa_sums(n, hd, qh, kvh, dtype)[::-1], convert, d, dot))
    else:
        gemm("scores", s, hd, s, b * heads, weights=False)
        scores = s * s * b * heads
        softmax_kernel = ("softmax", b * heads * s, s)
        if fused_softmax(s, b * heads, dtype):
            mem("softmax", *streamed_elements("unary", scores), softmax_kernel)
        else:  # fp32: torch.nn.Softmax is PyTorch's own kernel, timed by its class as Hugging Face's is
            for name, fwd, bwd in unfused_softmax(dtype):
                mem(name, fwd * scores, bwd * scores, softmax_kernel if name == "softmax" and dtype == "fp32" else ())
        if c.drops_attention:
            mem("attn_dropout", (2 + mask) * scores, (2 + mask) * scores)
        gemm("context", s, s, vd, b * heads, weights=False)


def residual_elements(c: TransformerConfig, dtype: str = "fp16") -> float:
    """Elements of ``dtype`` per hidden element Megatron's bias-dropout-add moves each way: 3 and its
    1-byte mask with dropout (written forward and read backward: 3.5 in fp16/bf16, 3.25 in fp32), 3
    without (the add alone)."""
    add = streamed_elements("add", 1, inputs=2)[0]  # 3: read x and the residual, write y
    return add + dtype_elements(1, dtype) if c.drops_hidden else add


def rope_elements(tokens: int, heads: int, head_dim: int, rotary_dims: int, dtype: str = "fp16") -> int:
    """Elements of ``dtype`` one of Megatron's rotary-embedding kernels moves for ``heads`` heads of
    ``tokens`` tokens, forward or backward: Megatron-LM's default ``apply_rope_fusion`` runs Transformer
    Engine's fused RoPE (``fused_rope_block_forward``/``_backward``), one kernel per tensor each way, which
    reads the tensor (or its gradient), writes a new one of the same shape — the dims past ``rotary_dims``
    copied through, so a partial rotary moves the same — and reads the fp32 angles (``rotary_dims`` per
    token: each thread block loads its position's row)."""
    return int(2 * tokens * heads * head_dim + dtype_elements(4, dtype) * tokens * rotary_dims)


def flash_attention_ops(s: int, hd: int, heads: int, kv_heads: int, window: int | None = None,
                        dtype: str = "fp16", causal: bool = True, dropout: bool = False,
                        v_dim: int | None = None) -> tuple[TrainingOp, TrainingOp]:
    """FlashAttention-2 (Dao 2023, Algorithms 1 and 2) over ``heads`` query heads (micro-batch × heads
    per GPU) sharing ``kv_heads`` K/V heads, s tokens of head size hd: one fused kernel each way.
    Forward: S = QKᵀ and O = PV, softmax and dropout in registers; HBM: read Q, K, V, write O and the
    fp32 log-sum-exp (elements of ``dtype``). Backward: recompute S = QKᵀ, then dV = Pᵀ·dO, dP = dO·Vᵀ,
    dQ = dS·K, dK = dSᵀ·Q (five GEMMs, one more than the standard backward); HBM: read Q, K, V, dO, the
    log-sum-exp and D, write dK and dV per query head (summed after under grouped-query attention,
    :func:`~archsim.training.flash_blocks.flash_gqa_sums`) and dQ's fp32 accumulator, read and written once
    (its ``atomicAdd`` resolve in L2: :func:`~archsim.training.flash_blocks.dq_atomics`); O, D's kernel and
    dQ's conversion are the two kernels beside it (:func:`~archsim.training.flash_blocks.flash_backward_kernels`).
    No s × s tensor is read or written. The GEMMs count the blocks the kernel computes
    (:func:`~archsim.training.flash_blocks.flash_gemms`, each way in its own tiles, ``dropout`` picking the
    forward's): ``causal`` skips the blocks above the diagonal, a ``window`` (keys 0 ≤ q − k < window) those
    before it too; not causal, the whole square. Time and energy follow these; model FLOPs keep the whole square
    (:func:`~archsim.training.throughput.attended_pairs`). Every key is in some query's window, so Q, K, V and O
    are still read once each. Each op carries its exponentials and FP32 row-wise work and its shared-memory bytes
    (:func:`~archsim.training.flash_blocks.flash_nonmatmul`, :func:`~archsim.training.flash_smem.flash_smem_bytes`),
    with ``dropout`` the integer work of drawing its mask each way (:func:`~archsim.training.flash_blocks.dropout_int_ops`).
    ``v_dim``: value heads of another width than the queries' and keys' hd (MLA's v_head_dim; None: hd): the
    context-shaped GEMMs (O = PV, and the backward's dV = Pᵀ·dO, dP = dO·Vᵀ) at v_dim, the kernel's tiles and
    shared memory at hd (the larger), V, O, dO and dV at v_dim."""
    vd = v_dim or hd
    q, kv = s * hd * heads, s * hd * kv_heads  # elements of Q (= dK as written) and of K
    o, v = s * vd * heads, s * vd * kv_heads  # of O (= dO, = dV as written) and of V
    lse, tiles = int(dtype_elements(4, dtype) * s * heads), flash_tiles(hd, dropout)
    (qk, pv), (dqk, dpv) = (flash_gemms(s, hd, heads, tile, window, causal) for tile in (tiles.forward, tiles.backward))
    if vd != hd:
        pv, dpv = (flash_gemms(s, vd, heads, tile, window, causal)[1] for tile in (tiles.forward, tiles.backward))
    fwork, bwork = flash_nonmatmul(s, vd, heads, tiles, window, causal, dropout)
    fsmem, bsmem = flash_smem_bytes(s, hd, heads, tiles, window, causal)
    forward = TrainingOp("flash_attention", "F", (qk, pv), vector_elements=q + kv + v + o + lse, out_bytes=2 * o,
                         fused=True, exps=fwork.exps, lane_ops=fwork.lane_ops, int_ops=fwork.int_ops,
                         int_mults=fwork.int_mults, smem_bytes=fsmem)
    accum = int(dtype_elements(4, dtype) * dq_accum_values(s, hd, heads, tiles.backward))
    backward = TrainingOp("flash_attention", "D", (dqk, dpv, dqk, dpv, dpv) if vd == hd else (dqk, dpv, dpv, dqk, dqk),
                          vector_elements=q + o + kv + v + 2 * lse + 2 * accum + q + o, out_bytes=2 * (q + q + o),
                          fused=True, exps=bwork.exps, lane_ops=bwork.lane_ops, int_ops=bwork.int_ops,
                          int_mults=bwork.int_mults, smem_bytes=bsmem)
    return forward, backward


# Under sequence parallelism Megatron's column-parallel GEMMs (QKV and the MLP's first, gated or not: one
# ColumnParallelLinear each) keep only the rank's T/t tokens of their input for the backward, so the backward
# all-gathers the input again for the weight gradient (Megatron-LM, megatron/core/tensor_parallel/layers.py,
# LinearWithGradAccumulationAndAsyncCommunication.backward). Megatron issues it asynchronously
# (``async_op=True``) and runs the same GEMM's δ (input-gradient) GEMM before waiting on it, so it is
# :attr:`Collective.under` that δ op: only the part longer than the δ GEMM adds time.
SP_REGATHER = "input-regather"


def _tp_collectives(activation_bytes: float, tp: int, sequence_parallel: bool,
                    column_parallel: dict[str, tuple[str, ...]]) -> tuple[tuple[Collective, ...], tuple[Collective, ...]]:
    """The layer's TP collectives forward and backward; ``column_parallel``: per sub-block (attn, mlp) the
    ops of its column-parallel GEMM, whose δ hides that GEMM's re-gather under sequence parallelism."""
    if tp == 1:
        return (), ()
    if sequence_parallel:
        fwd = tuple(Collective(f"{where}.{kind}", kind, "tp", activation_bytes, "F")
                    for where in ("attn", "mlp") for kind in ("all-gather", "reduce-scatter"))
        # per sub-block, last first: the row-parallel GEMM's output gradient gathered, the column-parallel
        # GEMM's input re-gathered for its weight gradient (under its δ GEMM), its input gradient reduce-scattered
        bwd = tuple(collective
                    for where in ("mlp", "attn")
                    for collective in (Collective(f"{where}.all-gather", "all-gather", "tp", activation_bytes, "B"),
                                       Collective(f"{where}.{SP_REGATHER}", "all-gather", "tp", activation_bytes, "B",
                                                  column_parallel[where]),
                                       Collective(f"{where}.reduce-scatter", "reduce-scatter", "tp",
                                                  activation_bytes, "B")))
        return fwd, bwd
    fwd = (Collective("attn.all-reduce", "all-reduce", "tp", activation_bytes, "F"),
           Collective("mlp.all-reduce", "all-reduce", "tp", activation_bytes, "F"))
    bwd = (Collective("mlp.all-reduce", "all-reduce", "tp", activation_bytes, "B"),
           Collective("attn.all-reduce", "all-reduce", "tp", activation_bytes, "B"))
    return fwd, bwd


def embedding_work(c: TransformerConfig, micro_batch: int, tp: int = 1, sequence_parallel: bool = False,
                   dtype: str = "fp16") -> Work:
    """The first stage's input: the vocabulary-parallel token lookup (each TP rank gathers the rows it
    holds for all T tokens), learned positions, and embedding dropout (Megatron's ``--hidden-dropout``:
    none when the model does not drop hidden states); backward accumulates the gradient into the (zeroed)
    local table. TP collectives of T·h fp16 elements, as Megatron-LM runs them (Megatron-Core 0.20.0;
    ``VocabParallelEmbedding.forward`` in ``megatron/core/tensor_parallel/layers.py``,
    ``LanguageModelEmbedding.forward`` in ``models/common/embeddings/language_model_embedding.py``):
    without sequence parallelism an all-reduce forward (``reduce_from_tensor_model_parallel_region``,
    nothing backward). With it and no position table (rotary or none, no token types:
    :func:`reduce_scatters_embedding`) a reduce-scatter forward and an all-gather backward
    (``reduce_scatter_to_sequence_parallel_region``); with learned positions the all-reduce stays, the
    positions are added on all T tokens and ``scatter_to_sequence_parallel_region`` splits the sum (no
    collective forward, an all-gather backward). Under sequence parallelism the rank's T/t tokens are
    copied once (``clone_scatter_output_in_embedding``, on by default: read and write, forward only) and
    the dropout runs on them. Elements of the training dtype ``dtype``."""
    tokens, h = c.seq * micro_batch, c.hidden
    sp = sequence_parallel and tp > 1
    scattered = reduce_scatters_embedding(c, tp, sequence_parallel)
    local = tokens // tp if sp else tokens  # tokens after the scatter (the dropout's)
    vocab = padded_vocab(c.vocab, tp) // tp
    positions = 1 if c.positions else 0
    lookup = (vector_op("embedding", "F", (2 + 2 * positions) * tokens * h),)
    gradient = (vector_op("embedding", "G", vocab * h + (2 + positions) * tokens * h),)
    forward: tuple[TrainingOp, ...] = lookup
    backward: tuple[TrainingOp, ...] = gradient
    if c.scaled_embeddings:  # Gemma: the rows times √hidden, one elementwise kernel each way (read, write)
        scaled = local if scattered else tokens  # on the lookup's output, reduce-scattered or not
        scale_f, scale_d = memory_op("embedding_scale", 2 * scaled * h, 2 * scaled * h)
        forward, backward = (*forward, scale_f), (scale_d, *backward)
    if sp:
        forward = (*forward, vector_op("embedding_clone", "F", 2 * local * h))
    if c.drops_hidden:
        dropout = (2 + dtype_elements(1, dtype)) * local * h  # read, write and the 1-byte mask
        forward = (*forward, vector_op("embedding_dropout", "F", dropout))
        backward = (vector_op("embedding_dropout", "D", dropout), *backward)
    activation = tokens * h * 2
    if tp == 1:
        return Work(forward, backward)
    kind = "reduce-scatter" if scattered else "all-reduce"
    coll_f = (Collective(f"embedding.{kind}", kind, "tp", activation, "F"),)
    coll_b = (Collective("embedding.all-gather", "all-gather", "tp", activation, "B"),) if sp else ()
    return Work(forward, backward, coll_f, coll_b)


def reduce_scatters_embedding(c: TransformerConfig, tp: int, sequence_parallel: bool) -> bool:
    """Whether Megatron reduce-scatters the word embeddings into the sequence-parallel region instead of
    all-reducing them: ``LanguageModelEmbedding``'s ``reduce_scatter_embeddings`` — sequence parallelism
    (on a TP group of more than one) and no learned position table or token types to add to all T tokens
    first."""
    return sequence_parallel and tp > 1 and not c.positions and not c.type_vocab


def head_work(c: TransformerConfig, micro_batch: int, tp: int = 1, sequence_parallel: bool = False,
              dtype: str = "fp16") -> Work:
    """The last stage's output: final norm, the (vocabulary-parallel) LM head GEMM and the fused
    vocabulary-parallel cross-entropy in fp32 over T·V/t logits, in elements of the training dtype
    ``dtype`` (:func:`~archsim.training.kernel_bytes.cross_entropy_elements`: forward the cast to fp32
    unless training in it, a max, the exponentials and their sum; backward softmax − one-hot in place).
    Megatron runs it unfused (26 kernels, 38 and 14 bytes per logit in fp16: `benchmarks/unfused_loss.py`); priced that way, vTrain's held-out runs at the
    stored constants came out worse (docs/accuracy.md). The head is Megatron's ``ColumnParallelLinear``
    (``GPTModel.output_layer``): without sequence parallelism its input's gradient is all-reduced backward
    (``allreduce_dgrad``); with it the final norm runs on the rank's T/t tokens, the input is all-gathered
    forward and its gradient reduce-scattered backward (``LinearWithGradAccumulationAndAsyncCommunication``),
    T·h fp16 elements each, and the backward all-gathers the input a second time for the weight gradient,
    as the layer's column-parallel GEMMs do (:data:`SP_REGATHER`), under the head's δ GEMM."""
    tokens, h = c.seq * micro_batch, c.hidden
    sp = sequence_parallel and tp > 1
    local = tokens // tp if sp else tokens
    vocab = padded_vocab(c.vocab, tp) // tp
    f, d, g = gemm_ops("lm_head", tokens, h, vocab)
    norm_f, norm_d = memory_op("final_norm", 2 * local * h, 3 * local * h, ("ln", local, h))
    per_logit_f, per_logit_d = cross_entropy_elements(dtype)
    loss_f, loss_d = memory_op("cross_entropy", per_logit_f * tokens * vocab, per_logit_d * tokens * vocab)
    if tp == 1:
        return Work((norm_f, f, loss_f), (loss_d, d, g, norm_d))
    activation = tokens * h * 2
    gather = (Collective("lm_head.all-gather", "all-gather", "tp", activation, "F"),) if sp else ()
    coll_f = (*gather, *(Collective(f"cross_entropy.{what}", "all-reduce", "tp", tokens * 4, "F")
                         for what in ("max", "sum", "target")))
    coll_b: tuple[Collective, ...]
    if sp:
        coll_b = (Collective(f"lm_head.{SP_REGATHER}", "all-gather", "tp", activation, "B", ("lm_head",)),
                  Collective("lm_head.reduce-scatter", "reduce-scatter", "tp", activation, "B"))
    else:
        coll_b = (Collective("lm_head.all-reduce", "all-reduce", "tp", activation, "B"),)
    return Work((norm_f, f, loss_f), (loss_d, d, g, norm_d), coll_f, coll_b)


def embedding_parameters(c: TransformerConfig, tp: int = 1) -> int:
    """Token table (padded vocabulary, split over TP) and learned positions (replicated)."""
    return padded_vocab(c.vocab, tp) // tp * c.hidden + c.positions * c.hidden


__all__ = ["SP_REGATHER", "block_work", "embedding_parameters", "embedding_work", "flash_attention_ops", "head_work",
           "reduce_scatters_embedding", "residual_elements", "rope_elements"]
