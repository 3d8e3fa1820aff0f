"""The fuzz runs' inputs (tests/test_fuzz_readers.py, tests/test_fuzz_cli.py, tests/test_fuzz_acceptance.py):
a valid seed per input format, hostile tokens, and the invalid-by-construction tables — each one
documented rule broken in a valid seed or on a valid command line, which archsim must refuse."""

from __future__ import annotations

import math
import re
from pathlib import Path

from archsim.array.config import read_scalesim_cfg
from archsim.array.gemm_run import read_shapes
from archsim.cluster.profile_csv import load_profile_csv
from archsim.cluster.trace import load_tiresias_csv
from archsim.partition.graph_txt import load_graph_txt
from archsim.partition.pipedream import pipedream_plan
from archsim.partition.pipedream_tables import Level, PipeDreamOptions
from archsim.spp.topology import load_topology_file
from archsim.sweep.spec import load_spec
from archsim.validation.gpu_csv import read_kernel_csv
from archsim.workload import load_topology
from archsim.workload.model_files import load_transformer

ROOT = Path(__file__).resolve().parents[1]
# PipeDream's graph.txt (a diamond after an Input node, one list-valued size), read and planned.
GRAPH_TXT = "".join(
    f"node{k} -- {desc} -- forward_compute_time={f}, backward_compute_time={b}, activation_size={a}, "
    f"parameter_size={p}\n" for k, desc, f, b, a, p in (
        (1, "Input", "0.0", "0.0", "1000.0", "0.0"), (2, "Conv2d", "2.5", "4.0", "4000.0", "1000.0"),
        (3, "ReLU", "1.0", "1.0", "[4000.0; 16.0]", "0.0"), (4, "Conv2d", "3.0", "5.0", "2000.0", "500.0"),
        (5, "Add", "0.5", "0.5", "2000.0", "0.0"))) + "\tnode1 -- node2\n\tnode2 -- node3\n\tnode2 -- node4\n" \
    "\tnode3 -- node5\n\tnode4 -- node5\n"


def plan_graph_txt(path: Path) -> None:
    """Read a profile and run PipeDream's optimizer on it: a finite, non-negative time or an InputError."""
    plan = pipedream_plan(load_graph_txt(path), [Level(2, 1e9)], PipeDreamOptions(activation_compression_ratio=1.0))
    assert math.isfinite(plan.time_per_stage) and plan.time_per_stage >= 0


READERS = {
    "graph.txt": (plan_graph_txt, GRAPH_TXT),
    "cfg": (read_scalesim_cfg, (ROOT / "configs/arrays/scalesim_32x32_ws.cfg").read_text(encoding="utf-8")),
    "sweep.toml": (load_spec, (ROOT / "configs/sweeps/sample_quick.toml").read_text(encoding="utf-8")),
    "cluster.toml": (load_topology_file, (ROOT / "configs/clusters/spp_sim.toml").read_text(encoding="utf-8")),
    "trace.csv": (load_tiresias_csv,
                  "".join((ROOT / "configs/traces/sample_tiresias.csv").read_text(encoding="utf-8")
                          .splitlines(keepends=True)[:6])),
    "kernels.csv": (read_kernel_csv, ("# gpu: fuzz\nnetwork,layer,batch,op,measured_ms,ifmap_h,channels\n"
                                      "vgg16,conv1,1,F,0.5,224,3\nvgg16,conv1,1,D,0.7,224,3\n")),
    "shapes.csv": (read_shapes, "m,k,n,rows,cols,dataflow\n64,64,64,32,32,ws\n100,20,7,8,8,os\n"),
    "profile.csv": (load_profile_csv, ("layer,forward_s,backward_s,activation_bytes,parameter_bytes\n"
                                       "conv1,0.002,0.005,1000,100\nfc1,0.001,0.002,400,4000\n")),
    "topology.csv": (load_topology, (ROOT / "layers/layerpipe_sample.csv").read_text(encoding="utf-8")),
}


