"""A training-systems engineer's 4 × 8 H100 SXM cluster, one 400 Gb/s NIC per GPU: a link speed whose unit
slipped was read silently — a NIC's 400000 (meant as Mb/s) or 0.4 (Tb/s) priced every collective across servers
1000 times off, NVLink's 900 (NVIDIA's GB/s) every one inside a server 8 times. Now a plausibility warning on
stderr names the key and the likely unit (docs/formats.md, "Cluster (TOML)"); a figure some NIC has offered,
or an in-server what-if, is read without a word."""

from __future__ import annotations

from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.errors import InputError
from archsim.training.cluster_file import load_gpu_cluster

ROOT = Path(__file__).resolve().parents[1]
GPT2 = str(ROOT / "configs" / "transformers" / "gpt2.json")
SERVERS = '[[servers]]\ncount = 4\ngpus = 8\ngpu = "h100-sxm"\n'


def _cluster(tmp_path: Path, cluster: str = "", network: str | None = None) -> str:
    path = tmp_path / "c.toml"
    table = "" if network is None else f"[network]\n{network}\n"
    path.write_text(f"[cluster]\n{cluster}\n{table}{SERVERS}")
    return str(path)


@pytest.mark.parametrize(("gbps", "unit", "fixed"), [(400000, "Mb/s", "400"), (0.4, "Tb/s", "400"),
                                                     (3201, "Mb/s", "3.201"), (0.5, "Tb/s", "500")])
def test_a_nic_speed_outside_every_nic_sold_is_warned_naming_the_key_and_unit(tmp_path, gbps, unit, fixed):
    path = _cluster(tmp_path, network=f"nics_per_server = 8\nnic_gbps = {gbps}\ngpus_per_nic = 1")
    (warning,) = load_gpu_cluster(path).warnings
    assert warning.startswith(f"nic_gbps = {gbps:g} Gb/s per NIC") and f"in {unit}" in warning
    assert warning.endswith(f"write nic_gbps = {fixed}") and "\n" not in warning


@pytest.mark.parametrize("gbps", [1, 25, 50, 400, 3200])
def test_a_speed_some_nic_has_offered_is_read_without_a_warning(tmp_path, gbps):
    path = _cluster(tmp_path, network=f"nics_per_server = 8\nnic_gbps = {gbps}")
    assert load_gpu_cluster(path).warnings == ()


def test_inter_server_gbps_is_checked_as_the_nic_it_is(tmp_path):
    """Without [network], per_gpu_pair makes inter_server_gbps each GPU's NIC and shared the server's one NIC
    (read_network: one NIC of that speed; a lone send gets all of it), so both are judged as one NIC's speed; a
    shared 6400 (8 × 800 Gb/s summed) is warned naming the [network] table that states them apart
    (tests/test_nic_figure_rules.py; this test said no NIC bounds a shared figure before issue #38)."""
    per_gpu = _cluster(tmp_path, 'inter_server_gbps = 400000\ninter_server_link = "per_gpu_pair"')
    (warning,) = load_gpu_cluster(per_gpu).warnings
    assert warning.startswith("inter_server_gbps = 400000 Gb/s per NIC") and "Mb/s" in warning
    (shared,) = load_gpu_cluster(_cluster(tmp_path, 'inter_server_gbps = 6400\ninter_server_link = "shared"')).warnings
    assert shared.startswith("inter_server_gbps = 6400 Gb/s per NIC") and "give a [network] table" in shared


