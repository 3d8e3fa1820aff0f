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


READERS = ("trace", "topology", "kernel_csv", "gemm_shapes", "layout", "probe", "measured_runs")


SHAPES = "m,k,n,rows,cols,dataflow\n{n},8,8,4,4,ws\n"
PROBE = "section,name,m,k,n,count,bytes,ops,seconds\ngemm,g,{n},8,8,1,0,0,0.001\n"
MEASURED = ("# gpus,global batch,micro batch,hidden size,attention heads,# layers,sequence length,tensor parallelism,"
            "data parallelism,pipeline parallelism,iteration time (ms)\n1,{n},1,1024,16,24,512,1,1,1,500\n")


def _read_more(reader: str, cell: str, tmp_path) -> int | None:
    """:func:`_read` for the readers beside it: gemm's shape CSV, a SCALE-Sim layout row, a GPU probe CSV, a
    measured-run CSV (None: refused)."""
    from archsim.array.gemm_run import read_shapes
    from archsim.array.layout import parse_row
    from archsim.training.calibrate import read_probe
    from archsim.training.measured import read_measured_table

    if reader in ("trace", "topology", "kernel_csv"):
        return _read(reader, cell)
    path = tmp_path / f"{reader}.csv"
    try:
        if reader == "gemm_shapes":
            path.write_text(SHAPES.format(n=cell), encoding="utf-8")
            return int(read_shapes(path)["m"].iloc[0])
        if reader == "layout":
            return parse_row(["c1", cell, *"11111012012"]).ifmap_factors[0]
        if reader == "probe":
            path.write_text(PROBE.format(n=cell), encoding="utf-8")
            return read_probe(path)[1][0].m
        path.write_text(MEASURED.format(n=cell), encoding="utf-8")
        return read_measured_table(path).runs[0].global_batch
    except InputError:
        return None


@pytest.mark.parametrize("reader", READERS)
def test_every_csv_reader_takes_a_whole_number_written_as_a_real(reader, tmp_path):
    """One rule for every CSV's integer cells (value_parsers.stated_integer): 16, 16.0 and 1.6e1 are 16; 16.5, 1_6
    and ١٦ are refused. Failed before for the topology, validate-gpu's kernel CSVs and the other readers here,
    which refused 16.0 where a runs file, NeuSight's shape cells and a job trace took it."""
    assert [_read_more(reader, cell, tmp_path) for cell in ("16", "16.0", "1.6e1")] == [16, 16, 16]
    assert [_read_more(reader, cell, tmp_path) for cell in ("16.5", "1_6", "١٦")] == [None, None, None]


@pytest.mark.parametrize(("reader", "field"), [("trace", "num_gpu"), ("topology", "IFMAP Height"),
                                                ("kernel_csv", "batch")])
def test_a_refused_cell_names_its_row_and_column(reader, field):
    from archsim.cluster.trace import parse_tiresias_csv
    from archsim.validation.gpu_csv import parse_kernel_csv
    from archsim.workload.csv_loader import parse_topology

    parse = {"trace": lambda t: parse_tiresias_csv(TRACE.format(n=t)),
             "topology": lambda t: parse_topology(TOPOLOGY.format(n=t)),
             "kernel_csv": lambda t: parse_kernel_csv(KERNEL_CSV.format(n=t))}[reader]
    with pytest.raises(InputError) as error:
        parse("64.5")
    assert (error.value.where.line, error.value.where.field) == (2, field)  # the one data row, under the header
    assert "64.5" in error.value.message


@pytest.mark.parametrize(("text", "value"), [("64", 64), ("64.0", 64), ("6.4e1", 64), (0, None), ("64.5", None),
                                             ("1_6", None), ("2147483648", None)])
def test_parse_integer_cell(text, value):
    from archsim.value_parsers import parse_integer_cell

    if value is None:
        with pytest.raises(ValueError, match="expected a count"):
            parse_integer_cell(text, what="a count")
    else:
        assert parse_integer_cell(text, what="a count") == value
