"""The op list of Hugging Face's ``SwitchTransformersForConditionalGeneration`` trained in fp32 eager
PyTorch on one GPU (forward + backward, no AMP), kernel by kernel as its modules run them — what
NeuSight's ``switchxl4`` iteration ran (``--implementation pytorch-eager --dtype fp32``).

The model: T5's encoder–decoder (RMS norm before each sub-layer, q/k/v/o Linears without bias on
h → a·d_kv, no 1/√d scale, a relative-position bias added to the scores), every ``sparse_step``-th
layer's FFN a top-1 mixture of experts. One *block* (``TransformerConfig.layers`` counts them) is
``sparse_step`` encoder layers and as many decoder layers, one of each sparse; the relative-position
buckets, the masks and the token embeddings are the embedding piece, the final norms, the scaled tied
LM head, the cross-entropy and the router losses the head piece.

Elements read + written in HBM, fp32 elements (a bool byte is ¼); T = s·b tokens, X = T·h, K = T·a·d_kv,
F = T·f, S = b·a·s², E experts, n tokens routed to each expert:

==========================  =============================================  ==================================
kernel                      forward                                        backward
==========================  =============================================  ==================================
RMS norm (T5LayerNorm)      pow 2X, mean X+T, +ε 2T, rsqrt 2T,             weight's dx 2X+h, dγ 3X and X+h,
                            × rsqrt 2X+T, × γ 2X+h: 6 kernels              × rsqrt's dx 2X+T, its d 3X, X+T,
                                                                           rsqrt 3T, mean X+T, pow 2X, 3X,
                                                                           x's two uses summed 3X: 11 kernels
q, k, v heads               ``view().transpose()``: views; b > 1:          dQ, dV reshaped back 2K each; b > 1
                            ``matmul``'s copies of q, kᵀ, v 6K              dK 2K (``hf_ops.head_copies``)
position bias               ``scores += bias`` (in place): 3S              the bias's gradient summed over
                                                                           the stack's layers: 3S (self only)
softmax                     the kernel model's softmax on b·a·s × s        CUDA's dy ∘ y 3S, then the kernel 3S
dropout (p 0.1)             2.25 per element (read, write, a mask byte)    2.25
heads merged                ``transpose().contiguous()``: 2K               b > 1: the gradient's copy 2K
residual add                3X                                             the input's two uses summed 3X
ReLU                        2F                                             3F
router (sparse FFN)         jitter: uniform 1X, × 3X; Linear h → E;        jitter 3X; softmax 3·T·E; the
                            softmax, argmax, one-hot, cumsum, ≤ capacity,  max's scatter 2·T·E; the experts'
                            mask ×, max: ~2·T·E each                        gathers, scatters (table below);
                                                                           softmax's dy ∘ y 3·T·E first
experts                     clone 2X; per expert: nonzero T, gather 2nh,   per expert: gather of dY 2nh, the
                            wi, ReLU, dropout, wo, ``index_put`` 2nh;       in-place put's dX copy 2X + nh, the
                            × router probability 2X+T                      gather's zeros X + nh; E + 1 uses
                                                                           summed 3X each; probability 2X+T,
                                                                           3X, X+T
==========================  =============================================  ==================================

Assumed: a uniform router — each expert takes n = b·min(capacity, s/E) tokens (the rest pass the FFN as
the normed input times its router probability, then the residual), the decoder runs the same s tokens
as the encoder (the labels shifted right), the router z-loss and load-balancing loss run once over the
concatenated router logits of all sparse layers (ten small kernels each way on L·T·E elements). Not
modelled: the sort kernels of the embedding backward, the host's synchronisation on ``nonzero`` (its
kernels are counted, the stall is not). The head copies are BERT's (T5's q, k, v are separate Linears and
``view().transpose()`` views: transformers 4.35's module profiled on the CPU as in
tests/test_hf_backward_kernels.py).

The training fit's host time per op is stated per op of Megatron's list, which has no encoder–decoder
or experts: :func:`megatron_counterparts` counts each piece as Megatron's ops of its sub-layers.
"""

