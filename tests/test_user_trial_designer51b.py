"""An accelerator designer's trial of their own systolic-array chip (a SCALE-Sim ``.cfg`` with ``[memory]`` and
``[links]``, or a device TOML) through ``cost``, ``energy``, ``train`` and device sweeps: the defects it left.

Each test names the defect it covers and failed on the code before its fix (its docstring says how).
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.errors import InputError

REPO = Path(__file__).resolve().parents[1]
CHIP_CFG = REPO / "configs" / "devices" / "scalesim_32x32_device.cfg"  # 16 × 32 × 32 ws arrays, 16 GiB, 400 GB/s
TPU_TOML = REPO / "configs" / "devices" / "tpu_v4_like.toml"  # 8 × 128 × 128, sram_kib_per_array = 4096
H100 = str(REPO / "configs" / "clusters" / "h100_1gpu.toml")


def _fc_onnx(tmp_path: Path, batch: int | str) -> str:
    """x [batch, 64] → Gemm 64 → 32: one fc layer, exported with a fixed batch or a symbolic one."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.zeros((32, 64), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w"], ["y"], name="fc", transB=1)], "fc",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 32])], [weight])
    path = tmp_path / f"fc_{batch}.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return str(path)


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# -- 1. the model file's batch, replaced by --batch without a word --------------------------------------------

def test_an_onnx_file_fixing_another_batch_is_noted_once_and_stdout_is_unchanged(tmp_path, capsys):
    """Defect: an ONNX file exported at batch 8 was costed at ``--batch``'s 32 with no word. Failed before the fix:
    stderr empty. The note names the file's batch, the batch costed and the flag; stdout is the table a symbolic
    batch's file prints (the same per-sample layers), and ``--batch 8`` or a symbolic batch says nothing."""
    fixed, symbolic = _fc_onnx(tmp_path, 8), _fc_onnx(tmp_path, "N")
    code, out, err = _run(capsys, "cost", fixed)
    assert code == 0
    note = (f"archsim cost: note: {fixed} fixes batch 8; archsim reads its layers per sample and costs batch 32 "
            "(--batch 32): give --batch 8 to cost the file's batch")
    assert err.splitlines() == [note]
    code, out_symbolic, err_symbolic = _run(capsys, "cost", symbolic)
    assert code == 0 and err_symbolic == ""
    assert out.replace("fc_8", "NAME") == out_symbolic.replace("fc_N", "NAME")
    assert _run(capsys, "cost", fixed, "--batch", "8")[2] == ""


def test_a_batch_one_export_is_the_usual_one_sample_and_not_noted(tmp_path, capsys):
    """A file exported at batch 1 (one example input, the usual export) says nothing about the batch to cost:
    no note on the command, no warning from the library."""
    one = _fc_onnx(tmp_path, 1)
    code, _, err = _run(capsys, "cost", one)
    assert code == 0 and err == ""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        archsim.cost(one)


