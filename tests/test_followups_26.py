"""Small defects left from the morning's trials (followups 26), each test failing on the code before its fix:
network loading's refusals reached from ``archsim.cost``/``archsim.load_network`` named the command's flags
(``--dim``, ``--input-shape``, ``--unsupported``, ``--batch``), …"""

from __future__ import annotations

import onnx
import pytest
from onnx import helper
from test_docs import ROOT

import archsim
from archsim.cli import main
from archsim.errors import InputError
from tests.onnx_models import model, value, weight, with_unknown_op

GPT = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")
TINY = f"{ROOT / 'tests' / 'data' / 'torch' / 'tiny_model.py'}:TinyNet"


def _refused(call) -> str:
    with pytest.raises(InputError) as refused:
        call()
    return str(refused.value)


def _said(argv, capsys) -> str:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    return err.strip()


# 1. network loading's refusals name the API's keywords from Python, the command's flags from the command


def _symbolic_onnx(tmp_path):
    path = tmp_path / "attn.onnx"
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")]
    onnx.save(model(nodes, [value("x", ["N", "seq", 32])], [value("y", ["N", "seq", 8])], [weight("w", 32, 8)]), path)
    return str(path)


def _batch_csv(tmp_path):
    path = tmp_path / "batched.csv"
    path.write_text("Layer name,IFMAP Height,IFMAP Width,Filter Height,Filter Width,Channels,Num Filter,Strides,"
                    "Batch Size\nconv1,8,8,3,3,4,8,1,16\n")
    return str(path)


CASES = [  # (network, flags, keywords, the command's text, the library's text)
    ("vgg16", ["--dim", "seq=8"], {"dim": {"seq": 8}},
     ("--dim seq=… names no dimension: a topology CSV or shipped network has no symbolic dimensions (--dim applies "
     "to ONNX files and transformer configs)"),
     ("dim={'seq': …} names no dimension: a topology CSV or shipped network has no symbolic dimensions (dim applies "
     "to ONNX files and transformer configs)")),
    ("vgg16", ["--input-shape", "1,3,8,8"], {"input_shape": "1,3,8,8"},
     "--input-shape applies to a PyTorch model given as FILE.py:ClassName",
     "input_shape applies to a PyTorch model given as FILE.py:ClassName"),
    (GPT, ["--dim", "foo=3"], {"dim": {"foo": 3}},
     "a transformer config takes --dim seq=N only, not 'foo'",
     "a transformer config takes dim={'seq': N} only, not 'foo'"),
    (GPT, ["--dim", "seq=8", "--dim", "seq=16"], {"dim": [("seq", 8), ("seq", 16)]},
     "a --dim name is given twice", "a dim name is given twice"),
    (TINY, ["--input-shape", "1,3,16,16", "--dim", "seq=4"], {"input_shape": "1,3,16,16", "dim": {"seq": 4}},
     "--dim applies to ONNX files and transformer configs; a PyTorch model's shapes come from --input-shape",
     "dim applies to ONNX files and transformer configs; a PyTorch model's shapes come from input_shape"),
    (TINY, [], {},
     "a PyTorch model needs --input-shape, e.g. --input-shape 1,3,224,224 (batch first)",
     "a PyTorch model needs input_shape, e.g. input_shape='1,3,224,224' (batch first)"),
    ("onnx", [], {},
     "graph input 'x' dimension 1 ('seq') is symbolic; fix it with --dim seq=VALUE",
     "graph input 'x' dimension 1 ('seq') is symbolic; fix it with dim={'seq': VALUE}"),
    ("onnx", ["--dim", "seq=16", "--dim", "sequence=16"], {"dim": {"seq": 16, "sequence": 16}},
     "--dim 'sequence' names no symbolic dimension of the model's inputs (it has N, seq)",
     "dim 'sequence' names no symbolic dimension of the model's inputs (it has N, seq)"),
    ("nms", [], {},
     "node 'nms' (op NonMaxSuppression): op type not modelled by archsim; use --unsupported skip to leave it out",
     "node 'nms' (op NonMaxSuppression): op type not modelled by archsim; use unsupported='skip' to leave it out"),
    ("csv", [], {},
     "a batch size per layer is not read (archsim applies --batch to every layer); leave the column empty",
     "a batch size per layer is not read (archsim applies batch to every layer); leave the column empty"),
]