# The readers added since the first round (issue 27): transformer configs, energy tables, a .cfg's
# [energy]/[archsim] sections, torch schedule CSVs (action orders and compute_comms), stage profiles,
# and a cluster file with every optional key. (ONNX is binary: tests/test_onnx_import.py mutates its bytes.)
def transformer_network(path: Path):
    """Read a transformer config and build its network (the layers a command would cost)."""
    return load_transformer(path).network()


def cfg_with_energy(path: Path):
    from archsim.energy import read_cfg_energy

    return read_scalesim_cfg(path), read_cfg_energy(path)


def energy_table(path: Path):
    from archsim.energy import load_table

    return load_table(path)


def schedule_order(path: Path):
    from archsim.policies.torch_csv import read_order_csv

    order = read_order_csv(path)
    return order.stages, order.microbatches, [len(rank) for rank in order.ranks]


def torch_comm_steps(path: Path):
    from archsim.policies.torch_steps import parse_comm_schedule, torch_steps
    from archsim.validate import read_text

    return torch_steps(parse_comm_schedule(read_text(path, "schedule CSV"), str(path)))


def stage_profile(path: Path):
    from archsim.policies.stage_profile import read_stage_profile

    return read_stage_profile(path)


HF_GPT2 = ('{"model_type": "gpt2", "n_embd": 64, "n_head": 4, "n_layer": 2, "vocab_size": 1000, "n_positions": 32,\n'
           ' "n_inner": 256, "tie_word_embeddings": true}\n')
TRANSFORMER_TOML = ('[transformer]\nname = "tiny"\nfamily = "llama"\nlayers = 2\nhidden = 64\nheads = 4\n'
                    'kv_heads = 2\nvocab = 1000\nseq = 32\nffn = 128\ntied_embeddings = false\n')
CFG_ENERGY = ((ROOT / "configs/arrays/scalesim_32x32_ws.cfg").read_text(encoding="utf-8")
              + "\n[archsim]\nClockGHz = 1.0\n\n[energy]\ntable = horowitz45\nmac_pj = 0.5\ndram_read_pj = 80\n")
NEW_READERS = {
    "hf.json": (transformer_network, HF_GPT2),
    "transformer.toml": (transformer_network, TRANSFORMER_TOML),
    "energy.toml": (energy_table, (ROOT / "configs/energy/horowitz45.toml").read_text(encoding="utf-8")),
    "energy.cfg": (cfg_with_energy, CFG_ENERGY),
    "order.csv": (schedule_order, "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n"),
    "comms.csv": (torch_comm_steps, "0F0,0SEND_F0,0RECV_B0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0\n"),
    "stages.csv": (stage_profile, ("forward,backward_input,backward_weight,comm,activation_bytes,weight_bytes\n"
                                   "18.5,18.1,9.3,0.6,201216,73728\n18.5,18.1,9.3,0.6,201216,73728\n")),
    "devices.toml": (load_topology_file, ('[cluster]\nname = "pair"\nseed = 3\ninter_server_gbps = [32, 40]\n'
                                          'inter_server_link = "per_gpu_pair"\ngpu_memory_gb = 16\n[[servers]]\n'
                                          'count = 2\ngpus = 2\nintra_server_gbps = [96, 128]\n')),
}
READERS.update(NEW_READERS)


# The readers added since the second round (issue 39): a GPU training cluster (catalog GPUs, prices,
# watts), SCALE-Sim custom layouts and their banks, the [sparsity] section and a topology's N:M column,
# measured training runs and the GPU efficiency probe's CSV.
def gpu_cluster(path: Path):
    from archsim.training.cluster_file import load_gpu_cluster

    cluster = load_gpu_cluster(path)
    return cluster.prices, cluster.watts, cluster.sizes, cluster.inter_server_bytes_per_s


