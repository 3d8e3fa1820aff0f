"""Small input defects left from issues #37/#40 ("clear errors on bad input", inputs 49), each test failing on the
code before its fix: a layer row separated by tabs or ``;`` under a comma header read as "row has 1 fields"; an
ONNX model's second input with the first input's batch symbol could not be read at all, and one with a batch
symbol of its own was refused without naming the first's; ``plan --max-stages`` above what the layers and GPUs
allow was capped silently; ``archsim.bppsa_rnn`` ran an empty ``seq_len`` or ``processors`` list as a table of no
rows where the command refuses an empty value."""

from __future__ import annotations

import warnings

import onnx
import pytest
from onnx import helper
from strict_cli import raised, said
from test_docs import ROOT

import archsim
from archsim.cli import main
from archsim.csv_lines import check_row_length
from archsim.errors import InputError
from archsim.workload.csv_loader import parse_topology
from tests.onnx_models import model, value, weight

CONV_HEADER = "Layer name,IFMAP Height,IFMAP Width,Filter Height,Filter Width,Channels,Num Filter,Strides,\n"
CONV_ROW = ("conv1", "32", "32", "3", "3", "3", "16", "1")


# 1. a layer row separated by tabs or ';' under a comma header


@pytest.mark.parametrize(("mark", "named"), [("\t", "tabs"), (";", "';'")])
def test_a_layer_row_of_another_separator_says_so(tmp_path, capsys, mark, named):
    """Failed before: "row has 1 fields, expected at least 8" (field 'IFMAP Height'). The header has 8 columns (its
    trailing comma names none), the row one cell holding 7 of ``mark``."""
    path = tmp_path / "layers.csv"
    path.write_text(CONV_HEADER + ",".join(CONV_ROW) + "\n" + mark.join(("conv2", *CONV_ROW[1:])) + "\n")
    text = (f"line 3: the row is one cell that seems separated by {named} under a header of 8 comma-separated columns; "
            "archsim reads comma-separated files")
    assert said(["cost", str(path)], capsys) == f"archsim cost: error: {path}, {text}"
    assert raised(lambda: archsim.load_network(str(path))) == f"{path}, {text}"


@pytest.mark.parametrize(("mark", "named"), [("\t", "tabs"), (";", "';'")])
def test_a_gemm_row_of_another_separator_says_so(mark, named):
    """Failed before: "row has 1 fields, expected Layer, M, N, K". SCALE-Sim's GEMM header has 4 columns."""
    text = raised(lambda: parse_topology("Layer,M,N,K\n" + mark.join(("g1", "64", "32", "16")) + "\n"))
    assert text == (f"<string>, line 2: the row is one cell that seems separated by {named} under a header of 4 "
                    "comma-separated columns; archsim reads comma-separated files")


def test_a_row_holding_both_marks_is_named_by_the_one_it_holds_more_of():
    """A layer name may hold a ';': the row's seven tabs name it, not the name's one ';'."""
    text = raised(lambda: parse_topology(CONV_HEADER + "\t".join(("conv;1", *CONV_ROW[1:])) + "\n"))
    assert "seems separated by tabs under a header of 8" in text


def test_the_shorter_row_readers_say_it_too():
    """The readers that refuse a short row (runs files, kernel CSVs, …: ``check_row_length``) say it of a row of one
    cell holding tabs; one without either mark keeps its message (before: "1 cells, the header names 3 columns …")."""
    with pytest.raises(InputError) as refused:
        check_row_length(["a\tb\tc"], ["x", "y", "z"], file="runs.csv", line=4)
    assert str(refused.value) == ("runs.csv, line 4: the row is one cell that seems separated by tabs under a header "
                                  "of 3 comma-separated columns; archsim reads comma-separated files")
    with pytest.raises(InputError) as refused:
        check_row_length(["abc"], ["x", "y", "z"], file="runs.csv", line=4)
    assert "1 cells, the header names 3 columns: no cell for y, z" in str(refused.value)


# 2. an ONNX model of two inputs with symbolic batches


