"""A sweep spec's ``device``/``model`` naming a folder beside the spec says it is a folder."""
from __future__ import annotations

from pathlib import Path

import pytest

from archsim.choices.devices import DEVICE_SUFFIXES
from archsim.errors import InputError
from archsim.sweep.device_files import spec_file


def test_device_naming_a_folder_says_it_is_a_folder(tmp_path: Path) -> None:
    (tmp_path / "adir").mkdir()
    with pytest.raises(InputError) as info:
        spec_file("adir", tmp_path, "spec.toml", "device", "devices", DEVICE_SUFFIXES)
    assert "a folder" in str(info.value)
    assert "no file in the spec's folder" not in str(info.value)


def test_unknown_device_name_still_says_no_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no file in the spec's folder"):
        spec_file("nosuchdevice", tmp_path, "spec.toml", "device", "devices", DEVICE_SUFFIXES)
