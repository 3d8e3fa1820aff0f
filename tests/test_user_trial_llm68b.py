"""Follow-ups of an LLM training engineer's trial of ``train`` and ``search`` on four H100 servers (Llama 3 8B-like,
GQA, sequence 8192): a refusal naming a flag never given, no word on memory headroom, the short-pipeline note
missing from ``--runs`` and ``--sweep``."""

import json
import warnings
from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = str(ROOT / "configs" / "clusters" / "h100_2_servers.toml")
SMALL_LLAMA = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 8,
               "num_key_value_heads": 2, "num_hidden_layers": 8, "vocab_size": 1000, "max_position_embeddings": 256,
               "tie_word_embeddings": False}
# a small grid: 35 configurations costed on 8 GPUs, their default re-timing about 5,000 schedule actions
GRID = {"seq": 128, "global_batch": 16, "gpus": 8, "schedule": ["1f1b", "gpipe"], "recompute": "none",
        "sequence_parallel": "off", "max_micro_batch": 4, "progress": False}
GRID_FLAGS = ["--seq", "128", "--global-batch", "16", "--gpus", "8", "--schedule", "1f1b", "gpipe", "--recompute",
              "none", "--sequence-parallel", "off", "--max-micro-batch", "4"]


def _model(tmp_path) -> str:
    path = tmp_path / "small_llama" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(SMALL_LLAMA))
    return str(path)


def _refusal(call) -> InputError:
    with pytest.raises(InputError) as caught:
        call()
    return caught.value


