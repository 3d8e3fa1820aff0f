"""A device file's own link latencies (docs/formats.md, "Device files": ``[links] intra_latency_us`` and
``inter_node_latency_us``): the per-step latency a ring or tree step pays on the chip's fabric and through its
NIC, in place of the α fitted on A100 nccl-tests tables; unstated, every prediction is what it was."""

import math
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archsim import links
from archsim.cli import main
from archsim.devices.device_file import load_device
from archsim.errors import InputError
from archsim.training.cluster_file import gpu_cluster, load_gpu_cluster
from archsim.training.parallel import Parallelism
from archsim.training.run import train
from archsim.workload.transformer import TransformerConfig

ROOT = Path(__file__).resolve().parents[1]
DEVICES = ROOT / "configs" / "devices"
CLUSTERS = ROOT / "configs" / "clusters"
TPU = (DEVICES / "tpu_v4_like.toml").read_text()
CFG = (DEVICES / "scalesim_32x32_device.cfg").read_text()
LAYERS, SEQ = 4, 128
SMALL = TransformerConfig("small", "gpt", layers=LAYERS, hidden=256, heads=8, vocab=1000, seq=SEQ, ffn=1024,
                          kv_heads=8)
STEP = 50e-6  # the stated latency, s


def _chip(folder: Path, links: str, intra_gbps: float = 300.0) -> Path:
    """The TPU-like chip with its [links] ICI figure ``intra_gbps`` (GB/s per direction) and ``links`` added."""
    path = folder / "chip.toml"
    path.write_text(TPU.replace("intra_gbps = 300", f"intra_gbps = {intra_gbps!r}\n{links}"))
    return path


def _cluster(folder: Path, device: Path, servers: int, gpus: int, intra_gbps: float) -> Path:
    """``servers`` servers of ``gpus`` chips, the in-server link the chip's own (Gbit/s both directions)."""
    path = folder / "cluster.toml"
    path.write_text(f'[cluster]\nname = "x"\ninter_server_gbps = 200\n[[servers]]\ncount = {servers}\n'
                    f'gpus = {gpus}\nintra_server_gbps = {intra_gbps * 16!r}\ndevice = "{device.name}"\n')
    return path


def _iteration(cluster: Path, par: Parallelism) -> float:
    machines = load_gpu_cluster(cluster).laid_out(par)
    return train(SMALL, par, machines[0], machines).iteration_seconds


@pytest.mark.parametrize("tp, intra_gbps, sp, recompute", [
    (8, 1e-4, False, "none"), (8, 1e-4, False, "full"), (8, 1e-4, True, "none"), (2, 300.0, False, "full")])
def test_a_tp_iteration_pays_each_collective_step_the_stated_latency(tmp_path, tp, intra_gbps, sp, recompute):
    """Megatron's TP collectives per micro-batch: each layer all-reduces its attention and MLP outputs in the
    forward and their inputs' gradients in the backward (4; a full recompute re-runs the forward's 2), the
    vocabulary-parallel embedding all-reduces its rows (1) and the vocabulary-parallel cross-entropy its max,
    target logit and sum (3) and the LM head its input gradient (1). With sequence parallelism each layer's
    all-reduce is an all-gather and a reduce-scatter (Korthikanti et al. 2022 §4.2.2), and so are the
    embedding's (this model has no position table: Megatron reduce-scatters it forward, all-gathers its gradient)
    and the head's (all-gather forward, reduce-scatter backward; docs/training.md): the same steps as the
    all-reduce each replaces. With it, too, each column-parallel GEMM (a layer's QKV and first MLP GEMM,
    the head) all-gathers its input again in the backward for its weight gradient: p − 1 steps more each.
    Megatron runs that re-gather under the same GEMM's δ, so only max(0, t_all-gather − t_δ) adds; on this
    link (1e-4 GB/s: 0.57 s exposed of the 64 KiB gather; the δ GEMMs take under a microsecond) it outlasts the δ at
    either latency, so all its steps show in the difference.
    A ring all-reduce over p chips is 2(p − 1) steps, an all-gather
    or reduce-scatter p − 1. NCCL picks the tree all-reduce, 2⌈log₂ p⌉ steps, where it is faster: at p = 2
    that is 2 steps too, and at p = 8 the ring's bandwidth saving of (1/4) · S / B beats the tree's 8 fewer
    steps when even the smallest all-reduce (the cross-entropy's 4 bytes per token) moves that slowly (checked
    here), so at both latencies every all-reduce is a ring."""
    if tp == 8:
        smallest = 4 * SEQ  # bytes: one fp32 per token of a micro-batch of 1
        assert 0.25 * smallest / (intra_gbps * 1e9) > 2 * (tp - 1 - math.ceil(math.log2(tp))) * STEP
    par = Parallelism(tp, 1, 1, 4, 1, recompute, sequence_parallel=sp)
    seconds = []
    for latency in (0, 50):
        folder = tmp_path / str(latency)
        folder.mkdir()
        device = _chip(folder, f"intra_latency_us = {latency}", intra_gbps)
        seconds.append(_iteration(_cluster(folder, device, 1, tp, intra_gbps), par))
    layer_ar = 4 + (2 if recompute == "full" else 0)  # all-reduces per layer and micro-batch without SP
    # with SP, each is an all-gather and a reduce-scatter of p − 1 steps each
    steps_per_layer = 2 * layer_ar * (tp - 1) if sp else layer_ar * 2 * (tp - 1)
    regathers = (2 * LAYERS + 1) * (tp - 1) if sp else 0  # the column-parallel inputs' backward all-gathers
    steps = LAYERS * steps_per_layer + (1 + 3 + 1) * 2 * (tp - 1) + regathers  # embedding, cross-entropy, head
    microbatches = 4
    assert seconds[1] - seconds[0] == pytest.approx(microbatches * steps * STEP, rel=1e-9)