def _two_inputs(tmp_path, first, second, name="two.onnx") -> str:
    """x (first × 32) through a 32 → 8 MatMul, added to y (second × 8)."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["p"], name="proj"),
             helper.make_node("Add", ["p", "y"], ["z"], name="add")]
    path = tmp_path / name
    onnx.save(model(nodes, [value("x", [first, 32]), value("y", [second, 8])], [value("z", [first, 8])],
                    [weight("w", 32, 8)]), path)
    return str(path)


def _shapes(network) -> list[tuple]:
    return [(layer.name, layer.kind, layer.ifmap_h, layer.ifmap_w, layer.channels, layer.filters)
            for layer in network.layers]


def test_one_batch_symbol_on_both_inputs_is_one_batch(tmp_path):
    """Failed before: refused, "graph input 'y' dimension 0 ('N') is symbolic; fix it with --dim N=VALUE", while
    ``--dim N=…`` is refused as fixing the batch: no way to read it. One symbol is one size, so y's is the batch
    too, read per sample. By hand: proj is an fc of 32 inputs and 8 outputs on one row, add an element-wise layer
    of 8 channels on one row — and the same model with y's batch written as 1 reads the same."""
    network = archsim.load_network(_two_inputs(tmp_path, "N", "N"))
    assert _shapes(network) == [("proj", "fc", 1, 1, 32, 8), ("add", "elementwise", 1, 1, 8, 8)]
    assert _shapes(network) == _shapes(archsim.load_network(_two_inputs(tmp_path, "N", 1, "fixed.onnx")))
    assert "fixes the batch" in raised(lambda: archsim.load_network(_two_inputs(tmp_path, "N", "N"),
                                                                      dim={"N": 4}))


def test_another_batch_symbol_is_refused_naming_both(tmp_path, capsys):
    """Failed before: "graph input 'y' dimension 0 ('M') is symbolic; fix it with --dim M=VALUE", which says nothing
    of the first input's batch N, so ``--dim M=16`` (the batch the user meant) costed y's add 16 times a sample's."""
    path = _two_inputs(tmp_path, "N", "M")
    line = said(["import", path], capsys)
    assert line == (f"archsim import: error: {path}, field 'input': graph input 'y' dimension 0 ('M') is symbolic and "
                    "not the batch of the first graph input 'x' ('N'): if it is the batch too, name both dimensions "
                    "alike in the export, or give --dim M=1 (layers are per sample); otherwise fix it with "
                    "--dim M=VALUE")
    text = raised(lambda: archsim.load_network(path))
    assert text.endswith("give dim={'M': 1} (layers are per sample); otherwise fix it with dim={'M': VALUE}"), text
    assert _shapes(archsim.load_network(path, dim={"M": 1})) == _shapes(
        archsim.load_network(_two_inputs(tmp_path, "N", "N", "one.onnx")))


def test_an_unnamed_second_batch_is_named_by_its_place(tmp_path):
    """A dimension without a symbol is named as the refusals name it elsewhere, ``y[0]``."""
    text = raised(lambda: archsim.load_network(_two_inputs(tmp_path, "N", None)))
    assert "graph input 'y' dimension 0 ('y[0]') is symbolic and not the batch of the first graph input 'x' ('N')" \
        in text


# 3. plan --max-stages above what the layers and GPUs allow

PLAN = ["plan", "layerpipe_sample", "--cluster", str(ROOT / "configs" / "clusters" / "testbed_1080ti.toml"),
        "--microbatches", "4", "--format", "json"]  # 4 layers (layers/layerpipe_sample.csv), 4 servers × 2 GPUs


def test_plan_says_once_that_max_stages_is_capped(capsys):
    """Failed before: ``--max-stages 100`` ran as 4 (min of 4 layers, 8 GPUs and 100) without a word, though its
    help says "at most". The plan is the one without the flag; a flag within the cap says nothing."""
    assert main([*PLAN, "--max-stages", "100"]) == 0
    capped, err = capsys.readouterr()
    assert err == ("archsim plan: note: --max-stages 100 is more stages than a plan of 4 layers on 8 GPUs can have "
                   "(one layer and one GPU a stage at least): SPP tries at most 4\n")
    assert main(PLAN) == 0
    free, err = capsys.readouterr()
    assert err == "" and capped == free
    assert main([*PLAN, "--max-stages", "4"]) == 0
    assert capsys.readouterr().err == ""


