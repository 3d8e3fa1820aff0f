"""Transformers from their configuration: GPT-2/GPT-3, OPT, Llama (grouped-query attention, SwiGLU), BERT,
Switch Transformers (T5's encoder–decoder with top-1 mixture-of-experts FFNs; read, and trained by the
fp32 eager op list only: :mod:`archsim.training.hf_switch_ops`). This module holds the shapes and their
arithmetic; reading a Hugging Face ``config.json`` or a ``[transformer]`` TOML into a
:class:`TransformerConfig` is :mod:`archsim.workload.model_files`'s one job.

Each block is lowered to its GEMMs per sample (one sequence of S tokens; the micro-batch is
``--batch``): the QKV projection (an fc on S rows, d → d + 2·kv_heads·head_dim), the scores
Q·Kᵀ and the context P·V (matmuls, one instance per head, S×S — the array computes the whole
square; causal masking skips no work here), softmax, the output projection, the MLP (GPT/BERT:
d → ffn → d with GELU, OPT with ReLU; Llama: gate and up d → ffn, SiLU·up, down ffn → d), residual adds and
norms (LayerNorm; Llama's RMSNorm is costed as a norm with γ and β: one d-vector per norm more
than it has). GPT and Llama end with the final norm and the LM head (d → vocab); BERT is its
encoder stack (embedding LayerNorm and layers, as the shipped ``bert_large``; no pooler or
pre-training heads). Embedding tables are lookups, not layers. :attr:`TransformerConfig.parameter_count`
is the model's exact count, not the network's: RMSNorm's γ alone, the embedding tables added (an LM
head tied to the token embedding counted once).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import lru_cache

from archsim.choices.training import MAX_SEQ
from archsim.console import setting
from archsim.errors import InputError
from archsim.validate import shown
from archsim.workload.config_checks import MLA_FIELDS, check_deepseek, check_moe_capacity, probability
from archsim.workload.layer import Network

FAMILIES = ("gpt", "opt", "llama", "bert", "switch")
OPT_POSITION_OFFSET = 2  # OPT's learned position table has 2 rows before position 0 (OPTLearnedPositionalEmbedding)
# Largest accepted sizes (documented in docs/security.md's input limits): far above any published
# model, small enough that a typo (n_layer in the billions) is refused before any layer is built.
LIMITS = {"layers": 4096, "hidden": 2**20, "heads": 4096, "vocab": 2**24, "seq": MAX_SEQ, "ffn": 2**22,
          "kv_heads": 4096, "positions": 2**20, "type_vocab": 2**16, "experts": 4096, "expert_capacity": 2**20,
          "sparse_step": 4096, "kv_channels": 2**20, "position_buckets": 4096, "position_limit": 2**20,
          "experts_per_token": 4096, "expert_ffn": 2**22, "shared_expert_ffn": 2**22, "q_lora_rank": 2**20,
          "kv_lora_rank": 2**20, "qk_nope_head_dim": 4096, "qk_rope_head_dim": 4096, "v_head_dim": 4096}
# MLP activations archsim states: one elementwise kernel each way (read x, write y; read dy, x, write dx),
# fused with the bias in Megatron's op list; gelu_new is GPT-2's, written out in eager PyTorch (8 kernels
# forward, 11 backward: archsim.training.hf_ops). Llama's gated MLP applies it to the gate.
ONE_KERNEL_ACTIVATIONS = ("gelu", "gelu_pytorch_tanh", "relu", "silu", "swish", "tanh", "sigmoid")
ACTIVATIONS = ("gelu_new", *ONE_KERNEL_ACTIVATIONS)
DEFAULT_ACTIVATION = {"gpt": "gelu_new", "opt": "relu", "llama": "silu", "bert": "gelu", "switch": "relu"}


@dataclass(frozen=True)
class TransformerConfig:
    """Shapes of a decoder (gpt, llama) or encoder (bert) stack; sizes in elements.

    ``switch`` (Switch Transformers, an encoder and a decoder of equal depth): ``layers`` counts its
    repeated blocks, each ``sparse_step`` encoder layers and as many decoder layers, the second of each
    (or the only one) a mixture of ``experts`` FFNs taking at most ``expert_capacity`` tokens of a
    sequence each; attention is ``heads`` × ``kv_channels / heads`` wide, not ``hidden``. ``llama`` may set
    ``kv_channels`` too: Hugging Face's ``head_dim`` × heads (Mistral-NeMo's 32 × 128 at hidden 5120), the
    width of the queries, the attention output and the projection's input (:attr:`attention_width`)."""

    name: str
    family: str
    layers: int
    hidden: int
    heads: int
    vocab: int
    seq: int
    ffn: int
    kv_heads: int
    tied_embeddings: bool = True
    positions: int = 0  # learned position-embedding rows (0: rotary)
    type_vocab: int = 0  # BERT's segment embeddings
    experts: int = 0  # switch: experts per sparse FFN; llama: routed experts per layer (a mixture of experts, MoE)
    expert_capacity: int = 0  # switch: most tokens of one sequence an expert takes
    sparse_step: int = 0  # switch: layers per block (one of them sparse)
    kv_channels: int = 0  # attention width heads × head_dim (switch: d_kv; llama: head_dim); 0: hidden
    position_buckets: int = 0  # switch: relative-position buckets of the attention bias
    # longest sequence (tokens) the learned position table holds: None (a config built in Python) its ``positions``
    # rows, as a config.json's n_positions / max_position_embeddings is both; 0: none stated (a [transformer] TOML's
    # positions stand in for its seq, a table it never states). seq_limit is the one figure every check reads
    position_limit: int | None = None
    sliding_window: int | None = None  # keys a query attends to (0 ≤ q − k < window, Mistral); None: all before it
    activation: str = ""  # the MLP's activation, one of ACTIVATIONS ("": the family's DEFAULT_ACTIVATION)
    attention_dropout: float | None = None  # dropout probability on the attention probabilities (None: the family's)
    hidden_dropout: float | None = None  # dropout probability on the embedding and each sub-layer's output (None: the family's)
    partial_rotary_factor: float = 1.0  # llama: the fraction of each head's dims that rotary embeddings rotate
    qkv_bias: bool = False  # llama: q, k and v projections with biases (Qwen2); gpt, opt, bert have all biases
    qk_norm: bool = False  # llama: an RMS norm over head_dim on every query and key head before RoPE (Qwen3)
    scaled_embeddings: bool = False  # llama: the token embeddings multiplied by √hidden before layer 1 (Gemma)
    torch_dtype: str = ""  # a Hugging Face config's torch_dtype as written (not priced: model_files.config_dtype_note); "": none
    experts_per_token: int = 0  # llama MoE: experts each token is routed to (top-k); 0: a dense MLP
    expert_ffn: int = 0  # llama MoE: each expert's SwiGLU width (features)
    shared_expert_ffn: int = 0  # llama MoE: the shared expert's SwiGLU width (every token, sigmoid-gated); 0: none
    # llama MoE, Megatron-Core's TransformerConfig names: each expert takes at most ⌈T·k/E·C⌉ of a rank's T tokens'
    # k·T rows (None: dropless) and, padded, exactly that many (training/moe_ops.py's expert_capacity)
    moe_expert_capacity_factor: float | None = None
    moe_pad_expert_input_to_capacity: bool = False
    # llama MoE: the busiest EP rank's routed rows over the mean, R ≥ 1, as a router's statistics give it (None: uniform)
    moe_load_imbalance: float | None = None
    # llama MoE, Megatron-Core's names: the EP all-to-alls overlapped with another micro-batch's pass in 1F1B's steady
    # state, and the shared expert's forward with the dispatcher's (training/moe_overlap.py); both off by default
    overlap_moe_expert_parallel_comm: bool = False
    moe_shared_expert_overlap: bool = False
    # DeepSeek-V2/V3's multi-head latent attention (MLA, workload/mla.py) when kv_lora_rank > 0: q through a
    # q_lora_rank latent (0: one h → heads·(nope + rope) GEMM), keys and values through a kv_lora_rank one
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0  # each query and key head's part without rotary positions
    qk_rope_head_dim: int = 0  # and its rotary part (the key's one, shared by every head)
    v_head_dim: int = 0  # each value head's width (the attention output is heads × v_head_dim)
    dense_layers: tuple[int, ...] = ()  # llama MoE: layers (0-based) with a dense SwiGLU MLP of ffn width (workload/layer_kinds.py)
    shared_expert_gate: bool = True  # the shared expert's sigmoid gate (Qwen2-MoE's); DeepSeek's shared experts have none
    router_score: str = "softmax"  # the router's score function (Megatron-Core's --moe-router-score-function): or sigmoid
    routed_scaling_factor: float = 1.0  # the routed experts' weights × this (DeepSeek's routed_scaling_factor)
    # DeepSeek-V3's multi-token prediction modules trained on the last stage (training/mtp.py; Megatron-LM's
    # --mtp-num-layers): not in parameter_count (the model's own, as DeepSeek's 671B excludes them)
    mtp_layers: int = 0

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise InputError(f"unknown family {self.family!r}; choose {', '.join(FAMILIES)}", field="family")
        for key, high in LIMITS.items():
            value = getattr(self, key)
            if key == "position_limit" and value is None:  # the positions' own rows, checked as positions
                continue
            low = 0 if key in ("positions", "type_vocab", "position_limit", "experts_per_token", "expert_ffn",
                               "shared_expert_ffn", *SWITCH_FIELDS, *MLA_FIELDS, "q_lora_rank") else 1
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise InputError(f"must be an integer in {low}…{high}, got {shown(value)}", field=key)
        switch_only = tuple(key for key in SWITCH_FIELDS if key not in ("kv_channels", "experts"))  # llama may set these
        if (self.family == "switch" and not all(getattr(self, key) for key in SWITCH_FIELDS)
                or self.family != "switch" and any(getattr(self, key) for key in switch_only)
                or self.experts and self.family not in ("switch", "llama")):
            raise InputError("experts, expert_capacity, sparse_step, kv_channels and position_buckets are set for "
                             "the switch family only, and all of them (llama may set experts and kv_channels)",
                             field="family")
        moe = (self.experts, self.experts_per_token, self.expert_ffn)
        if (self.family == "llama" and any(moe) and not (all(moe) and self.experts_per_token <= self.experts)
                or self.family != "llama" and (self.experts_per_token or self.expert_ffn)):
            raise InputError(f"a token is routed to {moe[1]} experts (top-k) of the {moe[0]}: more than there are"
                             if self.family == "llama" and all(moe) else f"a llama mixture of experts sets experts, "
                             f"experts_per_token (1…experts) and expert_ffn together, got {moe} for {self.family}",
                             field="experts_per_token")
        if self.shared_expert_ffn and not self.moe:
            raise InputError("shared_expert_ffn is a llama mixture of experts' shared expert: set experts too",
                             field="shared_expert_ffn")
        check_moe_capacity(self)
        check_deepseek(self)
        if not isinstance(self.mtp_layers, int) or isinstance(self.mtp_layers, bool) or not 0 <= self.mtp_layers <= 64:
            raise InputError(f"must be an integer in 0…64, got {shown(self.mtp_layers)}", field="mtp-layers")
        if self.mtp_layers and self.family != "llama":
            raise InputError(f"multi-token prediction is priced for llama-family models (RMS norms, Megatron-LM's "
                             f"MTP module), not {self.family}", field="mtp-layers")
        if self.kv_channels and self.family not in ("switch", "llama"):
            raise InputError(f"an attention width other than hidden is modelled for llama and switch only, not "
                             f"{self.family}", field="kv_channels")
        if self.attention_width % self.heads:
            raise InputError(f"heads ({self.heads}) must divide {'kv_channels' if self.kv_channels else 'hidden'} "
                             f"({self.attention_width})", field="heads")
        if self.family != "switch" and self.heads % self.kv_heads:  # each key/value head serves a whole query group
            raise InputError(f"kv_heads ({self.kv_heads}) must divide heads ({self.heads}): each key/value head "
                             "serves an equal group of query heads", field="kv_heads")
        if not isinstance(self.qkv_bias, bool) or (self.qkv_bias and self.family != "llama"):
            raise InputError(f"q, k and v biases are a llama option (gpt, opt and bert have every bias), got "
                             f"{shown(self.qkv_bias)} for {self.family}", field="qkv_bias")
        for key in ("qk_norm", "scaled_embeddings"):
            if not isinstance(getattr(self, key), bool) or (getattr(self, key) and self.family != "llama"):
                raise InputError(f"is a llama option, got {shown(getattr(self, key))} for {self.family}", field=key)
        if self.sliding_window is not None and (
                self.family in ("bert", "switch") or not isinstance(self.sliding_window, int)
                or isinstance(self.sliding_window, bool) or not 1 <= self.sliding_window <= LIMITS["seq"]):
            raise InputError(f"must be an integer in 1…{LIMITS['seq']} for a decoder (gpt, opt, llama), got "
                             f"{shown(self.sliding_window)} for {self.family}", field="sliding_window")
        for key in ("attention_dropout", "hidden_dropout"):
            value = getattr(self, key)
            if value is not None and not probability(value):
                raise InputError(f"expected a probability in [0, 1), got {shown(value)}", field=key)
        fraction = self.partial_rotary_factor
        if not (isinstance(fraction, (int, float)) and not isinstance(fraction, bool) and 0 < fraction <= 1):
            raise InputError(f"expected a fraction in (0, 1], got {shown(fraction)}", field="partial_rotary_factor")
        if self.family == "llama" and (self.rotary_dims < 2 or self.rotary_dims % 2):
            raise InputError(f"rotates {self.rotary_dims} of each head's {self.head_dim} dims; rotary embeddings "
                             "rotate pairs of dims, so the count must be even and at least 2", field="partial_rotary_factor")
        if self.activation and self.activation not in ACTIVATIONS:
            raise InputError(f"expected one of {', '.join(ACTIVATIONS)}, got {shown(self.activation)}", field="activation")
        check_positions(self.name, self.seq_limit, self.seq, setting("seq", placeholder="N"), "seq")

    def __hash__(self) -> int:
        """The hash dataclass gives (its fields' tuple's), worked out once and kept: every memory and time figure
        is looked up by its config (``lru_cache``), and a planned search would rehash its 28 fields millions of
        times."""
        try:
            return self.__dict__["_hash"]
        except KeyError:
            value = hash(tuple(getattr(self, f.name) for f in fields(self)))
            object.__setattr__(self, "_hash", value)
            return value

    def __getstate__(self) -> dict[str, object]:
        """The fields without the kept hash: a string hashes anew in another process (``PYTHONHASHSEED``), so an
        unpickled config works its own out."""
        return {key: value for key, value in self.__dict__.items() if key != "_hash"}

    @property
    def mlp_activation(self) -> str:
        """The MLP's activation by its Hugging Face name (the family's default unless one was read)."""
        return self.activation or DEFAULT_ACTIVATION[self.family]

    @property
    def seq_limit(self) -> int:
        """The longest sequence (tokens) this config runs, 0 for any: its learned position table's rows where it
        states them (``position_limit``, or ``positions`` where that is None: a config built in Python), else none
        (rotary positions, a TOML). One rule for a config.json, a TOML and a :class:`TransformerConfig` built by hand."""
        return self.positions if self.position_limit is None else self.position_limit

    @property
    def attention_width(self) -> int:
        """Features of all query heads together (heads × head_dim): the attention output's and the output
        projection's input width; hidden unless ``kv_channels`` sets another."""
        return self.heads * self.v_head_dim if self.mla else self.kv_channels or self.hidden

    @property
    def head_dim(self) -> int:
        """Features per attention head (query, key and value alike; MLA's value head, v_head_dim)."""
        return self.attention_width // self.heads

    @property
    def mla(self) -> bool:
        """Whether attention is DeepSeek's multi-head latent attention (:mod:`archsim.workload.mla`)."""
        return self.kv_lora_rank > 0

    @property
    def qk_head_dim(self) -> int:
        """Features per query and key head, the scores' contraction: MLA's qk_nope + qk_rope, else head_dim."""
        return self.qk_nope_head_dim + self.qk_rope_head_dim if self.mla else self.head_dim

    @property
    def drops_attention(self) -> bool:
        """Whether dropout runs on the attention probabilities: the probability read, else the family's
        default (Llama: 0, transformers' ``LlamaConfig`` default and Megatron-LM's ``examples/llama``
        script's ``--attention-dropout``; GPT's, OPT's and BERT's lists: on). At 0 PyTorch launches no
        dropout kernel and keeps no mask."""
        if self.attention_dropout is not None:
            return self.attention_dropout > 0
        return self.family != "llama"

    @property
    def drops_hidden(self) -> bool:
        """Whether dropout runs on the embedding's output and on each attention and MLP output before its
        residual add (Megatron's ``--hidden-dropout``): the probability given, else the family's default
        (Llama: 0 — transformers' ``LlamaDecoderLayer`` and ``LlamaMLP`` have no such dropout and no config
        field for one, and Megatron-LM's ``examples/llama/train_llama3_8b_h100_fp8.sh`` runs
        ``--hidden-dropout 0.0``; GPT's, OPT's and BERT's lists: on). At 0 PyTorch launches no dropout
        kernel and keeps no mask."""
        if self.hidden_dropout is not None:
            return self.hidden_dropout > 0
        return self.family != "llama"

    @property
    def rotary_dims(self) -> int:
        """Dims of each query and key head rotary position embeddings rotate: int(head_dim × fraction), as
        transformers' and Megatron's rotary embeddings size them; 0 for the families with learned or
        relative positions (GPT, OPT, BERT, Switch)."""
        if self.mla:  # MLA rotates each head's qk_rope dims alone (DeepSeek's decoupled RoPE)
            return self.qk_rope_head_dim
        return int(self.head_dim * self.partial_rotary_factor) if self.family == "llama" else 0

    @property
    def embedding_parameters(self) -> int:
        """Parameters of the lookup tables that are not layers (token table unless tied to the head)."""
        token = self.vocab * self.hidden if (self.family == "bert" or not self.tied_embeddings) else 0
        return token + (self.positions + self.type_vocab) * self.hidden

    @property
    def parameter_count(self) -> int:
        """The whole model's parameters as Megatron counts them (RMSNorm γ only, LayerNorm γ and β, a tied
        token table once, the vocabulary unpadded): the per-rank counts of
        :func:`archsim.training.memory.stage_parameters` build on the same per-layer and norm counts
        (:func:`layer_parameters`, :func:`outer_norm_parameters`)."""
        from archsim.workload.layer_kinds import kind_counts  # they read this class
        from archsim.workload.layer_parameters import layer_parameters, outer_norm_parameters, switch_parameter_count

        if self.family == "switch":
            return switch_parameter_count(self)
        head = 0 if self.family == "bert" else self.vocab * self.hidden  # the LM head (the tied table's one count)

        layers = sum(n * layer_parameters(kind) for kind, n in kind_counts(self))
        return layers + outer_norm_parameters(self) + head + self.embedding_parameters

    @property
    def moe(self) -> bool:
        """Whether every layer's MLP is a mixture of routed SwiGLU experts (Mixtral, Qwen3-MoE)."""
        return self.family == "llama" and self.experts > 0

    @property
    def active_parameter_count(self) -> int:
        """Parameters one token runs through: :attr:`parameter_count` with each layer's experts cut to the
        ``experts_per_token`` it is routed to (the router kept); a dense model's whole count."""
        from archsim.workload.layer_kinds import kind_counts  # they read this class

        idle = sum(n * (k.experts - k.experts_per_token) * 3 * k.hidden * k.expert_ffn
                   for k, n in kind_counts(self) if k.moe)  # each MoE layer's unrouted experts
        return self.parameter_count - idle

    def network(self, seq: int | None = None) -> Network:
        refuse_switch(self, "the array commands' per-sample network")
        if self.moe or self.mla:
            raise InputError("the array commands' per-sample network does not model a mixture of experts or "
                             "multi-head latent attention; train it on a GPU cluster (archsim train)", field="experts")
        from dataclasses import replace

        from archsim.workload.transformer_network import array_network

        return array_network(self if seq is None else replace(self, seq=seq))


