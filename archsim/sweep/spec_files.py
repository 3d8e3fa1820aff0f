"""The files a sweep spec names: a network resolved inside the spec's folder (else a shipped name), named back as
the spec names it, and hashed so results say which bytes they costed (a changed file refused)."""

from __future__ import annotations

from pathlib import Path

from archsim.errors import InputError
from archsim.validate import is_file, read_bytes, resolve_name, spec_folder_file

# A spec's network entry ending in one of these names a file in the spec's folder, never a shipped network: a
# missing one is refused as a file, not looked up by name (workload.model_files.NETWORK_SUFFIXES is another set:
# the network files a MODEL flag refuses by kind).
FILE_NAME_SUFFIXES = (".csv", ".onnx", ".json", ".toml")


def resolve_network(name: str, spec_dir: Path, file: str) -> str:
    """A spec's network: a file inside the spec's folder (absolute path returned), else a shipped
    name. A spec is shared between people, so its paths stay inside its folder: an absolute path,
    ``..`` or a symlink out of the folder is refused, and so is a name that looks like a file but
    is none there."""
    looks_like_file = Path(name).suffix.lower() in FILE_NAME_SUFFIXES or "/" in name or "\\" in name
    if looks_like_file or is_file(spec_dir / name):
        try:  # the line names the spec, as an array file's does
            candidate = resolve_name(spec_dir, name, "", "network file", field="networks")
            return str(spec_folder_file(candidate, name, "network file"))
        except InputError as exc:
            raise exc.at(file=file, field="networks") from None
    from archsim.workload.shipped import shipped_key

    try:
        shipped_key(name, missing="no file in the spec's folder, and no")
    except InputError as exc:
        raise exc.at(file=file, field="networks") from None
    return name


def spec_named(source: str | None, path: str) -> str:
    """A file a spec names (a network or a ``.cfg`` array, resolved inside the spec's folder ``source`` is in), as
    the spec names it: relative to that folder; anything else (a shipped name) as it is."""
    folder = Path(source).parent.resolve() if source else None
    return str(Path(path).relative_to(folder)) if folder and Path(path).is_relative_to(folder) else path


def file_sha256_unless_shipped(name: str, what: str = "network") -> str:
    """SHA-256 of the bytes of the ``what`` (network, model, device) file ``name`` resolved to (an absolute path),
    or empty for a shipped name, which is no file of the working folder."""
    path = Path(name)
    if not path.is_absolute() or not is_file(path):  # a shipped name: never a file of the working folder
        return ""
    import hashlib

    return hashlib.sha256(read_bytes(path, f"{what} file")).hexdigest()


def check_unchanged(path: str, sha256: str, since: str, what: str = "network") -> None:
    """Refuse a ``what`` file (network, model, device) whose bytes are no longer those of SHA-256 ``sha256`` (or that
    is gone): results say they costed that file (column ``WHAT_sha256``). ``since``: when it was hashed (``since the
    sweep ran``). A shipped name (no hash) passes."""
    if sha256 and file_sha256_unless_shipped(path, what) != sha256:
        raise InputError(f"the {what} file changed {since} (SHA-256 differs, or it is gone); rerun the sweep",
                         file=path, field=f"{what}_sha256")
