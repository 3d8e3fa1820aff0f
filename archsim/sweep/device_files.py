"""The two files a device sweep spec names (:mod:`archsim.sweep.device_spec`): its ``model`` and ``device`` found
beside the spec or shipped (:func:`spec_file`), hashed so an edited file is recomputed (:func:`file_sha256`), and
a SCALE-Sim ``.cfg`` device's stated ``Bandwidth``, which each swept ``hbm_gbps`` must restate as whole
words/cycle (:func:`check_cfg_bandwidths`).

Why apart from the spec's keys: none of it reads ``[sweep]``'s keys, and the lookup also serves an output flag's
check (:mod:`archsim.output_targets`: an output flag naming a spec's model or device file is refused).
"""

from __future__ import annotations

from pathlib import Path

from archsim.errors import InputError
from archsim.validate import (
    is_file,
    read_bytes,
    resolve_name,
    shipped_file,
    shipped_names,
    shown,
    spec_folder_file,
    suffixed_files,
)


def spec_file(name: object, spec_dir: Path, file: str, key: str, shipped: str, suffixes: tuple[str, ...]) -> str:
    """A spec's ``model`` or ``device``: a file inside the spec's folder (a name with a suffix or a
    ``/``, or an existing file there), else a shipped ``configs/SHIPPED/NAME.SUFFIX``; resolved path
    returned. Names stay inside their folder (docs/security.md)."""
    if not isinstance(name, str) or not name:
        raise InputError("expected a file name or a shipped name", file=file, field=key)
    try:
        if Path(name).suffix.lower() in suffixes or "/" in name or "\\" in name or is_file(spec_dir / name):
            candidate = resolve_name(spec_dir, name, "", f"{key} file", field=key)
            return str(spec_folder_file(candidate, name, f"{key} file"))
        if (spec_dir / name).is_dir():  # the readers' own "is not a regular file (a folder)" line
            read_bytes(spec_dir / name, f"{key} {shown(name)}")
        found = shipped_file(shipped, name, suffixes, key, field=key)
        if found is not None:
            return str(found)
    except InputError as exc:
        raise exc.at(file=file, field=key) from None
    where = f"no shipped configs/{shipped}/{name}{{{','.join(suffixes)}}}"
    beside = suffixed_files(spec_dir, name, suffixes)
    if beside:  # the spec's own file named as a shipped one is: a file is named with its suffix
        raise InputError(f"{shown(name)}: {where}, and the spec's folder has {beside[0]}, not {name}: write {key} = "
                         f'"{beside[0]}" (a file beside the spec is named with its suffix)', file=file, field=key)
    raise InputError(f"{shown(name)}: no file in the spec's folder, and {where}; shipped: "
                     f"{', '.join(shipped_names(shipped, suffixes))}", file=file, field=key)


def file_sha256(path: str) -> str:
    import hashlib

    from archsim.validate import read_bytes

    return hashlib.sha256(read_bytes(path, "file")).hexdigest()


def states_bandwidth(device_path: str) -> bool:
    """Whether a .cfg device file states SCALE-Sim's ``Bandwidth`` (SCALE-Sim's default is no statement)."""
    from archsim.array.cfg_lines import cfg_stated

    if Path(device_path).suffix.lower() != ".cfg":
        return False
    return cfg_stated(device_path).bandwidth  # load_device read it already: no error here


def cfg_words(gbps: float, clock_hz: float) -> int:
    """The whole ``Bandwidth`` (words/cycle) nearest ``gbps`` GB/s at ``clock_hz``: a point's .cfg
    states this beside ``[memory] hbm_gbps`` (the reader's conversion, :func:`words_gbps`)."""
    from archsim.array.device_sections import words_gbps

    return max(1, round(gbps / words_gbps(1, clock_hz)))


def check_cfg_bandwidths(device_path: str, clock_hz: float, hbm: tuple[float | None, ...], file: str) -> None:
    """A .cfg device that states ``Bandwidth`` has each swept ``hbm_gbps`` restated as whole words/cycle
    (:func:`cfg_words`), so every point is a file the device-file readers accept; a figure no whole
    count of words matches within their 1% is refused, naming it."""
    from archsim.array.device_sections import DEVICE_WORD_BYTES, check_bandwidth_once, words_gbps

    if not states_bandwidth(device_path):
        return
    for gbps in hbm:
        if gbps is None:
            continue
        words = cfg_words(gbps, clock_hz)
        try:
            check_bandwidth_once({"hbm_gbps": gbps}, (words,), clock_hz, device_path)
        except InputError:
            raise InputError(f"{gbps:g} GB/s is no whole Bandwidth for the .cfg device, which states one: the nearest, "
                             f"{words} words/cycle × {DEVICE_WORD_BYTES} B × {clock_hz / 1e9:g} GHz = "
                             f"{words_gbps(words, clock_hz):g} GB/s, is more than 1% off", file=file,
                             field="hbm_gbps") from None


__all__ = ["cfg_words", "check_cfg_bandwidths", "file_sha256", "spec_file", "states_bandwidth"]
