"""A device file given to the wrong flag: ``train --config chip.toml`` (the array commands' flag) and ``cost --cluster
node.toml`` (train's) each got argparse's bare line — train's "the following arguments are required: --cluster",
cost's "unrecognized arguments" — which names neither the flag that takes the file nor the file to write. An
accelerator designer's trial (2026-12-06): each now says which flag the job takes it as, from a command and from
Python alike (one text, :func:`archsim.training.job_settings.elsewhere`)."""

from __future__ import annotations

import pytest
from api_parity_helpers import cli_error

import archsim
from archsim.errors import InputError

MODEL = "configs/transformers/gpt3_1.3b.toml"
CHIP = "configs/devices/tpu_v4_like.toml"
CLUSTER = "configs/clusters/tpu_v4_like_slice.toml"


@pytest.mark.parametrize("command", ["train", "search"])
@pytest.mark.parametrize("flag", ["--config", "--device"])
def test_train_and_search_given_a_device_flag_name_the_cluster_file(capsys, command, flag):
    layout = ["--dp", "8"] if command == "train" else []
    line = cli_error([command, MODEL, flag, CHIP, *layout, "--global-batch", "64"], capsys)
    assert line.count("\n") == 0, line
    said = "is the array commands'" if flag == "--config" else f"is no archsim {command} setting"
    assert f"{flag} {said}" in line and "--cluster CLUSTER.toml" in line
    assert '[[servers]]' in line and 'device = "FILE"' in line


@pytest.mark.parametrize("command", ["cost", "energy", "gemm"])
@pytest.mark.parametrize("flag", ["--cluster", "--device"])
def test_array_commands_given_a_cluster_flag_name_config(capsys, command, flag):
    shape = ["--m", "8", "--k", "8", "--n", "8"] if command == "gemm" else ["resnet50"]
    line = cli_error([command, *shape, flag, CLUSTER], capsys)
    assert line.count("\n") == 0, line
    said = "is archsim train's and archsim search's" if flag == "--cluster" else f"is no archsim {command} setting"
    assert "unrecognized arguments" in line and f"{flag} {said}" in line
    assert "--config FILE.toml" in line


def test_the_library_says_the_same_in_keywords():
    with pytest.raises(InputError) as caught:
        archsim.train(MODEL, config=CHIP, dp=8, global_batch=64)
    assert "config is the array commands'" in str(caught.value) and "cluster=CLUSTER.toml" in str(caught.value)
    with pytest.raises(InputError) as caught:
        archsim.cost("resnet50", cluster=CLUSTER)
    assert "cluster is archsim.train's and archsim.search's" in str(caught.value)
    assert "config=FILE.toml" in str(caught.value)