def layout_rows(path: Path):
    """A layout file's row, and the ifmap and filter address orders it gives on small operands."""
    from archsim.array.layout import layout_order, read_layout_file

    row = read_layout_file(path)
    ifmap = layout_order((4, 4, 2), row.ifmap_factors, row.ifmap_order, what="ifmap")
    kept = layout_order((2, 2, 1, 4), row.filter_factors, row.filter_order, what="filter") if row.filter_order else None
    return ifmap, kept


LAYOUT_CSV = ("Layer name, IFMAP Height Intraline Factor, IFMAP Width Intraline Factor, Filter Height Intraline Factor, "
              "Filter Width Intraline Factor, Channel Intraline Factor, Num Filter Intraline Factor, IFMAP Height "
              "Intraline Order, IFMAP Width Intraline Order, Channel Intraline Order, IFMAP Height Interline Order, "
              "IFMAP Width Interline Order, Channel Interline Order, Num Filter Intraline Order, Channel Intraline "
              "Order, Filter Height Intraline Order, Filter Width Intraline Order, Num Filter Interline Order, "
              "Channel Interline Order, Filter Height Interline Order, Filter Width Interline Order,\n"
              "B,2,2,1,4,1,2,5,4,3,2,0,1,7,6,5,4,3,2,1,0,\n")


def banked_cfg(path: Path):
    """A .cfg with custom layouts on: its array and its banks, with a valid layout file beside it."""
    from archsim.array.layout import layout_from_cfg

    layout = path.with_name(path.name + ".layout.csv")
    layout.write_text(LAYOUT_CSV, encoding="utf-8")
    banks = layout_from_cfg(path, layout)
    return read_scalesim_cfg(path, layouts=True), None if banks is None else (banks.ifmap, banks.filter)


BANKED_CFG = ("[general]\nrun_name = layouts\n\n[architecture_presets]\nArrayHeight:    8\nArrayWidth:     4\n"
              "IfmapSramSzkB:    1\nFilterSramSzkB:   1\nOfmapSramSzkB:    1\nIfmapOffset:    0\n"
              "FilterOffset:   10000000\nOfmapOffset:    20000000\nBandwidth : 4\nDataflow : ws\n"
              "ReadRequestBuffer: 32\nWriteRequestBuffer: 32\n\n[layout]\nIfmapCustomLayout: True\n"
              "IfmapSRAMBankBandwidth: 8\nIfmapSRAMBankNum: 4\nIfmapSRAMBankPort: 1\nFilterCustomLayout: True\n"
              "FilterSRAMBankBandwidth: 8\nFilterSRAMBankNum: 2\nFilterSRAMBankPort: 2\n\n[run_presets]\n"
              "InterfaceBandwidth: USER\nUseRamulatorTrace: False\n")


def sparse_cfg(path: Path):
    from archsim.array.sparse_input import read_sparsity_section

    return read_sparsity_section(path)


def sparse_topology(path: Path):
    from archsim.array.sparse_input import read_sparsity_column

    return read_sparsity_column(path)


def measured_runs(path: Path):
    from archsim.training.measured import read_measured_table

    return read_measured_table(path).runs


def probe_rows(path: Path):
    from archsim.training.calibrate import read_probe

    return read_probe(path)[1]


SPARSE_CFG = (ROOT / "configs/arrays/scalesim_32x32_ws.cfg").read_text(encoding="utf-8").replace(
    "SparsitySupport : false", "SparsitySupport : true").replace("OptimizedMapping : false", "OptimizedMapping : true")
MEASURED_CSV = ("# gpu: fuzz\n# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,"
                "tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms),recompute,peak_memory_gib,"
                "gpu_name\n1,8,1,1024,16,24,1024,1,1,1,630.5,full,5.7,a100\n2,8,2,1024,16,24,1024,2,1,1,700.25,none,"
                "3.1,a100\n")
PROBE_CSV = ("# gpu: fuzz\nsection,name,model,micro_batch,layout,m,k,n,count,bytes,ops,seconds\n"
             "gemm,fc1.F,gpt,1,nt,1024,1024,4096,1,16777216,,1.0e-4\nmemory,dropout.F,gpt,1,,,,,,20971520,,1.0e-5\n"
             "kernel,add_.1024,,,,,,,,,1000,2.0e-6\nhost,issue.add,,,,,,,,,500,1.3e-5\n")
