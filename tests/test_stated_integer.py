"""A count cell is read by one rule (archsim.value_parsers.stated_integer) in a runs file and in NeuSight's kernel
tables: ASCII digits or a real written as exactly a whole number; ``1_6`` and ``١٦``, which Python's float() reads as
16, were taken by NeuSight's reader and refused by the runs file's."""

from __future__ import annotations

import pytest

from archsim.errors import InputError
from archsim.training.runs import read_runs
from archsim.validation.neusight import parse_neusight_csv
from archsim.value_parsers import stated_integer

NEUSIGHT = "OPName,Latency,Device,B,M,N,K\nLinear,0.5,Tesla T4,1,{m},128,256\n"


@pytest.mark.parametrize(("text", "value"), [
    ("8", 8), (" +16 ", 16), ("16.0", 16), ("1e3", 1000), ("-3", -3), ("0", 0),
    ("8.5", None), ("1_6", None), ("１６", None), ("١٦", None), ("x", None), ("", None), ("1e300", None), ("inf", None),
])
def test_stated_integer(text, value):
    assert stated_integer(text) == value


@pytest.mark.parametrize("cell", ["1_6", "١٦", "１６"])
def test_a_neusight_shape_cell_is_ascii_digits(cell):
    with pytest.raises(InputError, match=r"field 'M': must be a positive integer up to 2147483647"):
        parse_neusight_csv(NEUSIGHT.format(m=cell))


def _runs_global_batch(tmp_path, cell: str) -> int | None:
    path = tmp_path / "runs.csv"
    path.write_text(f"tp,pp,dp,micro_batch,global_batch,measured_seconds\n1,1,1,1,{cell},1\n", encoding="utf-8")
    try:
        return read_runs(str(path))[0].par.global_batch
    except InputError:
        return None


def _neusight_m(cell: str) -> int | None:
    try:
        return int(parse_neusight_csv(NEUSIGHT.format(m=cell)).frame["M"].iloc[0])
    except InputError:
        return None


@pytest.mark.parametrize("cell", ["64", "64.0", "+64", "6.4e1", "64.5", "1_6", "١٦", "0", "-64", "2147483648"])
def test_the_runs_file_and_neusight_read_a_count_cell_alike(tmp_path, cell):
    assert _runs_global_batch(tmp_path, cell) == _neusight_m(cell)


TRACE = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\nj1,{n},0,10,vgg16,0,0\n"
TOPOLOGY = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n" \
           "c1, {n}, 8, 3, 3, 3, 4, 1,\n"
KERNEL_CSV = "network,layer,kind,batch,op,measured_ms\nVGG16,Conv1,fc,{n},F,1.5\n"


def _read(reader: str, cell: str) -> int | None:
    """The count a reader takes from ``cell`` (None: refused), each as docs/security.md says it reads one."""
    from archsim.cluster.trace import parse_tiresias_csv
    from archsim.validation.gpu_csv import parse_kernel_csv
    from archsim.workload.csv_loader import parse_topology

    try:
        if reader == "trace":
            return parse_tiresias_csv(TRACE.format(n=cell))[0].workers
        if reader == "topology":
            return parse_topology(TOPOLOGY.format(n=cell)).layers[0].ifmap_h
        return int(parse_kernel_csv(KERNEL_CSV.format(n=cell)).frame["batch"].iloc[0])
    except InputError:
        return None


@pytest.mark.parametrize(("reader", "whole_reals"), [("trace", True), ("topology", False), ("kernel_csv", False)])
def test_which_readers_take_a_whole_number_written_as_a_real(reader, whole_reals):
    """docs/security.md: a job trace's counts take 16.0 and 1.6e1 as a runs file's do; a topology's dimensions and
    validate-gpu's own kernel CSVs take ASCII digits only. None takes 16.5, 1_6 or ١٦."""
    assert _read(reader, "16") == 16
    assert [_read(reader, cell) for cell in ("16.0", "1.6e1")] == ([16, 16] if whole_reals else [None, None])
    assert [_read(reader, cell) for cell in ("16.5", "1_6", "١٦")] == [None, None, None]
