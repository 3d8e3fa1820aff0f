"""The catalog A100 written as a device file trains to the catalog A100's seconds under FlashAttention-2 too:
the fused kernel's exponentials, FP32 lane work, shared-memory bound and mma.sync fraction are figures a device
states (archsim.devices.nonmatmul), the catalog's built by the same rule a file states them by."""

from pathlib import Path

import pytest

from archsim.devices.catalog import GPUS
from archsim.devices.device_file import load_device
from archsim.devices.nonmatmul import fused_matmul_fraction, nonmatmul_rates, smem_seconds
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.parallel import Parallelism
from archsim.training.run import train
from archsim.workload.model_files import load_transformer

ROOT = Path(__file__).resolve().parents[1]
CLUSTERS = ROOT / "configs" / "clusters"
MODELS = ROOT / "configs" / "transformers"
A100_FILE = ROOT / "configs" / "devices" / "a100_80gb_as_arrays.toml"
A100_CLOCK = 1410e6  # Hz


def test_the_a100_file_states_the_a100_sm_figures():
    """Hand counts from the CUDA guide's tables (nonmatmul's docstring): 108 SMs × 16 MUFU results, × 64 FP32 lanes,
    × 32 banks × 4 B, a clock; mma.sync is the A100's own instruction (all of its peak)."""
    written = load_device(A100_FILE)
    assert nonmatmul_rates(written) == (108 * 16 * A100_CLOCK, 108 * 64 * A100_CLOCK)
    assert smem_seconds(108 * 128 * A100_CLOCK, written) == 1.0
    assert fused_matmul_fraction(written) == 1.0
    catalog = GPUS["a100-80gb"]
    assert nonmatmul_rates(catalog) == nonmatmul_rates(written)
    assert smem_seconds(1e9, catalog) == smem_seconds(1e9, written)


def test_hopper_keeps_two_thirds_of_its_tensor_peak_in_flashattention_2():
    """FlashAttention-3's authors: mma.sync reaches about ⅔ of Hopper's tensor peak; the A100's is its own."""
    assert fused_matmul_fraction(GPUS["h100-80gb-sxm"]) == 2 / 3
    assert fused_matmul_fraction(GPUS["a100-80gb"]) == 1.0
    assert nonmatmul_rates(GPUS["h100-80gb-sxm"])[0] == 132 * 16 * GPUS["h100-80gb-sxm"].clock_hz


def test_a_file_without_the_figures_has_no_shared_memory_bound():
    """Absent keys: no bound, all of the peak, as a device file was before it could state them."""
    tpu = load_device(ROOT / "configs" / "devices" / "tpu_v4_like.toml")
    assert smem_seconds(1e12, tpu) == 0.0 and fused_matmul_fraction(tpu) == 1.0


@pytest.mark.parametrize("model, par", [
    ("gpt_1024h_24l.json", Parallelism(2, 2, 2, 16, 1, attention="flash")),
    ("gpt_1024h_24l.json", Parallelism(1, 4, 1, 8, 2, "selective", attention="flash")),
    ("gpt_1024h_24l.json", Parallelism(8, 1, 1, 8, 1, "full", attention="flash")),
    ("gpt_1024h_24l.json", Parallelism(1, 1, 8, 16, 2, attention="standard")),
    ("gpt_1024h_24l.json", Parallelism(2, 2, 2, 16, 1, attention="standard")),
    ("gpt_1024h_24l.json", Parallelism(1, 4, 1, 8, 2, "selective", attention="standard")),
    ("llama3_8b.toml", Parallelism(4, 2, 1, 8, 1, attention="flash")),  # GQA: 8 KV heads of 32
])
def test_the_a100_file_trains_exactly_as_the_catalog_a100(model, par):
    config = load_transformer(MODELS / model)
    results = []
    for name in ("a100_node.toml", "a100_node_device_file.toml"):
        cluster = load_gpu_cluster(CLUSTERS / name)
        machines = cluster.rank_machines(par)
        results.append(train(config, par, machines[0], machines))
    catalog, written = results
    assert written.iteration_seconds == catalog.iteration_seconds  # the same seconds, not close ones
    assert (written.forward_seconds, written.backward_seconds) == (catalog.forward_seconds, catalog.backward_seconds)
    assert written.breakdown == catalog.breakdown and written.memory == catalog.memory
    assert written.ops == catalog.ops


def test_the_flash_kernel_seconds_are_the_catalogs():
    """Op-level: FlashAttention-2's forward and backward kernels (GPT-3 1.3B's 16 heads of 128 at s = 2,048, and
    a GQA one, 32 query heads on 8 K/V heads) take the catalog A100's seconds on the file."""
    from archsim.devices.kernel_ops import op_seconds
    from archsim.training.fitted import kernels
    from archsim.training.layer_ops import flash_attention_ops

    written, catalog = load_device(A100_FILE), GPUS["a100-80gb"]
    constants = kernels(catalog.name)
    for heads, kv in ((16, 16), (32, 8)):
        ops = flash_attention_ops(2048, 128, heads, kv, dtype="bf16")
        assert list(op_seconds(ops, written, constants, "bf16")) == list(op_seconds(ops, catalog, constants, "bf16"))


