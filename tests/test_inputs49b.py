"""Values accepted and then silently unread or dropped (inputs 49b), each test failing on the code before its fix:
``plan --method pipedream`` ran with ``--baselines`` and ``--max-search-steps`` unread; ``bppsa_pruned_vgg11``
dropped a repeated ``compare_levels`` entry without the warning ``seq_len`` gives; an array sweep of a device
``.cfg`` on the cycle engine ran at the default bandwidth without a word (it now runs at the file's rate, as
``cost --engine cycle`` does, and says so); a cluster's
``nvlink_domain`` above its GPUs left the NICs (and their oversubscription) unread without a word. An ONNX second
input's fixed first dimension keeps its reading, now documented (docs/own-model.md) and pinned here."""

from __future__ import annotations

import warnings

import onnx
import pytest
from strict_cli import raised, said
from test_docs import ROOT

import archsim
from archsim.cli import main
from tests.onnx_models import model, value, weight

CLUSTER = ROOT / "configs" / "clusters" / "testbed_1080ti.toml"  # 4 servers × 2 GPUs
PLAN = ["plan", "layerpipe_sample", "--cluster", str(CLUSTER), "--microbatches", "4", "--format", "json"]


# 1. plan --method pipedream: SPP's --baselines and --max-search-steps refused, not unread


@pytest.mark.parametrize(("flags", "keywords", "flag_text", "keyword_text"), [
    (["--baselines", "paper"], {"baselines": "paper"},
     ("argument --baselines: --baselines paper sets how SPP's baselines run beside SPP; --method pipedream is "
     "PipeDream's optimizer, which runs no baseline: drop it"),
     ("field 'baselines': baselines='paper' sets how SPP's baselines run beside SPP; method='pipedream' is "
     "PipeDream's optimizer, which runs no baseline: drop it")),
    (["--baselines", "archsim"], {"baselines": "archsim"},  # the default, given: still unread
     ("argument --baselines: --baselines archsim sets how SPP's baselines run beside SPP; --method pipedream is "
     "PipeDream's optimizer, which runs no baseline: drop it"),
     ("field 'baselines': baselines='archsim' sets how SPP's baselines run beside SPP; method='pipedream' is "
     "PipeDream's optimizer, which runs no baseline: drop it")),
    (["--max-search-steps", "5"], {"max_search_steps": 5},
     ("argument --max-search-steps: --max-search-steps 5 bounds SPP's search; --method pipedream is PipeDream's "
     "optimizer, which runs no SPP search: drop it"),
     ("field 'max_search_steps': max_search_steps=5 bounds SPP's search; method='pipedream' is PipeDream's "
     "optimizer, which runs no SPP search: drop it")),
])
def test_plan_pipedream_refuses_spps_own_settings(capsys, flags, keywords, flag_text, keyword_text):
    """Failed before: each printed PipeDream's plan as without it (the defaults archsim and 10¹⁰ were not None, so
    a given value could not be told from the default)."""
    assert said([*PLAN, "--method", "pipedream", *flags], capsys) == f"archsim plan: error: {flag_text}"
    assert raised(lambda: archsim.plan("layerpipe_sample", cluster=CLUSTER, microbatches=4, method="pipedream",
                                         **keywords)) == keyword_text


def test_plan_defaults_still_apply_where_read(capsys):
    """Not given, SPP still runs its archsim baselines and bounds its search at 10¹⁰ steps (one step over a bound of
    5 refused); PipeDream runs with neither; ``plan --help`` still states both defaults."""
    spp = archsim.plan("layerpipe_sample", cluster=CLUSTER, microbatches=4)
    assert sorted(spp.meta["baselines_seconds"]) == ["dp", "gpipe", "hetpipe", "pipedream-prm"]
    assert "baselines" not in spp.meta  # archsim's configuration, the default, is not echoed
    assert "search" in raised(lambda: archsim.plan("layerpipe_sample", cluster=CLUSTER, microbatches=4,
                                                     max_search_steps=5))
    assert archsim.plan("layerpipe_sample", cluster=CLUSTER, microbatches=4, method="pipedream").meta["method"] == \
        "pipedream"
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "archsim (default: dp splits" in text and "(default 10,000,000,000, about 10 s" in text


# 2. bppsa pruned-vgg11: a repeated compare level warned as a repeated seq_len is


