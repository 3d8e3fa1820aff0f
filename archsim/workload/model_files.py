"""Model files → :class:`~archsim.workload.transformer.TransformerConfig`: the one place a transformer's
file is read (plain text, nothing downloaded), by its suffix — a Hugging Face ``config.json`` or a short
``[transformer]`` TOML table::

    [transformer]
    family = "gpt"        # gpt | opt | llama | bert
    layers = 24
    hidden = 2048
    heads = 16
    vocab = 50257
    seq = 2048            # sequence length (tokens per sample); --dim seq=N overrides
    ffn = 8192            # optional: default 4 × hidden (llama: required)
    kv_heads = 16         # optional: grouped-query attention (default heads)
    head_dim = 128        # optional, llama only unless hidden / heads: features per attention head
    tied_embeddings = true
    sliding_window = 4096 # optional, not bert: a query attends to the keys 0 ≤ q − k < window (Mistral)

A ``config.json`` is read for ``model_type`` gpt2, opt, llama/mistral/qwen2/qwen3/gemma (``head_dim`` read
as the attention width; Qwen2's q, k, v biases, Qwen3's q and k norms, Gemma's GeGLU and √hidden-scaled tied
embeddings), bert and switch_transformers; gemma2, gemma3 and sparse mixture-of-experts decoders (Mixtral,
Qwen-MoE, DeepSeek) are refused by name. Every field that changes the work is read, or refused when set to
a value archsim does not model; the fields that change no work are listed in docs/formats.md. The notes
``train`` and ``search`` print about what a file left unsaid (a rotary model's sequence, its
``torch_dtype``) are here too."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from archsim.console import keyed
from archsim.errors import InputError
from archsim.toml_errors import locate, parse_toml
from archsim.validate import check_name, did_you_mean, parse_json, read_text, shown
from archsim.value_parsers import parse_seq
from archsim.workload.config_fields import get_key, head_dim_channels
from archsim.workload.hf_config import from_hf
from archsim.workload.transformer import FAMILIES, TransformerConfig, check_positions

# The keys a transformer config TOML may hold; any other is refused (docs/formats.md lists them under
# "Transformer configs").
TOML_KEYS = {"family", "layers", "hidden", "heads", "vocab", "seq", "ffn", "kv_heads", "tied_embeddings",
              "name", "type_vocab", "sliding_window", "head_dim"}


MODEL_SUFFIXES = (".toml", ".json")  # a transformer config's file kinds, in the order a shipped name is looked up
# Networks the array commands read, by suffix: given as a transformer MODEL they are refused as what they are,
# not parsed as TOML (a CSV's "not valid TOML", an ONNX file's "not UTF-8 text")
NETWORK_SUFFIXES = {".onnx": "an ONNX network", ".csv": "a topology CSV", ".py": "a PyTorch file",
                    ".pt": "a PyTorch checkpoint", ".pth": "a PyTorch checkpoint", ".cfg": "a SCALE-Sim array config"}


def transformer_path(model: str | Path) -> Path:
    """The file a MODEL names (train, search, the API and a device sweep's ``model``): a path that exists
    wins; else a config shipped in ``configs/transformers/`` by its stem (``gpt3_1.3b``) or file name
    (``gpt2.json``); else an InputError listing the shipped names, as sweep specs have always taken them."""
    from archsim.validate import check_file_ending, check_operand, exists, shipped_file, shipped_names

    path = Path(model)
    text = str(model)
    check_operand(text, "MODEL", "a transformer config's", shipped_names("transformers", MODEL_SUFFIXES))
    if not (exists(path) and path.is_dir()):  # a folder's config.json is load_transformer's to point at; a file
        check_file_ending(text, "transformer config")  # is named without "/" (exists: a name the OS refuses is no folder)
    if exists(path) or "/" in text or "\\" in text or not text.isprintable():
        return path  # a path: read as given (read_text's error when missing)
    found = shipped_file("transformers", text, ("",) if path.suffix.lower() in MODEL_SUFFIXES else MODEL_SUFFIXES,
                         "transformer config", field="MODEL")
    if found is None:
        raise InputError(f"{shown(text)}: no such file, and no shipped transformer of that name{_array_network(text)}; "
                         f"shipped: {', '.join(shipped_names('transformers', MODEL_SUFFIXES))}", field="MODEL")
    return found


def _array_network(name: str) -> str:
    """Why a shipped network's name (``bert_large``, ``resnet50``: what ``cost`` and ``energy`` take) is no MODEL, for
    the refusal of it: those are topology CSVs the array commands cost; ``train`` and ``search`` build a transformer
    from its config (a BERT's Hugging Face ``config.json``), so a user who costed ``bert_large`` knows what to give."""
    from archsim.workload.shipped import shipped_networks

    if name not in shipped_networks():
        return ""
    return (f" ({name} is a shipped topology CSV for the array commands, cost, energy, pipeline and schedule, not a "
            "transformer config: train and search take a Hugging Face config.json, a BERT's for BERT, or a "
            "[transformer] TOML)")


def load_transformer(path: str | Path, *, seq: int | None = None, seq_dim: bool = False) -> TransformerConfig:
    """A Hugging Face ``config.json`` or a ``[transformer]`` TOML table (module docstring), by path or by a
    shipped name (:func:`transformer_path`). ``seq_dim``: ``seq`` came as ``--dim seq=N`` (the array commands,
    ``import``; ``dim`` in the API), so a refusal of it names that setting, not ``--seq``."""
    path = transformer_path(path)
    file = str(path)
    kind = NETWORK_SUFFIXES.get(path.suffix.lower())
    if kind is not None:
        raise InputError(f"{kind}, not a transformer config: train and search take a Hugging Face config.json or a "
                         "[transformer] TOML; networks go to the array commands (cost, pipeline, schedule, energy)",
                         file=file)
    if path.is_dir() and (path / "config.json").is_file():  # a folder as transformers' from_pretrained takes it
        raise InputError(f"a folder, not a transformer config; give the config.json in it ({path / 'config.json'})",
                         file=file)
    text = read_text(path, "transformer config")
    document = parse_json(text, file) if path.suffix.lower() == ".json" else parse_toml(text, file)
    if not isinstance(document, dict):
        raise InputError("expected a JSON object", file=file)
    if seq is not None:  # the setting's range, said as the setting's, not the file's
        try:
            parse_seq(seq)
        except ValueError as exc:
            raise InputError(str(exc), field="dim" if seq_dim else "seq") from None
    try:
        config = _from_toml(document, path) if path.suffix.lower() == ".toml" else from_hf(document, path)
        if seq is not None and seq_dim:  # else the config's own check names --seq (seq=)
            check_positions(config.name, config.seq_limit, seq, keyed("dim", "seq", placeholder="N"), "dim")
        return config if seq is None else replace(config, seq=seq)
    except InputError as exc:
        raise locate(exc.at(file=file, field=exc.where.field), document, file) from None


def default_seq_note(config: TransformerConfig, path: str | Path, seq: int | None, *, spec_key: str | None = None) -> str:
    """The note ``train`` and ``search`` print on a rotary model's sequence (tokens) against its
    ``max_position_embeddings``. Defaulted to it: that is the longest context it takes (Llama-3.1's 131,072,
    Qwen3's 40,960), not a length it trains at, so the figures would be for a run few intend. A ``seq`` past it
    (100,000 against 8,192): rotary positions have no table, so it runs, but the model was trained to fewer
    positions. GPT-2's, OPT's and BERT's learned position tables are their training length (a longer seq is
    refused): no note. '' when there is nothing to say; it names the setting as the caller spells it
    (``seq=N`` from Python: :func:`archsim.console.setting`), or as a sweep spec's key ``spec_key`` (``seq = N``)."""
    from archsim.console import setting

    def named(value: object = None, placeholder: str | None = None) -> str:
        if spec_key is None:
            return setting("seq", value, placeholder=placeholder)
        return f"the spec's {spec_key} = {placeholder if value is None else value}"

    if config.family != "llama" or Path(path).suffix.lower() != ".json":
        return ""
    if seq is not None:
        trained = load_transformer(path).seq  # the file's max_position_embeddings, read and checked already
        return "" if seq <= trained else (
            f"{named(seq)} is past max_position_embeddings {trained}: the model was trained to {trained} "
            "positions (rotary positions have no table, so the run goes on at the length asked)")
    return (f"sequence length {config.seq} tokens per sample, from max_position_embeddings: a rotary model's "
            f"longest context, not its training length; {named(placeholder='N')} sets it")


def unread_fields_note(path: str | Path) -> str:
    """The note ``train``, ``search`` and the array commands print when a ``config.json`` states fields archsim
    does not read (:func:`~archsim.workload.hf_config.unread_fields`): a field the user set that changed
    nothing should be said, not silently dropped. It names the file read by its name (``tiny_llama.json``), as the
    dtype note does (:func:`config_dtype_note`). '' for a TOML (unknown keys refused), a file that is not
    a path, or nothing to say; the file was read and checked already. A field one slip from a key archsim reads
    and the file leaves out (``num_key_value_head``) is named with that key: its default was priced instead."""
    from archsim.workload.hf_config import KNOWN_KEYS, unread_fields

    if not isinstance(path, (str, Path)) or (read := Path(transformer_path(path))).suffix.lower() != ".json":
        return ""
    document = parse_json(read_text(read, "transformer config"), str(path))
    if not isinstance(document, dict) or not (unread := unread_fields(document)):
        return ""
    absent = KNOWN_KEYS.get(str(document.get("model_type", "")).lower(), set()) - set(document)
    named = []
    for key in unread:  # a near-miss only (0.9): layer_norm_eps is GPT-2's key, not rms_norm_eps misspelt
        hint = did_you_mean(key, absent, cutoff=0.9)
        named.append(f"{key}{hint[:-1]} the file leaves it out)" if hint else key)
    effect = "a misspelt key is priced at its default" if named != unread else "they change nothing here"
    return (f"{len(unread)} field{'s' if len(unread) > 1 else ''} of {read.name} not read: {', '.join(named)} "
            f"({effect}; docs/formats.md lists the fields read, refused and changing no work)")


def config_dtype_note(config: TransformerConfig, priced: str, command: str = "train", *, model: object) -> str:
    """The note ``train`` (one iteration, ``--runs``, ``--sweep``) and ``search`` print when ``--dtype`` was not
    given and the config's ``torch_dtype`` names another of their dtypes than ``priced`` (``command``'s default):
    the figures are for a precision the model's checkpoint is not in, and nothing else says so. '' when there is
    nothing to say; it names the file ``model`` (MODEL as given) was read from, by its name (a loaded config: by
    its model's name), and the way to set the dtype as the caller spells it (``dtype='bf16'`` from Python:
    :func:`archsim.console.setting`)."""
    from archsim.choices.devices import TORCH_DTYPES
    from archsim.console import setting

    wanted = TORCH_DTYPES.get(config.torch_dtype)
    if wanted is None or wanted == priced:
        return ""
    source = transformer_path(model).name if isinstance(model, (str, Path)) else f"{config.name}'s config"
    return (f"{source} says {config.torch_dtype}; priced in {priced}, {command}'s default: give "
            f"{setting('dtype', wanted)} to price it so")


def _from_toml(document: dict, path: Path) -> TransformerConfig:
    if set(document) != {"transformer"} or not isinstance(document["transformer"], dict):
        raise InputError("expected exactly one table, [transformer]", field="transformer")
    t = document["transformer"]
    unknown = sorted(set(t) - TOML_KEYS)
    if unknown:
        raise InputError(f"unknown key; keys are {', '.join(sorted(TOML_KEYS))}", field=unknown[0])
    family = t.get("family")
    if family not in FAMILIES or family == "switch":
        raise InputError(f"expected one of {', '.join(f for f in FAMILIES if f != 'switch')} (switch: from its Hugging Face config.json), "
                         f"got {family!r}", field="family")
    hidden, heads = get_key(t, "hidden"), get_key(t, "heads")
    return TransformerConfig(
        name=check_name(t.get("name", path.stem), "name"), family=family, layers=get_key(t, "layers"), hidden=hidden, heads=heads,
        vocab=get_key(t, "vocab"), seq=get_key(t, "seq"),
        ffn=get_key(t, "ffn", None if family == "llama" else 4 * hidden),
        kv_heads=get_key(t, "kv_heads", heads), tied_embeddings=get_key(t, "tied_embeddings", family != "llama"),
        # a learned table sized to the file's seq, which states no table: any seq runs (position_limit 0; llama's
        # rotary positions have no table, None as a config.json's)
        positions=0 if family == "llama" else get_key(t, "seq"), position_limit=None if family == "llama" else 0,
        type_vocab=get_key(t, "type_vocab", 0, required=False),
        sliding_window=get_key(t, "sliding_window", required=False),
        kv_channels=head_dim_channels(t, family, heads, hidden))