@pytest.mark.parametrize("key, line, field", [
    ("gemm_efficiency = 0.824", "gemm_efficiency = 0.824\nfused_gemm_fraction = 1.5", "compute.fused_gemm_fraction"),
    ("smem_bytes_per_clock = 128", "smem_bytes_per_clock = -1", "memory.smem_bytes_per_clock"),
])
def test_bad_fused_kernel_figures_are_one_line(tmp_path, key, line, field):
    from archsim.errors import InputError

    path = tmp_path / "chip.toml"
    path.write_text(A100_FILE.read_text(encoding="utf-8").replace(key, line), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_device(path)
    assert caught.value.where.field == field and "\n" not in str(caught.value)


def test_a_file_stating_hoppers_mma_sync_share_prices_the_catalog_h100s_flash_kernels():
    """The H100's SM as a file states it: 128 FP32 lanes, 16 / 128 exponentials a lane, 128 B of shared memory and
    ⅔ of the tensor peak (0.6666666666666666 as TOML writes it) — the catalog H100's fused kernel seconds."""
    from dataclasses import replace

    from archsim.devices.device import VectorUnit
    from archsim.devices.kernel_ops import op_seconds
    from archsim.training.fitted import kernels
    from archsim.training.layer_ops import flash_attention_ops

    catalog = GPUS["h100-80gb-sxm"]
    written = replace(catalog, catalog=None, efficiency=kernels(catalog.name), vector=VectorUnit(128, exp_per_clock=0.125),
                      smem_bytes_per_clock=128.0, fused_gemm_fraction=float("0.6666666666666666"))
    ops = flash_attention_ops(4096, 128, 32, 8, dtype="bf16")
    assert list(op_seconds(ops, written, written.efficiency, "bf16")) == list(
        op_seconds(ops, catalog, kernels(catalog.name), "bf16"))


@pytest.mark.parametrize("cluster", ["a100_node.toml", "a100_node_device_file.toml"])
def test_fp32_flashattention_is_refused_on_a_tiles_file_as_on_the_catalog_gpu(capsys, cluster):
    """FlashAttention-2 takes fp16 and bf16 only (flash_api.cpp: "FlashAttention only support fp16 and bf16 data
    type"), on any GPU its library runs on: the A100 written as a ``gemm = "tiles"`` file refuses ``--dtype fp32
    --attention flash`` in the catalog A100's one line, in train, search and the API alike (until 2026-12-04 the
    file priced it, 13.9 s for GPT-3 1.3B at TP 2 × PP 2 × DP 2, where the catalog GPU refused it)."""
    import archsim
    from archsim.cli import main
    from archsim.errors import InputError

    argv = [str(MODELS / "gpt3_1.3b.toml"), "--cluster", str(CLUSTERS / cluster), "--global-batch", "8",
            "--dtype", "fp32"]
    assert main(["train", *argv, "--tp", "2", "--pp", "2", "--attention", "flash"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no fp32 kernel time (FlashAttention runs fp16/bf16)" in err
    assert "--attention standard" in err
    assert main(["search", *argv]) == 2  # search's default attention is flash
    assert "FlashAttention runs fp16/bf16" in capsys.readouterr().err
    with pytest.raises(InputError, match="attention='standard'"):
        archsim.train(MODELS / "gpt3_1.3b.toml", cluster=CLUSTERS / cluster, global_batch=8, tp=2, pp=2,
                      dtype="fp32", attention="flash")
    assert main(["train", *argv, "--tp", "2", "--pp", "2", "--attention", "standard"]) == 0  # unfused runs
    capsys.readouterr()


@pytest.mark.parametrize(("extra", "field", "line"), [("", "dtype", 6), ('attention = "flash"\n', "attention", 7)])
def test_a_device_sweep_in_fp32_on_the_tiles_file_is_refused_at_the_specs_key(tmp_path, capsys, extra, field, line):
    """The same refusal from a device sweep's spec (dtype = "fp32" on the A100 file, flash its default): at the
    spec's line, naming the key to write, before any point runs; until 2026-12-04 the first point stopped the sweep
    with train's flag, "use --attention standard", with no file or line."""
    from archsim.cli import main

    spec = tmp_path / "s.toml"
    spec.write_text(f'[sweep]\nmodel = "gpt3_1.3b"\ndevice = "{A100_FILE.stem}"\nchips = [8]\nglobal_batch = 8\n'
                    f'dtype = "fp32"\n{extra}')
    assert spec.read_text().splitlines()[line - 1].startswith(field)
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{spec}, line {line}, field '{field}'" in err, err
    assert 'FlashAttention runs fp16/bf16): write attention = "standard"' in err
    assert not (tmp_path / "out").exists()