from __future__ import annotations

from archsim.lowering import TrainingOp
from archsim.training.hf_ops import OpCollector, head_copies
from archsim.training.layer_ops import block_work, embedding_work, head_work
from archsim.training.op_work import Work
from archsim.workload.transformer import TransformerConfig

BUCKET_KERNELS = 14  # T5's _relative_position_bucket on the s × s int64 grid: subtract, compare, abs, log, …
INT64 = 2  # an int64 element in fp32 elements
ROUTER_LOSS_KERNELS = (10, 10)  # z-loss (logsumexp, square, mean) and the load-balancing loss, forward and back


def routed_tokens(c: TransformerConfig, micro_batch: int) -> int:
    """Tokens one expert runs per micro-batch under a uniform router: min(capacity, s/E) of each sequence."""
    return micro_batch * min(c.expert_capacity, c.seq // c.experts)


def rms_norm(o: OpCollector, name: str, tokens: int, hidden: int) -> None:
    """T5LayerNorm: the variance in fp32 (pow, mean), +ε, rsqrt, scale, × γ: elementwise kernels, none fused."""
    x, t = tokens * hidden, tokens
    for i, elements in enumerate((2 * x, x + t, 2 * t, 2 * t, 2 * x + t, 2 * x + hidden)):
        o.fwd(f"{name}.{i}", elements)
    o.bwd(f"{name}.x_uses", 3 * x)
    # (backward runs last-first) pow's 2·x and × dy; mean's expand; rsqrt's; × rsqrt's dx, d and its sum
    for i, elements in enumerate((3 * x, 2 * x, x + t, 3 * t, x + t, 3 * x, 2 * x + t)):
        o.bwd(f"{name}.d{i}", elements)
    o.bwd(f"{name}.dgamma", 3 * x, kind="G")
    o.bwd(f"{name}.dgamma_sum", x + hidden, kind="G")
    o.bwd(f"{name}.dx", 2 * x + hidden)


def _attention(o: OpCollector, c: TransformerConfig, b: int, name: str, cross: bool) -> None:
    """A T5 attention sub-layer: norm, q/k/v (cross: k, v on the encoder's output), scores + bias,
    softmax, dropout, context, heads merged, o, dropout, residual."""
    s, h, a, d = c.seq, c.hidden, c.heads, c.head_dim
    tokens = s * b
    x, k, scores = tokens * h, tokens * c.kv_channels, b * a * s * s
    rms_norm(o, f"{name}.norm", tokens, h)
    o.bwd(f"{name}.residual_grad_sum", 3 * x)
    if cross:
        o.bwd(f"{name}.encoder_output_grad_sum", 2 * 3 * x)  # k and v add to the encoder output's gradient
    else:
        o.bwd(f"{name}.qkv_grad_sum", 2 * 3 * x)
    for proj in ("q", "k", "v"):
        o.gemm(f"{name}.{proj}", tokens, h, c.kv_channels, bias=False)
    head_copies(o, k, b, separate_k=True, prefix=f"{name}.")  # as BERT's: separate q, k, v Linears
    o.gemm(f"{name}.scores", s, d, s, b * a, weights=False, bias=False)
    o.fwd(f"{name}.position_bias", 3 * scores)
    if not cross:
        o.bwd(f"{name}.position_bias_grad_sum", 3 * scores)
    o.softmax(f"{name}.softmax", b * a * s, s)
    o.dropout(f"{name}.attn_dropout", scores)
    o.gemm(f"{name}.context", s, s, d, b * a, weights=False, bias=False)
    if b > 1:
        o.bwd(f"{name}.context_grad_copy", 2 * k)
    o.fwd(f"{name}.merge_heads", 2 * k)
    o.gemm(f"{name}.o", tokens, c.kv_channels, h, bias=False)
    o.dropout(f"{name}.dropout", x)
    o.fwd(f"{name}.residual_add", 3 * x)


def _dense_ffn(o: OpCollector, c: TransformerConfig, b: int, name: str) -> None:
    tokens = c.seq * b
    x = tokens * c.hidden
    rms_norm(o, f"{name}.norm", tokens, c.hidden)
    o.bwd(f"{name}.residual_grad_sum", 3 * x)
    _expert(o, c, name, tokens)
    o.dropout(f"{name}.dropout", x)
    o.fwd(f"{name}.residual_add", 3 * x)


def _expert(o: OpCollector, c: TransformerConfig, name: str, tokens: int) -> None:
    """``DenseActDense``: wi, ReLU, dropout, wo on ``tokens`` rows."""
    ff = tokens * c.ffn
    o.gemm(f"{name}.wi", tokens, c.hidden, c.ffn, bias=False)
    o.fwd(f"{name}.relu", 2 * ff)
    o.bwd(f"{name}.relu", 3 * ff)
    o.dropout(f"{name}.act_dropout", ff)
    o.gemm(f"{name}.wo", tokens, c.ffn, c.hidden, bias=False)


def _sparse_ffn(o: OpCollector, c: TransformerConfig, b: int, name: str) -> None:
    """Norm, the top-1 router (fp32, jitter, capacity by cumsum), each expert on its gathered tokens, the
    outputs scattered into a clone of the input, × the router probability, dropout, residual."""
    tokens, e, h = c.seq * b, c.experts, c.hidden
    x, te, n = tokens * h, tokens * e, routed_tokens(c, b)
    rms_norm(o, f"{name}.norm", tokens, h)
    o.bwd(f"{name}.residual_grad_sum", 3 * x)
    o.fwd(f"{name}.jitter_uniform", x)
    o.fwd(f"{name}.jitter_mul", 3 * x)
    o.bwd(f"{name}.jitter_mul", 3 * x)
    o.gemm(f"{name}.router", tokens, h, e, bias=False)
    o.softmax(f"{name}.router_softmax", tokens, e)
    for step in ("argmax", "one_hot", "cumsum", "capacity_le", "capacity_mul", "argmax_mask", "mask_bool"):
        o.fwd(f"{name}.router_{step}", 2 * te)
    o.fwd(f"{name}.router_max", te + tokens)
    o.bwd(f"{name}.router_max", 2 * te)
    o.fwd(f"{name}.clone", 2 * x)
    o.bwd(f"{name}.input_grad_sum", e * 3 * x)  # the clone and E gathers read the normed input
    for i in range(e):
        expert = f"{name}.expert_{i}"
        o.fwd(f"{expert}.nonzero", tokens + INT64 * n)
        o.fwd(f"{expert}.gather", 2 * n * h)
        o.bwd(f"{expert}.gather", x + n * h)
        _expert(o, c, expert, n)
        o.fwd(f"{expert}.index_put", 2 * n * h)
        o.bwd(f"{expert}.index_put_values", 2 * n * h)
        o.bwd(f"{expert}.index_put_self", 2 * x + n * h)
    o.fwd(f"{name}.router_prob_mul", 2 * x + tokens)
    o.bwd(f"{name}.router_prob_mul", 2 * x + tokens)
    o.bwd(f"{name}.router_prob_grad", 3 * x)
    o.bwd(f"{name}.router_prob_grad_sum", x + tokens)
    o.dropout(f"{name}.dropout", x)
    o.fwd(f"{name}.residual_add", 3 * x)


def switch_block_work(c: TransformerConfig, micro_batch: int) -> Work:
    """One block: ``sparse_step`` encoder layers then as many decoder layers (self-attention, cross-
    attention), the FFN of layer 1 of each (HF: ``i % sparse_step == 1``; every layer when the step is 1)
    sparse, the others dense. The two stacks run one after the other; one block stands for 1/``layers``
    of both (the iteration's sum over blocks is the same ops)."""
    o = OpCollector()
    step = c.sparse_step
    for stack in ("encoder", "decoder"):
        for i in range(step):
            layer = f"{stack}.{i}"
            _attention(o, c, micro_batch, f"{layer}.self_attn", cross=False)
            if stack == "decoder":
                _attention(o, c, micro_batch, f"{layer}.cross_attn", cross=True)
            (_sparse_ffn if step == 1 or i == 1 else _dense_ffn)(o, c, micro_batch, f"{layer}.ffn")
    return o.work()


def switch_embedding_work(c: TransformerConfig, micro_batch: int) -> Work:
    """Both stacks' token lookups from the shared table and their dropout, the decoder's input (labels
    shifted right), the masks, and each stack's relative-position bias (computed in its first layer and
    reused): T5's bucket function on the s × s grid, the bucket table's lookup, + the mask (b·a·s²); the
    decoder's cross-attention bias is zeros + the encoder's mask (no gradient)."""
    s, h, b, a = c.seq, c.hidden, micro_batch, c.heads
    tokens = s * b
    x, table, grid, scores = tokens * h, c.vocab * h, s * s, b * a * s * s
    o = OpCollector()
    for i in range(4):  # shift_right: new_zeros, copy, fill the start token, pad the -100s
        o.fwd(f"shift_right.{i}", INT64 * 2 * tokens)
    for stack in ("encoder", "decoder"):
        o.fwd(f"{stack}.token_embedding", 2 * x)
        o.bwd(f"{stack}.token_embedding", table + 2 * x, kind="G")
        o.dropout(f"{stack}.embedding_dropout", x)
        o.fwd(f"{stack}.extended_mask", 2 * b * s * (s if stack == "decoder" else 1))
        for i in range(BUCKET_KERNELS):
            o.fwd(f"{stack}.position_bucket.{i}", 2 * INT64 * grid)
        o.fwd(f"{stack}.position_lookup", INT64 * grid + a * grid)
        o.bwd(f"{stack}.position_lookup", c.position_buckets * a + INT64 * grid + a * grid, kind="G")
        o.fwd(f"{stack}.position_mask_add", a * grid + scores)
        o.bwd(f"{stack}.position_batch_sum", scores + a * grid)
    o.fwd("cross_bias_zeros", a * grid)
    o.fwd("cross_bias_mask_add", a * grid + scores)
    o.bwd("tied_grad_add", 2 * 3 * table, kind="G")  # the two lookups' and the head's gradients of one table
    return o.work()


def switch_head_work(c: TransformerConfig, micro_batch: int) -> Work:
    """Each stack's final RMS norm and dropout, the decoder output × d_model^-0.5, the tied LM head,
    cross-entropy on the unshifted logits, and the router losses over all sparse layers' logits."""
    tokens, h, v = c.seq * micro_batch, c.hidden, c.vocab
    x, logits = tokens * h, tokens * v
    router = 2 * c.layers * tokens * c.experts  # both stacks' sparse layers' T × E logits
    o = OpCollector()
    for stack in ("encoder", "decoder"):
        rms_norm(o, f"{stack}.final_norm", tokens, h)
        o.dropout(f"{stack}.final_dropout", x)
    o.fwd("head_scale", 2 * x)
    o.bwd("head_scale", 2 * x)
    o.gemm("lm_head", tokens, h, v, bias=False)
    o.fwd("log_softmax", 2 * logits, ("softmax", tokens, v))
    o.bwd("log_softmax", 3 * logits, ("softmax", tokens, v))
    o.fwd("nll_loss", tokens)
    o.bwd("nll_loss", logits)
    o.fwd("router_logits_cat", 2 * router)
    forward, backward = ROUTER_LOSS_KERNELS
    for i in range(forward):
        o.fwd(f"router_loss.{i}", 2 * router)
    for i in range(backward):
        o.bwd(f"router_loss.{i}", 2 * router)
    return o.work()


def megatron_counterparts(c: TransformerConfig, micro_batch: int) -> tuple[Work, Work, Work]:
    """Megatron's ops for the same sub-layers as the block, the embedding and the head: what the training
    fit's per-op host time is stated per (:func:`archsim.training.iteration.piece_cost`'s ``counted``).
    Megatron's list has no encoder–decoder or experts, but it has their parts: each attention sub-layer
    (3 per encoder–decoder layer pair: self, self, cross) counts as its attention ops, each FFN, dense or
    sparse, as its MLP ops, each stack's lookup as its embedding, the head as its head. Only the counts are
    used; a stand-in GPT layer with the attention's heads and width gives them (Megatron fuses the softmax
    or not by the heads and the sequence)."""
    stand_in = TransformerConfig(c.name, "gpt", 1, c.kv_channels, c.heads, c.vocab, c.seq, c.ffn, c.heads, True, c.seq)
    layer = block_work(stand_in, micro_batch)
    cut_f = [op.layer for op in layer.forward].index("residual1") + 1
    cut_b = [op.layer for op in layer.backward].index("residual1")
    attention_f, mlp_f = layer.forward[:cut_f], layer.forward[cut_f:]
    mlp_b, attention_b = layer.backward[:cut_b], layer.backward[cut_b:]
    attentions, ffns = 3 * c.sparse_step, 2 * c.sparse_step
    block = Work(attention_f * attentions + mlp_f * ffns, attention_b * attentions + mlp_b * ffns)
    embedding = embedding_work(stand_in, micro_batch)
    return block, Work(embedding.forward * 2, embedding.backward * 2), head_work(stand_in, micro_batch)


def gemm_flops(ops: tuple[TrainingOp, ...]) -> float:
    """2·m·k·n·count summed over the ops' GEMMs."""
    return float(sum(2 * g.m * g.k * g.n * g.count for op in ops for g in op.gemms))


def switch_model_flops(c: TransformerConfig, global_batch: int) -> float:
    """One iteration's model FLOPs: the forward GEMMs of every block and both ends (the experts' routed
    tokens only: the FLOPs the model runs, not those of a dense model of its parameters), × 3 for the
    backward's two GEMMs each."""
    forward = (c.layers * gemm_flops(switch_block_work(c, 1).forward) + gemm_flops(switch_embedding_work(c, 1).forward)
               + gemm_flops(switch_head_work(c, 1).forward))
    return 3.0 * forward * global_batch


def switch_activation_elements(c: TransformerConfig, micro_batch: int) -> float:
    """fp32 elements autograd keeps from one micro-batch's forward until its backward: per attention
    sub-layer the norm's input, normed output and rsqrt (2X + T), q, k, v and the merged context (4K),
    the softmax output and the dropped probabilities (2S) and the dropout masks (S/4 + X/4); per dense FFN
    the norm's, ReLU's output and the dropped activation (2F) and masks (F/4 + X/4); per sparse FFN the
    norm's, the jitter noise, the router's T × E, each expert's gathered input and its wi activations
    (n·h + 2.25·n·f), the clone and the probability (X + T) and the mask X/4; the head the log-softmax
    output and at its backward the logits' gradient (2·T·V); each stack's position bias S; the embeddings'
    dropout masks (X/4 each)."""
    s, b, h = c.seq, micro_batch, c.hidden
    t = s * b
    x, k, f, scores, n = t * h, t * c.kv_channels, t * c.ffn, b * c.heads * s * s, routed_tokens(c, b)
    norm = 2 * x + t
    attention = norm + 4 * k + 2.25 * scores + x / 4
    dense = norm + 2.25 * f + x / 4
    sparse = norm + x + t * c.experts + c.experts * (n * h + 2.25 * n * c.ffn) + x + t + x / 4
    step = c.sparse_step
    ffns = (step - 1) * dense + sparse
    block = step * attention + ffns + step * (2 * attention) + ffns
    return c.layers * block + 2 * t * c.vocab + 2 * scores + x / 2  # + the two embedding dropout masks


__all__ = ["BUCKET_KERNELS", "ROUTER_LOSS_KERNELS", "gemm_flops", "megatron_counterparts", "rms_norm", "routed_tokens",
           "switch_activation_elements", "switch_block_work", "switch_embedding_work", "switch_head_work",
           "switch_model_flops"]
