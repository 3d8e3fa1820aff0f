"""Every speed claim of README.md and docs/speed.md (and a paper page's or training.md's run time) beside today's figure, measured in one run.

    .venv/bin/python benchmarks/bench_claims.py [--only TEXT] [--skip-slow]

Each row names where the claim is written, the claim, the figure it states and today's figure on this
machine, measured here (``today / claimed``: above 1 is slower than claimed). Times per call are the
median CPU time of 5 timeit batches (each ≥ 0.2 s); commands run in fresh child processes and their CPU seconds
are the child's (user + system, from ``getrusage``), best of 3, the steadier figure on a shared machine.
SCALE-Sim is not rerun (17–45 s a layer): a ratio to it divides the SCALE-Sim seconds recorded in
``benchmarks/results/scalesim_speed.csv`` / ``cycle_engine_speed.csv`` (the runs docs/speed.md quotes)
by today's archsim time. The peer figures for ``archsim train`` are Calculon's ``llm`` on the same
GPT-3 175B configuration (0.67 CPU s as a command, 25 ms in process), measured earlier in this project
(by 2026-11-28); Calculon is not installed here, so they are quoted, not rerun. ``--skip-slow`` leaves
out the 10⁶-op schedule (best of 2 runs, 5–10 s in all: with numba's cache cold the first compiles the
simulator's kernels, 7.0 CPU s on 2026-12-04 against 2.6 s warm). Claims not rerun here (they need a
PipeDream checkout or minutes: ``bench_fixed_cost.py --pipedream``, ``bench_sweep_large.py``) are listed at the end. Timings are not
tests: they vary with the machine's load. Nothing is kept (the sweeps write into temporary folders). Children
run in the caller's environment less ``PYTHONDONTWRITEBYTECODE`` (benchmarks/child_env.py): they cache bytecode as a user's install does.
"""

from __future__ import annotations

import argparse
import csv
import resource
import statistics
import subprocess
import sys
import time
import timeit
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.child_env import user_environment

CHILD_ENV = user_environment()  # children cache bytecode as a user's install does
RESULTS = ROOT / "benchmarks" / "results"
SWEEP_SPEC = "configs/sweeps/layerpipe_paper.toml"  # the default sweep (README's first command)
GPT3_175B = ["train", str(ROOT / "configs" / "transformers" / "gpt3_175b.toml"), "--cluster",
             str(ROOT / "configs" / "clusters" / "dgx_a100_superpod.toml"), "--tp", "8", "--pp", "8", "--dp", "16",
             "--global-batch", "1536", "--format", "json"]
CALCULON_LLM_COMMAND_CPU_S = 0.67  # Calculon's `llm` on the same configuration, as a command (quoted, by 2026-11-28)
CALCULON_LLM_IN_PROCESS_S = 0.025  # the same, in process (issue #40)
DEEPSEEK_SEARCH = ["search", "deepseek_v3", "--cluster", str(ROOT / "configs" / "clusters" / "dgx_h100_superpod.toml"),
                   "--gpus", "1024", "--global-batch", "4096", "--seq", "4096", "--dtype", "bf16",
                   "--distributed-optimizer", "--dp-overlap", "bucketed", "--ep", "8", "16", "32", "64", "--recompute",
                   "none", "selective", "full", "--max-micro-batch", "2", "--sequence-parallel", "on", "--balance",
                   "planned", "--schedule", "1f1b", "interleaved-1f1b", "--mtp-layers", "0"]  # docs/training.md's
NOT_RERUN = (
    ("docs/speed.md: PipeDream's optimizer vs `plan --method pipedream` (1.15× best on alexnet, 6.9× on "
     "densenet121) needs PipeDream's checkout: benchmarks/bench_fixed_cost.py --pipedream CHECKOUT"),
    ("docs/speed.md: the 99,000-configuration sweep in 59.3 s on two processes takes minutes: "
     "benchmarks/bench_sweep_large.py --arrays 100"),
)


@dataclass(frozen=True)
class Claim:
    """A speed claim as written (``where``, ``text``), the figure it states and how today's is measured."""

    where: str
    text: str
    claimed: float
    unit: str
    measure: Callable[[], float]
    slow: bool = False