@pytest.mark.parametrize(("network", "flags", "keywords", "flag_text", "keyword_text"), CASES)
def test_network_refusals_name_keywords_from_python_and_flags_from_the_command(
        tmp_path, capsys, network, flags, keywords, flag_text, keyword_text):
    """Failed before: each refusal from archsim.cost and archsim.load_network named the flag (``--dim``,
    ``--input-shape``, ``--unsupported skip``, ``--batch``); the command's line is as it was."""
    if network == "onnx":
        network = _symbolic_onnx(tmp_path)
    elif network == "nms":
        network = str(tmp_path / "nms.onnx")
        onnx.save(with_unknown_op(), network)
    elif network == "csv":
        network = _batch_csv(tmp_path)
    said = _said(["cost", network, *flags], capsys)
    assert said.startswith("archsim cost: error: ") and said.endswith(flag_text), said
    for job in (archsim.cost, archsim.load_network):
        text = _refused(lambda: job(network, **keywords))  # noqa: B023 - called at once
        assert text.endswith(keyword_text) and "--" not in text, text


def test_a_transformers_sequence_note_names_the_keyword_from_python(capsys):
    """Failed before: archsim.load_network(config, dim={"seq": 512})'s note said "from --dim seq; --dim seq=N
    sets it"; the command's note is as it was."""
    assert main(["cost", GPT, "--dim", "seq=512", "--format", "json"]) == 0
    assert "note: sequence length 512 tokens per sample, from --dim seq; --dim seq=N sets it\n" in \
        capsys.readouterr().err
    network = archsim.load_network(GPT, dim={"seq": 512})
    assert network.notes[-1] == "sequence length 512 tokens per sample, from dim['seq']; dim={'seq': N} sets it"
    default = archsim.load_network(GPT)
    assert default.notes[-1].endswith("; dim={'seq': N} sets it")


# 2. plan's search guard counts the pipedream-prm baseline, which searches every stage count

PLAN = ["plan", "layerpipe_sample", "--cluster", str(ROOT / "configs" / "clusters" / "testbed_1080ti.toml"),
        "--microbatches", "4", "--max-stages", "2"]  # 4 layers, 4 servers × 2 GPUs
# By hand, PRM's steps are (S − 1) · L² · V³ / 4: SPP's 2 stage counts 1 · 4² · 8³ / 4 = 2,048; the
# pipedream-prm baseline's min(L, V) = 4 stage counts 3 · 4² · 8³ / 4 = 6,144; 8,192 in all.
# Their bytes (prm_search_parts): S · 8 · 5 · 9² of values, (S − 1) · 16 · 5 · 9² of choices, 2 · 8 · 9³ of links,
# 8 · 5² of all-reduce and 8 · (3 · 9² + 2 · 5² + 2 · 8² + 2 · 5 + 2 · 4 + 9) of the rest: 28,408 B at S = 2, 47,848 B at 4.


def test_plans_search_guard_counts_the_pipedream_prm_baseline(capsys):
    """Failed before: SPP's 2,048 steps were checked alone against the limit, the baseline's 6,144 not
    counted, so a run of 8,192 steps passed a limit of 8,191 (and the advice named --max-stages only)."""
    said = _said([*PLAN, "--max-search-steps", "8191"], capsys)
    assert said == (
        "archsim plan: error: argument --max-search-steps: SPP's search over 4 layers, 8 GPUs and up to 2 stages is "
        "about 2,048 steps and 2.84e-05 GB of tables, and the pipedream-prm baseline's over every stage count up "
        "to 4 about 6,144 steps and 4.78e-05 GB: 8,192 steps in all (≈7.37e-06 s), above the limit of 8,191 "
        "steps; give --baselines none to run SPP's search alone (2,048 steps), --max-search-steps 8192 to run it "
        "anyway, or --max-stages 1 (it bounds SPP's search only; "
        "the pipedream-prm baseline tries every stage count)")
    assert main([*PLAN, "--max-search-steps", "8192", "--format", "json"]) == 0  # the estimate's own figure runs
    capsys.readouterr()
    alone = _said([*PLAN, "--max-search-steps", "6143"], capsys)  # the baseline alone is over: fewer GPUs
    assert alone.endswith("give --baselines none to run SPP's search alone (2,048 steps), --max-search-steps "
                          "8192 to run it anyway, or a cluster of fewer GPUs: "
                          "--max-stages bounds SPP's search only, and the pipedream-prm baseline's, 6,144 steps, is "
                          "above the limit alone")
    paper = _said([*PLAN, "--max-search-steps", "2047", "--baselines", "paper"], capsys)  # no pipedream-prm
    assert paper.endswith("about 2,048 steps (≈1.84e-06 s) and 2.84e-05 GB of tables, above the limit of 2,047 "
                          "steps; give --max-search-steps 2048 to run it anyway, or fewer --max-stages")


