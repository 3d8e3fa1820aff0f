"""A cluster file's ``comm_sms`` (``[cluster]``): the SMs an overlapped collective holds on each GPU, what train and
search price the compute beside it on (archsim/training/comm_sms.py). 0 is the free overlap; absent, NCCL's 16
(its maintainer's figure for a DGX with 8 NICs, NVIDIA/nccl issue #689); one SM must be left to compute."""

from __future__ import annotations

import pytest

from archsim.devices.catalog import NCCL_SMS
from archsim.errors import InputError
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.iteration import model_pieces
from archsim.training.parallel import Parallelism
from archsim.workload.transformer import TransformerConfig

A100_SMS = 108  # the A100's SMs (NVIDIA A100 datasheet)
GPT_22B = TransformerConfig("gpt-22b", "gpt", layers=48, hidden=6144, heads=64, vocab=51200, seq=2048, ffn=4 * 6144,
                            kv_heads=64, tied_embeddings=True, positions=2048)


def _cluster(tmp_path, line: str):
    path = tmp_path / "cluster.toml"
    path.write_text(f'[cluster]\n{line}\n[[servers]]\ncount = 1\ngpus = 8\ngpu = "a100-80gb"\n')
    return load_gpu_cluster(path)


def _regathers(cluster) -> list[float]:
    """The 22B layer's two sequence-parallel re-gathers' exposed seconds (TP 8, micro-batch 4)."""
    par = Parallelism(8, 1, 1, 4, 4, "none", True, attention="standard")
    layer = model_pieces(GPT_22B, par, cluster.machine(par))["layer"]
    return [t for name, kind, t in layer.ops if kind == "B" and "exposed beyond" in name]


def test_absent_it_is_nccls_sixteen(tmp_path):
    cluster = _cluster(tmp_path, "")
    assert cluster.comm_sms is None  # each GPU's own: a catalog GPU's is NCCL's 16
    assert cluster.machine(Parallelism(8, 1, 1, 4, 4)).collective_sms == NCCL_SMS == 16


def test_zero_frees_the_overlap_and_more_sms_expose_more(tmp_path):
    """The 22B layer's re-gathers (0.46 ms) sit under δ GEMMs of about twice their length: hidden whole with the SMs
    free, partly shown with 16 taken, more with 54 (half the A100's)."""
    free, nccl, half = (_regathers(_cluster(tmp_path, f"comm_sms = {k}")) for k in (0, 16, A100_SMS // 2))
    assert free == [0.0, 0.0]
    assert all(0 < a < b for a, b in zip(nccl, half))


@pytest.mark.parametrize("value", [str(A100_SMS), "-1", "2.5", '"16"', "true"])
def test_a_count_no_gpu_can_give_is_refused(tmp_path, value):
    with pytest.raises(InputError, match=r"whole number of SMs from 0 to 107") as caught:
        _cluster(tmp_path, f"comm_sms = {value}")
    assert caught.value.where.field == "comm_sms" and caught.value.where.line == 2  # its line in the file


def _device_file(tmp_path, comm_sms_line: str | None):
    """The shipped A100 device file with its ``[links] comm_sms`` line replaced (None: removed)."""
    from pathlib import Path

    text = (Path(__file__).parents[1] / "configs/devices/a100_80gb_as_arrays.toml").read_text()
    lines = [line for line in text.splitlines() if not line.startswith("comm_sms")]
    if comm_sms_line is not None:
        lines.insert(lines.index("[links]") + 1, comm_sms_line)
    path = tmp_path / "chip.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _file_cluster(tmp_path, device) -> object:
    return load_gpu_cluster(_file_cluster_path(tmp_path, device))


def test_a_device_file_states_its_own_and_holds_none_unstated(tmp_path):
    """A device file's chip may move its collectives with link engines of its own: unstated, its collectives hold no
    core, so its overlaps stay free (the re-gathers under their δ GEMMs as with ``comm_sms = 0``); the A100 file
    states NCCL's 16 and prices the overlap exactly as the catalog A100 does."""
    catalog = _regathers(_cluster(tmp_path, ""))
    stated = _regathers(_file_cluster(tmp_path, _device_file(tmp_path, "comm_sms = 16")))
    assert stated == catalog and all(t > 0 for t in stated)
    unstated = _file_cluster(tmp_path, _device_file(tmp_path, None))
    assert unstated.machine(Parallelism(8, 1, 1, 4, 4)).collective_sms == 0
    assert _regathers(unstated) == _regathers(_cluster(tmp_path, "comm_sms = 0")) == [0.0, 0.0]


@pytest.mark.parametrize("value", ["108", "-1", "2.5", '"16"'])
def test_a_device_files_count_leaves_a_core_to_compute(tmp_path, value):
    with pytest.raises(InputError, match=r"chip\.toml.*links\.comm_sms"):
        load_gpu_cluster(_file_cluster_path(tmp_path, _device_file(tmp_path, f"comm_sms = {value}")))


def _file_cluster_path(tmp_path, device):
    path = tmp_path / "file_cluster.toml"
    path.write_text(f'[cluster]\n[[servers]]\ncount = 1\ngpus = 8\ndevice = "{device}"\n')
    return path