ROUND3_READERS = {
    "gpu_cluster.toml": (gpu_cluster, ('[cluster]\nname = "pair"\ninter_server_gbps = 200\n[[servers]]\ncount = 2\n'
                                       'gpus = 4\ngpu = "a100-80gb"\nintra_server_gbps = 2400\n'
                                       'price_per_gpu_hour = 2.5\ngpu_watts = 400\n')),
    "layout.csv": (layout_rows, LAYOUT_CSV),
    "banks.cfg": (banked_cfg, BANKED_CFG),
    "sparse.cfg": (sparse_cfg, SPARSE_CFG),
    "sparse_topology.csv": (sparse_topology, (ROOT / "tests/data/scalesim_formats/sparsity_conv.csv")
                            .read_text(encoding="utf-8")),
    "measured.csv": (measured_runs, MEASURED_CSV),
    "probe.csv": (probe_rows, PROBE_CSV),
}
READERS.update(ROUND3_READERS)
HOSTILE = ["0", "-1", "1", "2147483647", "2147483648", "9223372036854775808", "1" * 30, "1e19", "1e308", "1e999",
           "inf", "-inf", "nan", "NaN", "1.5", "", " ", "%", "%(x)s", "x" * 300, "a\x00b", "\x1b[31m", "\n", '"',
           "'", ",", ";", "[]", "[1, inf]", "[0, 0]", "[2147483647]", "{a = 1}", "true", '"x"', '"../../x"',
           '"/abs"', '"a\\u0000b"', "ü", "\ufeff", "\\", "0x10", "1_000", "[[x]]", "[sweep]", "= 5", "::",
           # issue 27's second round: subnormals, 5,000-digit numbers, ints beyond float, deep nesting, bad UTF-8
           "1e-320", "9" * 5000, "1" + "0" * 400, "[" * 3000, "{" * 3000, '{"a":' * 2000, "\udcff", "x" * 140_000]
TOKEN = re.compile(r"[^\s,=:\[\]\"]+")

