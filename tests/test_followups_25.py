"""Small defects left from the morning's trials (followups 25), each test failing on the code before its fix:
the library's errors named the command's flags (``--chunks … --schedule …``), …"""

from __future__ import annotations

import pytest
from test_docs import ROOT

import archsim
from archsim.cli import main
from archsim.errors import InputError

MODEL = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")  # 24 layers, 16 heads
NODE = str(ROOT / "configs" / "clusters" / "a100_node.toml")  # 8 GPUs


def _refused(call) -> str:
    with pytest.raises(InputError) as refused:
        call()
    return str(refused.value)


# 1. the library's refusals name its keywords, the command's its flags


def test_chunks_without_a_chunked_schedule_is_refused_in_keywords_from_python(capsys):
    """Failed before: archsim.search(chunks=2, schedule="zb-v") was told "--chunks … --schedule searches zb-v"."""
    assert main(["search", MODEL, "--cluster", NODE, "--global-batch", "8", "--gpus", "2", "--schedule", "zb-v",
                 "--chunks", "2"]) == 2
    assert capsys.readouterr().err.strip() == (
        "archsim search: error: argument --chunks: --chunks is tried only by interleaved-1f1b, interleaved-zb, "
        "looped-bfs; --schedule searches zb-v: add one of them, or drop --chunks")
    said = _refused(lambda: archsim.search(MODEL, cluster=NODE, global_batch=8, gpus=2, schedule="zb-v", chunks=2))
    assert said == ("field 'chunks': chunks is tried only by interleaved-1f1b, interleaved-zb, looped-bfs; "
                    "schedule searches zb-v: add one of them, or drop chunks")


def test_a_repeated_search_value_is_refused_in_keywords_from_python(capsys):
    """Failed before: archsim.search(gpus=[4, 4]) was told "--gpus repeats 4"."""
    assert main(["search", MODEL, "--cluster", NODE, "--global-batch", "8", "--gpus", "4", "4"]) == 2
    assert capsys.readouterr().err.strip() == \
        "archsim search: error: argument --gpus: --gpus repeats 4: give each value once"
    said = _refused(lambda: archsim.search(MODEL, cluster=NODE, global_batch=8, gpus=[4, 4]))
    assert said == "field 'gpus': gpus repeats 4: give each value once"


