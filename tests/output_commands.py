"""Small invocations of every command's output forms, for the checks that what they print is the same
in every format and documented in docs/formats.md ("Output columns")."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROFILE = str(ROOT / "tests" / "data" / "pipedream" / "profiles" / "alexnet.txt")
CLUSTER = str(ROOT / "configs" / "clusters" / "testbed_v100.toml")
# a made-up measured CSV (its header says so): only the names validate-gpu prints are checked
GPU_CSV = str(ROOT / "tests" / "data" / "gpu_kernels_columns.csv")
MODEL = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")
GPU_CLUSTER = str(ROOT / "configs" / "clusters" / "a100_node.toml")
SPARSE = ["sparse", str(ROOT / "docs" / "examples" / "pruned_convs.csv"),
          "--config", str(ROOT / "configs" / "arrays" / "scalesim_sparsity_128x128_ws.cfg")]
# a design sweep (a clock axis) small enough to run in a second: results.csv's and summary.csv's names
SWEEP_SPEC = """[sweep]
name = "columns"
networks = ["layerpipe_sample"]
arrays = ["16x16"]
batches = [16]
processors = [2]
methods = ["layerpipe"]
clocks_ghz = [1.0]
"""

# a plain sweep on a SCALE-Sim .cfg (written beside the spec as columns.cfg): its array_path column, and (its borrow
# axis) the borrow column
CFG_SWEEP_SPEC = (SWEEP_SPEC.replace('name = "columns"', 'name = "cfg_columns"')
                  .replace('methods = ["layerpipe"]\n', 'methods = ["layerpipe"]\nborrow = ["paper", "gainful"]\n')
                  .replace('arrays = ["16x16"]', 'arrays = ["columns.cfg"]').replace("clocks_ghz = [1.0]\n", ""))

# a device sweep of one point (GPT-2 on one TPU-v4-like chip, its SRAM axis given): its results.csv's names
DEVICE_SWEEP_SPEC = """[sweep]
name = "device_columns"
model = "gpt2"
device = "tpu_v4_like"
chips = [1]
sram_kib_per_array = [4096]
global_batch = 1
"""

# form name → argv (without --format); each runs in well under a second
COMMANDS: dict[str, list[str]] = {
    "cost": ["cost", "layerpipe_sample"],
    "cost --config chip.toml": ["cost", "layerpipe_sample", "--config", str(ROOT / "configs" / "devices" / "tpu_v4_like.toml")],
    "cost --energy --config chip.toml": ["cost", "layerpipe_sample", "--energy", "--config",  # energy_leakage
                                         str(ROOT / "configs" / "devices" / "tpu_v4_like.toml")],
    "energy": ["energy", "layerpipe_sample"],
    "energy (clock)": ["energy", "layerpipe_sample", "--clock-ghz", "1"],
    "energy --config chip.toml": ["energy", "layerpipe_sample", "--config",  # per_array, array_area_mm2
                                  str(ROOT / "configs" / "devices" / "tpu_v4_like.toml")],
    "energy --config with [energy]": ["energy", "layerpipe_sample", "--config",
                                      str(ROOT / "tests" / "data" / "energy_figures_32x32.cfg")],
    "gemm": ["gemm", "--m", "64", "--k", "64", "--n", "64"],
    "gemm --dtype": ["gemm", "--m", "64", "--k", "64", "--n", "64", "--dtype", "fp16"],
    "gemm --engine cycle --config chip.toml": ["gemm", "--m", "64", "--k", "64", "--n", "64", "--engine", "cycle",
                                               "--config",  # chip_hbm_floor_ops
                                               str(ROOT / "configs" / "devices" / "tpu_v4_like.toml")],
    "pipeline": ["pipeline", "layerpipe_sample", "--processors", "2", "--clock-ghz", "1"],
    "pipeline --memory": ["pipeline", "layerpipe_sample", "--processors", "2", "--microbatches", "2", "--memory",
                          "--capacity-gb", "100"],
    "schedule (layer-wise)": ["schedule", "layerpipe_sample", "--policy", "gpipe", "--processors", "2",
                              "--microbatches", "2", "--clock-ghz", "1"],
    "schedule (data parallel)": ["schedule", "layerpipe_sample", "--policy", "dp-reverse-k", "--processors", "2"],
    "schedule (multistream)": ["schedule", "layerpipe_sample", "--policy", "multistream", "--processors", "1"],
    "schedule --unit-costs": ["schedule", "ffnn8", "--policy", "gpipe", "--processors", "2", "--microbatches", "2",
                              "--unit-costs"],
    "schedule (per stage)": ["schedule", "--stages", "2", "--stage-times", "1,1,1", "--microbatches", "4",
                             "--policy", "zb-h1"],
    "plan (spp)": ["plan", PROFILE, "--cluster", CLUSTER, "--microbatches", "4"],
    "plan (pipedream)": ["plan", PROFILE, "--cluster", CLUSTER, "--microbatches", "4", "--method", "pipedream"],
    "plan (baseline)": ["plan", PROFILE, "--cluster", CLUSTER, "--microbatches", "4", "--method", "gpipe"],
    "plan (paper baselines)": ["plan", PROFILE, "--cluster", CLUSTER, "--microbatches", "4", "--baselines", "paper"],
    "plan (exact links)": ["plan", PROFILE, "--cluster", GPU_CLUSTER, "--microbatches", "4", "--links", "exact"],
    "plan (exact replication)": ["plan", "layerpipe_sample", "--cluster", CLUSTER, "--microbatches", "4",
                                 "--replication", "exact", "--baselines", "none"],
    "bppsa rnn": ["bppsa", "rnn"],
    "bppsa pruned-vgg11": ["bppsa", "pruned-vgg11", "--width-divisor", "16", "--compare-levels", "0,1"],
    "bppsa network": ["bppsa", "network", str(ROOT / "docs" / "examples" / "bppsa_chain.csv")],
    "sparse": [*SPARSE, "--energy"],
    "sparse --processors": [*SPARSE, "--processors", "2"],
    "train": ["train", MODEL, "--cluster", GPU_CLUSTER, "--tp", "4", "--pp", "2", "--global-batch", "4",
              "--micro-batch", "2"],  # the node's 8 GPUs: stderr holds no layout note
    "train (mixture of experts)": ["train", str(ROOT / "tests" / "data" / "hf_configs" / "mixtral_8x7b.json"), "--cluster",
                                   GPU_CLUSTER, "--tp", "8", "--global-batch", "8", "--micro-batch", "1", "--seq", "512",
                                   "--dtype", "bf16", "--sequence-parallel"],  # active_parameters
    "train --mtp-layers": ["train", str(ROOT / "tests" / "data" / "hf_configs" / "mixtral_8x7b.json"), "--cluster",
                           GPU_CLUSTER, "--tp", "8", "--global-batch", "8", "--micro-batch", "1", "--seq", "512",
                           "--dtype", "bf16", "--sequence-parallel", "--mtp-layers", "1"],  # mtp_layers
    "train (static power)": ["train", MODEL, "--cluster", str(ROOT / "tests" / "data" / "output_forms" /
                                                               "tpu_v4_static_pair.toml"), "--dp", "2",
                             "--global-batch", "4", "--micro-batch", "2"],  # energy_dynamic_j, energy_static_j
    "train (three GPU types)": ["train", MODEL, "--cluster", str(ROOT / "configs" / "clusters" / "mixed_h100_a100_v100.toml"),
                                "--tp", "8", "--pp", "3", "--dp", "1", "--global-batch", "6",
                                "--micro-batch", "1"],  # rows_gpu, rows_rank
    "train --attention flash (no [vector])": ["train", MODEL, "--cluster", str(ROOT / "configs" / "clusters" /
                                                                          "scalesim_32x32_device.toml"),
                                              "--global-batch", "2", "--attention", "flash"],  # assumed_vector_lanes
    "train --sweep": ["train", MODEL, "--cluster", GPU_CLUSTER, "--global-batch", "8", "--sweep", "tp=2,3"],
    "train --distributed-optimizer": ["train", MODEL, "--cluster", GPU_CLUSTER, "--tp", "4", "--dp", "2",
                                      "--global-batch", "4", "--micro-batch", "2", "--distributed-optimizer"],
    "train --fsdp": ["train", MODEL, "--cluster", GPU_CLUSTER, "--tp", "4", "--dp", "2", "--global-batch", "4",
                     "--micro-batch", "2", "--fsdp"],
    "train --cp-comm a2a+p2p": ["train", MODEL, "--cluster", GPU_CLUSTER, "--cp", "4", "--dp", "2", "--global-batch", "4",
                                "--cp-comm", "a2a+p2p", "--cp-hierarchy", "2", "2"],
    "train --fsdp-grad-sync step": ["train", MODEL, "--cluster", GPU_CLUSTER, "--tp", "4", "--pp", "2", "--global-batch",
                                    "4", "--micro-batch", "2", "--fsdp", "--fsdp-reshard", "none", "--fsdp-grad-sync",
                                    "step"],
    "train --fp8": ["train", MODEL, "--cluster", str(ROOT / "configs" / "clusters" / "h100_2_servers.toml"), "--tp", "4",
                    "--global-batch", "4", "--dp", "2", "--dtype", "bf16", "--fp8", "hybrid", "--distributed-optimizer",
                    "--fp8-param-gather"],  # fp8, fp8_param_gather, mfu_peak, mfu_at_fp8_peak
    "search": ["search", MODEL, "--cluster", GPU_CLUSTER, "--global-batch", "16", "--top", "3", "--schedule", "1f1b",
               "--max-micro-batch", "2"],
    "search --fsdp": ["search", MODEL, "--cluster", GPU_CLUSTER, "--global-batch", "16", "--top", "3", "--schedule",
                      "1f1b", "--max-micro-batch", "2", "--fsdp", "--fsdp-reshard", "none"],  # fsdp_reshard printed
    "search --p2p": ["search", MODEL, "--cluster", GPU_CLUSTER, "--global-batch", "16", "--top", "3", "--schedule",
                     "1f1b", "--max-micro-batch", "2", "--p2p", "megatron"],  # p2p printed
    "search --placement": ["search", MODEL, "--cluster", str(ROOT / "configs" / "clusters" / "mixed_counts_h100_a100.toml"),
                           "--global-batch", "16", "--top", "3", "--schedule", "1f1b", "--max-micro-batch", "2",
                           "--placement", "planned"],
    "cluster": ["cluster", "--trace", "synthetic", "--jobs", "8"],
    "cluster --compare": ["cluster", "--trace", "synthetic", "--jobs", "8", "--compare", "--seeds", "2"],
    "cluster --cluster": ["cluster", "--trace", "synthetic", "--jobs", "8", "--cluster",
                          str(ROOT / "configs" / "clusters" / "h100_2_servers.toml")],
    "collective": ["collective", "all-reduce", "--cluster", str(ROOT / "configs" / "clusters" / "h100_2_servers.toml"),
                   "--gpus", "16", "--nbytes", "1e6,1e9"],
    **{f"validate-gpu {show}": ["validate-gpu", "--csv", GPU_CSV, "--show", show]
       for show in ("stats", "kernels", "sensitivity", "assumptions")},
    **{f"validate-gpu {name}": ["validate-gpu", "--csv", str(ROOT / "tests" / "data" / "neusight_kernels" / name),
                                "--show", show]
       for show, name in (("stats", "ln.csv"), ("kernels", "bmm.csv"), ("kernels", "elem.csv"))},
}


def full_disk_at(monkeypatch, name: str) -> None:
    """archsim's one temp-file writer (``archsim.output_files.write_temp``) failing at the file called ``name`` as a
    full disk says it (ENOSPC), every other file written as before: how a test shows a set of outputs replaced as one
    (the first written, the second failing, neither replaced)."""
    import errno

    from archsim.errors import InputError
    from archsim.output_files import write_temp

    def full_at_name(path, text):
        if Path(path).name == name:
            raise InputError(f"{path}: {errno.errorcode[errno.ENOSPC]}: no space left on device")
        return write_temp(path, text)

    monkeypatch.setattr("archsim.output_files.write_temp", full_at_name)
