"""Two networks of a sweep spec whose rows would carry one name: results.csv names a network's rows by its file's
stem, and summary.csv and the report group by that name, so ``cnn.csv`` beside ``cnn.onnx`` (or ``a/net.csv``
beside ``b/net.csv``, or a ``vgg16.csv`` beside the shipped ``vgg16``) were averaged as one network: before the
check, the spec loaded and its summary's ``configs`` counted both files' rows under one ``cnn`` point."""

from __future__ import annotations

import json

import pytest

from archsim.errors import InputError
from archsim.sweep import load_spec

HEADER = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
SMALL = HEADER + "c1, 8, 8, 3, 3, 3, 4, 1,\nc2, 6, 6, 3, 3, 4, 8, 1,\n"
OTHER = HEADER + "c1, 8, 8, 3, 3, 3, 16, 1,\nc2, 6, 6, 3, 3, 16, 8, 1,\n"


def spec(tmp_path, networks: str):
    (tmp_path / "spec.toml").write_text(f'[sweep]\nname = "n"\nnetworks = {networks}\narrays = ["16x16"]\n'
                                        'batches = [4]\nprocessors = [2]\nmethods = ["pipedream"]\n')
    return tmp_path / "spec.toml"


@pytest.mark.parametrize("networks, files", [
    ('["cnn.csv", "sub/cnn.csv"]', {"cnn.csv": SMALL, "sub/cnn.csv": OTHER}),
    ('["vgg16", "vgg16.csv"]', {"vgg16.csv": SMALL}),
])
def test_two_networks_of_one_row_name_are_refused_naming_both(tmp_path, networks, files):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    with pytest.raises(InputError) as error:
        load_spec(spec(tmp_path, networks))
    first, second = json.loads(networks)  # the spec's own texts, in its order
    assert error.value.where.field == "networks"
    assert f"{first!r} and {second!r} would both be named" in error.value.message


def test_networks_of_distinct_row_names_load(tmp_path):
    (tmp_path / "cnn.csv").write_text(SMALL)
    (tmp_path / "cnn2.csv").write_text(OTHER)
    assert len(load_spec(spec(tmp_path, '["cnn.csv", "cnn2.csv", "vgg16"]')).networks) == 3