def test_plan_api_warns_that_max_stages_is_capped():
    """The same note from ``archsim.plan``, a UserWarning naming the keyword; none at the cap."""
    cluster = ROOT / "configs" / "clusters" / "testbed_1080ti.toml"
    with pytest.warns(UserWarning) as said:
        archsim.plan("layerpipe_sample", cluster=cluster, microbatches=4, max_stages=100)
    assert [str(w.message) for w in said] == [
        ("max_stages=100 is more stages than a plan of 4 layers on 8 GPUs can have (one layer and one GPU a stage at "
        "least): SPP tries at most 4")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        archsim.plan("layerpipe_sample", cluster=cluster, microbatches=4, max_stages=4)


# 4. bppsa's lists: the API refuses an empty one as the command refuses an empty value


@pytest.mark.parametrize(("keyword", "empty"), [("seq_len", []), ("processors", ())])
def test_bppsa_rnn_refuses_an_empty_list(capsys, keyword, empty):
    """Failed before: ``archsim.bppsa_rnn(seq_len=[])`` returned a table of no rows; the command refuses
    ``--seq-len ""`` (and ``--seq-len`` alone in the words the empty list gets). The API names the keyword, the
    command its flag."""
    assert raised(lambda: archsim.bppsa_rnn(**{keyword: empty})) == \
        f"field '{keyword}': expected at least one argument"
    flag = "--" + keyword.replace("_", "-")
    assert said(["bppsa", "rnn", flag, ""], capsys) == \
        f"archsim bppsa rnn: error: argument {flag}: expected a value, got an empty one"


# 5. a layer's bias: in its parameters, not in weight_bytes (docs/formats.md's Bias column says why)


def test_a_bias_counts_as_parameters_not_as_weight_bytes(tmp_path):
    """What docs/formats.md states, by hand: fc1 (4 → 8) and fc2 (8 → 2) with biases have 4·8 + 8 + 8·2 + 2 = 58
    parameters, and int8 weight bytes 32 and 16 — the same, and the same cycles, as without biases."""
    header = "Layer name,IFMAP Height,IFMAP Width,Filter Height,Filter Width,Channels,Num Filter,Strides,Type,Bias\n"
    paths = []
    for bias in (0, 1):
        path = tmp_path / f"bias{bias}.csv"
        path.write_text(header + f"fc1,1,1,1,1,4,8,1,fc,{bias}\nfc2,1,1,1,1,8,2,1,fc,{bias}\n")
        paths.append(str(path))
    assert archsim.load_network(paths[1]).parameter_count == 58
    assert archsim.load_network(paths[0]).parameter_count == 48
    without, biased = (archsim.cost(path).table for path in paths)
    assert list(biased["weight_bytes"]) == [32, 16]
    assert biased[["F_cycles", "G_cycles", "D_cycles", "weight_bytes"]].equals(
        without[["F_cycles", "G_cycles", "D_cycles", "weight_bytes"]])


# 6. plan's flags that the chosen method does not read: refused, not dropped


@pytest.mark.parametrize(("flags", "keywords", "flag_text", "keyword_text"), [
    (["--method", "pipedream", "--max-stages", "2"], {"method": "pipedream", "max_stages": 2},
     ("argument --max-stages: --max-stages 2 bounds SPP's search; --method pipedream is PipeDream's optimizer, which "
     "tries every stage count its levels allow: drop it"),
     ("field 'max_stages': max_stages=2 bounds SPP's search; method='pipedream' is PipeDream's optimizer, which "
     "tries every stage count its levels allow: drop it")),
    (["--straight-pipeline"], {"straight_pipeline": True},
     ("argument --straight-pipeline: --straight-pipeline is an option of PipeDream's optimizer (--method pipedream); "
     "--method spp does not read it: drop it"),
     ("field 'straight_pipeline': straight_pipeline=True is an option of PipeDream's optimizer "
     "(method='pipedream'); method='spp' does not read it: drop it")),
    (["--method", "gpipe", "--activation-compression-ratio", "2"], {"method": "gpipe",
                                                                   "activation_compression_ratio": 2},
     ("argument --activation-compression-ratio: --activation-compression-ratio 2.0 is an option of PipeDream's optimizer "
     "(--method pipedream); --method gpipe does not read it: drop it"),
     ("field 'activation_compression_ratio': activation_compression_ratio=2.0 is an option of PipeDream's optimizer "
     "(method='pipedream'); method='gpipe' does not read it: drop it")),
])
def test_plan_refuses_a_flag_its_method_does_not_read(capsys, flags, keywords, flag_text, keyword_text):
    """Failed before: ``--method pipedream --max-stages 1`` printed the same plan as without it (PipeDream's
    optimizer runs no SPP search), and SPP or a baseline ran with PipeDream's options unread."""
    argv = [*PLAN[:-2], *flags]
    assert said(argv, capsys) == f"archsim plan: error: {flag_text}"
    cluster = ROOT / "configs" / "clusters" / "testbed_1080ti.toml"
    assert raised(lambda: archsim.plan("layerpipe_sample", cluster=cluster, microbatches=4, **keywords)) == \
        keyword_text