def test_the_api_warns_the_file_batch_in_its_keywords(tmp_path):
    """Defect: ``archsim.cost`` of the same file returned batch 32's costs silently. Failed before the fix: no
    warning. Now one UserWarning naming ``batch=8``; at ``batch=8`` none."""
    fixed = _fc_onnx(tmp_path, 8)
    with pytest.warns(UserWarning, match=r"fixes batch 8; .* costs batch 32 \(batch=32\): give batch=8") as caught:
        archsim.cost(fixed)
    assert len([w for w in caught if "fixes batch" in str(w.message)]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        archsim.cost(fixed, batch=8)


def test_a_torch_class_noted_with_its_input_shape(capsys):
    """Defect: ``cost FILE.py:Class --input-shape 4,3,16,16`` costed batch 32 silently. Failed before the fix: no
    stderr line. The note names --input-shape and the batch 4 it gives."""
    pytest.importorskip("torch")
    spec = f"{REPO / 'tests' / 'data' / 'torch' / 'tiny_model.py'}:TinyNet"
    code, _, err = _run(capsys, "cost", spec, "--input-shape", "4,3,16,16")
    assert code == 0
    lines = [line for line in err.splitlines() if "batch" in line]
    note = (f"archsim cost: note: --input-shape gives {spec} batch 4; archsim reads its layers per sample and "
            "costs batch 32 (--batch 32): give --batch 4 to cost the file's batch")
    assert lines == [note], err


# -- 2. a .cfg device file without [memory]: cost takes it, train says what to add ---------------------------

def _cfg_without(tmp_path: Path, section: str) -> Path:
    text = CHIP_CFG.read_text(encoding="utf-8")
    start = text.index(f"[{section}]")
    end = text.find("\n[", start + 1)
    path = tmp_path / "chip.cfg"
    path.write_text(text[:start] + (text[end + 1:] if end >= 0 else ""), encoding="utf-8")
    return path


def _cluster(tmp_path: Path, device: str, gpus: int = 1) -> Path:
    path = tmp_path / "cluster.toml"
    path.write_text(f'[cluster]\nname = "c"\n\n[[servers]]\ngpus = {gpus}\ndevice = "{device}"\n', encoding="utf-8")
    return path


def test_train_names_the_keys_a_cfg_without_memory_lacks(tmp_path, capsys):
    """Defect: train said only "needs a [memory] section" where cost --config accepts the file. Failed before the
    fix: no key named. Now the section and its keys, as formats.md's device-file table requires them."""
    chip = _cfg_without(tmp_path, "memory")
    assert _run(capsys, "cost", "layerpipe_sample", "--config", chip, "--dtype", "fp16")[0] == 0
    code, _, err = _run(capsys, "train", "gpt2", "--cluster", _cluster(tmp_path, "chip.cfg"), "--global-batch", "1")
    assert code == 2 and err.count("\n") == 1
    assert "needs [memory] (hbm_gib = GiB of HBM, hbm_gbps = GB/s of HBM bandwidth)" in err, err


# -- 3. an SRAM smaller than the energy model prices --------------------------------------------------------

def _tpu(tmp_path: Path, sram: str) -> Path:
    path = tmp_path / "chip.toml"
    path.write_text(TPU_TOML.read_text(encoding="utf-8").replace("sram_kib_per_array = 4096",
                                                                  f"sram_kib_per_array = {sram}"), encoding="utf-8")
    return path


@pytest.mark.parametrize(("sram", "says"), [("0.5", "expected whole KiB"),
                                            ("2", "2 KiB is below the 3 KiB the energy model prices")])
def test_an_sram_below_three_kib_is_refused_naming_the_minimum(tmp_path, sram, says):
    """Defect: 0.5 KiB and 2 KiB were both priced as three 1 KiB buffers (3 KiB), the warning calling a third
    of 0.5 KiB "1 KiB". Failed before the fix: loaded. Refused: one figure splits in three whole-KiB buffers, so
    3 KiB (1, 1, 1) is the least priced as stated; a fraction of a KiB is no whole-KiB figure at all."""
    from archsim.devices.device_file import load_device

    with pytest.raises(InputError) as caught:
        load_device(_tpu(tmp_path, sram))
    assert caught.value.where.field == "memory.sram_kib_per_array"
    assert says in caught.value.message, caught.value.message


def test_three_kib_loads_as_three_one_kib_buffers(tmp_path):
    from archsim.devices.device_file import load_device

    assert load_device(_tpu(tmp_path, "3")).operand_buffers_kib == (1, 1, 1)


def test_a_device_sweep_axis_below_three_kib_is_refused(tmp_path, capsys):
    """Defect: ``sram_kib_per_array = [2, 4096]`` in a device sweep ran its 2 KiB point as 3 KiB. Failed before
    the fix: ran. Now refused at the spec's key before anything runs."""
    shutil.copy(TPU_TOML, tmp_path / "chip.toml")
    spec = tmp_path / "spec.toml"
    spec.write_text('[sweep]\nmodel = "gpt2"\ndevice = "chip.toml"\nchips = [1]\nglobal_batch = 1\n'
                    "sram_kib_per_array = [2, 4096]\n", encoding="utf-8")
    code, _, err = _run(capsys, "sweep", spec, "--out", tmp_path / "out", "--quiet")
    assert code == 2 and "sram_kib_per_array" in err and "below the 3 KiB" in err, err
    assert not (tmp_path / "out").exists()


# -- 4. the [energy] keys each reader takes --------------------------------------------------------------

def _energy_cfg(tmp_path: Path, line: str) -> Path:
    path = tmp_path / "chip.cfg"
    path.write_text(CHIP_CFG.read_text(encoding="utf-8") + f"\n[energy]\n{line}\n", encoding="utf-8")
    return path


def test_train_lists_the_energy_keys_it_takes_and_cost_its_own(tmp_path, capsys):
    """Defect: an unknown [energy] key's error listed pe_leakage_mw and sram_leakage_mw_per_kib, which train then
    refuses in a device file, and left out ``table``, which every reader takes. Failed before the fix: train's
    list held the leakage keys. Now train's list is train's keys, cost's (which prices leakage) cost's."""
    chip = _energy_cfg(tmp_path, "mac_jp = 0.5")
    code, _, train_err = _run(capsys, "train", "gpt2", "--cluster", _cluster(tmp_path, "chip.cfg"),
                              "--global-batch", "1")
    assert code == 2
    taken = train_err.split("choose from ")[1].strip().split(", ")
    assert taken[0] == "table" and "mac_pj" in taken and not any("leakage" in key for key in taken), train_err
    code, _, cost_err = _run(capsys, "cost", "layerpipe_sample", "--config", chip)
    assert code == 2 and "pe_leakage_mw" in cost_err and "choose from table, mac_pj" in cost_err, cost_err


# -- 5. "per GPU" said of a chip that is no GPU --------------------------------------------------------------

def test_the_does_not_fit_line_says_per_device_on_a_device_file(tmp_path, capsys):
    """Defect: "needs … GiB per GPU" on a systolic-array chip. Failed before the fix: "per GPU". A catalog GPU's
    line keeps it (gpt3_1.3b at micro-batch 64 without recompute is far over an H100's 80 GB)."""
    chip = tmp_path / "chip.cfg"
    chip.write_text(CHIP_CFG.read_text(encoding="utf-8").replace("hbm_gib = 16", "hbm_gib = 1"), encoding="utf-8")
    code, _, err = _run(capsys, "train", "gpt2", "--cluster", _cluster(tmp_path, "chip.cfg"), "--global-batch", "8",
                        "--micro-batch", "8", "--recompute", "none")
    assert code == 0 and "GiB per device, its scalesim_32x32_x16 has 1.0 GiB" in err, err
    code, _, err = _run(capsys, "train", "gpt3_1.3b", "--cluster", H100, "--global-batch", "64",
                        "--micro-batch", "64", "--recompute", "none")
    assert code == 0 and "GiB per GPU, its " in err and "per device" not in err, err


# -- 6. a misspelt key, listed but not suggested --------------------------------------------------------------

@pytest.mark.parametrize(("old", "new", "hint"), [
    ("hbm_gbps = 400", "hbm_gbs = 400", "did you mean 'hbm_gbps'?"),
    ("intra_gbps = 100", "intra_gpbs = 100", "did you mean 'intra_gbps'?"),
    ("ArrayHeight:", "ArrayHieght:", "did you mean 'ArrayHeight'?"),
    ("Dataflow :", "Bandwith: 10\nDataflow :", "did you mean 'Bandwidth'?"),
])
def test_a_misspelt_cfg_key_is_told_the_nearest(tmp_path, capsys, old, new, hint):
    """Defect: the error listed every valid key but suggested none, unlike the library's keyword check. Failed
    before the fix: no "did you mean"."""
    chip = tmp_path / "chip.cfg"
    chip.write_text(CHIP_CFG.read_text(encoding="utf-8").replace(old, new, 1), encoding="utf-8")
    code, _, err = _run(capsys, "cost", "layerpipe_sample", "--config", chip)
    assert code == 2 and err.count("\n") == 1 and hint in err, err


def test_a_misspelt_energy_key_is_told_the_nearest_and_a_stranger_none(tmp_path, capsys):
    code, _, err = _run(capsys, "cost", "layerpipe_sample", "--config", _energy_cfg(tmp_path, "mac_jp = 0.5"))
    assert code == 2 and "did you mean 'mac_pj'?" in err, err
    code, _, err = _run(capsys, "cost", "layerpipe_sample", "--config", _energy_cfg(tmp_path, "colour = 3"))
    assert code == 2 and "did you mean" not in err, err


# -- 7. the report's Reproduce line ----------------------------------------------------------------------------

def test_the_device_reports_reproduce_line_has_single_spaces(tmp_path, capsys):
    """Defect: "archsim sweep SPEC  &&  archsim report …" (two spaces each side). Failed before the fix: the HTML
    held "  &amp;&amp;  "."""
    shutil.copy(CHIP_CFG, tmp_path / "chip.cfg")
    spec = tmp_path / "spec.toml"
    spec.write_text('[sweep]\nmodel = "gpt2"\ndevice = "chip.cfg"\nchips = [1]\nglobal_batch = 1\n', encoding="utf-8")
    report = tmp_path / "r.html"
    assert _run(capsys, "sweep", spec, "--out", tmp_path / "out", "--quiet", "--report", report)[0] == 0
    html = report.read_text(encoding="utf-8")
    out = tmp_path / "out"
    assert f"archsim sweep {spec} --out {out} &amp;&amp; archsim report {out} --out {report}</code>" in html
    assert "  &amp;&amp;" not in html and "&amp;&amp;  " not in html


# -- 8. --attention's default per implementation ------------------------------------------------------------

EAGER = ("train", "gpt2", "--cluster", H100, "--implementation", "pytorch-eager", "--global-batch", "4",
         "--micro-batch", "4", "--format", "json")


def test_pytorch_eager_runs_without_attention_as_with_attention_standard(capsys):
    """Defect: ``--implementation pytorch-eager`` alone was refused (the default --attention flash), where
    --grad-accumulation already defaulted per implementation. Failed before the fix: exit 2. Now it runs as
    ``--attention standard`` does, to the same document. An explicit flash runs in fp16 (PyTorch's SDPA on its
    FlashAttention-2 backend, training/eager_ops.py) and is refused in fp32 (Hugging Face's modules; FlashAttention
    runs fp16/bf16 only)."""
    code, out, _ = _run(capsys, *EAGER)
    assert code == 0
    code, out_standard, _ = _run(capsys, *EAGER, "--attention", "standard")
    assert code == 0 and json.loads(out) == json.loads(out_standard)
    assert json.loads(out)["meta"]["attention"] == "standard"
    code, out_flash, _ = _run(capsys, *EAGER, "--attention", "flash")
    assert code == 0 and json.loads(out_flash)["meta"]["attention"] == "flash"
    code, _, err = _run(capsys, *EAGER, "--attention", "flash", "--dtype", "fp32")
    assert code == 2 and "give --attention standard" in err, err


def test_the_api_defaults_attention_per_implementation():
    """``archsim.train(..., attention=None)``: the implementation's own (megatron flash, pytorch-eager standard).
    Failed before the fix: pytorch-eager raised InputError on the keyword's default."""
    eager, _ = archsim.train("gpt2", cluster=H100, global_batch=4, micro_batch=4, implementation="pytorch-eager")
    standard, _ = archsim.train("gpt2", cluster=H100, global_batch=4, micro_batch=4, implementation="pytorch-eager",
                                attention="standard")
    assert eager.iteration_seconds == standard.iteration_seconds
    megatron, _ = archsim.train("gpt2", cluster=H100, global_batch=4, micro_batch=4)
    flash, _ = archsim.train("gpt2", cluster=H100, global_batch=4, micro_batch=4, attention="flash")
    assert megatron.iteration_seconds == flash.iteration_seconds
    with pytest.raises(InputError, match="attention='standard'"):  # fp32: Hugging Face's modules, no flash
        archsim.train("gpt2", cluster=H100, global_batch=4, micro_batch=4, implementation="pytorch-eager",
                      attention="flash", dtype="fp32")