def test_a_default_re_timing_above_max_ops_names_top_and_the_refine_that_fits(tmp_path, capsys):
    """``search --top 2000`` was refused "lower --refine (by default 2 × --top, at least 20) or raise --max-ops",
    under field 'refine': flags the user never gave. The refusal of a default re-timing now names --top as given,
    and the largest --refine within --max-ops, which is checked here by running it and one more."""
    model = _model(tmp_path)
    assert main(["search", model, "--cluster", CLUSTER, *GRID_FLAGS, "--top", "30", "--max-ops", "1000"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("archsim search: error: argument --top: re-timing the best ")
    assert "(--refine's default: 2 × --top 30, at least 20); give --refine N of at most " in err
    assert "lower --refine" not in err and err.endswith("or a larger --max-ops N")
    fits = int(err.split("of at most ")[1].split()[0])
    assert 0 < fits < 30  # not every row fits: the number bounds something
    assert archsim.search(model, cluster=CLUSTER, top=30, refine=fits, max_ops=1000, **GRID).rows
    said = _refusal(lambda: archsim.search(model, cluster=CLUSTER, top=30, refine=fits + 1, max_ops=1000, **GRID))
    assert said.where.field == "refine"  # a --refine given keeps its refusal
    assert str(said).endswith("lower refine (by default 2 × top, at least 20) or raise max_ops")
    # from Python: the keywords, and with nothing that fits, refine=0
    said = _refusal(lambda: archsim.search(model, cluster=CLUSTER, top=30, max_ops=1, **GRID))
    assert said.where.field == "top" and "(refine's default: 2 × top=30, at least 20); give refine=" in str(said)


def test_the_top_a_default_re_timing_refusal_names_runs_and_one_more_does_not(tmp_path, capsys):
    """The ``--top T or fewer`` the refusal names is the largest whose default re-timing (2 × T) fits: T runs, T + 1
    is refused again (brute force, on the same grid and --max-ops)."""
    model = _model(tmp_path)
    said = str(_refusal(lambda: archsim.search(model, cluster=CLUSTER, top=30, max_ops=4500, **GRID)))
    top = int(said.split("; give top=")[1].split()[0])
    assert 10 <= top < 30
    assert archsim.search(model, cluster=CLUSTER, top=top, max_ops=4500, **GRID).rows
    said = _refusal(lambda: archsim.search(model, cluster=CLUSTER, top=top + 1, max_ops=4500, **GRID))
    assert said.where.field == "top"


ONE_GPU = str(ROOT / "configs" / "clusters" / "h100_1gpu.toml")
# a 48-layer Llama of hidden 1,024 at its sequence 4,096: micro-batch 8 on one H100 fills 96.6% of it, 4 about 58%
MID_LLAMA = {**SMALL_LLAMA, "hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 48,
             "vocab_size": 32000, "max_position_embeddings": 4096}


def _train_json(argv: list[str], capsys) -> tuple[dict, str]:
    assert main([*argv, "--format", "json"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out)["meta"], captured.err


@pytest.mark.parametrize("samples", [34816, 30720])
def test_train_notes_a_layout_that_fits_with_little_memory_to_spare(tmp_path, capsys, samples):
    """The trial's first search row used 79.08 of the H100's 79.2 GiB and train said fits_memory true, nothing else:
    a real run also holds the CUDA context, NCCL's buffers and the allocator's fragmentation. Above 90% of the GPU's
    memory (docs' 72 of 79.2 GiB leaves 9%) one note says so and names usable_memory_gib; fits_memory is unchanged."""
    model = _model(tmp_path)
    argv = ["train", model, "--cluster", ONE_GPU, "--seq", "128", "--global-batch", str(samples), "--micro-batch",
            str(samples)]
    meta, err = _train_json(argv, capsys)
    share = meta["peak_memory_gib"] / meta["memory_capacity_gib"]  # the run's own figures, against the rule
    assert meta["fits_memory"] is True and abs(share - 0.9) > 0.02  # clear of the threshold either way
    if share > 0.9:  # 34,816 samples: 75.8 of 79.2 GiB
        assert err.count("archsim train: note: pipeline rank 0 uses ") == 1 and "usable_memory_gib" in err
        assert f"{meta['peak_memory_gib']:.2f} of the 79.20 GiB" in err and f"({100 * share:.1f}%" in err
    else:
        assert "usable_memory_gib" not in err
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        archsim.train(model, cluster=ONE_GPU, seq=128, global_batch=samples, micro_batch=samples)
    assert sum("usable_memory_gib" in str(w.message) for w in said) == (share > 0.9)


def test_no_headroom_note_where_the_cluster_states_its_usable_memory_or_the_layout_does_not_fit(tmp_path, capsys):
    """usable_memory_gib is the user's headroom: 75.8 of its 78 GiB is their call. A layout out of memory has its
    warning, not this note."""
    model = _model(tmp_path)
    stated = tmp_path / "stated.toml"
    stated.write_text(Path(ONE_GPU).read_text().replace('gpu = "h100-80gb-sxm"',
                                                       'gpu = "h100-80gb-sxm"\nusable_memory_gib = 78'))
    meta, err = _train_json(["train", model, "--cluster", str(stated), "--seq", "128", "--global-batch", "34816",
                             "--micro-batch", "34816"], capsys)
    assert meta["fits_memory"] is True and meta["peak_memory_gib"] > 0.9 * 78
    assert "usable_memory_gib" not in err
    meta, err = _train_json(["train", model, "--cluster", ONE_GPU, "--seq", "128", "--global-batch", "37888",
                             "--micro-batch", "37888"], capsys)
    assert meta["fits_memory"] is False and "does not fit" in err and "usable_memory_gib" not in err


def test_search_notes_its_shown_rows_that_fit_with_little_memory_to_spare(tmp_path, capsys):
    model = tmp_path / "mid" / "config.json"
    model.parent.mkdir()
    model.write_text(json.dumps(MID_LLAMA))
    argv = ["search", str(model), "--cluster", ONE_GPU, "--seq", "4096", "--recompute", "none",
            "--sequence-parallel", "off", "--refine", "0", "--format", "json"]
    for batch, top in (("8", "8"), ("8", "1"), ("4", "8")):
        assert main([*argv, "--global-batch", batch, "--top", top]) == 0
        captured = capsys.readouterr()
        rows = json.loads(captured.out)["rows"]
        full = [i for i, row in enumerate(rows, 1) if row["peak_memory_gib"] > 0.9 * 79.2]  # the rule, by hand
        notes = [line for line in captured.err.splitlines() if "usable_memory_gib" in line]
        if not full:
            assert notes == [] and batch == "4"
            continue
        assert full == [1] and len(notes) == 1  # micro-batch 8 alone
        layout = f"TP1 PP1 DP1 mb8 none {rows[0]['schedule']}"  # the one GPU's layout, by hand
        said = f"the row shown ({layout}) uses " if len(rows) == 1 else f"row 1 ({layout}) of the {len(rows)} shown uses "
        assert notes[0].startswith(f"archsim search: note: {said}{rows[0]['peak_memory_gib']:.2f} of the 79.20 GiB")
    with pytest.warns(UserWarning, match=r"row 1 \(TP1 PP1 DP1 mb8 none \S+\) of the 4 shown uses"):
        archsim.search(str(model), cluster=ONE_GPU, seq=4096, global_batch=8, recompute="none", sequence_parallel="off",
                       refine=0, progress=False)


RUNS_HEADER = "tp,pp,dp,micro_batch,global_batch"


def test_runs_rows_of_fewer_micro_batches_than_stages_are_noted_once(tmp_path, capsys):
    """train's note on a pipeline given fewer micro-batches than stages covered one iteration only: a runs file's
    rows said nothing. Hand counts: line 2, 8 ÷ (2 × 2) = 2 micro-batches for PP 4; line 3, 8 ÷ (1 × 2) = 4 for PP 4
    (none); line 4, 4 ÷ (1 × 4) = 1 for PP 2."""
    model = _model(tmp_path)
    runs = tmp_path / "runs.csv"
    runs.write_text(f"{RUNS_HEADER}\n2,4,2,2,8\n2,4,2,1,8\n2,2,4,1,4\n")
    assert main(["train", model, "--cluster", CLUSTER, "--seq", "128", "--runs", str(runs)]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "micro-batch" in line]
    assert notes == [notes[0]] and notes[0].startswith("archsim train: note: 2 of the 3 rows (lines 2, 4): 2 micro-")
    assert "8 ÷ (2 × 2)) for pp 4:" in notes[0] and "a larger global_batch or a smaller micro_batch" in notes[0]
    with pytest.warns(UserWarning, match=r"^2 of the 3 rows \(lines 2, 4\)"):
        archsim.train_runs(model, runs=str(runs), cluster=CLUSTER, seq=128)
    runs.write_text(f"{RUNS_HEADER}\n2,4,2,1,8\n")  # 4 micro-batches for 4 stages: no note
    assert main(["train", model, "--cluster", CLUSTER, "--seq", "128", "--runs", str(runs)]) == 0
    assert "micro-batch" not in capsys.readouterr().err


def test_sweep_points_of_fewer_micro_batches_than_stages_are_noted_in_one_line(tmp_path, capsys):
    """As --sweep counts its points out of memory: one line, how many points and their layouts, the first's figures.
    Hand counts at global batch 8, TP 2 × PP 4 × DP 2: micro-batch 1 gives 4 (none), 2 gives 2, 4 gives 1."""
    model = _model(tmp_path)
    argv = ["train", model, "--cluster", CLUSTER, "--seq", "128", "--tp", "2", "--pp", "4", "--dp", "2",
            "--global-batch", "8"]
    assert main([*argv, "--sweep", "micro_batch=1,2,4"]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "micro-batch" in line]
    assert len(notes) == 1 and notes[0].startswith(
        "archsim train: note: 2 of the sweep's 3 points (tp 2 × pp 4 × dp 2); the first: 2 micro-batches per "
        "pipeline (global batch ÷ (micro-batch × DP) = 8 ÷ (2 × 2)) for --pp 4:")
    with pytest.warns(UserWarning, match=r"^2 of the sweep's 3 points .* for pp=4:"):
        archsim.train_sweep(model, cluster=CLUSTER, seq=128, tp=2, pp=4, dp=2, global_batch=8,
                            sweep={"micro_batch": [1, 2, 4]})
    assert main([*argv, "--sweep", "micro_batch=1"]) == 0
    assert "micro-batch" not in capsys.readouterr().err


@pytest.fixture(scope="module")
def bench():
    from tests.benchmark_scripts import load_benchmark

    return load_benchmark("bench_collectives")


@pytest.mark.parametrize(("given", "nbytes"), [("1e9", 10**9), ("4.5E8", 450_000_000), ("1000000000", 10**9)])
def test_bench_collectives_takes_bytes_in_scientific_notation(bench, capsys, given, nbytes):
    """``--bytes 1e9`` was refused as not a whole number of bytes: it is one, written as nccl-tests' sizes are."""
    assert bench.main(["--cluster", CLUSTER, "--bytes", given]) == 0
    assert capsys.readouterr().out.startswith(f"{CLUSTER}: all-reduce of {nbytes:,} bytes")


@pytest.mark.parametrize(("given", "why"), [("1.5", "a whole number of bytes"), ("1e-3", "a whole number of bytes"),
                                           *((text, "a number of bytes (1073741824, 1e9)") for text in ("inf", "nan", "1e9x"))])
def test_bench_collectives_still_refuses_a_fraction_of_a_byte(bench, capsys, given, why):
    assert bench.main(["--cluster", CLUSTER, "--bytes", given]) == 2  # archsim's one-line usage error, its status
    err = capsys.readouterr().err
    assert f"--bytes: expected {why}" in err and f"got {given!r}" in err, err


@pytest.mark.parametrize("servers", [2, 4])
def test_bench_collectives_prints_the_dp_group_of_one_gpu_per_server(tmp_path, bench, capsys, servers):
    """Beside one server's all-reduce and the whole cluster's, the DP group when TP fills a server: one GPU per
    server, over the servers' NICs. Reference (DGX H100 datasheet, as the cluster file states): one 400 Gb/s NIC per
    GPU is 50 GB/s per direction, so a 1 GiB ring all-reduce's bus bandwidth is just under 50 GB/s, far below
    NVLink's inside a server."""
    path = tmp_path / "h100.toml"
    path.write_text(Path(CLUSTER).read_text().replace("count = 2", f"count = {servers}"))
    rail = bench.rail_bus_bandwidth(path, 2**30)
    assert 45 < rail < 50
    assert bench.main(["--cluster", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    assert [line.split(":")[0].strip() for line in lines] == [
        "8 GPUs (1 server)", f"{servers} GPUs (1 per server, DP's group when TP fills a server)",
        f"{8 * servers} GPUs ({servers} servers)"]
    assert float(lines[1].split(":")[1]) == pytest.approx(rail, abs=0.05)
    one = Path(ROOT / "configs" / "clusters" / "a100_node.toml")  # one server: no group across servers
    assert bench.rail_bus_bandwidth(one, 2**30) is None
    assert bench.main(["--cluster", str(one)]) == 0
    assert "per server" not in capsys.readouterr().out


def test_bench_collectives_says_servers_differ_in_size_for_the_rail_group(tmp_path, bench, capsys):
    """On servers of 8, 4 and 4 GPUs no one TP fills every server, so there is no layout whose DP group is one GPU
    per server; the benchmark's reason was train's refusal of TP 8 × DP 3 for its GPU count ("24 GPUs, the cluster
    has 16"), which reads as if a smaller count would do. The sizes (the cluster file's two [[servers]] tables:
    one of 8 GPUs, two of 4) are the reason it must give; equal-sized servers of different GPU types keep train's."""
    path = tmp_path / "mixed.toml"
    path.write_text('[cluster]\nname = "m"\ninter_server_gbps = 200\n\n[[servers]]\ncount = 1\ngpus = 8\n'
                    'intra_server_gbps = 7200\ngpu = "h100-80gb-sxm"\n\n[[servers]]\ncount = 2\ngpus = 4\n'
                    'intra_server_gbps = 4800\ngpu = "a100-40gb"\n')
    assert bench.rail_bus_bandwidth(path, 2**30) is None
    assert bench.main(["--cluster", str(path)]) == 0
    rail = capsys.readouterr().out.splitlines()[2]
    assert rail.startswith("  3 GPUs (1 per server")
    assert "not priced: servers of different sizes (8 + 4 + 4 GPUs)" in rail
    assert "24 GPUs" not in rail and "the cluster has" not in rail
    types = path.read_text().replace("gpus = 8", "gpus = 4").replace("count = 2", "count = 1")  # 4 + 4: H100, A100
    path.write_text(types)
    assert bench.main(["--cluster", str(path)]) == 0
    rail = capsys.readouterr().out.splitlines()[2]
    assert "archsim train refuses TP 4 × DP 2" in rail and "different types" in rail