SWITCH_FIELDS = ("experts", "expert_capacity", "sparse_step", "kv_channels", "position_buckets")


def refuse_switch(c: TransformerConfig, what: str) -> None:
    """One clear refusal for the paths that do not model Switch Transformers' encoder–decoder with experts."""
    if c.family == "switch":
        raise InputError(f"{what} does not model Switch Transformers (an encoder–decoder with experts); "
                         f"archsim trains it only with {setting('implementation', 'pytorch-eager')} "
                         f"{setting('dtype', 'fp32')} on one GPU (TP 1, PP 1)", field="family")


@dataclass(frozen=True)
class LayerWidths:
    """One transformer layer's GEMM widths (features) on one rank of a tensor-parallel group: the one
    place the array commands' per-sample network (:func:`build`) and GPU training's per-rank ops
    (:func:`archsim.training.layer_ops.block_work`) read them. Megatron's column-parallel QKV and first
    MLP GEMMs split their outputs over the group, the row-parallel projection and second MLP GEMM their
    inputs (Shoeybi et al. 2019, §3); with fewer KV heads than ranks each rank holds one."""

    hidden: int
    heads: int  # query heads on this rank
    kv_heads: int  # key/value heads on this rank
    head_dim: int
    ffn: int  # MLP width on this rank
    gated: bool  # Llama's SwiGLU (gate and up GEMMs, then down), else one GELU MLP (fc1, fc2)
    v_dim: int = 0  # each value head's width where it differs from head_dim (MLA's v_head_dim; head_dim is q's and k's)

    @property
    def value_dim(self) -> int:
        """Features per value head: ``v_dim``, else ``head_dim``."""
        return self.v_dim or self.head_dim

    @property
    def qkv(self) -> int:
        """The query, key and value features (the fused QKV projection's output): query and KV heads of head_dim,
        KV heads of the value width."""
        return (self.heads + self.kv_heads) * self.head_dim + self.kv_heads * self.value_dim

    @property
    def attention(self) -> int:
        """The attention output's features, the projection's input."""
        return self.heads * self.value_dim