def test_a_repeated_compare_level_is_warned_as_seq_len_is(capsys):
    """Failed before: ``compare_levels=[1, 1]`` (``--compare-levels 1,1``) compared depths 0 and 1 without a word,
    while ``seq_len="10,10"`` warns; now both say it in one line at the caller's own line."""
    with pytest.warns(UserWarning, match=r"^compare_levels repeats 1: each value runs once$") as said:
        twice = archsim.bppsa_pruned_vgg11(width_divisor=16, compare_levels=[1, 1])
    assert [w.filename for w in said] == [__file__]
    once = archsim.bppsa_pruned_vgg11(width_divisor=16, compare_levels=[1])
    assert twice.meta == once.meta  # the repeat changes nothing but the warning
    assert main(["bppsa", "pruned-vgg11", "--width-divisor", "16", "--compare-levels", "1,1", "--format", "json"]) == 0
    assert capsys.readouterr().err.splitlines() == [
        "archsim bppsa pruned-vgg11: warning: --compare-levels repeats 1: each value runs once"]


# 3. an array sweep of a device .cfg on the cycle engine without bandwidths: at the file's rate, said once


TINY = ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
        "fc1, 1, 1, 1, 1, 64, 64, 1,\nfc2, 1, 1, 1, 1, 64, 64, 1,\n")


def _cycle_spec(folder, extra: str = "") -> str:
    """A spec sweeping the accelerator trial's device .cfg (one 64 × 64 array of four, 0.8 GHz, hbm_gbps = 300, no
    SCALE-Sim Bandwidth) on the cycle engine, over two batches (two units: the note must still come once)."""
    from test_user_trial_accel49 import chip_cfg_text

    (folder / "myacc.cfg").write_text(chip_cfg_text(8))
    (folder / "tiny.csv").write_text(TINY)
    spec = folder / "spec.toml"
    spec.write_text('[sweep]\nname = "hbm"\nnetworks = ["tiny.csv"]\narrays = ["myacc.cfg"]\nbatches = [4, 8]\n'
                    f'processors = [1]\nmethods = ["gpipe"]\nengine = "cycle"\n{extra}')
    return str(spec)


def _rate_line(words: str) -> str:
    """The note, naming the .cfg as the spec's ``arrays`` entry does."""
    return (f"myacc.cfg: the cycle engine ran at {words}, [memory] hbm_gbps = 300 GB/s at the file's 0.8 GHz (each of "
            "ifmap, filter and ofmap at the chip's whole rate, as SCALE-Sim's Bandwidth is per buffer); a spec's "
            "bandwidths = [WORDS] overrides it")


def test_a_cycle_sweep_of_a_device_cfg_says_the_rate_its_hbm_gbps_set(tmp_path, capsys):
    """Failed before: the sweep ran the file's DRAM at 10 words/cycle, 8 GB/s of 1-byte words at 0.8 GHz (10 × 1 B ×
    0.8 GHz), 37.5× below its 300 GB/s, without a word. It now runs at the file's rate, as cost --engine cycle does,
    and says so once. By hand: 300 GB/s ÷ (1 B × 0.8 GHz) = 375 words/cycle; in 2-byte words 187.5, 188 whole,
    188 × 2 × 0.8 = 300.8 GB/s."""
    spec = _cycle_spec(tmp_path)
    assert main(["sweep", spec, "--out", str(tmp_path / "res"), "--quiet"]) == 0
    err = capsys.readouterr().err.splitlines()
    line = "archsim sweep: note: " + _rate_line("375 words/cycle per operand buffer in 1-byte words (300 GB/s)")
    assert err.count(line) == 1, err
    with pytest.warns(UserWarning) as said:
        archsim.run_sweep(spec, out=tmp_path / "api")
    assert [str(w.message) for w in said].count(line.removeprefix("archsim sweep: note: ")) == 1
    # a design sweep of 2-byte words: the note in its words, and the rows at the 188 words/cycle it names
    spec = _cycle_spec(tmp_path, "element_bytes = [2]\n")
    assert main(["sweep", spec, "--out", str(tmp_path / "res2"), "--quiet"]) == 0
    assert capsys.readouterr().err.splitlines().count("archsim sweep: note: " + _rate_line(
        "188 words/cycle per operand buffer in 2-byte words (300.8 GB/s)")) == 1
    rows = (tmp_path / "res2" / "results.csv").read_text().splitlines()
    column = rows[0].split(",").index("bandwidth_words_per_cycle")
    assert {row.split(",")[column] for row in rows[1:]} == {"188"}


def test_a_cycle_sweep_given_bandwidths_notes_nothing_unread(tmp_path, capsys):
    spec = _cycle_spec(tmp_path, "bandwidths = [375]\n")
    assert main(["sweep", spec, "--out", str(tmp_path / "res"), "--quiet"]) == 0
    assert "hbm_gbps" not in capsys.readouterr().err


# 4. an nvlink_domain above the cluster's GPUs: read as part of a larger domain, said once


