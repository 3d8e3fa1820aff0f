"""Every comma-list flag reads its entries one way (``archsim.value_parsers.comma_items``): spaces around an entry are
dropped, as people type them inside quotes (``--only "conv, fc"``), and an empty entry (``conv,,fc``, a trailing
comma) is refused in one line naming the flag.

Failed before the shared reading: ``--only conv,,fc`` and ``--only conv,`` (the command's and ``load_network``'s)
and ``--split-axes channels,,rows`` ran, the empty entry silently dropped, where ``--gpus 4,,8`` and
``--sram-kb 64,,64`` were refused. The spaced spellings (``"conv, fc"``, ``"64, 64, 64"``, ``"1, 3, 16, 16"``)
were already read; their tests hold every flag to that as it now goes through the one reader."""

from __future__ import annotations

import pytest
from test_robustness import clean_error, json_rows

from archsim.api import array_config, load_network
from archsim.errors import InputError
from archsim.split_axis import split_axes
from archsim.workload.torch_file import parse_input_shape

# three layers of three kinds; --only conv,fc keeps c1 and f1 (written by hand from the rows below)
CSV = ("Layer name,IFMAP Height,IFMAP Width,Filter Height,Filter Width,Channels,Num Filter,Strides,Type,\n"
       "c1,8,8,3,3,4,8,1,conv,\n"
       "p1,6,6,2,2,8,8,2,pool,\n"
       "f1,3,3,3,3,8,10,1,fc,\n")


@pytest.fixture
def net(tmp_path):
    path = tmp_path / "net.csv"
    path.write_text(CSV)
    return path


@pytest.mark.parametrize("text", ["conv,fc", "conv, fc", " conv , fc ", "fc,conv"])
def test_only_reads_spaced_entries(capsys, net, text):
    _, rows = json_rows(capsys, "cost", net, "--only", text)
    assert [row["layer"] for row in rows if row["layer"] != "TOTAL"] == ["c1", "f1"]


@pytest.mark.parametrize("text", ["conv,,fc", "conv,", ",fc", "conv, ,fc"])
@pytest.mark.parametrize("command", ["cost", "schedule"])
def test_only_refuses_an_empty_entry_naming_the_flag(capsys, net, command, text):
    """Failed before: the empty entry was dropped and the run went on with the other kinds."""
    extra = ["--policy", "gpipe", "--processors", "2", "--microbatches", "2"] if command == "schedule" else []
    line = clean_error(capsys, command, net, *extra, "--only", text)
    assert line.endswith(f"error: argument --only: {text!r} has an empty item; give values separated by commas"), line


def test_load_network_reads_only_as_the_flag_does(net):
    """``only`` as ``--only``: spaced entries read, an empty one refused (failed before: "conv," kept conv)."""
    assert [layer.name for layer in load_network(str(net), only="conv, fc").layers] == ["c1", "f1"]
    with pytest.raises(InputError, match="'conv,' has an empty item") as caught:
        load_network(str(net), only="conv,")
    assert caught.value.where.field == "only"


def test_sram_kb_reads_spaced_sizes_and_refuses_an_empty_one():
    """``"64, 32, 16"``: 64 KiB of ifmap, 32 of filter and 16 of ofmap SRAM, as typed."""
    array = array_config("8x8", sram_kb="64, 32, 16")
    assert (array.ifmap_sram_kb, array.filter_sram_kb, array.ofmap_sram_kb) == (64, 32, 16)
    with pytest.raises(InputError, match="'64,,64' has an empty item") as caught:
        array_config("8x8", sram_kb="64,,64")
    assert caught.value.where.field == "sram-kb"


def test_input_shape_reads_spaced_extents_and_refuses_an_empty_one():
    assert parse_input_shape("1, 3, 16, 16") == ((1, 3, 16, 16),)
    assert parse_input_shape("1, 3 ; 1, 128 :int64") == ((1, 3), (1, 128))
    with pytest.raises(InputError) as caught:
        parse_input_shape("1,3,,16")
    assert caught.value.where.field == "input-shape"


def test_split_axes_refuses_an_empty_entry():
    """Failed before: ``channels,,rows`` planned with channels and rows, the empty entry dropped."""
    assert split_axes("channels, rows") == ("channels", "rows")
    with pytest.raises(InputError, match="'channels,,rows' has an empty item") as caught:
        split_axes("channels,,rows")
    assert caught.value.where.field == "split-axes"


@pytest.mark.parametrize("argv,said", [
    (["schedule", "--policy", "1f1b", "--stages", "2", "--microbatches", "2", "--stage-times", "1,2,,1"],
     "argument --stage-times: '1,2,,1' has an empty item"),
    (["cost", "vgg16", "--engine", "cycle", "--sram-kb", "64,64,64,"], "argument --sram-kb: '64,64,64,' has an empty item"),
])
def test_other_comma_flags_refuse_an_empty_entry_in_the_same_words(capsys, argv, said):
    assert said in clean_error(capsys, *argv)


def test_stage_times_read_spaced_numbers(capsys):
    """``"1, 2, 1"`` is F 1, B 2, W 1 per stage. 1F1B over 2 stages and 2 micro-batches, by hand (B and W back
    to back, 3 units): stage 0 F1 0–1, F2 1–2; stage 1 F1 1–2, B1W1 2–5, F2 5–6, B2W2 6–9; stage 0 B1W1 5–8,
    B2W2 9–12: makespan 12, each stage busy 2 · 4 = 8 of 12 (bubble 1/3)."""
    head = ["schedule", "--policy", "1f1b", "--stages", "2", "--microbatches", "2", "--stage-times"]
    row = json_rows(capsys, *head, "1, 2, 1")[1][0]
    assert (row["makespan"], row["bubble_fraction"]) == (12.0, pytest.approx(1 / 3))