def per_call(function: Callable[[], object]) -> float:
    """Median CPU seconds of one call over 5 timeit batches of ≥ 0.2 s (after one untimed call): the
    process's CPU time, steadier than the wall clock when other jobs share the cores."""
    function()
    timer = timeit.Timer(function, timer=time.process_time)
    number, _ = timer.autorange()
    return statistics.median(t / number for t in timer.repeat(repeat=5, number=number))


def child(code: str) -> tuple[float, float]:
    """(wall, CPU) seconds of a fresh ``python -c code`` in the repository root."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=CHILD_ENV, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def command(argv: list[str]) -> str:
    return f"import sys\nfrom archsim.cli import main\nsys.exit(main({argv!r}))"


def command_cpu(argv: list[str], repeats: int = 3) -> float:
    return min(child(command(argv))[1] for _ in range(repeats))


def command_wall(argv: list[str], repeats: int = 5) -> float:
    return statistics.median(child(command(argv))[0] for _ in range(repeats))


def recorded(csv_name: str, key: str, label: str, column: str) -> float:
    """A figure of a committed results CSV (the run docs/speed.md quotes)."""
    with open(RESULTS / csv_name, encoding="utf-8") as handle:
        for row in csv.DictReader(line for line in handle if not line.startswith("#")):
            if row[key] == label:
                return float(row[column])
    raise SystemExit(f"{csv_name} has no row {label}")


def layer_gemm(network: str, layer: str) -> tuple[int, int, int]:
    """The forward GEMM of a network's layer at batch 1 (``tiny``: bench_vs_scalesim.py's small conv)."""
    from archsim.lowering import lower_layer
    from archsim.workload import Layer, load_network

    shape = (Layer(name="small_conv", kind="conv", ifmap_h=16, ifmap_w=16, filter_h=3, filter_w=3, channels=8,
                   filters=16, stride=1, padding=1) if network == "tiny" else load_network(network).layer(layer))
    (gemm,) = lower_layer(shape, batch=1).op("F").gemms
    return gemm.m, gemm.k, gemm.n


def gemm_cost_seconds(network: str, layer: str) -> float:
    from archsim.array.analytic import gemm_cost

    m, k, n = layer_gemm(network, layer)
    return per_call(lambda: gemm_cost(m, k, n, 32, 32, "ws"))


def scalesim_seconds(network: str, layer: str) -> float:
    label = "small_conv_16x16x8" if network == "tiny" else f"{network}/{layer}"
    return recorded("scalesim_speed.csv", "layer", label, "scalesim_seconds")


def vs_scalesim(network: str, layer: str) -> float:
    return scalesim_seconds(network, layer) / gemm_cost_seconds(network, layer)


def vectorized_ns() -> float:
    import numpy as np

    from archsim.array.analytic import gemm_cost

    rng = np.random.default_rng(0)
    m, k, n = (rng.integers(1, 4096, 100_000) for _ in range(3))
    timer = timeit.Timer(lambda: gemm_cost(m, k, n, 32, 32, "ws"), timer=time.process_time)
    return min(timer.repeat(repeat=5, number=1)) / 100_000 * 1e9


def engine_seconds() -> float:
    from archsim.array.cycle import simulate_gemm

    m, k, n = layer_gemm("vgg16", "conv1_1")
    return per_call(lambda: simulate_gemm(m, k, n, 32, 32, "ws", sram_words=(64 * 1024,) * 3, bandwidth=(10,) * 3))


def dram_count_ratio(m: int, k: int, n: int, side: int, dataflow: str) -> float:
    """The cycle engine's CPU seconds per call ÷ the analytic DRAM count's, 64 KiB SRAMs, 10 words/cycle
    (benchmarks/bench_dram_traffic.py's timing); a count that differs from the engine's stops the run."""
    from benchmarks.bench_dram_traffic import run_case

    row = run_case(m, k, n, side, dataflow, 64 * 1024, 10, repeats=5)
    if not (row["reads_equal"] and row["ofmap_within_slack"]):
        raise SystemExit(f"the DRAM count differs from the engine's on {m}x{k}x{n} {dataflow}")
    return float(row["engine_over_count"])  # type: ignore[arg-type]


def sweep_cold(repeats: int = 3) -> float:
    """CPU seconds of ``run_sweep`` of the default spec into an empty folder, timed in a fresh process after its
    imports (the lazy ones inside ``run_sweep`` counted; the sweep loads no numba), best of ``repeats``."""
    code = ("import tempfile, time\nfrom archsim.sweep import load_spec, run_sweep\n"
            f"spec = load_spec({SWEEP_SPEC!r})\n"
            "with tempfile.TemporaryDirectory() as folder:\n"
            "    t = time.process_time(); run_sweep(spec, folder, workers=1, progress=False)\n"
            "    print(time.process_time() - t)\n")
    return min(float(subprocess.run([sys.executable, "-c", code], env=CHILD_ENV, cwd=ROOT, check=True,
                                    capture_output=True, text=True).stdout.split()[-1]) for _ in range(repeats))


def sweep_command_cpu(repeats: int = 3) -> float:
    """CPU seconds of README's first command, ``archsim sweep SPEC --report``, as a fresh process (imports, the
    sweep, its CSVs and the HTML report) into an empty folder each time, best of ``repeats``."""
    import tempfile

    seconds = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as folder:
            argv = ["sweep", SWEEP_SPEC, "--out", f"{folder}/out", "--report", f"{folder}/report.html", "--quiet"]
            seconds.append(child(command(argv))[1])
    return min(seconds)


def train_in_process() -> float:
    """Median CPU seconds of ``archsim.training.run.train`` on GPT-3 175B, 1,024 A100 (after a first call)."""
    from archsim.training.cluster_file import load_gpu_cluster
    from archsim.training.parallel import Parallelism
    from archsim.training.run import train
    from archsim.workload.model_files import load_transformer

    config = load_transformer(ROOT / "configs" / "transformers" / "gpt3_175b.toml")
    cluster = load_gpu_cluster(ROOT / "configs" / "clusters" / "dgx_a100_superpod.toml")
    par = Parallelism(8, 8, 16, 1536, 1, "full", False, 1, "1f1b", None, "flash")
    machines = cluster.laid_out(par)
    return per_call(lambda: train(config, par, machines[0], machines))


CLAIMS = (
    Claim("README.md", "a layer costed in a fraction of a millisecond: µs per gemm_cost call, VGG16 conv1_1", 1e3,
          "µs", lambda: gemm_cost_seconds("vgg16", "conv1_1") * 1e6),
    Claim("docs/speed.md", "VGG16 conv1_1 (32×32 ws, batch 1): archsim µs per gemm_cost call", 18, "µs",
          lambda: gemm_cost_seconds("vgg16", "conv1_1") * 1e6),
    Claim("docs/speed.md", "VGG16 conv1_1: SCALE-Sim ÷ one gemm_cost call", 1.3e6, "×",
          lambda: vs_scalesim("vgg16", "conv1_1")),
    Claim("docs/speed.md", "LayerPipe conv4: SCALE-Sim ÷ one gemm_cost call", 2.1e6, "×",
          lambda: vs_scalesim("layerpipe_sample", "conv4")),
    Claim("docs/speed.md", "ResNet-50 res5a conv2: SCALE-Sim ÷ one gemm_cost call", 2.6e6, "×",
          lambda: vs_scalesim("resnet50", "res5a_conv2")),
    Claim("docs/speed.md", "tiny conv (16×16×8, 3×3, 16 filters): SCALE-Sim ÷ one gemm_cost call", 1.1e4, "×",
          lambda: vs_scalesim("tiny", "")),
    Claim("docs/speed.md", "ns per GEMM, 10⁵ GEMMs in one vectorized gemm_cost", 110, "ns", vectorized_ns),
    Claim("docs/speed.md", "VGG16 conv1_1: SCALE-Sim ÷ one GEMM of a vectorized call", 1.8e8, "×",
          lambda: scalesim_seconds("vgg16", "conv1_1") / (vectorized_ns() * 1e-9)),
    Claim("README.md", "the first command's sweep with its report (1,320 configurations), CPU s", 1.7, "s",
          sweep_command_cpu),
    Claim("docs/speed.md", "the default sweep (1,320 configurations), cold, CPU s", 0.52, "s", sweep_cold),
    Claim("docs/speed.md", "cycle engine, VGG16 conv1_1 ws (64 KiB, 10 words/cycle), ms per call", 78, "ms",
          lambda: engine_seconds() * 1e3),
    Claim("docs/speed.md", "cycle engine vs SCALE-Sim on VGG16 conv1_1 ws", 350, "×",
          lambda: recorded("cycle_engine_speed.csv", "case", "vgg16/conv1_1", "scalesim_seconds") / engine_seconds()),
    Claim("docs/speed.md", "DRAM words counted without simulating: cycle engine ÷ count, 1024³ GEMM (32×32 ws, "
          "64 KiB)", 620, "×", lambda: dram_count_ratio(1024, 1024, 1024, 32, "ws")),
    Claim("docs/speed.md", "DRAM words counted without simulating: cycle engine ÷ count, VGG16 conv1_1's G "
          "(27×50176×64, 32×32 ws, 64 KiB)", 83, "×", lambda: dram_count_ratio(27, 50176, 64, 32, "ws")),
    Claim("docs/speed.md", "`archsim --help`, wall s (fresh process, median of 5)", 0.047, "s",
          lambda: command_wall(["--help"])),
    Claim("docs/speed.md", "`archsim search --help`, CPU s (goal ≤ 0.3)", 0.079, "s",
          lambda: command_cpu(["search", "--help"])),
    Claim("docs/speed.md", "`archsim cost layerpipe_sample`, wall s (median of 5)", 0.29, "s",
          lambda: command_wall(["cost", "layerpipe_sample"])),
    Claim("docs/speed.md", "GPT-3 175B `train` in process, ms (≤ Calculon's llm, 25 ms)", CALCULON_LLM_IN_PROCESS_S * 1e3,
          "ms", lambda: train_in_process() * 1e3),
    Claim("docs/speed.md", "GPT-3 175B `archsim train` as a command, CPU s (≤ Calculon's llm, 0.67 s)",
          CALCULON_LLM_COMMAND_CPU_S, "s", lambda: command_cpu(GPT3_175B)),
    Claim("docs/papers/ooo-backprop.md", "`schedule vgg16 --only conv --policy multistream` (128×128, batch 16), "
          "wall s (median of 5)", 0.35, "s",
          lambda: command_wall(["schedule", "vgg16", "--only", "conv", "--policy", "multistream", "--streams", "joint",
                                "--processors", "1", "--array", "128x128", "--batch", "16", "--mode", "exact"])),
    Claim("docs/training.md", "DeepSeek-V3 search on 1,024 H100s, interleaving tried, CPU s", 4.4, "s",
          lambda: command_cpu(DEEPSEEK_SEARCH)),
    Claim("docs/training.md", "DeepSeek-V3 search on 1,024 H100s, with --overlap-moe-expert-parallel-comm, CPU s", 3.7,
          "s", lambda: command_cpu([*DEEPSEEK_SEARCH, "--overlap-moe-expert-parallel-comm"])),
    Claim("docs/speed.md", "the 10⁶-op 1F1B `archsim schedule`, CPU s (goal < 3)", 3.0, "s",
          lambda: command_cpu(["schedule", "vgg16", "--policy", "1f1b", "--processors", "8", "--microbatches",
                               "62500", "--format", "json"], repeats=2), slow=True),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=None, metavar="TEXT", help="claims whose text contains TEXT")
    parser.add_argument("--skip-slow", action="store_true", help="leave out the 10⁶-op schedule")
    args = parser.parse_args(argv)
    print("| where | claim | claimed | today | today / claimed |")
    print("|---|---|---:|---:|---:|")
    for claim in CLAIMS:
        if (args.only and args.only not in claim.text) or (args.skip_slow and claim.slow):
            continue
        today = claim.measure()
        print(f"| {claim.where} | {claim.text} | {claim.claimed:.3g} {claim.unit} | {today:.3g} {claim.unit} | "
              f"{today / claim.claimed:.2f} |", flush=True)
    print("\nNot rerun here:\n" + "\n".join(f"* {line}" for line in NOT_RERUN))
    return 0


if __name__ == "__main__":
    sys.exit(main())