# Values that break a documented rule: counts are positive integers, sizes and times non-negative
# finite numbers, rates and clocks positive finite numbers.
COUNT = ("0", "-1", "1.5", "x", "nan")
SIZE = ("-1", "nan", "inf", "-inf", "x")
RATE = ("0", "-1", "nan", "inf", "x")
# Per format: where a value sits (a CSV column — header line, column name — or a regex whose group 1 is
# the value) and the values that break its rule. Every break of the valid seed must be refused.
BREAKS = {
    "graph.txt": [(r"forward_compute_time=([^,\n]+)", SIZE), (r"backward_compute_time=([^,\n]+)", SIZE),
                  (r"activation_size=([^,\n]+)", SIZE), (r"parameter_size=([^,\n]+)", SIZE)],
    "cfg": [(r"(?m)^ArrayHeight:\s*(\S+)", COUNT), (r"(?m)^ArrayWidth:\s*(\S+)", COUNT),
            (r"(?m)^IfmapSramSzkB:\s*(\S+)", ("-1", "x", "nan")), (r"(?m)^Dataflow : (\S+)", ("xs", "1"))],
    "sweep.toml": [(r"(?m)^batches = (\[.*\])", ("[0]", "[-1]", '["x"]', "[1.5]", "[16, 0]")),
                   (r"(?m)^processors = (\[.*\])", ("[0]", "[-1]", '["x"]', "[2, 1.5]")),
                   (r"(?m)^arrays = (\[.*\])", ('["0x4"]', '["axb"]', '["-1x4"]', "[32]")),
                   (r"(?m)^dataflows = (\[.*\])", ('["xs"]', "[1]")),
                   (r"(?m)^methods = (\[.*\])", ('["bogus"]',)), (r'(?m)^mode = (".*")', ('"bogus"', "1"))],
    "cluster.toml": [(r"(?m)^count = (\S+)", ("0", "-1", '"x"', "1.5")), (r"(?m)^gpus = (\S+)", ("0", "-1", '"x"', "1.5")),
                     (r"(?m)^intra_server_gbps = (\[.*\])", ("[0, 1]", "[-1, 5]", "[1, inf]", "[nan, 1]", '["x", 1]')),
                     (r"(?m)^inter_server_gbps = (\[.*\])", ("[0, 1]", "[-1, 5]", "[1, inf]", "inf", "0")),
                     (r"(?m)^seed = (\S+)", ("-1", '"x"', "1.5"))],
    "trace.csv": [((0, "num_gpu"), COUNT), ((0, "submit_time"), SIZE), ((0, "iterations"), ("-1", "1.5", "x")),
                  ((0, "duration"), SIZE)],
    "kernels.csv": [((1, "batch"), COUNT), ((1, "measured_ms"), SIZE), ((1, "op"), ("Q", "")),
                    ((1, "ifmap_h"), COUNT)],
    "shapes.csv": [((0, "m"), ("-1", "1.5", "x")), ((0, "k"), ("-1", "1.5", "x")), ((0, "rows"), COUNT),
                   ((0, "cols"), COUNT), ((0, "dataflow"), ("xs", "1"))],
    "profile.csv": [((0, "forward_s"), SIZE), ((0, "backward_s"), SIZE), ((0, "activation_bytes"), SIZE),
                    ((0, "parameter_bytes"), SIZE)],
    "hf.json": [(r'"n_layer": (\d+)', COUNT + ("5000", '"2"', "1e400")), (r'"vocab_size": (\d+)', COUNT + ("3000000000",)),
                (r'"n_embd": (\d+)', COUNT), (r'"n_positions": (\d+)', COUNT + ("null",)),
                (r'"tie_word_embeddings": (\w+)', ("1", '"yes"'))],
    "transformer.toml": [(r"(?m)^layers = (\S+)", COUNT + ("1" + "0" * 400,)), (r"(?m)^hidden = (\S+)", COUNT),
                         (r'(?m)^name = (".*")', ("5", '"a\\nb"', '""')), (r'(?m)^family = (".*")', ('"rnn"', "1")),
                         (r"(?m)^vocab = (\S+)", COUNT + ("3000000000",)), (r"(?m)^seq = (\S+)", COUNT)],
    "energy.toml": [(r"(?m)^pj_per_bit = (\S+)", SIZE + ("1e-320",)), (r"(?m)^write_factor = (\S+)", SIZE),
                    (r"(?m)^read_pj = (\[.*\])", ("[10.0, -20.0, 100.0]", "[10.0]", "[]")),
                    (r"(?m)^(name) = ", ("nmae",)), (r'(?m)^name = (".*")', ("5",)),
                    (r"(?m)^\[(leakage)\]", ("leakge",))],
    "energy.cfg": [(r"(?m)^mac_pj = (\S+)", SIZE + ("1e-320", "%(x)s")), (r"(?m)^(dram_read_pj) = ", ("dram_pj",)),
                   (r"(?m)^ClockGHz = (\S+)", RATE + ("1e-320",)), (r"(?m)^\[(archsim)\]", ("archsm",))],
    "order.csv": [(r"(?m)^(0F0),", ("0F1", "0X0", "")), (r"(?m),(1B1)$", ("1B0", "9B9"))],
    "comms.csv": [(r"(?m)^(0F0),", ("0Q0", "F0"))],
    "stages.csv": [((0, "forward"), SIZE + ("1e-320",)), ((0, "comm"), SIZE), ((0, "activation_bytes"), SIZE)],
    "devices.toml": [(r"(?m)^gpu_memory_gb = (\S+)", ("0", "-1", "1e-300", "inf", '"x"')),
                     (r"(?m)^inter_server_gbps = (\[.*\])", ("[1e-320, 1e-320]", "[40, 32]")),
                     (r'(?m)^inter_server_link = (".*")', ('"bus"',)), (r"(?m)^gpus = (\S+)", ("0", "1025"))],
    "topology.csv": [((0, "IFMAP Height"), COUNT), ((0, "Filter Width"), COUNT), ((0, "Channels"), COUNT),
                     ((0, "Num Filter"), COUNT), ((0, "Strides"), COUNT), ((0, "Padding"), ("-1", "1.5", "x"))],
    "gpu_cluster.toml": [(r"(?m)^price_per_gpu_hour = (\S+)", RATE + ("1e-320", "1" + "0" * 400, '"2"', "true", "1e7")),
                         (r"(?m)^gpu_watts = (\S+)", RATE + ("1e-320", "-inf", "[400]")),
                         (r'(?m)^gpu = (".*")', ('"nope"', '"a100\\n80gb"', "1")),
                         (r"(?m)^gpus = (\S+)", ("0", "-1", "1.5", "9" * 5000))],
    "layout.csv": [((0, "IFMAP Height Intraline Factor"), COUNT + ("²", "9" * 5000, "1_0")),
                   ((0, "Num Filter Intraline Factor"), COUNT),
                   ((0, "IFMAP Width Intraline Order"), ("5", "9", "x", "1.5", "٣")),
                   ((0, "Filter Width Interline Order"), ("7", "99", "x"))],
    "banks.cfg": [(r"(?m)^IfmapSRAMBankNum: (\S+)", ("0", "-1", "3", "x", "²", "9" * 5000)),
                  (r"(?m)^FilterSRAMBankPort: (\S+)", ("0", "x", "9" * 5000)),
                  (r"(?m)^IfmapCustomLayout: (\S+)", ("maybe", "2")), (r"(?m)^IfmapOffset:\s*(\S+)", ("5",)),
                  (r"(?m)^InterfaceBandwidth: (\S+)", ("CALC",))],
    "sparse.cfg": [(r"(?m)^BlockSize : (\S+)", ("0", "-1", "x", "1.5", "9" * 5000, "²")),
                   (r"(?m)^RandomNumberGeneratorSeed : (\S+)", ("-1", "x", "4294967296")),
                   (r"(?m)^SparseRep : (\S+)", ("bogus",)), (r"(?m)^SparsitySupport : (\S+)", ("maybe", "1")),
                   (r"(?m)^OptimizedMapping : (\S+)", ("yes", "ture"))],
    "sparse_topology.csv": [((0, "Sparsity"), ("0:4", "5:4", "x", "2:0", "9" * 5000 + ":4", "٢:٤", "2:4:8"))],
    "measured.csv": [((1, "# GPUs"), COUNT + ("9" * 5000, "1_0")), ((1, "hidden size"), COUNT),
                     ((1, "iteration time (ms)"), RATE + ("1e-320",)), ((1, "recompute"), ("bogus",)),
                     ((1, "peak_memory_gib"), ("-1", "nan", "inf", "1e-320")), ((1, "gpu_name"), ("a\x1b[0m",))],
    "probe.csv": [((1, "m"), ("-1", "1.5", "inf", "x", "9" * 5000)), ((1, "bytes"), ("-1", "inf", "nan")),
                  ((1, "seconds"), RATE + ("1e-320",)), ((1, "section"), ("gemmm", "")), ((1, "name"), ("",))],
}


