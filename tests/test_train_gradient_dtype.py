"""``archsim train`` states the gradients' width it priced: Megatron-LM keeps a bf16 run's gradients in fp32
(docs/training.md, "Gradients in bf16"), so its DP all-reduce moves 4 bytes per parameter, twice fp16's; the meta's
``gradient_dtype`` names it and the table says why beside it. Failed before: nothing in the output said so, the
all-reduce's doubled time unexplained."""

import csv
import io
import json

import pytest

from archsim.cli import main

DEVICE_NODE = "configs/clusters/a100_node_device_file.toml"  # eight GPUs given as a device file
# the rule: Megatron-LM's gradient buffer is fp32 under --bf16 (accumulate_allreduce_grads_in_fp32), else the dtype's
MEGATRON = {"bf16": "fp32", "fp16": "fp16", "fp32": "fp32"}


def _train(capsys, fmt: str, dtype: str, *extra: str) -> str:
    assert main(["train", "gpt2", "--cluster", DEVICE_NODE, "--global-batch", "8", "--dtype", dtype, "--format", fmt,
                 *extra]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32"])
def test_the_meta_names_megatrons_gradient_width(capsys, dtype):
    attention = ["--attention", "standard"] if dtype == "fp32" else []  # FlashAttention runs fp16/bf16 only
    meta = json.loads(_train(capsys, "json", dtype, "--dp", "8", *attention))["meta"]
    assert meta["dtype"] == dtype and meta["gradient_dtype"] == MEGATRON[dtype]


def test_pytorch_eager_keeps_the_runs_own_width(capsys):
    """Plain PyTorch's AMP step copies the bf16 gradient to fp32 (one GPU, no all-reduce): the gradient is bf16."""
    meta = json.loads(_train(capsys, "json", "bf16", "--implementation", "pytorch-eager"))["meta"]
    assert meta["gradient_dtype"] == "bf16"


def test_the_table_says_why_and_csv_keeps_the_name(capsys):
    lines = [line for line in _train(capsys, "table", "bf16", "--dp", "8").splitlines() if "gradient_dtype" in line]
    said = "# gradient_dtype: fp32 (Megatron-LM keeps bf16 runs' gradients in fp32: the DP all-reduce moves 4 bytes"
    assert lines == [f"{said} per parameter)"]
    (row, *_) = csv.DictReader(io.StringIO(_train(capsys, "csv", "bf16", "--dp", "8")))
    assert row["gradient_dtype"] == "fp32"
    table = _train(capsys, "table", "fp16", "--dp", "8")
    assert "# gradient_dtype: fp16\n" in table  # the run's own width: nothing to explain