def test_a_search_over_max_ops_is_refused_in_keywords_from_python(capsys):
    """Failed before: archsim.search(max_ops=1) was told "above --max-ops 1; lower --refine (or --top, …)". The
    re-timing is --refine's default here, so the refusal names --top (as given) and --refine 0."""
    argv = ["search", MODEL, "--cluster", NODE, "--global-batch", "8", "--gpus", "4", "--schedule", "zb-v",
            "--max-micro-batch", "1", "--recompute", "full", "--sequence-parallel", "off", "--max-ops", "1"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("archsim search: error: argument --top: re-timing the best ")
    assert err.endswith(" schedule actions, above --max-ops 1 (--refine's default: 2 × --top 10, at least 20); give "
                        "--refine 0 to keep the closed-form times, or a larger --max-ops N")
    said = _refused(lambda: archsim.search(MODEL, cluster=NODE, global_batch=8, gpus=4, schedule="zb-v",
                                           max_micro_batch=1, recompute="full", sequence_parallel="off", max_ops=1,
                                           progress=False))
    assert said.endswith(" schedule actions, above max_ops=1 (refine's default: 2 × top=10, at least 20); give "
                         "refine=0 to keep the closed-form times, or a larger max_ops=N"), said


@pytest.mark.parametrize(("flags", "keywords", "flag_text", "keyword_text"), [
    # (--sequence-parallel at --tp 1 was refused here; it now runs without it, as Megatron-LM does, with a note)
    (["--pp", "2", "--fsdp-reshard", "none"], {"pp": 2, "fsdp_reshard": "none"},
     "--fsdp-reshard none says when FSDP frees its gathered parameters: give --fsdp too",
     "fsdp_reshard='none' says when FSDP frees its gathered parameters: give fsdp=True too"),
    (["--tp", "8", "--schedule", "gpipe"], {"tp": 8, "schedule": "gpipe"},
     "gpipe needs --pp > 1", "gpipe needs pp > 1"),
    (["--pp", "2", "--schedule", "gpipe", "--interleave", "2"], {"pp": 2, "schedule": "gpipe", "interleave": 2},
     "--interleave takes one of the schedules", "interleave takes one of the schedules"),
    (["--pp", "2", "--balance", "planned", "--dtype", "fp32"], {"pp": 2, "balance": "planned", "dtype": "fp32"},
     ("--balance planned sizes activations at 2 bytes per element: with --dtype fp32 give --stage-layers "
     "(archsim train) or the even split"),
     ("balance='planned' sizes activations at 2 bytes per element: with dtype='fp32' give stage_layers "
     "(archsim.train) or the even split")),
])
def test_trains_refusals_name_keywords_from_python_and_flags_from_the_command(capsys, flags, keywords, flag_text,
                                                                               keyword_text):
    """Failed before: each of archsim.train's refusals here named a flag (``--tp``, ``--pp``, ``--interleave``,
    ``--balance planned … --dtype fp32``)."""
    assert main(["train", MODEL, "--cluster", NODE, "--global-batch", "8", *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("archsim train: error: ") and flag_text in err, err
    said = _refused(lambda: archsim.train(MODEL, cluster=NODE, global_batch=8, **keywords))
    assert keyword_text in said and "--" not in said, said


# 2. a topology row with a field left out says so, not that the next column's value is of the wrong type


def test_a_topology_row_missing_a_field_is_refused_as_short(tmp_path, capsys):
    """Failed before: the row below (its Padding left out) was refused as "field 'Padding': expected an
    integer, got 'conv'"."""
    path = tmp_path / "net.csv"
    path.write_text("Layer name,IFMAP Height,IFMAP Width,Filter Height,Filter Width,Channels,Num Filter,Strides,"
                    "Padding,Type\n"
                    "conv1,32,32,3,3,3,16,1,1,conv\n"
                    "conv2,32,32,3,3,16,16,1,conv\n")
    with pytest.raises(InputError) as refused:
        archsim.load_network(path)
    assert str(refused.value) == (f"{path}, line 3, field 'Padding': row has 9 fields but the header has 10 (one "
                                  "left out shifts the rest); expected an integer, got 'conv'")
    # an empty field is no missing one: it takes the column's default (Padding 0), as a last column left out does
    path.write_text(path.read_text().replace("16,1,conv", "16,1,,conv"))
    assert archsim.load_network(path).layers[1].padding == 0
    path.write_text(path.read_text().replace("16,1,,conv", "16,1"))
    assert archsim.load_network(path).layers[1].kind == "conv"
    # a row as long as the header is refused as before, without a word on its length
    path.write_text(path.read_text().replace("16,1\n", "16,1,conv,conv\n"))
    with pytest.raises(InputError) as refused:
        archsim.load_network(path)
    assert str(refused.value) == f"{path}, line 3, field 'Padding': expected an integer, got 'conv'"


# 3. the report's speed-up plot says what its means average over


SWEEP = """[sweep]
name = "two-dataflows"
networks = ["layerpipe_sample"]
arrays = ["16x16"]
dataflows = [{dataflows}]
batches = [4, 8]
processors = [2, 3]
methods = ["layerpipe", "pipedream"]
mode = "exact"
"""


# one array: since followups 27 a title names only the axes with several values
@pytest.mark.parametrize(("dataflows", "averaged"), [('"ws", "os"', "batches and dataflows"),
                                                     ('"ws"', "batches")])
def test_the_speedup_plot_names_the_dataflows_it_averages_over(tmp_path, dataflows, averaged):
    """Failed before: a sweep over ws and os was plotted as "mean over arrays and batches", its means taken over
    both dataflows' rows too (each processor count's mean is of 2 batches × 2 dataflows = 4 rows)."""
    import pandas as pd

    from archsim.report.sweep_report import speedup_figure
    from archsim.sweep.summary import summarize

    spec = tmp_path / "spec.toml"
    spec.write_text(SWEEP.format(dataflows=dataflows))
    assert main(["sweep", str(spec), "--out", str(tmp_path / "results"), "--quiet"]) == 0
    results = pd.read_csv(tmp_path / "results" / "results.csv")
    summary = summarize(results)
    assert set(summary["configs"]) == {2 * dataflows.count(",") + 2}  # the rows each mean averages
    html = tmp_path / "report.html"  # the report's figure is that one
    assert main(["report", str(tmp_path / "results" / "results.csv"), "--out", str(html)]) == 0
    assert html.read_text().count(f"(mean over {averaged}; bars:") == 1
    title = speedup_figure(summary, "layerpipe_sample", results).layout.title.text
    assert title == f"layerpipe_sample: speedup over one processor (mean over {averaged}; bars: min–max)"


# 4. a rank's machine is built once per layout, as it depends on nothing else


@pytest.mark.parametrize("cluster_file", ["a100_384_servers.toml", "mixed_h100_a100_v100.toml", "a100_node.toml"])
def test_a_ranks_machine_is_built_once_per_layout_and_equals_a_fresh_one(cluster_file):
    """``GpuCluster.machine`` keeps the machine of a (TP, PP, DP, device, rank): every other setting of a
    candidate (micro-batch, recompute, schedule, chunks, sequence parallelism) leaves it as a fresh build
    (:func:`~archsim.training.group_links.rank_machine`) makes it."""
    from dataclasses import replace

    from archsim.training.cluster_file import load_gpu_cluster
    from archsim.training.group_links import rank_machine
    from archsim.training.parallel import Parallelism

    cluster = load_gpu_cluster(ROOT / "configs" / "clusters" / cluster_file)
    gpus = min(cluster.gpus_per_server * 2, cluster.gpus)
    first = Parallelism(tp=2, pp=2, dp=gpus // 4, global_batch=gpus * 4, micro_batch=1)
    others = [replace(first, micro_batch=2), replace(first, recompute="selective"),
              replace(first, schedule="interleaved-1f1b", interleave=2), replace(first, sequence_parallel=True)]
    kinds = cluster.rank_gpus(first) or (cluster.gpu, cluster.gpu)
    for rank, device in enumerate(kinds):
        built = cluster.machine(first, device, rank)
        assert built == rank_machine(cluster, first, device, rank)
        assert all(cluster.machine(par, device, rank) is built for par in others)
    other = replace(first, tp=1, dp=gpus // 2)  # another layout: its own machine
    assert cluster.machine(other) == rank_machine(cluster, other)