def break_sites(kind: str) -> list[tuple[str, str]]:
    """Every (text, what) with one value of the valid seed broken: each site's occurrence × bad value."""
    seed = READERS[kind][1]
    found = []
    for where, values in BREAKS[kind]:
        if isinstance(where, tuple):  # a CSV column: every data row after the header line
            lines = seed.splitlines(keepends=True)
            header = [cell.strip() for cell in lines[where[0]].split(",")]
            column = header.index(where[1])
            for row in range(where[0] + 1, len(lines)):
                for value in values:
                    cells = lines[row].rstrip("\n").split(",")
                    cells[column] = value
                    found.append(("".join(lines[:row]) + ",".join(cells) + "\n" + "".join(lines[row + 1:]),
                                  f"line {row + 1} {where[1]}={value}"))
        else:
            for match in re.finditer(where, seed):
                for value in values:
                    found.append((seed[:match.start(1)] + value + seed[match.end(1):], f"{match.group(0)!r} → {value}"))
    assert found, kind
    return found


BROKEN = {kind: break_sites(kind) for kind in READERS}


# Per command, flag values that break the flag's documented range: set last, so they win.
CLI_BREAKS = {
    "cost": [("--batch", COUNT), ("--array", ("0x4", "-1x4", "axb", "1.5x4", "4x0")), ("--element-bytes", COUNT),
             ("--clock-ghz", RATE + ("1e-320", "1e400")), ("--sram-kb", ("9" * 5000, "0", "x", "1,2")),
             ("--out", ("/dev/null/x.csv", "x" * 300 + ".csv"))],  # a path under a device file; a name too long
    "gemm": [("--m", ("-1", "1.5", "x")), ("--n", ("-1", "x")), ("--array", ("0x4", "axb"))],
    "pipeline": [("--processors", COUNT), ("--microbatches", COUNT), ("--batch", COUNT),
                 ("--alpha", ("-1", "nan", "inf", "x")), ("--method", ("bogus",)),
                 ("--dtype", ("fp4", "", "FP16")), ("--element-bytes", COUNT)],  # fp8 runs on arrays since 2026-12-05
    "schedule": [("--processors", COUNT), ("--microbatches", COUNT + ("2147483647",)), ("--bandwidth", RATE),
                 ("--comm", ("-1", "nan", "inf", "1e-320", "x")),
                 ("--comm-units", ("-1", "nan", "inf", "x")), ("--dtype", ("fp4", "", "FP16"))],
    "plan": [("--microbatches", COUNT), ("--seed", ("-1", "x", "1.5")), ("--clock-ghz", RATE + ("1e-320",)),
             ("--dtype", ("fp4", "", "FP16"))],  # fp8 runs on arrays (plan since 2026-12-06)
    "cluster": [("--jobs", COUNT), ("--gpus", COUNT), ("--seed", ("-1", "x")), ("--unit-seconds", SIZE),
                ("--interval", ("-1", "nan", "inf", "x"))],
    # issue 39: caps before work (the estimate refuses in a second) and every flag strict
    "train": [("--global-batch", COUNT + ("100000000", "2147483648", "9" * 5000)), ("--tp", COUNT + ("3",)),
              ("--micro-batch", ("0", "3", "x")), ("--stage-layers", ("", "x", "0,24", "9" * 5000)),
              ("--gantt", ("",)), ("--schedule-csv", ("",)), ("--placement", ("", "0,0", "x")),
              ("--sweep", ("", "tp=0", "tp=x", "recompute=bogus", "schedule=bogus", "sequence_parallel=maybe",
                           "tp=1,,2", "tp=1,1", "global_batch=8,100000000", "tp=" + ",".join(map(str, range(1, 600))))),
              ("--max-ops", ("0", "x")), ("--dtype", ("fp8", "", "FP16")), ("--seq", COUNT),
              ("--implementation", ("bogus", "")), ("--attention", ("bogus",)), ("--dp-overlap", ("bogus",)),
              ("--grad-accumulation", ("bogus",)), ("--precision", COUNT)],
    "search": [("--max-micro-batch", COUNT + ("2147483647", "100000")), ("--gpus", COUNT + ("9", "")),
               ("--refine", ("-1", "x", "1.5", "1e400", "")), ("--top", COUNT), ("--chunks", COUNT),
               ("--pareto-html", ("",)), ("--gantt", ("",)), ("--dtype", ("fp8", "", "FP16")), ("--seq", COUNT),
               ("--objective", ("bogus",)), ("--sequence-parallel", ("maybe",)), ("--grad-accumulation", ("bogus",)),
               ("--precision", COUNT), ("--max-ops", ("0", "x"))],
}
CLI_BROKEN = [(command, flag, value) for command, breaks in CLI_BREAKS.items() for flag, values in breaks
              for value in values]