def test_the_nic_latency_prices_the_steps_between_servers(tmp_path):
    """DP 2 over two servers of one chip: one gradient all-reduce (no overlap), whose ring (2(m − 1) steps over
    m = 2 servers) and tree (2⌈log₂ m⌉) both take 2 steps through the NIC; the chip's own fabric has none."""
    par = Parallelism(1, 1, 2, 4, 1, "none")
    seconds = []
    for latency in (0, 50):
        folder = tmp_path / str(latency)
        folder.mkdir()
        device = _chip(folder, f"inter_node_latency_us = {latency}\nintra_latency_us = 1000")
        seconds.append(_iteration(_cluster(folder, device, 2, 1, 300.0), par))
    assert seconds[1] - seconds[0] == pytest.approx(2 * STEP, rel=1e-9)


@pytest.mark.parametrize("form", ["toml", "cfg"])
def test_both_forms_state_both_latencies_and_the_links_take_them(tmp_path, form):
    if form == "toml":
        path = _chip(tmp_path, "intra_latency_us = 2.5\ninter_node_latency_us = 7")
    else:
        path = tmp_path / "chip.cfg"
        path.write_text(CFG.replace("intra_gbps = 100", "intra_gbps = 100\nintra_latency_us = 2.5\n"
                                    "inter_node_latency_us = 7"))
    device = load_device(path)
    assert (device.intra_latency_s, device.inter_node_latency_s) == (2.5e-6, 7e-6)
    cluster = load_gpu_cluster(_cluster(tmp_path, path, 2, 4, device.nvlink_bytes_per_s / 1e9))
    links = cluster.machine(Parallelism(4, 1, 2, 4, 1)).links  # TP in a server, DP across the two
    assert links.tp.alpha_s == 2.5e-6
    assert (links.dp.intra.alpha_s, links.dp.inter.alpha_s) == (2.5e-6, 7e-6)


@pytest.mark.parametrize("cluster", ["tpu_v4_like_slice.toml", "scalesim_32x32_device.toml",
                                     "a100_node_device_file.toml"])
def test_unstated_latencies_keep_every_shipped_device_file_on_the_fitted_links(cluster):
    """The shipped device files state no latency: their links are the classes built from bandwidth and the file's
    efficiency alone (``[links] efficiency``: the ideal ring, or "nccl" for the A100 written as a device file), each
    step the fitted α, and stating that α (3.15 µs a step in-server, twice that through a NIC) changes no second."""
    gpus = load_gpu_cluster(CLUSTERS / cluster)
    device = gpus.gpu
    assert (device.intra_latency_s, device.inter_node_latency_s) == (None, None)
    par = Parallelism(2, 2, 1, 4, 1)
    machine = gpus.machine(par)
    fabric = gpus.fabric(0) or device.nvlink_bytes_per_s
    assert machine.links.tp == machine.links.pp == links.nvlink(fabric, efficiency=device.link_efficiency)
    assert machine.links.tp.alpha_s == links.A100_NVLINK["alpha_s"]
    alpha = links.A100_NVLINK["alpha_s"]
    stated = replace(device, intra_latency_s=alpha, inter_node_latency_s=2 * alpha)
    spec = {"cluster": {"name": "x"}, "servers": [{"count": 1, "gpus": gpus.gpus_per_server, "device": "stated",
                                                    "intra_server_gbps": (gpus.fabric(0) or 0) * 16 / 1e9}]}
    same = gpu_cluster(spec, CLUSTERS, "x", loaded={"stated": stated})
    assert train(SMALL, par, same.machine(par)).iteration_seconds == train(SMALL, par, machine).iteration_seconds


def _two_servers(intra_s: float, inter_s: float):
    device = replace(load_device(DEVICES / "tpu_v4_like.toml"), intra_latency_s=intra_s, inter_node_latency_s=inter_s)
    spec = {"cluster": {"name": "x", "inter_server_gbps": 200},
            "servers": [{"count": 2, "gpus": 4, "device": "chip", "intra_server_gbps": 4800}]}
    return gpu_cluster(spec, DEVICES, "x", loaded={"chip": device})


@pytest.mark.long
@settings(max_examples=25, deadline=None)
@given(tp=st.sampled_from([1, 2, 4]), sp=st.booleans(), intra=st.floats(0, 1e-3), more_intra=st.floats(0, 1e-3),
       inter=st.floats(0, 1e-3), more_inter=st.floats(0, 1e-3))
