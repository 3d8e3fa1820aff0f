"""``archsim cluster --cluster FILE.toml`` (``archsim.cluster_jobs(cluster=…)``): the job scheduler's machines read from a
cluster TOML by train's loader — each server's GPUs, the GPU's memory in GiB and γ from one GPU's share of the NICs —
checked against hand counts, against the same run given as flags, and the refusals in one line."""

import json

import pytest

import archsim
from archsim.cli import main
from archsim.cluster_machines import gamma_ns_per_byte, read_machines
from archsim.errors import InputError

TRACE = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n" + "".join(
    f"{i},{n},{60 * i},{50 * (i + 1)},{model},0,0\n"
    for i, (n, model) in enumerate([(1, "resnet50"), (4, "vgg16"), (8, "resnet18"), (2, "googlenet"), (16, "resnet50")]))


def _file(tmp_path, text, name="c.toml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


RAILS = """[cluster]
[network]
nics_per_server = 4
nic_gbps = 100
[[servers]]
count = 2
gpus = 8
gpu = "h100"
usable_memory_gib = 70
"""


def test_rails_hand_count(tmp_path):
    """4 NICs of 100 Gb/s for 8 GPUs: 2 GPUs a NIC, 50 Gb/s = 6.25e9 bytes/s a GPU, so γ = 8 bits / 50 Gb/s = 0.16 ns a
    byte; 2 servers of 8 GPUs; usable_memory_gib 70 is the memory a job gets, GiB as stated."""
    read = read_machines(_file(tmp_path, RAILS))
    assert read.machine_sizes == (8, 8) and read.gpus == 16
    assert read.device_memory_gib == 70
    assert read.gamma_ns_per_byte == pytest.approx(0.16, rel=1e-12)


@pytest.mark.parametrize("link, gpus, gamma", [
    ("per_gpu_pair", 8, 0.8),  # one 10 Gb/s NIC a GPU: §3.1's 10 GbE, the flag's default 0.8
    ("shared", 8, 6.4),  # one 10 Gb/s NIC for 8 GPUs: 1.25 Gb/s a GPU, 8 / 1.25
    ("shared", 2, 1.6),
])
def test_gamma_of_inter_server_gbps(tmp_path, link, gpus, gamma):
    path = _file(tmp_path, f'[cluster]\ninter_server_gbps = 10\ninter_server_link = "{link}"\n'
                           f'[[servers]]\ncount = 3\ngpus = {gpus}\ngpu = "v100-16gb"\n')
    read = read_machines(path)
    assert read.gamma_ns_per_byte == pytest.approx(gamma, rel=1e-12)
    assert read.machine_sizes == (gpus,) * 3 and read.device_memory_gib == 16  # a V100 16GB: 16 GiB, the flag's default


def test_gamma_is_line_rate():
    assert gamma_ns_per_byte(1.25e9) == pytest.approx(0.8)  # 10 Gb/s


def test_servers_of_different_counts_are_machines_of_those_counts(tmp_path):
    path = _file(tmp_path, '[cluster]\ninter_server_gbps = 200\ninter_server_link = "per_gpu_pair"\n'
                           '[[servers]]\ncount = 2\ngpus = 8\ngpu = "a100-80gb"\n'
                           '[[servers]]\ngpus = 4\ngpu = "a100-80gb"\n')
    read = read_machines(path)
    assert read.machine_sizes == (8, 8, 4) and read.device_memory_gib == 80  # the A100 80GB's 80 GiB
    done = archsim.cluster_jobs(trace=str(_file(tmp_path, TRACE, "t.csv")), cluster=str(path))
    assert (done.meta["gpus"], done.meta["gpus_per_machine"]) == (20, 8)
    assert done.meta["gamma_ns_per_byte"] == pytest.approx(0.04)  # 8 / 200


def test_the_file_runs_as_the_flags_it_replaces(tmp_path, capsys):
    trace = str(_file(tmp_path, TRACE, "t.csv"))
    cluster = str(_file(tmp_path, RAILS))
    outs = []
    for machines in (["--cluster", cluster],
                     ["--gpus", "16", "--gpus-per-machine", "8", "--device-memory-gb", "70", "--gamma-ns-per-byte", "0.16"]):
        assert main(["cluster", "--trace", trace, "--policy", "all", *machines, "--format", "json"]) == 0
        outs.append(json.loads(capsys.readouterr().out))
    assert outs[0]["rows"] == outs[1]["rows"]
    assert outs[0]["meta"].pop("cluster_file") == cluster
    assert outs[0]["meta"] == pytest.approx(outs[1]["meta"])


def test_flags_beside_the_file_are_refused_in_one_line(tmp_path, capsys):
    cluster = str(_file(tmp_path, RAILS))
    assert main(["cluster", "--cluster", cluster, "--jobs", "5", "--gpus", "16", "--device-memory-gb", "80"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--gpus, --gpus-per-machine, --device-memory-gb, --gamma-ns-per-byte" in err
    assert "drop --gpus and --device-memory-gb" in err
    with pytest.raises(InputError, match=r"drop gamma_ns_per_byte$"):
        archsim.cluster_jobs(cluster=cluster, jobs=5, gamma_ns_per_byte=0.8)


def test_mixed_memory_and_no_link_are_refused(tmp_path):
    mixed = _file(tmp_path, '[cluster]\ninter_server_gbps = 100\n[[servers]]\ngpus = 8\ngpu = "h100"\n'
                            '[[servers]]\ngpus = 8\ngpu = "a100-40gb"\n')
    with pytest.raises(InputError, match="hold different memory .*79.2 GiB.*40 GiB") as err:
        read_machines(mixed)
    assert err.value.where.file == str(mixed)
    alone = _file(tmp_path, '[cluster]\n[[servers]]\ngpus = 8\ngpu = "h100"\n', "one.toml")
    with pytest.raises(InputError, match="no link between servers"):
        read_machines(alone)
    linked = _file(tmp_path, '[cluster]\ninter_server_gbps = 100\n[[servers]]\ngpus = 8\ngpu = "h100"\n', "linked.toml")
    assert read_machines(linked).machine_sizes == (8,)


def test_a_file_too_small_for_the_synthetic_trace_names_the_file(tmp_path, capsys):
    small = _file(tmp_path, '[cluster]\ninter_server_gbps = 100\n[[servers]]\ngpus = 8\ngpu = "h100"\n')
    assert main(["cluster", "--cluster", str(small), "--jobs", "50"]) == 2
    assert "give a cluster file of 16 GPUs or more" in capsys.readouterr().err


def test_the_report_command_line_names_the_file_not_its_figures():
    from types import SimpleNamespace

    from archsim.cluster_run import report_command_line

    args = SimpleNamespace(trace="t.csv", cluster="c.toml", gpus=16, gpus_per_machine=8, device_memory_gb=79.2,
                           interval=60.0, gamma_ns_per_byte=0.02, unit_seconds=10.0, max_pack=2, report=None)
    assert report_command_line(args, "jigsaw") == "archsim cluster --trace t.csv --cluster c.toml --policy jigsaw"