# 3. the shared integer-list parser (bppsa rnn's --seq-len and --processors)


@pytest.mark.parametrize(("flag", "text"), [("--seq-len", "10,,30"), ("--seq-len", "10,30,"),
                                            ("--processors", ",4")])
def test_an_empty_list_item_is_refused_naming_the_flag(capsys, flag, text):
    """Failed before: ``--seq-len 10,,30`` ran as ``10,30`` (the empty item silently dropped)."""
    argv = ["bppsa", "rnn", "--seq-len", "10", "--processors", "4", flag, text, "--format", "csv"]
    assert _said(argv, capsys) == (f"archsim bppsa rnn: error: argument {flag}: {text!r} has an empty item; give "
                                   "values separated by spaces or commas")


def test_a_repeated_list_item_is_run_once_with_one_warning(capsys):
    """Failed before: ``--seq-len 10,10 --processors 4,4`` printed the same row four times, silently."""
    argv = ["bppsa", "rnn", "--seq-len", "10,30,10", "--processors", "4,4", "--format", "csv"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert [line.split(",")[:2] for line in out.splitlines()[1:]] == [["10", "4"], ["30", "4"]]  # T × p, each once
    assert err.splitlines() == ["archsim bppsa rnn: warning: --seq-len repeats 10: each value runs once",
                                "archsim bppsa rnn: warning: --processors repeats 4: each value runs once"]


# 4. archsim cluster: the machine size that ran, and a trace separated by semicolons or tabs

TRACE_HEADER = ("job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration", "interval")


def _trace(tmp_path, separator: str = ",") -> str:
    path = tmp_path / "trace.csv"
    rows = [TRACE_HEADER, ("j1", "1", "0", "10", "resnet50", "0", "0"), ("j2", "2", "5", "10", "resnet50", "0", "0")]
    path.write_text("".join(separator.join(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(("gpus", "per_machine", "used"), [("2", [], 2), ("2", ["--gpus-per-machine", "8"], 2),
                                                          ("7", [], 3), ("6", ["--gpus-per-machine", "2"], 2)])
def test_cluster_meta_states_the_machine_size_that_ran(tmp_path, capsys, gpus, per_machine, used):
    """Failed before: ``--gpus 2`` (one machine of 2 GPUs) said gpus_per_machine 3, the flag's default. By hand:
    2 GPUs at up to 3 (or 8) a machine make one machine of 2; 7 at 3 make machines of 3, 3 and 1."""
    import json

    argv = ["cluster", "--trace", _trace(tmp_path), "--gpus", gpus, *per_machine, "--policy", "tiresias",
            "--format", "json"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["meta"]["gpus_per_machine"] == used


@pytest.mark.parametrize(("separator", "named"), [(";", "';'"), ("\t", "tabs")])
def test_a_trace_separated_by_semicolons_or_tabs_is_named_so(tmp_path, capsys, separator, named):
    """Failed before: the header read as one unknown column 'job_id;num_gpu;…'."""
    path = _trace(tmp_path, separator)
    said = _said(["cluster", "--trace", path, "--gpus", "2", "--policy", "tiresias"], capsys)
    assert said == (f"archsim cluster: error: {path}, line 1: the header is one column that seems separated by "
                    f"{named}; archsim reads comma-separated files")


# 5. the idle note's grammar


@pytest.mark.parametrize(("processors", "tail"), [("5", "uses 4 of the 5 processors; 1 stays idle"),
                                                  ("6", "uses 4 of the 6 processors; 2 stay idle")])
def test_the_idle_note_agrees_with_its_count(capsys, processors, tail):
    """Failed before: one idle processor was said "1 stay idle". gpipe puts one of layerpipe_sample's 4 layers
    on a processor: 4 of 5 (or 6) are used."""
    argv = ["pipeline", "layerpipe_sample", "--processors", processors, "--method", "gpipe", "--format", "csv"]
    assert main(argv) == 0
    assert capsys.readouterr().err == f"archsim pipeline: note: gpipe's plan {tail}\n"
