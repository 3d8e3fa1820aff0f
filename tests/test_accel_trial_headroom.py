"""The note on a layout that fits with little memory to spare names what a real run also holds: on a catalog GPU the
CUDA context and NCCL's buffers; on a device file's chip (an accelerator designer's, which runs no CUDA) its runtime's
own memory. Failed before: the designer's chip was told of the CUDA context and NCCL's buffers."""

import json
import warnings

from device_files import device_toml, write_file

import archsim
from archsim.cli import main
from archsim.fits import headroom_note


def _cluster(tmp_path, hbm_gib: float):
    chip = device_toml(name="MyAcc", arrays=8, arrays_per_core=2, rows=128, cols=128, clock_mhz=1000, sram_kib=16384,
                       hbm_gib=hbm_gib, hbm_gbps=1600, intra_gbps=400, links=4)
    write_file(tmp_path, "myacc.toml", chip)
    return write_file(tmp_path, "c.toml", '[cluster]\nname = "c"\n[[servers]]\ncount = 1\ngpus = 1\n'
                                          'device = "myacc.toml"\n')


def test_a_device_files_chip_is_told_of_its_runtimes_memory_not_cudas(tmp_path, capsys):
    argv = ["train", "gpt2", "--global-batch", "4"]
    assert main([*argv, "--cluster", str(_cluster(tmp_path, 24)), "--format", "json"]) == 0
    need = json.loads(capsys.readouterr().out)["meta"]["peak_memory_gib"]
    assert main([*argv, "--cluster", str(_cluster(tmp_path, round(need / 0.95, 3)))]) == 0  # 95% of the chip's
    err = capsys.readouterr().err
    assert "pipeline rank 0 uses" in err and "its runtime's own memory" in err and "usable_memory_gib" in err, err
    assert "needs the CUDA context" not in err, err
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        archsim.train("gpt2", cluster=tmp_path / "c.toml", global_batch=4)
    assert any("its runtime's own memory" in str(w.message) for w in said)


def test_a_gpu_keeps_the_cuda_context_in_its_note():
    note = headroom_note("pipeline rank 0 uses", 75 * 2**30, 79.2 * 2**30, "its H100")
    assert "needs the CUDA context, NCCL's buffers and the allocator's fragmentation" in note