NVL = """[cluster]
name = "part_of_a_rack"

[[servers]]
count = 2
gpus = 4
intra_server_gbps = 7200
gpu = "h100-80gb-sxm"

[network]
nics_per_server = 4
nic_gbps = 400
nvlink_domain = {domain}
servers_per_leaf = 1
oversubscription = {over}
"""
RACK_NOTE = ("nvlink_domain = 72 is more than the cluster's 8 GPUs: read as part of a larger NVLink domain, so NVLink "
             "joins all of them and no transfer crosses [network]'s NICs (nic_gbps, servers_per_leaf and "
             "oversubscription change nothing)")


def _iteration(tmp_path, domain: int, over: int) -> tuple[float, list[str]]:
    path = tmp_path / f"nvl_{domain}_{over}.toml"
    path.write_text(NVL.format(domain=domain, over=over))
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        result, _ = archsim.train("gpt3_1.3b", cluster=path, global_batch=8, dp=8)
    return result.iteration_seconds, [str(w.message) for w in said]


def test_an_nvlink_domain_above_the_cluster_is_part_of_a_rack_and_said(tmp_path, capsys):
    """Failed before (no line): 2 servers × 4 H100s with nvlink_domain = 72 (part of an NVL72 rack) ran as one
    domain of the cluster's 8 GPUs — the same DP = 8 iteration as nvlink_domain = 8, the docs' whole-cluster domain —
    so its oversubscription = 4 over one-server leaves changed nothing, without a word. A domain of one server (4)
    prices the all-reduce on the NICs and differs."""
    rack, said = _iteration(tmp_path, 72, 4)
    assert said == [RACK_NOTE]
    assert rack == _iteration(tmp_path, 72, 1)[0] == _iteration(tmp_path, 8, 4)[0]
    assert _iteration(tmp_path, 8, 4)[1] == []  # the cluster's own size: as documented, nothing to say
    assert _iteration(tmp_path, 4, 4)[0] > rack  # the NICs read where the domain is one server
    assert main(["plan", "layerpipe_sample", "--cluster", str(tmp_path / "nvl_72_4.toml"), "--microbatches", "4",
                 "--format", "json"]) == 0
    assert capsys.readouterr().err.splitlines() == [f"archsim plan: note: {RACK_NOTE}"]


# 5. an ONNX second input of a fixed first dimension: read as a size within every sample (docs/own-model.md)


def test_a_second_inputs_fixed_first_dimension_is_a_size_within_each_sample(tmp_path):
    """Pins what docs/own-model.md now says (the reading is unchanged: y[4, 8] may be a real size, a table added to
    every sample's 4 rows). By hand, proj = x·w (32 → 8) then add = proj + y: beside x[N, 4, 32] both layers are
    4 rows a sample; beside x[N, 32] proj is one row and the add broadcasts it over y's 4 rows, 4 rows a sample."""
    nodes = [onnx.helper.make_node("MatMul", ["x", "w"], ["p"], name="proj"),
             onnx.helper.make_node("Add", ["p", "y"], ["z"], name="add")]
    rows = {}
    for name, x, z in (("table", ["N", 4, 32], ["N", 4, 8]), ("broadcast", ["N", 32], ["N", 8])):
        path = tmp_path / f"{name}.onnx"
        onnx.save(model(nodes, [value("x", x), value("y", [4, 8])], [value("z", z)], [weight("w", 32, 8)]), path)
        rows[name] = [(layer.name, layer.kind, layer.ifmap_h, layer.channels, layer.filters)
                      for layer in archsim.load_network(path).layers]
    assert rows["table"] == [("proj", "fc", 4, 32, 8), ("add", "elementwise", 4, 8, 8)]
    assert rows["broadcast"] == [("proj", "fc", 1, 32, 8), ("add", "elementwise", 4, 8, 8)]


def test_the_pruned_vgg11_pages_command_parses_again(tmp_path, capsys):
    """Failed before: the page's rerun command wrote ``--compare-levels ['1', '2']`` (a Python list), which the
    command refuses; now ``1,2``, read back as the levels given."""
    import re
    import shlex

    from archsim.cli import build_parser

    page = tmp_path / "vgg.html"
    assert main(["bppsa", "pruned-vgg11", "--width-divisor", "16", "--compare-levels", "1", "2",
                 "--report", str(page)]) == 0
    capsys.readouterr()
    command = re.search(r"archsim (bppsa pruned-vgg11 [^<\n]*)", page.read_text(encoding="utf-8"))[1]
    words = shlex.split(command)
    assert build_parser(words).parse_args(words).compare_levels == ["1", "2"]
