"""A blank NETWORK or MODEL (``archsim cost ""``, ``archsim train ""``, an API call's ``""``) is refused in one line
by one check (:func:`archsim.validate.check_operand`): what the operand may be and the shipped names.

Failed before the fix: ``archsim cost ""`` (and energy, schedule, pipeline) read ``Path("")``, the working folder, as
a topology and said ``topology file not found``, naming no field."""

from __future__ import annotations

import pytest
from test_docs import ROOT
from test_robustness import clean_error, write
from tiny_search import A100_NODE

import archsim
from archsim.errors import InputError

NETWORKS = "shipped: bert_large, ffnn16, ffnn8, layerpipe_sample, resnet101, resnet50, rnn_cell, vgg16"  # layers/*.csv
# schedule takes out-of-order backprop's block network by name too, and lists it (test_schedule_network_list.py)
SCHEDULE_NETWORKS = NETWORKS.replace("bert_large, ", "bert_large, bert_large_blocks, ")
TRANSFORMERS = "shipped: " + ", ".join(sorted(p.stem for p in (ROOT / "configs" / "transformers").iterdir()))


@pytest.mark.parametrize("blank", ["", "  "])
@pytest.mark.parametrize("argv", [["cost"], ["energy"], ["schedule", "--policy", "1f1b", "--processors", "2"],
                                  ["pipeline", "--processors", "2"]])
def test_a_blank_network_is_one_line_naming_the_shipped_networks(argv, blank, capsys):
    line = clean_error(capsys, argv[0], blank, *argv[1:])
    assert line == (f"archsim {argv[0]}: error: argument NETWORK: expected a network's path or a shipped name, got "
                    f"an empty one; {SCHEDULE_NETWORKS if argv[0] == 'schedule' else NETWORKS}")


@pytest.mark.parametrize("command", ["train", "search"])
def test_a_blank_model_is_the_same_line_naming_the_shipped_configs(command, tmp_path, capsys):
    cluster = write(tmp_path / "c.toml", A100_NODE)
    line = clean_error(capsys, command, "", "--cluster", str(cluster), "--global-batch", "8")
    assert line == (f"archsim {command}: error: argument MODEL: expected a transformer config's path or a "
                    f"shipped name, got an empty one; {TRANSFORMERS}"), line


def test_the_library_names_its_argument():
    with pytest.raises(InputError, match=r"^field 'network': expected a network's path or a shipped name, got an "
                                         r"empty one; shipped: bert_large, "):
        archsim.cost("")
