"""Whether a TOML reader's error gets its key's line is decided by data the error carries
(``InputError.missing``, set where a key, section or column is found absent), not by its wording
(issue #40): :func:`archsim.toml_errors.locate` read ``exc.message.startswith("missing")``, so rewording a
message changed where the error pointed. The locate tests below failed on that code (a value error worded
"missing…" lost its line; an absent key worded otherwise would have been given one); the reader tests
hold before and after: a missing key names no line, a bad value its own (lines counted by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest

from archsim.devices.device_file import load_device
from archsim.errors import InputError
from archsim.toml_errors import locate, parse_toml
from archsim.training.cluster_file import load_gpu_cluster

ROOT = Path(__file__).resolve().parent.parent
CLUSTER = (ROOT / "configs" / "clusters" / "a100_node.toml").read_text(encoding="utf-8")
DEVICE = (ROOT / "configs" / "devices" / "tpu_v4_like.toml").read_text(encoding="utf-8")
DOCUMENT = 'name = "x"\n\n[server]\ngpus = 8\n'  # gpus: line 4


def test_a_value_error_worded_missing_keeps_its_line():
    """A bad value whose message happens to start with "missing" is still at its key's line."""
    error = InputError("missing the point: expected a positive integer", file="c.toml", field="server.gpus")
    found = locate(error, parse_toml(DOCUMENT, "c.toml"), "c.toml")
    assert found.where.line == 4 and found.message == error.message


def test_an_absent_key_worded_otherwise_has_no_line():
    """An error that says a key is absent, in any words, points at no line: the key is nowhere."""
    error = InputError("no gpus given", file="c.toml", field="server.gpus", missing=True)
    assert locate(error, parse_toml(DOCUMENT, "c.toml"), "c.toml") is error


def _line_number(text: str, start: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if line.startswith(start))


def _error(load, path: Path, text: str) -> InputError:
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load(path)
    return caught.value


@pytest.mark.parametrize(("load", "text", "key", "field"),
                         [(load_gpu_cluster, CLUSTER, "gpus = 8", "servers[1].gpus"),
                          (load_device, DEVICE, "clock_mhz = 1050", "compute.clock_mhz")], ids=["cluster", "device"])
def test_a_missing_key_has_no_line_and_a_bad_value_has_its_own(tmp_path, load, text, key, field):
    name, _, _ = key.partition(" = ")
    missing = _error(load, tmp_path / "missing.toml", text.replace(f"{key}\n", ""))
    assert missing.missing and missing.where.line is None and missing.where.field == field
    assert ", line " not in str(missing)
    bad = _error(load, tmp_path / "bad.toml", text.replace(key, f"{name} = -1"))
    assert not bad.missing and bad.where.field == field
    assert bad.where.line == _line_number(text, key) and f"line {bad.where.line}" in str(bad)
