"""A training-systems engineer sizing a multi-server job from the docs alone: cluster TOMLs of their own,
`archsim search` and `archsim train` across servers, the collectives benchmark and the Python API. Each test
failed before its fix."""

from __future__ import annotations

import pytest

import archsim
from archsim.errors import InputError

ROOT_CLUSTERS = "configs/clusters"
MODEL = "configs/transformers/gpt3_1.3b.toml"


def _write(tmp_path, text: str, name: str = "c.toml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.fixture(scope="module")
def bench():
    from tests.benchmark_scripts import load_benchmark

    return load_benchmark("bench_collectives")


def test_bench_collectives_refuses_a_bad_cluster_file_in_one_line(tmp_path, bench, capsys):
    """docs/training.md's "Your own cluster" check on a file with a typo'd key printed a Python traceback
    (archsim's InputError unhandled); train names the key in one line and exits 2, as the benchmark now does."""
    path = _write(tmp_path, '[cluster]\ninter_server_gbsp = 400\n[[servers]]\ncount = 2\ngpus = 8\ngpu = "h100"\n')
    assert bench.main(["--cluster", path]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("bench_collectives: error: ")
    assert "did you mean 'inter_server_gbps'?" in err[0]
    assert bench.main(["--cluster", str(tmp_path / "missing.toml")]) == 2
    assert "not found" in capsys.readouterr().err


@pytest.mark.parametrize("size", ["0", "-5"])
def test_bench_collectives_refuses_a_buffer_of_no_bytes(tmp_path, bench, capsys, size):
    """--bytes 0 printed a bus bandwidth of 0.0 GB/s, --bytes -5 one of -0.0: an all-reduce of no bytes has none."""
    assert bench.main(["--cluster", f"{ROOT_CLUSTERS}/h100_2_servers.toml", "--bytes", size]) == 2
    assert "--bytes: expected a number of bytes > 0" in capsys.readouterr().err  # collective --nbytes's one reader


@pytest.mark.parametrize("argv", [["--bytes", "0"], ["--nope"], ["--byte", "1e9"], ["--cluster"]])
def test_bench_collectives_usage_errors_are_one_line(bench, capsys, argv):
    """argparse printed its usage line and then the error, where archsim's CLI prints the error alone (one line,
    named after the program, exit 2); a flag's prefix (--byte) is no flag, as in archsim."""
    assert bench.main(argv) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("bench_collectives: error: "), err


def test_bench_collectives_on_one_gpu_says_there_is_no_all_reduce(bench, capsys):
    """A shipped one-GPU cluster (h100_1gpu.toml) raised ZeroDivisionError: one GPU reduces with nobody."""
    assert bench.main(["--cluster", f"{ROOT_CLUSTERS}/h100_1gpu.toml"]) == 0
    out = capsys.readouterr().out
    assert "1 GPU (1 server):" in out and "no all-reduce on one GPU" in out
    assert bench.cluster_bus_bandwidths(f"{ROOT_CLUSTERS}/h100_1gpu.toml", 2**30) == (None, None)


def test_bench_collectives_prints_one_server_once(bench, capsys):
    """On one server the server's line and the whole cluster's are the same group: it was printed twice."""
    assert bench.main(["--cluster", f"{ROOT_CLUSTERS}/a100_node.toml"]) == 0
    assert capsys.readouterr().out.count("8 GPUs (1 server)") == 1


@pytest.mark.parametrize(("name", "gpus"), [("mixed_counts_h100_a100.toml", 16), ("mixed_h100_a100_v100.toml", 32)])
def test_bench_collectives_does_not_price_a_group_train_refuses(bench, capsys, name, gpus):
    """The benchmark prices "a TP group of that size" as train would; over servers of 8 and 4 GPUs, or of
    several GPU types, train refuses that group, yet the benchmark printed a bus bandwidth for it (189.2 GB/s
    on mixed_counts_h100_a100.toml). It now says why it has none, train's own reason."""
    path = f"{ROOT_CLUSTERS}/{name}"
    with pytest.raises(InputError) as refused:
        archsim.train("configs/transformers/gpt3_175b.toml", cluster=path, tp=gpus, pp=1, dp=1, global_batch=1)
    assert bench.cluster_bus_bandwidths(path, 2**30)[1] is None
    assert bench.main(["--cluster", path]) == 0
    out = capsys.readouterr().out
    assert f"{gpus} GPUs (" in out and "not priced: archsim train refuses" in out
    assert refused.value.message in out


def test_bench_collectives_keeps_a_small_buffers_figure(bench, capsys):
    """--bytes 1000 printed 0.0 GB/s for both groups: a latency-bound figure below 1 GB/s rounded to nothing.
    Reference: bus bandwidth = 2(n − 1)/n · S / t, with t at least the ring's 2(n − 1) steps of some µs, so a
    1000-byte all-reduce over 8 GPUs is well below 1 GB/s and above 0."""
    path = f"{ROOT_CLUSTERS}/h100_2_servers.toml"
    server, whole = bench.cluster_bus_bandwidths(path, 1000)
    rail = bench.rail_bus_bandwidth(path, 1000)  # one GPU per server (since 2026-12-05): latency-bound too
    assert 0 < whole < server < 1 and 0 < rail < 1
    assert bench.main(["--cluster", path, "--bytes", "1000"]) == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    printed = [float(line.split(":")[1]) for line in lines]
    assert printed == [pytest.approx(server, rel=1e-2), pytest.approx(rail, rel=1e-2), pytest.approx(whole, rel=1e-2)]


LEAVES = ('[cluster]\n[network]\nnics_per_server = 8\nnic_gbps = 400\nservers_per_leaf = {per_leaf}\n'
          'oversubscription = 4\n[[servers]]\ncount = {servers}\ngpus = 8\ngpu = "h100"\n')


def test_train_states_the_oversubscribed_share_it_priced(tmp_path):
    """Two servers under two leaves of a 4× oversubscribed fabric: the DP all-reduce runs at a quarter of the
    NICs' share, yet train's inter_server said only "50 GB/s per GPU; crossed by dp", the figure it did not
    use. By hand: 400 Gb/s per GPU's NIC = 50 GB/s, over 4 = 12.5 GB/s across the uplinks."""
    path = _write(tmp_path, LEAVES.format(per_leaf=1, servers=2))
    result, _ = archsim.train(MODEL, cluster=path, tp=8, pp=1, dp=2, global_batch=16)
    inter = result.to_dict()["meta"]["inter_server"]
    assert inter["gb_per_s_per_gpu"] == 50 and inter["oversubscription"] == 4
    assert inter["leaves_crossed_by"] == ["dp"]
    from archsim.training.table_lines import network_lines

    line = network_lines(result.to_dict()["meta"])["inter_server"]
    assert "50 GB/s per direction per GPU, down to 12.5 across leaves (uplinks 4× oversubscribed)" in line
    assert line.endswith("crossed by dp (across leaves: dp 4× slower)")  # its 1 GiB all-reduce: o · 1 server of 1 out


def test_train_names_only_the_groups_that_cross_leaves(tmp_path):
    """Four servers, two per leaf: TP 8 · DP 2 · PP 2 puts each pipeline rank on one leaf's two servers (GPUs
    0–15, 16–31), so its DP all-reduce crosses servers but no uplink, and only the pipeline hop crosses leaves."""
    path = _write(tmp_path, LEAVES.format(per_leaf=2, servers=4))
    result, _ = archsim.train(MODEL, cluster=path, tp=8, pp=2, dp=2, global_batch=16)
    inter = result.to_dict()["meta"]["inter_server"]
    assert set(inter["crossed_by"]) >= {"dp", "pp"}
    assert "pp" in inter["leaves_crossed_by"] and "dp" not in inter["leaves_crossed_by"]
    with pytest.warns(UserWarning, match="uses 16 of the cluster's 32 GPUs"):
        one_leaf, _ = archsim.train(MODEL, cluster=path, tp=8, pp=1, dp=2, global_batch=16)  # servers 0 and 1
    assert "oversubscription" not in one_leaf.to_dict()["meta"]["inter_server"]  # nothing crosses: as before


@pytest.mark.parametrize(("table", "key", "value", "home", "misled"), [
    ("cluster", "nic_gbps", "400", "[network]", None),
    ("cluster", "oversubscription", "2", "[network]", None),
    ("servers", "nvls", "true", "[network]", None),
    ("servers", "inter_server_gbps", "400", "[cluster]", None),
    ("network", "inter_server_link", '"shared"', "[cluster]", "nics_per_server"),
    ("network", "gpu", '"h100"', "[[servers]]", None)])
def test_a_key_in_the_wrong_table_is_told_its_table(tmp_path, table, key, value, home, misled):
    """A key of the cluster file written under another of its tables was told only "unknown key" (nic_gbps or
    oversubscription under [cluster], nvls under [[servers]]), or the nearest name of the wrong table:
    inter_server_link under [network] was told "did you mean 'nics_per_server'?". The tables' keys are
    docs/formats.md's "Cluster (TOML)" lists."""
    parts = {"cluster": ["inter_server_gbps = 400"], "servers": ["count = 2", "gpus = 8", 'gpu = "h100"'],
             "network": ["nics_per_server = 8", "nic_gbps = 400"]}
    parts[table].append(f"{key} = {value}")
    text = (f"[cluster]\n{chr(10).join(parts['cluster'])}\n[network]\n{chr(10).join(parts['network'])}\n"
            f"[[servers]]\n{chr(10).join(parts['servers'])}\n")
    path = _write(tmp_path, text)
    with pytest.raises(InputError) as caught:
        archsim.train(MODEL, cluster=path, tp=8, pp=1, dp=2, global_batch=16)
    assert caught.value.where.field.endswith(key)
    assert f"({key!r} is a key of {home}: write it there)" in caught.value.message
    if misled:
        assert misled not in caught.value.message.split(";")[0]


MIXED_DOMAIN = ('[cluster]\n[network]\nnics_per_server = 8\nnic_gbps = 400\n{domain}'
                '[[servers]]\ncount = 2\ngpus = 8\ngpu = "a100-80gb"\n[[servers]]\ncount = 2\ngpus = 8\ngpu = "h100"\n')


def test_an_nvlink_domain_on_mixed_servers_is_noted_as_unread(tmp_path):
    """docs/training.md: "on mixed servers the domain is not read" — and docs/formats.md: a key a command does not
    use is said on stderr. nvlink_domain = 16 over two A100 and two H100 servers changed no figure (checked here
    against the same file without the key) and was not said; a search and a train now note it."""
    with_domain = _write(tmp_path, MIXED_DOMAIN.format(domain="nvlink_domain = 16\n"), "domain.toml")
    without = _write(tmp_path, MIXED_DOMAIN.format(domain=""), "plain.toml")
    from archsim.console import notes_kept

    with notes_kept() as kept:
        result, _ = archsim.train(MODEL, cluster=with_domain, tp=16, pp=1, dp=1, global_batch=16)
    with notes_kept() as plain_notes:
        plain, _ = archsim.train(MODEL, cluster=without, tp=16, pp=1, dp=1, global_batch=16)
    assert result.iteration_seconds == plain.iteration_seconds  # the key changed nothing
    assert result.to_dict()["meta"]["inter_server"]["crossed_by"] == ["tp"]
    noted = [note for note in kept if note.startswith("nvlink_domain = 16 is not read")]
    assert len(noted) == 1 and "[network]'s NICs" in noted[0]
    assert not any("nvlink_domain" in note for note in plain_notes)
    with notes_kept() as searched:
        archsim.search(MODEL, cluster=with_domain, global_batch=16, gpus=16, top=1, max_micro_batch=1,
                       schedule="1f1b", recompute="full")
    assert any(note.startswith("nvlink_domain = 16 is not read") for note in searched)


def test_an_nvlink_domain_on_servers_of_one_kind_is_not_noted(tmp_path):
    """The same domain over four H100 servers is read (TP 16 runs on NVLink, crossing nothing): no such note."""
    path = _write(tmp_path, '[cluster]\n[network]\nnics_per_server = 8\nnic_gbps = 400\nnvlink_domain = 16\n'
                            '[[servers]]\ncount = 4\ngpus = 8\ngpu = "h100"\n')
    from archsim.console import notes_kept

    with notes_kept() as kept:
        result, _ = archsim.train(MODEL, cluster=path, tp=16, pp=1, dp=1, global_batch=16)
    assert result.to_dict()["meta"]["inter_server"]["crossed_by"] == []
    assert not any(note.startswith("nvlink_domain") for note in kept)


def test_an_empty_search_names_the_files_usable_memory(tmp_path):
    """usable_memory_gib = 0.5 on H100s left no configuration, and the note advised "more GPUs or GPUs with more
    memory" alone: the H100's 79.2 GiB were not what ran out, the file's own reservation was (train says
    "its NVIDIA H100 SXM5 80GB (usable_memory_gib) has 0.5 GiB")."""
    from archsim.console import notes_kept

    text = '[cluster]\ninter_server_gbps = 400\n[[servers]]\ncount = 2\ngpus = 8\ngpu = "h100"\n{usable}'
    tight = _write(tmp_path, text.format(usable="usable_memory_gib = 0.5\n"), "tight.toml")
    with notes_kept() as kept:
        found = archsim.search(MODEL, cluster=tight, global_batch=16, gpus=16, schedule="1f1b", max_micro_batch=1)
    assert not found.rows
    note = next(note for note in kept if note.startswith("no configuration on 16 GPUs fits"))
    assert "usable_memory_gib" in note and "0.5 of the NVIDIA H100 SXM5 80GB's 79.2 GiB" in note
    big = "configs/transformers/gpt3_175b.toml"  # out of memory on the board's own 79.2 GiB: no such words
    with notes_kept() as kept:
        archsim.search(big, cluster=f"{ROOT_CLUSTERS}/h100_2_servers.toml", global_batch=16, schedule="1f1b",
                       max_micro_batch=1)
    assert not any("usable_memory_gib" in note for note in kept)


@pytest.mark.parametrize(("servers", "per_leaf", "advice", "wrong"), [
    (1, 1, "the cluster is one server, so no group crosses an uplink", "give servers_per_leaf"),
    (2, 2, "give servers_per_leaf below 2 to split them", "give servers_per_leaf to split them")])
def test_an_unused_oversubscription_gets_advice_that_can_help(tmp_path, servers, per_leaf, advice, wrong):
    """The note on an oversubscription no group crosses told a one-server cluster, whose servers_per_leaf = 1 was
    given, to "give servers_per_leaf to split them" (one server splits into nothing), and two servers under a leaf
    of 2 the same, though the key was given: the value that splits them is below the server count."""
    from archsim.console import notes_kept

    path = _write(tmp_path, '[cluster]\n[network]\nnics_per_server = 8\nnic_gbps = 400\n'
                            f'servers_per_leaf = {per_leaf}\noversubscription = 2\n'
                            f'[[servers]]\ncount = {servers}\ngpus = 8\ngpu = "h100"\n')
    with notes_kept() as kept:
        archsim.train(MODEL, cluster=path, tp=8, pp=1, dp=servers, global_batch=16)
    note = next(note for note in kept if note.startswith("oversubscription = 2 changes nothing"))
    assert advice in note and wrong not in note


def test_tp_over_whole_servers_of_different_sizes_is_told_so():
    """TP 16 on mixed_counts_h100_a100.toml (servers of 8, 4 and 4 GPUs: its comment says TP16 is refused for
    them) was told "a TP group holds part of a server and part of another ... or is a multiple of them": it holds
    each server whole, and 16 is a multiple of 8 and of 4. The refusal now names the servers' sizes."""
    with pytest.raises(InputError) as refused:
        archsim.train(MODEL, cluster=f"{ROOT_CLUSTERS}/mixed_counts_h100_a100.toml", tp=16, pp=1, dp=1,
                      global_batch=16)
    message = refused.value.message
    assert refused.value.where.field == "tp"
    assert "whole servers of different sizes (8 + 4 + 4 GPUs)" in message
    assert "part of a server" not in message


def test_both_link_lines_state_the_direction(capsys):
    """train's intra_server line said "450 GB/s per direction per GPU" and the inter_server line beside it "50 GB/s
    per GPU": one figure per direction, the other read as either. A 400 Gb/s NIC per GPU (h100_2_servers.toml) is
    400 / 8 = 50 GB/s each way, and an H100's NVLink 900 GB/s both ways is 450 each."""
    from archsim.cli import main

    assert main(["train", MODEL, "--cluster", f"{ROOT_CLUSTERS}/h100_2_servers.toml", "--tp", "8", "--dp", "2",
                 "--global-batch", "16"]) == 0
    lines = {line.split(":")[0]: line for line in capsys.readouterr().out.splitlines() if line.startswith("# ")}
    assert "450 GB/s per direction per GPU" in lines["# intra_server"]
    assert "1 GPU per NIC: 50 GB/s per direction per GPU; crossed by dp" in lines["# inter_server"]


@pytest.mark.parametrize(("watts", "said"), [
    (0.7, "gpu_watts = 0.7 is 1/1,000 of the NVIDIA H100 SXM5 80GB's 700 W board power"),
    (700000, "gpu_watts = 700000 is 1,000× the NVIDIA H100 SXM5 80GB's 700 W board power"),
    (650, None), (350, None)])
def test_a_gpu_power_in_the_wrong_unit_is_warned(tmp_path, watts, said):
    """gpu_watts = 0.7 (an H100's 700 W written in kW) ran the energy objective and energy_j 1000× low without a
    word, as a NIC speed in Mb/s once did. An H100 SXM's board power is 700 W (docs/search.md, Objectives): a
    figure ten times above or below it is warned, with the figure to write where it is 1000× off; a measured
    draw below the board's (350 W) is not."""
    from archsim.console import notes_kept

    path = _write(tmp_path, '[cluster]\ninter_server_gbps = 400\n[[servers]]\ncount = 2\ngpus = 8\ngpu = "h100"\n'
                            f'gpu_watts = {watts}\n')
    with notes_kept() as kept:
        result, _ = archsim.train(MODEL, cluster=path, tp=8, pp=1, dp=2, global_batch=16)
    assert result.energy_j == pytest.approx(16 * watts * result.iteration_seconds, rel=1e-9)  # run as given
    warned = [note for note in kept if note.startswith("gpu_watts")]
    if said is None:
        assert not warned
    else:
        assert len(warned) == 1 and said in warned[0] and "write gpu_watts = 700" in warned[0]
