"""``archsim.validate_gpu`` run both ways on the same input (docs/api.md): the JSON ``archsim validate-gpu`` prints
(full precision; the command was there first) is the reference, and a refusal is the command's line, the library
naming keywords where the command names flags. Each of these failed before the function existed (``archsim`` had
no ``validate_gpu``)."""

from __future__ import annotations

import pytest
from api_parity_helpers import cli_error, same_json
from test_docs import ROOT

import archsim
from archsim.errors import InputError

LINEAR = "tests/data/neusight_kernels/linear.csv"
BMM = "tests/data/neusight_kernels/bmm.csv"
MEASURED = "benchmarks/results/gpu_kernels_h200.csv"
DEVICE_FILE = "configs/devices/a100_80gb_as_arrays.toml"

CASES = {  # name → (flags, keywords)
    "kernels": (["--csv", LINEAR], {"csv": LINEAR}),
    "stats, two files, fp16": (["--csv", LINEAR, BMM, "--show", "stats", "--dtype", "fp16"],
                               {"csv": [LINEAR, BMM], "show": "stats", "dtype": "fp16"}),
    "one GPU's rows": (["--csv", BMM, "--gpu", "a100-40gb-pcie"], {"csv": BMM, "gpu": "a100-40gb-pcie"}),
    "a device file, fp16": (["--csv", BMM, "--gpu", DEVICE_FILE, "--show", "kernels", "--dtype", "fp16"],
                            {"csv": BMM, "gpu": DEVICE_FILE, "show": "kernels", "dtype": "fp16"}),
    "measured, arrays view": (["--csv", MEASURED, "--show", "kernels", "--mode", "paper", "--no-split-k",
                               "--clock-mhz", "1500"],
                              {"csv": MEASURED, "show": "kernels", "mode": "paper", "no_split_k": True,
                               "clock_mhz": "1500"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_validate_gpu_gives_the_commands_json(case, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    flags, keywords = CASES[case]
    result, printed = same_json(["validate-gpu", *flags], archsim.validate_gpu, keywords, capsys)
    assert len(result) == len(printed["rows"]) and result.meta == printed["meta"]


def test_a_comma_separated_csv_is_the_list(monkeypatch):
    """``csv="a.csv,b.csv"`` is the two files, as a list keyword reads a string (api_keywords.listed)."""
    monkeypatch.chdir(ROOT)
    joined = archsim.validate_gpu(csv=f"{LINEAR},{BMM}", show="stats")
    assert joined.to_dict() == archsim.validate_gpu(csv=[LINEAR, BMM], show="stats").to_dict()
    assert joined.meta["csv"] == f"{LINEAR} {BMM}"


REFUSED = {  # name → (flags, keywords)
    "an arrays flag on NeuSight's CSV": (["--csv", LINEAR, "--mode", "exact"], {"csv": LINEAR, "mode": "exact"}),
    "a table NeuSight's CSVs lack": (["--csv", LINEAR, "--show", "streams"], {"csv": LINEAR, "show": "streams"}),
    "a device file as the GPU": (["--csv", LINEAR, "--gpu", "my-t4.toml"], {"csv": LINEAR, "gpu": "my-t4.toml"}),
    "a device file on a measured CSV": (["--csv", MEASURED, "--gpu", DEVICE_FILE], {"csv": MEASURED, "gpu": DEVICE_FILE}),
    "a device file beside a GPU flag": (["--csv", LINEAR, "--gpu", DEVICE_FILE, "--sm-count", "80"],
                                        {"csv": LINEAR, "gpu": DEVICE_FILE, "sm_count": 80}),
    "dtype on a measured CSV": (["--csv", MEASURED, "--dtype", "fp16"], {"csv": MEASURED, "dtype": "fp16"}),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_validate_gpu_refuses_as_the_command_does(case, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    flags, keywords = REFUSED[case]
    line = cli_error(["validate-gpu", *flags], capsys)
    with pytest.raises(InputError) as refused:
        archsim.validate_gpu(**keywords)
    field = refused.value.where.field
    assert line.startswith("archsim validate-gpu: error:") and f"argument --{field.replace('_', '-')}" in line
    assert "\n" not in str(refused.value) and "--" not in str(refused.value).split(";")[0]


@pytest.mark.parametrize("keywords", [{"csv": 5}, {"csv": []}, {"csv": LINEAR, "sm_count": 0},
                                      {"csv": LINEAR, "show": "all"}, {"csv": LINEAR, "no_split_k": "no"},
                                      {"csv": LINEAR, "clock_mhz": "fast"}, {"csv": LINEAR, "gpus": "t4"}])
def test_a_value_no_flag_could_give_is_one_line(keywords, monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(InputError) as refused:
        archsim.validate_gpu(**keywords)
    assert "\n" not in str(refused.value)