@lru_cache(maxsize=4096)  # read per layer by every memory and time figure, for the same shapes
def layer_widths(c: TransformerConfig, tp: int = 1) -> LayerWidths:
    """:class:`LayerWidths` of ``c``'s layers on one of ``tp`` tensor-parallel ranks (1: the whole layer)."""
    refuse_switch(c, "Megatron's layer (and the paths built on it)")
    if c.mla:  # one key and value head per query head, q and k of qk_nope + qk_rope, v of v_head_dim
        return LayerWidths(c.hidden, c.heads // tp, c.heads // tp, c.qk_head_dim, c.ffn // tp, True, c.v_head_dim)
    return LayerWidths(c.hidden, c.heads // tp, max(c.kv_heads // tp, 1), c.head_dim, c.ffn // tp,
                       c.family == "llama")



def check_positions(name: str, limit: int, seq: int, fix: str, field: str) -> None:
    """Refuse a sequence of ``seq`` tokens past a learned position table of ``limit`` rows (0: none stated; the
    table has no row past its end), naming ``fix``, the setting that sets it as the caller spells it (``--seq N``,
    ``seq=N``, ``--dim seq=N``, ``dim={'seq': N}``), and ``field``, that setting's name."""
    if limit and seq > limit:
        raise InputError(f"{name} learns {limit} position embeddings, so it cannot run a sequence of {seq}: give "
                         f"{fix} of at most {limit}", field=field)
