"""Two rules every CSV archsim reads shares (archsim.csv_lines, docs/formats.md's opening paragraph): a cell
naming one of its column's choices is read in any case, as a runs file's ``recompute`` was alone; a ``#`` line
inside a quoted cell is that cell's text, not a comment. Each reference is the same file written in the
choices' own spelling, or the rows counted by hand."""

from __future__ import annotations

import pytest

from archsim.array.gemm_run import read_shapes
from archsim.csv_lines import csv_rows
from archsim.errors import InputError
from archsim.training.calibrate import read_probe
from archsim.validation.gpu_csv import parse_kernel_csv
from archsim.validation.neusight import parse_neusight_csv

KERNELS = "network,layer,kind,batch,op,measured_ms\n"


def test_a_kernel_csv_op_and_kind_are_read_in_any_case():
    """``f``, ``g`` and ``dg_serial`` are the ops F, G and DG_serial and ``FC`` the layer type fc, as the
    same file in the choices' spelling reads (before: 'unknown op 'f''). The network and layer names keep
    their case (VGG16, Conv1: names, not choices)."""
    given = parse_kernel_csv(KERNELS + "VGG16,Conv1,FC,8,f,1.5\nVGG16,Conv1,Fc,8,g,2.5\nVGG16,Conv1,fc,8,dg_serial,3\n")
    spelt = parse_kernel_csv(KERNELS + "VGG16,Conv1,fc,8,F,1.5\nVGG16,Conv1,fc,8,G,2.5\nVGG16,Conv1,fc,8,DG_serial,3\n")
    assert given.frame.equals(spelt.frame)
    assert given.frame["op"].tolist() == ["F", "G", "DG_serial"]
    assert set(given.frame["network"]) == {"VGG16"} and set(given.frame["layer"]) == {"Conv1"}


def test_a_neusight_opname_is_read_in_any_case():
    """NeuSight's ``Linear`` is the op linear (before: "unknown op 'Linear'")."""
    head = "OPName,Latency,Device,B,M,N,K\n"
    given = parse_neusight_csv(head + "Linear,0.5,Tesla T4,1,64,128,256\n")
    spelt = parse_neusight_csv(head + "linear,0.5,Tesla T4,1,64,128,256\n")
    assert given.frame.equals(spelt.frame)
    assert given.frame["op"].tolist() == ["linear"] and given.frame["op_class"].tolist() == ["linear"]


def test_a_probe_section_is_read_in_any_case(tmp_path):
    """A probe's ``GEMM`` section is gemm (before: "expected a section among gemm, …, got 'GEMM'")."""
    head = "section,name,m,k,n,count,bytes,ops,seconds\n"
    (tmp_path / "given.csv").write_text(head + "GEMM,g1,64,64,64,1,0,0,0.001\n", encoding="utf-8")
    (tmp_path / "spelt.csv").write_text(head + "gemm,g1,64,64,64,1,0,0,0.001\n", encoding="utf-8")
    assert read_probe(tmp_path / "given.csv") == read_probe(tmp_path / "spelt.csv")
    assert read_probe(tmp_path / "given.csv")[1][0].section == "gemm"


def test_every_choice_cell_is_refused_with_one_message(tmp_path):
    """A cell that is none of the choices gets the one line naming them all (before: each reader its own
    wording, the shapes file's "unknown dataflow 'xs'; choose ws, os or is")."""
    shapes = tmp_path / "shapes.csv"
    shapes.write_text("m,k,n,rows,cols,dataflow\n64,64,64,8,8,xs\n", encoding="utf-8")
    with pytest.raises(InputError) as refused:
        read_shapes(shapes)
    assert str(refused.value) == f"{shapes}, line 2, field 'dataflow': expected one of ws, os, is (any case), got 'xs'"
    with pytest.raises(InputError, match=r"line 2, field 'op': expected one of F, D, G, DG_serial, DG_concurrent "
                                         r"\(any case\), got 'x'"):
        parse_kernel_csv(KERNELS + "vgg,conv1,conv,8,x,1.5\n")


def test_a_hash_line_inside_a_quoted_cell_is_the_cells_text():
    """Rows by hand: the header (line 1); line 2's row, whose quoted cell goes on over line 3, which starts
    with ``#``; line 4 a comment; line 5's row. Before, line 3 was dropped as a comment, the quote ran on
    into line 5 and that row vanished into the cell."""
    text = 'a,b\n"x\n# not a comment",2\n# a comment\n3,4\n'
    assert csv_rows(text, "t.csv") == [(1, ["a", "b"]), (2, ["x\n# not a comment", "2"]), (5, ["3", "4"])]


def test_a_kernel_csv_keeps_the_row_after_a_quoted_hash_line():
    """A kernel CSV's ``algorithm`` cell over two lines, the second starting with ``#``: two measured rows
    (conv1 1.5 ms, conv2 2.5 ms), as written; before, one, conv2 read into conv1's algorithm."""
    text = KERNELS.replace("\n", ",algorithm\n") + 'vgg,conv1,conv,8,F,1.5,"implicit\n# gemm"\nvgg,conv2,conv,8,F,2.5,\n'
    frame = parse_kernel_csv(text).frame
    assert frame["layer"].tolist() == ["conv1", "conv2"] and frame["measured_ms"].tolist() == [1.5, 2.5]
    assert frame["algorithm"][0].endswith("# gemm")