# archsim schedule runs that never consult the array model (or, with --torch-steps, any costs), each with
# flags it would ignore: every one must be refused (tests/test_schedule_cost_flags.py and
# tests/test_schedule_ignored_rest.py say why). Runs without a NETWORK ignore the flags that load one.
ARRAY_FLAGS = [("--array", "16x16"), ("--dataflow", "os"), ("--config", str(ROOT / "configs/arrays/scalesim_32x32_ws.cfg")),
               ("--element-bytes", "2"), ("--dtype", "fp16"), ("--dtype", "int8"), ("--engine", "cycle"), ("--engine", "analytic"), ("--sram-kb", "8"),
               ("--clock-ghz", "1.5"), ("--batch", "8"), ("--batch", "32"), ("--mode", "paper"), ("--mode", "exact")]
NETWORK_FLAGS = [("--only", "fc"), ("--shapes", "off"), ("--shapes", "auto"), ("--unsupported", "skip"),
                 ("--input-shape", "1,3"), ("--dim", "seq=8")]
COMMS_2_RANKS = str(ROOT / "tests/data/torch/comms_2_ranks.csv")  # torch's compute_comms CSV, also an order
SCHEDULE_RUNS = {
    "unit": ["schedule", "layerpipe_sample", "--processors", "2", "--unit-costs", "--policy", "gpipe"],
    "stages": ["schedule", "--stages", "2", "--stage-times", "1,2,1", "--policy", "zb-h1"],
    "torch": ["schedule", "--stages", "2", "--stage-times", "1,2,1", "--torch-schedule", "Schedule1F1B"],
    "multistream": ["schedule", "layerpipe_sample", "--policy", "multistream"],
    "steps": ["schedule", "--torch-steps", "--schedule-csv-in", COMMS_2_RANKS],
    "csv": ["schedule", "--stages", "2", "--stage-times", "1,2,1", "--schedule-csv-in", COMMS_2_RANKS],
    "modelled": ["schedule", "layerpipe_sample", "--processors", "2", "--policy", "gpipe"],  # analytic engine
}
SCHEDULE_IGNORED = {
    "unit": ARRAY_FLAGS,
    "stages": [*ARRAY_FLAGS, ("--dram-bandwidth", "5"), ("--unit-costs", None), *NETWORK_FLAGS, ("--processors", "2")],
    "torch": [*ARRAY_FLAGS, ("--dram-bandwidth", "5"), ("--unit-costs", None), *NETWORK_FLAGS, ("--processors", "2")],
    "csv": [*ARRAY_FLAGS, *NETWORK_FLAGS, ("--processors", "2"), ("--microbatches", "1"), ("--microbatches", "3")],
    "modelled": [("--sram-kb", "8"), ("--sram-kb", "8,8,8")],
    "multistream": [("--clock-ghz", "1.5"), ("--sram-kb", "8"), ("--dram-bandwidth", "5")],
    "steps": [*ARRAY_FLAGS, ("--comm", "0.5"), ("--stage-memory", "2,1"), ("--link-bandwidth", "8"), ("--stages", "2"),
              ("--stage-times", "1,1,1"), ("--processors", "2"), ("--torch-schedule", "Schedule1F1B"),
              ("--unit-costs", None), *NETWORK_FLAGS, ("--microbatches", "1"), ("--microbatches", "3")],
}
SCHEDULE_IGNORED_CASES = [(run, flag, value) for run, flags in SCHEDULE_IGNORED.items() for flag, value in flags]


def ignored_schedule_argv(run: str, flag: str, value: str | None) -> list[str]:
    """A valid ``archsim schedule`` run with one flag it would ignore."""
    return [*SCHEDULE_RUNS[run], flag, *([] if value is None else [value])]
