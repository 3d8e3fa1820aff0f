"""A user trial of the BPPSA, out-of-order backprop and LayerPipe routes (docs/papers/bppsa.md, docs/api.md):
each check failed before its fix."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from importlib import import_module

import pytest

from archsim.errors import InputError

LAZY_PACKAGES = ("archsim", "archsim.bppsa", "archsim.partition", "archsim.validation", "archsim.workload")


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_no_lazy_export_is_named_as_a_submodule(package):
    """Importing a submodule binds its name on the package, over a lazy export of that name: with
    ``archsim/bppsa/backprop.py`` beside the export ``backprop``, ``from archsim.bppsa import scan_input, backprop``
    gave the module, not the function (``TypeError: 'module' object is not callable``)."""
    module = import_module(package)
    submodules = {info.name for info in pkgutil.iter_modules(module.__path__)}
    assert not submodules & set(module._EXPORTS), package


def test_bppsa_backprop_is_the_function_after_the_jacobians_load():
    """The documented order of a user's script: the scan's inputs first, then the reference BP (a fresh
    interpreter: the test session may have bound either already)."""
    code = ("from archsim.bppsa import scan_input, backprop\n"
            "import types\n"
            "assert callable(backprop) and not isinstance(backprop, types.ModuleType), backprop\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr[-600:]


@pytest.mark.parametrize("sparsity", [1.5, -0.1, 1.0])
def test_api_sparsity_out_of_range_is_the_commands_line(sparsity):
    """``archsim bppsa pruned-vgg11 --sparsity 1.5`` says ``must be in [0, 1), got 1.5``; the function said
    ``expected a sparsity in [0, 1) >= 0 and <= 1`` (two ranges, one of them wrong: 1 is refused)."""
    import archsim

    with pytest.raises(InputError) as caught:
        archsim.bppsa_pruned_vgg11(sparsity=sparsity, width_divisor=64)
    text = str(caught.value)
    assert text == f"field 'sparsity': must be in [0, 1), got {float(sparsity)!r}", text


def _small_cnn():
    import numpy as np

    from archsim.bppsa import Conv2d, Linear, MaxPool2d, ReLU, forward_chain

    rng = np.random.default_rng(3)
    layers = [Conv2d(rng.standard_normal((2, 1, 3, 3)), padding=(1, 1)), ReLU(), MaxPool2d((2, 2), (2, 2)),
              Linear(rng.standard_normal((3, 2 * 2 * 2)))]
    return layers, forward_chain(layers, rng.standard_normal((1, 4, 4)))


@pytest.mark.parametrize("route", ["scan_input", "backprop"])
def test_a_gradient_of_the_wrong_size_is_one_line(route):
    """The last layer's output has 3 values; a gradient of 5 died in scipy's matmul (``dimension mismatch with
    signature (n,k=…)``) inside the scan, or in numpy's reshape inside the reference BP."""
    import numpy as np

    from archsim import bppsa

    layers, acts = _small_cnn()
    with pytest.raises(InputError, match=r"field 'grad_output': expected the gradient of the last layer's output, "
                                         r"3 values \(shape \(3, 1, 1\)\), got 5"):
        getattr(bppsa, route)(layers, acts, np.ones(5))


def test_too_few_activations_is_one_line():
    """One activation for four layers was an IndexError from the list."""
    import numpy as np

    from archsim.bppsa import scan_input

    layers, acts = _small_cnn()
    with pytest.raises(InputError, match=r"field 'activations': expected forward_chain's 5 activations \(or the 4 "
                                         r"layers' inputs\) for 4 layers, got 1"):
        scan_input(layers, acts[:1], np.ones(3))


def test_a_sample_that_is_not_chw_is_one_line():
    """A 2-D image was numpy's ``not enough values to unpack (expected 3, got 2)``."""
    import numpy as np

    from archsim.bppsa import Conv2d, forward_chain

    with pytest.raises(InputError, match=r"field 'x0': expected one sample as a channels × height × width array, "
                                         r"got shape \(8, 8\)"):
        forward_chain([Conv2d(np.ones((2, 1, 3, 3)))], np.ones((8, 8)))


