"""One dtype rule for a device TOML (archsim.device_toml.device_toml_dtype) beyond cost, energy and gemm
(tests/test_device_toml_dtype.py): pipeline, schedule and archsim.profile price it at train's default, fp16 (2 bytes
a word), without --dtype; a SCALE-Sim .cfg keeps its 1-byte word. Failed before: the three priced it at int8."""

import json
from pathlib import Path

import pytest

import archsim
from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
TPU = str(ROOT / "configs" / "devices" / "tpu_v4_like.toml")


def _json(capsys, *argv):
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_pipeline_prices_a_device_toml_as_train_does(capsys):
    """Without --dtype: --dtype fp16's stages and bytes, twice int8's bytes (2 bytes a word, not 1)."""
    base = ("pipeline", "layerpipe_sample", "--config", TPU, "--processors", "4")
    plain, fp16, int8 = (_json(capsys, *base, *flags) for flags in ((), ("--dtype", "fp16"), ("--dtype", "int8")))
    assert plain["rows"] == fp16["rows"] and plain["meta"] == fp16["meta"]
    assert plain["meta"]["dtype"] == "fp16" and plain["meta"]["element_bytes"] == 2
    assert plain["meta"]["mandatory_comm_bytes"] == 2 * int8["meta"]["mandatory_comm_bytes"]
    assert "--dtype fp16" not in capsys.readouterr().err  # no note asking for the flag


@pytest.mark.filterwarnings("ignore")
def test_schedule_prices_a_device_toml_as_train_does(capsys):
    base = ("schedule", "layerpipe_sample", "--config", TPU, "--policy", "gpipe", "--microbatches", "4")
    plain, fp16, int8 = (_json(capsys, *base, *flags) for flags in ((), ("--dtype", "fp16"), ("--dtype", "int8")))
    assert plain == fp16 and plain["meta"]["element_bytes"] == 2
    # activations of 2 bytes a word where int8's are 1: the peak stash doubles
    assert plain["rows"][0]["peak_activation_bytes"] == 2 * int8["rows"][0]["peak_activation_bytes"]
    result = archsim.schedule("layerpipe_sample", config=TPU, policy="gpipe", microbatches=4)
    assert result.to_dict()["meta"]["element_bytes"] == 2


@pytest.mark.filterwarnings("ignore")
def test_profile_prices_a_device_toml_as_train_does():
    plain, fp16, int8 = (archsim.profile("layerpipe_sample", config=TPU, **dtype)
                         for dtype in ({}, {"dtype": "fp16"}, {"dtype": "int8"}))
    assert list(plain.activation_bytes) == list(fp16.activation_bytes)
    assert list(plain.activation_bytes) == [2 * b for b in int8.activation_bytes]


def test_a_scalesim_cfg_keeps_its_one_byte_word(capsys):
    cfg = str(ROOT / "configs" / "devices" / "scalesim_32x32_device.cfg")  # a .cfg device file
    plain = _json(capsys, "pipeline", "layerpipe_sample", "--config", cfg, "--processors", "4")
    assert plain["meta"]["dtype"] == "int8" and plain["meta"]["element_bytes"] == 1