def test_more_latency_never_makes_an_iteration_faster(tp, sp, intra, more_intra, inter, more_inter):
    """Two servers of four chips, TP inside a server and DP across both (steps in-server and through the NIC)."""
    par = Parallelism(tp, 1, 8 // tp, 8, 1, "none", sequence_parallel=sp and tp > 1)

    def seconds(intra_s: float, inter_s: float) -> float:
        return train(SMALL, par, _two_servers(intra_s, inter_s).machine(par)).iteration_seconds

    base = seconds(intra, inter)
    assert seconds(intra + more_intra, inter) >= base
    assert seconds(intra, inter + more_inter) >= base


@pytest.mark.parametrize("key", ["intra_latency_us", "inter_node_latency_us"])
@pytest.mark.parametrize("value", ["-1", "nan", '"5"', "1001", "inf"])
def test_a_bad_latency_in_a_toml_is_refused_naming_the_file_and_key(tmp_path, key, value):
    path = _chip(tmp_path, f"{key} = {value}")
    with pytest.raises(InputError) as caught:
        load_device(path)
    assert caught.value.where.file == str(path) and caught.value.where.field == f"links.{key}"
    assert "unknown key" not in caught.value.message  # the value refused, not the key


@pytest.mark.parametrize("key", ["intra_latency_us", "inter_node_latency_us"])
@pytest.mark.parametrize("value", ["-1", "nan", "five", "1001"])
def test_a_bad_latency_in_a_cfg_is_refused_naming_the_file_and_key(tmp_path, key, value):
    path = tmp_path / "chip.cfg"
    path.write_text(CFG.replace("intra_gbps = 100", f"intra_gbps = 100\n{key} = {value}"))
    with pytest.raises(InputError) as caught:
        load_device(path)
    assert caught.value.where.file == str(path) and caught.value.where.field == f"links.{key}"
    assert "unknown key" not in caught.value.message  # the value refused, not the key


def test_a_cfg_states_a_number_as_text_and_a_toml_may_not(tmp_path):
    """A .cfg's values are all text (``= 5`` is read as 5); in a TOML ``"5"`` is a string where a number
    belongs, refused as a cluster file refuses one, for every number of the file (it was read as 5)."""
    cfg = tmp_path / "chip.cfg"
    cfg.write_text(CFG.replace("intra_gbps = 100", "intra_gbps = 100\nintra_latency_us = 5"))
    assert load_device(cfg).intra_latency_s == 5e-6
    for old, new, field in (("hbm_gbps = 1200", 'hbm_gbps = "1200"', "memory.hbm_gbps"),
                            ("rows = 128", 'rows = "128"', "compute.rows"),
                            ("[memory]", '[compute.peak_tflops]\nbf16 = "275"\n[memory]', "compute.peak_tflops.bf16")):
        path = tmp_path / "quoted.toml"
        path.write_text(TPU.replace(old, new))
        with pytest.raises(InputError, match="write the number without quotes") as caught:
            load_device(path)
        assert caught.value.where.field == field


def test_a_bad_latency_is_one_line_from_train(tmp_path, capsys):
    device = _chip(tmp_path, 'intra_latency_us = "5"')
    cluster = _cluster(tmp_path, device, 1, 2, 300.0)
    assert main(["train", str(ROOT / "configs/transformers/gpt_1024h_24l.json"), "--cluster", str(cluster),
                 "--global-batch", "4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "links.intra_latency_us" in err and str(device) in err, err
    assert "without quotes" in err


@pytest.mark.parametrize("order", [(10e-6, 40e-6), (40e-6, 10e-6)])
@pytest.mark.parametrize("field, part, gpus", [("inter_node_latency_s", "inter", 1), ("intra_latency_s", "intra", 2)])
def test_a_step_of_a_mixed_clusters_pipeline_link_waits_for_the_slower_chip(order, field, part, gpus):
    """Two servers of two chips (each its own device file, the same bandwidths) that state different step
    latencies, one chip per pipeline rank: the pipeline's link over the ranks' chips, over which the first and
    last stage all-reduce the tied embedding, pays the larger per step (through the NICs; inside the servers
    when each holds two ranks), whichever rank asks and whichever server comes first."""
    tpu = load_device(DEVICES / "tpu_v4_like.toml")
    chips = {name: replace(tpu, name=name, **{field: latency}) for name, latency in zip("ab", order, strict=True)}
    spec = {"cluster": {"name": "x", "inter_server_gbps": 200},
            "servers": [{"count": 1, "gpus": gpus, "device": name, "intra_server_gbps": 4800} for name in "ab"]}
    cluster = gpu_cluster(spec, DEVICES, "x", loaded=chips)
    machines = cluster.laid_out(Parallelism(1, 2 * gpus, 1, 8, 1, "none"))
    assert [m.gpu.name for m in machines] == sorted(["a", "b"] * gpus)
    assert [getattr(m.links.pp, part).alpha_s for m in machines] == [40e-6] * 2 * gpus