def test_the_api_pages_own_chain_example_runs(capsys):
    """docs/api.md's BPPSA example on a chain of one's own: the scan's gradients equal the reference BP's and
    Algorithm 1 takes 2⌈log₂(n + 1)⌉ − 1 = 5 levels for n = 7 (the paper's step count, by hand); ``scan_flops``, which
    counts a chain's steps, was not exported (only ``archsim.bppsa.vgg`` had it)."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "api.md").read_text(encoding="utf-8")
    [example] = [body for body in re.findall(r"^```python\n(.*?)^```", page, re.DOTALL | re.MULTILINE)
                 if "scan_flops" in body]
    exec(compile(example, "docs/api.md", "exec"), {})  # noqa: S102 - the documented example, run as a reader would
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "5"
    assert printed[2].split()[:3] == ["0", "bppsa", "5"] and printed[3].split()[:3] == ["1", "bp", "7"]


def _page_text(path) -> str:
    """A page less what differs between two writes of it: plotly's random element ids."""
    import re

    return re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "ID",
                  path.read_text(encoding="utf-8"))


@pytest.mark.long
@pytest.mark.parametrize(("flags", "function", "keywords"), [
    (["rnn", "--seq-len", "10,30", "--processors", "64", "--dtype", "fp16"], "bppsa_rnn",
     {"seq_len": "10,30", "processors": 64, "dtype": "fp16"}),
    (["pruned-vgg11", "--width-divisor", "64", "--compare-levels", "1"], "bppsa_pruned_vgg11",
     {"width_divisor": 64, "compare_levels": "1"})])
def test_the_bppsa_functions_write_the_commands_page(flags, function, keywords, tmp_path, monkeypatch, capsys):
    """``archsim.cluster_jobs(report=…)`` wrote its page; ``archsim.bppsa_rnn(report=…)`` and ``bppsa_pruned_vgg11``
    were refused ("unknown keyword"), the page only the command's. Now the function writes the command's page,
    byte for byte but plotly's ids, its regenerating command line included."""
    import archsim
    from archsim import cli

    monkeypatch.chdir(tmp_path)
    assert cli.main(["bppsa", *flags, "--report", "page.html"]) == 0
    command_page = _page_text(tmp_path / "page.html")
    (tmp_path / "page.html").unlink()
    getattr(archsim, function)(**keywords, report="page.html")
    assert _page_text(tmp_path / "page.html") == command_page
    assert f"archsim bppsa {flags[0]} " in command_page


