"""Megatron's unfused LM-head loss, kernel by kernel, against bytes worked out by hand from the tensors'
dtypes in ``_VocabParallelCrossEntropy`` (fp16 logits 2 bytes, fp32 4, int64 targets and indices 8,
bool masks 1), for 6 tokens and 10 logits per token (60 logits)."""

from benchmark_scripts import load_benchmark

cross_entropy_ops = load_benchmark("unfused_loss").cross_entropy_ops  # a tried mechanism, kept beside its benchmark

TOKENS, VOCAB = 6, 10

# bytes read + written per kernel, by hand: (logits × bytes per logit) + (tokens × bytes per token)
FORWARD_BYTES = {
    "to_fp32": 60 * (2 + 4),
    "max": 60 * 4 + 6 * (4 + 8),             # values and int64 indices written
    "sub_max": 60 * (4 + 4) + 6 * 4,
    "target_lt": 6 * (8 + 1),
    "target_ge": 6 * (8 + 1),
    "target_or": 6 * (1 + 1 + 1),
    "target_clone": 6 * (8 + 8),
    "target_sub": 6 * (8 + 8),
    "target_fill": 6 * (8 + 1 + 8),
    "arange": 6 * 8,
    "target_gather": 6 * (8 + 8 + 4 + 4),
    "target_clone_logit": 6 * (4 + 4),
    "target_fill_logit": 6 * (4 + 1 + 4),
    "exp": 60 * (4 + 4),
    "sum": 60 * 4 + 6 * 4,
    "log": 6 * (4 + 4),
    "loss": 6 * (4 + 4 + 4),
    "div": 60 * (4 + 4) + 6 * 4,
}
BACKWARD_BYTES = {
    "mask_float": 6 * (1 + 4),
    "mask_rsub": 6 * (4 + 4),
    "arange": 6 * 8,
    "target_gather": 6 * (8 + 8 + 4 + 4),
    "target_sub": 6 * (4 + 4 + 4),
    "target_scatter": 6 * (8 + 8 + 4 + 4),
    "mul_grad": 60 * (4 + 4) + 6 * 4,
    "to_fp16": 60 * (4 + 2),
}


def _bytes(ops) -> dict[str, int]:
    return {op.layer.removeprefix("cross_entropy."): 2 * op.vector_elements for op in ops}  # 2-byte units


def test_one_op_per_kernel_with_hand_counted_bytes():
    forward, backward = cross_entropy_ops(TOKENS, VOCAB)
    assert len(forward) == 18 and len(backward) == 8
    assert _bytes(forward) == FORWARD_BYTES
    assert _bytes(backward) == BACKWARD_BYTES
    assert sum(FORWARD_BYTES.values()) == 3258 and sum(BACKWARD_BYTES.values()) == 1350
    assert {op.kind for op in forward} == {"F"} and {op.kind for op in backward} == {"D"}
    assert all(not op.gemms and not op.fused for op in (*forward, *backward))


def test_bytes_per_logit_are_38_forward_and_14_backward():
    """Doubling the vocabulary adds only the logit-sized traffic: cast 2+4, max 4, subtract 4+4, exp 4+4,
    sum 4, divide 4+4 = 38 bytes forward; multiply 4+4, cast back 4+2 = 14 backward."""
    small, large = cross_entropy_ops(TOKENS, VOCAB), cross_entropy_ops(TOKENS, 2 * VOCAB)
    for ops_small, ops_large, per_logit in zip(small, large, (38, 14)):
        grown = sum(2 * op.vector_elements for op in ops_large) - sum(2 * op.vector_elements for op in ops_small)
        assert grown == per_logit * TOKENS * VOCAB