def test_train_prints_the_warning_on_stderr_and_still_runs(tmp_path, capsys):
    path = _cluster(tmp_path, network="nics_per_server = 8\nnic_gbps = 400000")
    argv = ["train", GPT2, "--cluster", path, "--tp", "4", "--dp", "8", "--global-batch", "32", "--seq", "256"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "archsim train: warning: nic_gbps = 400000 Gb/s per NIC is above any NIC sold" in err
    assert main([*argv[:3], _cluster(tmp_path, network="nics_per_server = 8\nnic_gbps = 400"), *argv[4:]]) == 0
    assert "warning" not in capsys.readouterr().err


def test_the_api_warns_as_the_command_does(tmp_path):
    path = _cluster(tmp_path, network="nics_per_server = 8\nnic_gbps = 0.4")
    with pytest.warns(UserWarning, match=r"nic_gbps = 0.4 Gb/s per NIC is below any NIC sold"):
        archsim.train(GPT2, cluster=path, tp=4, dp=8, global_batch=32, seq=256)


def _servers(tmp_path: Path, gpu: str, intra: float) -> str:
    path = tmp_path / "s.toml"
    path.write_text(f'[cluster]\ninter_server_gbps = 400\ninter_server_link = "per_gpu_pair"\n[[servers]]\ncount = 4\n'
                    f'gpus = 8\ngpu = "{gpu}"\nintra_server_gbps = {intra}\n')
    return str(path)


@pytest.mark.parametrize(("gpu", "intra", "unit", "own"), [
    ("h100-sxm", 900, "GB/s both directions", 7200),  # NVIDIA's "900 GB/s" written where Gbit/s goes
    ("h100-sxm", 450, "GB/s per direction", 7200),
    ("a100-80gb", 600, "GB/s both directions", 4800),
])
def test_intra_server_gbps_written_in_gb_per_s_is_warned(tmp_path, gpu, intra, unit, own):
    """intra_server_gbps takes Gbit/s both directions; the GPU's NVLink quoted in GB/s ran every in-server
    collective 8 or 16 times slower, silently."""
    (warning,) = load_gpu_cluster(_servers(tmp_path, gpu, intra)).warnings
    assert warning.startswith(f"intra_server_gbps = {intra} is the ") and unit in warning
    assert warning.endswith(f"write intra_server_gbps = {own}")


@pytest.mark.parametrize("intra", [7200, 3600, 1200])
def test_intra_server_gbps_in_its_own_unit_or_a_what_if_is_read_quietly(tmp_path, intra):
    assert load_gpu_cluster(_servers(tmp_path, "h100-sxm", intra)).warnings == ()


def test_gpus_on_nics_of_unequal_counts_get_their_own_nics_share(tmp_path):
    """8 GPUs on 3 NICs of 400 Gb/s (3, 3 and 2 GPUs each) was priced at the mean share, 3 × 50 / 8 =
    18.75 GB/s per GPU; a GPU of a full NIC gets 50 / 3 = 16.67 GB/s, and a DP all-reduce of one GPU per server
    (all eight at once) waits for those. A group filling the server still moves all three NICs' 150 GB/s."""
    cluster = load_gpu_cluster(_cluster(tmp_path, network="nics_per_server = 3\nnic_gbps = 400"))
    net = cluster.network
    assert net is not None and net.gpus_per_nic == 3
    assert net.gpu_bytes_per_s(8) == pytest.approx(50e9 / 3, rel=1e-12)
    assert cluster.inter_server_bytes_per_s == pytest.approx(50e9 / 3, rel=1e-12)
    assert net.group_bytes_per_s(1, 8, (0,)) == pytest.approx(50e9 / 3, rel=1e-12)
    assert net.group_bytes_per_s(1, 8, (7,)) == pytest.approx(25e9, rel=1e-12)  # the last NIC: 2 GPUs
    assert net.group_bytes_per_s(8, 8, tuple(range(8))) == pytest.approx(150e9, rel=1e-12)
    assert net.group_bytes_per_s(4, 8, (0, 1, 2, 3)) == pytest.approx(50e9 + 50e9 / 3, rel=1e-12)


def test_more_nics_never_train_slower_on_the_same_gpus(tmp_path):
    """1, 3, 4 and 8 NICs of 400 Gb/s under 8 GPUs a server, TP 8 · DP 4 (DP crosses the network): each
    added NIC gives every GPU at least as much, so the iteration never grows."""
    seconds = []
    for nics in (1, 3, 4, 8):
        path = tmp_path / f"n{nics}"
        path.mkdir()
        result, _ = archsim.train(GPT2, cluster=_cluster(path, network=f"nics_per_server = {nics}\nnic_gbps = 400"),
                                  tp=4, dp=8, global_batch=32, seq=256)
        seconds.append(result.iteration_seconds)
    assert seconds == sorted(seconds, reverse=True) and seconds[0] > seconds[-1]


@pytest.mark.parametrize(("table", "text", "key"), [
    ("network", 'nics_per_server = 8\nnic_gbps = "400"', "nic_gbps"),
    ("network", 'nics_per_server = "8"\nnic_gbps = 400', "nics_per_server"),
    ("servers", 'gpus = "8"', "servers[1].gpus"),
    ("servers", 'gpus = 8\ngpu_watts = "700"', "servers[1].gpu_watts"),
])
def test_a_number_written_as_a_string_is_named_a_string(tmp_path, table, text, key):
    """nic_gbps = "400" was refused as 'expected a positive number, got '400'': a number, it seemed."""
    path = tmp_path / "c.toml"
    network = f"[network]\n{text}\n" if table == "network" else "[network]\nnics_per_server = 8\nnic_gbps = 400\n"
    servers = text if table == "servers" else "gpus = 8"
    path.write_text(f'[cluster]\n{network}[[servers]]\ncount = 4\n{servers}\ngpu = "h100-sxm"\n')
    with pytest.raises(InputError) as caught:
        load_gpu_cluster(path)
    assert caught.value.where.field == key
    assert caught.value.message.endswith("got the string '" + text.rsplit('"', 2)[1] + "' (write the number without "
                                         "quotes)")


def test_an_oversubscription_on_one_switch_tier_is_refused(tmp_path):
    """switch_tiers = 1 is one switch joining every NIC: no uplink exists to oversubscribe, yet 4:1 above
    leaves of 2 servers was priced (DP 4's all-reduce at a quarter of the NICs)."""
    path = _cluster(tmp_path, network="nics_per_server = 8\nnic_gbps = 400\nswitch_tiers = 1\nservers_per_leaf = 2\n"
                                      "oversubscription = 4")
    with pytest.raises(InputError) as caught:
        load_gpu_cluster(path)
    assert caught.value.where.field == "oversubscription" and "switch_tiers = 2" in caught.value.message
    one_switch = _cluster(tmp_path, network="nics_per_server = 8\nnic_gbps = 400\nswitch_tiers = 1")
    assert load_gpu_cluster(one_switch).network.oversubscription == 1


def test_the_collectives_benchmark_warns_as_train_does(tmp_path, capsys):
    """benchmarks/bench_collectives.py --cluster is the documented check of one's own cluster: a NIC speed in
    Mb/s printed the same bus bandwidths without a word (the whole cluster's NVLink-bound either way)."""
    from tests.benchmark_scripts import load_benchmark

    bench = load_benchmark("bench_collectives")
    assert bench.main(["--cluster", _cluster(tmp_path, network="nics_per_server = 8\nnic_gbps = 400000")]) == 0
    err = capsys.readouterr().err
    assert "bench_collectives: warning: nic_gbps = 400000 Gb/s per NIC is above any NIC sold" in err


@pytest.mark.parametrize(("gpu", "accepted"), [("h100-sxm", True), ("h200", True), ("a100-80gb", False),
                                               ("a100-40gb", False), ("h100-80gb-pcie", False)])
def test_nvls_is_refused_on_a_gpu_whose_switch_cannot_reduce(tmp_path, gpu, accepted):
    """nvls = true on A100 servers (second-generation NVSwitch, no NVLink SHARP) was priced as NVLS: one
    server's all-reduce moved (n + 1)/n buffers instead of 2(n − 1)/n, a TP 8 · DP 4 iteration 8% faster."""
    path = tmp_path / "c.toml"
    path.write_text(f'[cluster]\n[network]\nnics_per_server = 8\nnic_gbps = 400\nnvls = true\n'
                    f'[[servers]]\ncount = 4\ngpus = 8\ngpu = "{gpu}"\n')
    if accepted:
        assert load_gpu_cluster(path).network.nvls
        return
    with pytest.raises(InputError) as caught:
        load_gpu_cluster(path)
    assert caught.value.where.field == "nvls" and "write nvls = false" in caught.value.message


def test_the_api_search_and_runs_warn_as_their_commands_do(tmp_path):
    path = _cluster(tmp_path, network="nics_per_server = 8\nnic_gbps = 400000")
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch,global_batch,measured_seconds\n4,1,8,1,32,0.5\n")
    with pytest.warns(UserWarning, match=r"nic_gbps = 400000 Gb/s per NIC is above any NIC sold"):
        archsim.train_runs(GPT2, runs=runs, cluster=path, seq=256)
    with pytest.warns(UserWarning, match=r"nic_gbps = 400000 Gb/s per NIC is above any NIC sold"):
        archsim.search(GPT2, cluster=path, global_batch=32, gpus=32, seq=256, schedule="1f1b", recompute="full",
                       max_micro_batch=1, sequence_parallel="off", top=3)


@pytest.mark.parametrize(("intra", "unit"), [(200, "GB/s per direction"), (400, "GB/s both directions")])
def test_a_device_files_link_written_in_gb_per_s_is_named_as_the_files_link(tmp_path, intra, unit):
    """A chip of one's own has no NVLink: the warning named the device file's `[links] intra_gbps = 200`
    (GB/s per direction, 3200 Gbit/s both) "the mychip's NVLink"; it names the file's key instead."""
    (tmp_path / "chip.toml").write_text(
        '[device]\nname = "mychip"\n[compute]\narrays = 4\nrows = 256\ncols = 256\nclock_mhz = 1000\n'
        "[memory]\nhbm_gib = 64\nhbm_gbps = 1200\nsram_kib_per_array = 8192\n[links]\nintra_gbps = 200\n")
    cluster = tmp_path / "c.toml"
    cluster.write_text(f'[cluster]\n[[servers]]\ngpus = 8\nintra_server_gbps = {intra}\ndevice = "chip.toml"\n')
    (warning,) = load_gpu_cluster(cluster).warnings
    assert warning.startswith(f"intra_server_gbps = {intra} is chip.toml's [links] intra_gbps in {unit} "
                              "(3200 Gbit/s both directions)"), warning
    assert "NVLink" not in warning and "write intra_server_gbps = 3200;" in warning