@pytest.mark.parametrize("function", ["bppsa_rnn", "bppsa_pruned_vgg11"])
def test_a_bppsa_page_at_a_folder_is_one_line_before_the_study(function, tmp_path, monkeypatch):
    """A folder as ``report`` is refused as ``--report`` refuses it, before the study runs (nothing written)."""
    import archsim

    monkeypatch.setattr("archsim.bppsa_run.rnn_study", lambda *a, **k: pytest.fail("the study ran"))
    monkeypatch.setattr("archsim.bppsa_run.vgg_study", lambda *a, **k: pytest.fail("the study ran"))
    with pytest.raises(InputError, match=r"cannot write here \(a folder\): give a file name$"):
        getattr(archsim, function)(report=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_vgg11_levels_as_the_paper_page_counts_them():
    """docs/papers/bppsa.md reads Fig. 3's rows: for n = 21 (22 elements), K = ⌈log₂ 22⌉ = 5, so Algorithm 1's lines
    1 and 8 give up-sweep d = 0…K−2 (4 levels) and down-sweep d = K−1…0 (5); the depth-2 hybrid: 2 up-sweep levels,
    a linear scan over the ⌈22 / 4⌉ = 6 block roots (5 steps), down-sweep d = 1, 0. Hand counts from the printed
    algorithm, against the scan's recorded levels (the page's first statement of them)."""
    from archsim.bppsa import blelloch_scan

    full = blelloch_scan(list(range(22)), op=lambda a, b: a).levels
    assert [phase for phase, _ in full] == ["up"] * 4 + ["down"] * 5
    assert [d for _, d in full] == [0, 1, 2, 3, 4, 3, 2, 1, 0]
    hybrid = blelloch_scan(list(range(22)), up_levels=2, op=lambda a, b: a).levels
    assert [phase for phase, _ in hybrid] == ["up"] * 2 + ["linear"] * 5 + ["down"] * 2
    assert [d for phase, d in hybrid if phase == "down"] == [1, 0]


@pytest.mark.parametrize(("call", "keyword", "advice"), [
    (lambda a: a.cost("ffnn8", format="json"), "format", "to_dict()"),
    (lambda a: a.cost("ffnn8", out="costs.txt"), "out", "to_frame()"),
    (lambda a: a.schedule("ffnn8", policy="gpipe", processors=2, unit_costs=True, gantt="g.html"), "gantt",
     "archsim.report.gantt.write_gantt(TIMELINE, PATH)"),
    (lambda a: a.schedule("ffnn8", policy="gpipe", processors=2, unit_costs=True, chrome_trace="t.json"),
     "chrome_trace", "archsim.report.export.write_chrome_trace(TIMELINE, PATH)"),
    (lambda a: a.pipeline(a.profile("ffnn8"), processors=2, method="layerpipe", dfg="d.json"), "dfg",
     "archsim.pipeline_dfg(plan, profile, out=PATH)"),
    (lambda a: a.pipeline(a.profile("ffnn8"), processors=2, method="layerpipe", gantt="g.html"), "gantt",
     "archsim.simulate(plan, profile, microbatches=M)"),
    (lambda a: a.bppsa_rnn(precision=3), "precision", "to_frame()"),
    (lambda a: a.pipeline(a.profile("ffnn8"), processors=2, method="layerpipe", microbatches=4), "microbatches",
     "archsim.simulate(plan, profile, microbatches=M)"),
    (lambda a: a.pipeline(a.profile("ffnn8"), processors=2, method="pipedream", memory=True), "memory",
     "archsim.pipeline_memory(plan, profile, microbatches=M)"),
])
def test_a_commands_output_keyword_says_how_to_get_it_from_the_result(call, keyword, advice, tmp_path, monkeypatch):
    """docs/api.md: a keyword no function takes is refused with "a command's output with what writes it from the
    result"; only train and search said so, the other jobs (cost, schedule, pipeline, the studies) only "unknown
    keyword" beside their keyword list, though a user brings --format, --out and --gantt from the command line, and
    archsim pipeline's --microbatches and --memory, which run the plan after it is made."""
    import archsim

    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError) as refused:
        call(archsim)
    text = str(refused.value)
    assert text.startswith(f"field '{keyword}': unknown keyword ({keyword} is ") and advice in text, text
    assert "\n" not in text and list(tmp_path.iterdir()) == []


def test_pruned_vgg11_bp_steps_are_the_linear_scans_with_one_move():
    """docs/papers/bppsa.md: BP's 21 steps on VGG-11's n = 21 operators (8 convolutions and 8 ReLUs, 5 poolings) are
    the linear scan's ◇, the first a move past the identity with no FLOPs, so 20 multiply; ``bppsa rnn`` counts
    T − 1 multiplies (hand counts from Eq. 5's n + 1 elements)."""
    import archsim

    vgg = archsim.bppsa_pruned_vgg11(width_divisor=64, compare_levels="2")
    bp = vgg.table[vgg.table.method == "bp"]
    assert vgg.meta["bp_steps"] == len(bp) == 8 + 8 + 5
    assert next(iter(bp["product"])) == "id" and int(bp.flops.iloc[0]) == 0 and int((bp.flops > 0).sum()) == 20
    rnn = archsim.bppsa_rnn(seq_len=10, processors=64)
    assert rnn["bp_steps"].tolist() == [10 - 1]


