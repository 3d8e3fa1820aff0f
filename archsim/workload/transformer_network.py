"""A :class:`~archsim.workload.transformer.TransformerConfig` lowered to the per-sample network the array commands
cost (``cost``, ``energy``, ``pipeline``: one sequence of S tokens, each block's GEMMs, norms and adds as
:mod:`archsim.workload.transformer`'s docstring lists them). Its own module: the config's arithmetic does not need
the network builder."""

from __future__ import annotations

from archsim.workload.builders import NetworkBuilder
from archsim.workload.layer import Network
from archsim.workload.transformer import TransformerConfig, layer_widths, refuse_switch


def array_network(c: TransformerConfig) -> Network:
    """``c`` as the array commands cost it: one sample's layers (module docstring of
    :mod:`archsim.workload.transformer`), the MoE and Switch models refused by the caller."""
    refuse_switch(c, "the array commands' per-sample network")
    s, d, hd = c.seq, c.hidden, c.head_dim
    w = layer_widths(c)
    b = NetworkBuilder(c.name).start(s, 1, d)
    if c.family == "bert":
        b.add("emb_ln", "layernorm")
    for i in range(1, c.layers + 1):
        p = f"l{i}"
        entry = b.current
        bias = c.family != "llama"
        normed = entry if c.family == "bert" else b.add(f"{p}_ln1", "layernorm")
        qkv = b.add(f"{p}_qkv", "fc", w.qkv, bias=bias or c.qkv_bias, source=normed)
        scores_inputs = None
        if c.qk_norm:  # Qwen3: a norm over each query and key head's head_dim, as the block's other norms
            q = b.add(f"{p}_q_norm", "layernorm", source=qkv, shape=(s, c.heads, hd))
            k = b.add(f"{p}_k_norm", "layernorm", source=qkv, shape=(s, c.kv_heads, hd))
            scores_inputs = (q[0], k[0])
        b.add(f"{p}_scores", "matmul", s, repeat=c.heads, inputs=scores_inputs, source=qkv, shape=(s, hd, 1))
        probs = b.add(f"{p}_softmax", "elementwise", shape=(s, s, c.heads))
        b.add(f"{p}_context", "matmul", hd, repeat=c.heads, inputs=(probs[0], qkv[0]), shape=(s, s, 1))
        b.add(f"{p}_out", "fc", w.hidden, bias=bias, shape=(s, 1, w.attention))
        attn = b.add(f"{p}_add1", "elementwise", inputs=(f"{p}_out", entry[0]))
        normed = b.add(f"{p}_ln1", "layernorm") if c.family == "bert" else b.add(f"{p}_ln2", "layernorm")
        if w.gated:
            gate = b.add(f"{p}_gate", "fc", w.ffn, source=normed)
            up = b.add(f"{p}_up", "fc", w.ffn, source=normed)
            act = b.add(f"{p}_silu", "elementwise", source=gate)
            b.add(f"{p}_mul", "elementwise", inputs=(act[0], up[0]), source=act)
            b.add(f"{p}_down", "fc", w.hidden)
        else:
            b.add(f"{p}_ffn1", "fc", w.ffn, bias=True, source=normed)
            b.add(f"{p}_gelu", "elementwise")
            b.add(f"{p}_ffn2", "fc", w.hidden, bias=True)
        residual = attn if c.family != "bert" else normed
        b.add(f"{p}_add2", "elementwise", inputs=(b.current[0], residual[0]))
        if c.family == "bert":
            b.add(f"{p}_ln2", "layernorm")
    if c.family != "bert":
        b.add("ln_f", "layernorm")
        b.add("lm_head", "fc", c.vocab)
    return b.network()


__all__ = ["array_network"]
