"""Follow-ups: a line break inside a quoted CSV cell is the cell's, in every reader that parses quoted cells
(the csv module's reading of the same text is the reference); every --mode flag says one text."""

from __future__ import annotations

import csv
import io

import pytest

from archsim.array.gemm_run import read_shapes
from archsim.array.layout import read_layout_file
from archsim.array.sparse_input import read_sparsity_column
from archsim.cli import main
from archsim.errors import InputError
from archsim.validation.gpu_csv import parse_kernel_csv
from archsim.validation.neusight import parse_neusight_csv


def test_a_kernel_csv_cell_keeps_its_line_break():
    """The ``algorithm`` cell is ``implicit``, a line break, ``# gemm``, as csv.reader reads the same text;
    before, ``implicit# gemm`` (the readers handed csv_rows str.splitlines' lines, which drop the break).
    The row after it stays at line 4 (header 1, the row over lines 2-3)."""
    text = ('# device: T4\nnetwork,layer,batch,op,measured_ms,algorithm\n'
            'vgg,conv1,8,F,1.5,"implicit\n# gemm"\nvgg,conv2,8,F,2.5,\n')
    frame = parse_kernel_csv(text).frame
    assert frame["algorithm"][0] == "implicit\n# gemm"
    assert frame["algorithm"][0] == list(csv.reader(io.StringIO(text.split("\n", 1)[1], newline="")))[1][5]
    assert frame["line"].tolist() == [3, 5]


def test_a_neusight_cell_keeps_its_line_break():
    """The Device cell ``Tesla`` / ``T4`` over two lines reads with its break (before: ``TeslaT4``); the next
    row is on line 4 (header 1, the first row over lines 2-3)."""
    text = 'OPName,Latency,Device,B,M,N,K\nlinear,0.5,"Tesla\nT4",1,64,128,256\nlinear,0.5,T4,1,64,128,256\n'
    frame = parse_neusight_csv(text).frame
    assert frame["device"].tolist() == ["Tesla\nT4", "T4"] and frame["line"].tolist() == [2, 4]


def test_a_shapes_cell_over_two_lines_is_not_a_number(tmp_path):
    """``"6`` / ``4"`` is a cell holding 6, a line break and 4: no integer, refused at its row's line 2. Before,
    the break dropped, it read as 64 and the shape ran."""
    path = tmp_path / "shapes.csv"
    path.write_text('m,k,n,rows,cols,dataflow\n"6\n4",64,64,8,8,ws\n', encoding="utf-8")
    with pytest.raises(InputError) as refused:
        read_shapes(path)
    assert refused.value.where.line == 2 and refused.value.where.field == "m"


def test_a_sparsity_cell_over_two_lines_is_not_a_ratio(tmp_path):
    """``"2:1`` / ``6"`` is not an N:M ratio (the break splits 16); before, read as 2:16."""
    path = tmp_path / "topology.csv"
    path.write_text('Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, '
                    'Strides, Sparsity,\nconv1, 34, 34, 3, 3, 3, 64, 1, "2:1\n6",\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"line 2, field 'Sparsity': expected N:M such as 2:4, got '2:1\\n6'"):
        read_sparsity_column(path)


def test_a_layout_row_name_keeps_its_line_break(tmp_path):
    """The layout row's name ``con`` / ``v1`` in quotes is read with its break (before: ``conv1``)."""
    path = tmp_path / "layout.csv"
    header = ",".join(f"c{i}" for i in range(21)) + ",\n"
    path.write_text(header + '"con\nv1",2,4,1,4,1,2,3,4,5,0,1,2,4,5,6,7,0,1,2,3,\n', encoding="utf-8")
    assert read_layout_file(path).name == "con\nv1"


MODE_TEXT = "paper: LayerPipe's simplifications (δ for the first layer, dense δ); exact: what training computes"


def _help(capsys, command: str) -> str:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    return " ".join(capsys.readouterr().out.split())  # argparse's wrapping undone


@pytest.mark.parametrize("command", ["cost", "energy", "pipeline", "plan"])
def test_every_mode_flag_says_the_one_text(capsys, command):
    """``--mode`` of cost, energy, the layer-cost flags (pipeline) and plan reads the same sentence, written out
    here. Before, cost's was its own ("exact: real training (default); paper: LayerPipe's simplifications")."""
    assert f"--mode {{paper,exact}} {MODE_TEXT}" in _help(capsys, command)
