"""The GPT the one-GPU measurements train (``gpu_train_measure.py``; the probe's host rows), in plain PyTorch:
the model of the Megatron-DeepSpeed runs archsim's kernel efficiencies were fitted on (tests/data/e2e,
docs/accuracy.md):

* token + learned position embedding (vocabulary 50,257 padded to 50,304 as Megatron pads it to a
  multiple of 128), embedding dropout; activations in Megatron's [sequence, batch, hidden] layout;
* L pre-LN transformer layers: LayerNorm, one fused QKV linear, scores by ``baddbmm`` with the
  1/√d scale, causal mask (−10,000) and softmax, attention dropout, context by ``bmm``, output
  projection, dropout + residual; LayerNorm, h → 4h linear, GeLU (tanh form, as Megatron's fused
  bias-GeLU), 4h → h linear, dropout + residual; dropout 0.1 everywhere (Megatron's default);
* ``attention="flash"``: the scores, mask, softmax, attention dropout and context replaced by PyTorch's
  ``scaled_dot_product_attention`` (causal, dropout 0.1 in the kernel) on its FlashAttention-2 backend alone
  (``sdpa_kernel(FLASH_ATTENTION)``: an error, not another kernel, where it cannot run), q, k, v passed as
  [b, n, s, d] views of the QKV output and the context permuted back to [s, b, h] (one copy);
* final LayerNorm, LM head tied to the token embedding, cross-entropy on the fp32 copy of the fp16
  logits (Megatron's default, ``fp16_lm_cross_entropy`` off);
* ``model.recompute = "full"`` wraps each transformer layer in ``torch.utils.checkpoint``
  (use_reentrant=False; its input kept, its forward rerun in the backward), ``"none"`` keeps every activation.

Not as Megatron: no fused kernels (apex LayerNorm, fused scale-mask-softmax, fused bias-GeLU and
bias-dropout-add): PyTorch's own kernels, so more memory-bound launches.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

MODELS = ("configs/transformers/gpt_1024h_24l.json", "configs/transformers/gpt_2048h_20l.json")
VOCAB_MULTIPLE = 128  # Megatron's make_vocab_size_divisible_by (× TP = 1)


@dataclass(frozen=True)
class Shape:
    """A GPT to train: hidden size, heads, layers, sequence length, vocabulary (unpadded), FFN width."""

    name: str
    hidden: int
    heads: int
    layers: int
    seq: int
    vocab: int
    ffn: int

    @property
    def padded_vocab(self) -> int:
        return -(-self.vocab // VOCAB_MULTIPLE) * VOCAB_MULTIPLE


def load_shape(path: str | Path, seq: int = 1024) -> Shape:
    """A shipped Hugging Face-style GPT-2 config (n_embd, n_head, n_layer, vocab_size, n_inner)."""
    spec = json.loads(Path(path).read_text())
    hidden = int(spec["n_embd"])
    return Shape(Path(path).stem, hidden, int(spec["n_head"]), int(spec["n_layer"]), seq,
                 int(spec["vocab_size"]), int(spec.get("n_inner") or 4 * hidden))


TINY = (Shape("tiny_64h_2l", 64, 4, 2, 32, 1000, 256), Shape("tiny_96h_3l", 96, 4, 3, 32, 1000, 384))


def archsim_config(shape: Shape):
    """archsim's :class:`~archsim.workload.transformer.TransformerConfig` of the same GPT (learned positions
    at its sequence length, LM head tied), for the op lists archsim lowers it into."""
    from archsim.workload.transformer import TransformerConfig

    return TransformerConfig(shape.name, "gpt", shape.layers, shape.hidden, shape.heads, shape.vocab, shape.seq,
                             shape.ffn, shape.heads, True, shape.seq)


ATTENTIONS = ("standard", "flash")


def build_model(torch, shape: Shape, dtype, device: str, dropout: float = 0.1, attention: str = "standard"):
    """The GPT of the module docstring, parameters in ``dtype`` on ``device`` (normal(0, 0.02) weights);
    ``attention`` standard (Megatron's core in plain PyTorch) or flash (SDPA's FlashAttention-2 backend)."""
    if attention not in ATTENTIONS:
        raise ValueError(f"attention {attention!r}: one of {', '.join(ATTENTIONS)}")
    nn, functional = torch.nn, torch.nn.functional
    from torch.utils.checkpoint import checkpoint  # looked up per call: bench_checkpoint_host.py swaps it

    def standard_context(q, k, v, mask, training: bool):
        """[b·n, s, d] context by Megatron's core in plain PyTorch: baddbmm scores (1/√d), mask, softmax,
        dropout, bmm; q, k, v [s, b·n, d]."""
        q, k, v = (t.transpose(0, 1) for t in (q, k, v))  # [b·n, s, d]
        s, d = q.shape[1], q.shape[2]
        scores = torch.baddbmm(torch.empty(q.shape[0], s, s, dtype=q.dtype, device=q.device), q, k.transpose(1, 2),
                               beta=0.0, alpha=1.0 / math.sqrt(d))
        probs = torch.softmax(scores.masked_fill(mask, -10000.0), dim=-1)
        return torch.bmm(functional.dropout(probs, dropout, training), v)

    def flash_context(q, k, v, b: int, training: bool):
        """[b·n, s, d]-ordered context (as [b, n, s, d]) by SDPA's FlashAttention-2 backend alone; q, k, v
        [s, b·n, d] passed as strided [b, n, s, d] views, no copy."""
        from torch.nn.attention import SDPBackend, sdpa_kernel

        s, bn, d = q.shape
        q, k, v = (t.reshape(s, b, bn // b, d).permute(1, 2, 0, 3) for t in (q, k, v))
        backends = [SDPBackend.FLASH_ATTENTION] if q.is_cuda else [SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]
        with sdpa_kernel(backends):  # the CPU's flash has no dropout: its math stands in (tests only)
            return functional.scaled_dot_product_attention(q, k, v, dropout_p=dropout if training else 0.0,
                                                           is_causal=True)

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            h = shape.hidden
            self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
            self.qkv, self.proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
            self.fc1, self.fc2 = nn.Linear(h, shape.ffn), nn.Linear(shape.ffn, h)
            self.heads, self.head_dim = shape.heads, h // shape.heads

        def forward(self, x, mask):  # x: [s, b, h]
            s, b, h = x.shape
            n, d = self.heads, self.head_dim
            q, k, v = self.qkv(self.ln1(x)).view(s, b * n, 3 * d).split(d, dim=-1)  # Megatron's [s, b·n, 3d] split
            if attention == "flash":
                context = flash_context(q, k, v, b, self.training)  # [b, n, s, d]
            else:
                context = standard_context(q, k, v, mask, self.training)  # [b·n, s, d]
            context = context.reshape(b, n, s, d).permute(2, 0, 1, 3).reshape(s, b, h)  # one copy to [s, b, h]
            x = x + functional.dropout(self.proj(context), dropout, self.training)
            mlp = self.fc2(functional.gelu(self.fc1(self.ln2(x)), approximate="tanh"))
            return x + functional.dropout(mlp, dropout, self.training)

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte = nn.Embedding(shape.padded_vocab, shape.hidden)
            self.wpe = nn.Embedding(shape.seq, shape.hidden)
            self.layers = nn.ModuleList(Layer() for _ in range(shape.layers))
            self.ln_f = nn.LayerNorm(shape.hidden)
            mask = torch.ones(shape.seq, shape.seq, dtype=torch.bool, device="cpu").triu(1)  # True above the diagonal
            self.register_buffer("mask", mask.to(device), persistent=False)
            self.recompute = "full"

        def forward(self, tokens, labels):  # [b, s] each
            positions = torch.arange(tokens.shape[1], device=tokens.device)
            x = (self.wte(tokens) + self.wpe(positions)).transpose(0, 1).contiguous()  # [s, b, h]
            x = functional.dropout(x, dropout, self.training)
            for layer in self.layers:
                if self.recompute == "full":
                    x = checkpoint(layer, x, self.mask, use_reentrant=False)
                else:
                    x = layer(x, self.mask)
            logits = functional.linear(self.ln_f(x), self.wte.weight)  # tied LM head: [s, b, V]
            return functional.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.t().reshape(-1))

    with torch.device(device):
        model = GPT()
    for name, p in model.named_parameters():
        if name.endswith("bias"):
            torch.nn.init.zeros_(p)
        elif "ln" in name:
            torch.nn.init.ones_(p)
        else:
            torch.nn.init.normal_(p, 0.0, 0.02)
    return model.to(dtype).train()