def test_a_branching_networks_table_says_why_it_has_no_weight_versions(capsys, monkeypatch):
    """``archsim pipeline`` printed ``weight_versions`` for a chain and dropped the column for a network with a
    residual add (an ONNX ResNet block, docs/examples/tiny_resnet.csv) without a word; it now says why, naming the
    first layer that reads two inputs (``add``: conv_b;stem, by reading the file)."""
    from pathlib import Path

    from archsim import cli

    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    assert cli.main(["pipeline", "docs/examples/tiny_resnet.csv", "--processors", "2", "--method", "pipedream"]) == 0
    out, err = capsys.readouterr()
    assert "weight_versions" not in out
    assert ("archsim pipeline: note: the network branches (add reads 2 inputs): PipeDream's stash depth, S − s + 1 "
            "versions for the s-th of S stages, is a chain's, so the table states no weight_versions") in err
    assert cli.main(["pipeline", "ffnn8", "--processors", "2", "--method", "pipedream"]) == 0
    out, err = capsys.readouterr()
    assert "weight_versions" in out and "branches" not in err


def test_a_sweeps_network_with_a_typo_is_named_once(tmp_path, capsys):
    """A spec's network file with a misspelt layer type: the error named the resolved path twice
    (``network '/…/net.csv': /…/net.csv, line 3, field 'Type': …``); now once, as the spec names it."""
    from archsim import cli

    (tmp_path / "nets").mkdir()
    (tmp_path / "nets" / "net.csv").write_text(
        "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, Padding, "
        "Type,\nc1, 8, 8, 3, 3, 3, 4, 1, 1, conv,\nc2, 8, 8, 3, 3, 4, 4, 1, 1, cnov,\n")
    (tmp_path / "s.toml").write_text('[sweep]\nname = "s"\nnetworks = ["nets/net.csv"]\narrays = ["32x32"]\n'
                                     'batches = [8]\nprocessors = [2]\nmethods = ["layerpipe"]\n')
    assert cli.main(["sweep", str(tmp_path / "s.toml"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"archsim sweep: error: {tmp_path / 's.toml'}, line 3, field 'networks': network nets/net.csv, "
                   "line 3, field 'Type': unknown layer type 'cnov'; choose one of conv, fc, matmul, pool, "
                   "elementwise, batchnorm, layernorm, deconv"), err
    assert not (tmp_path / "out").exists()


def _busy_overlap(frame) -> float:
    """Units during which both devices run an op (unit costs: ops are whole units)."""
    spans = {device: {t for _, op in part.iterrows() for t in range(int(op.start), int(op.end))}
             for device, part in frame.groupby("processor")}
    first, second = spans.values()
    return float(len(first & second))


def test_fig5_which_ops_move_and_what_the_overlap_gains():
    """Fig. 5 (a) → (b), as docs/papers/ooo-backprop.md states it: without fast-forwarding only one device works at a
    time; with it device 2's four δ run before its four G's and device 1's D4, D3, D2, G4 run beside those G's —
    4 units of overlap, the paper's 23 → 19 (hand count: 8 F + 8 G + 7 D = 23 units of work)."""
    import archsim

    mp = archsim.schedule("ffnn8", policy="mp", processors=2, unit_costs=True)
    assert _busy_overlap(mp.timeline.to_frame()) == 0 and mp.makespan == 8 + 8 + 7
    ff = archsim.schedule("ffnn8", policy="ooo-pipe1", processors=2, unit_costs=True).timeline.to_frame()
    second = ff[ff.processor == "d2"].sort_values("start")
    assert list(second.op.str.split(":").str[0]) == ["F5", "F6", "F7", "F8", "D8", "D7", "D6", "D5",
                                                     "G8", "G7", "G6", "G5"]
    beside = ff[(ff.processor == "d1") & (ff.start >= 12) & (ff.end <= 16)].sort_values("start")
    assert list(beside.op.str.split(":").str[0]) == ["D4", "D3", "D2", "G4"]
    assert _busy_overlap(ff) == 4 and ff.end.max() == 23 - 4
