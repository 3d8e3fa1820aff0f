"""Small user-facing defects left from the last round (followups 23), each test failing on the code before its
fix: the library's warnings and errors named the command's flags (``set --tp/--pp/--dp``), …"""

from __future__ import annotations

import json
import warnings

import pytest
from test_docs import ROOT

import archsim
from archsim.cli import main
from archsim.errors import InputError

MODEL = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")  # 24 layers, 16 heads
NODE = str(ROOT / "configs" / "clusters" / "a100_node.toml")  # 8 GPUs
GPT3 = str(ROOT / "configs" / "transformers" / "gpt3_175b.toml")


def _warned(call) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in caught]


# 1. the library names its keywords, the command its flags


def test_the_idle_gpu_and_one_chunk_notes_name_keywords_from_python_and_flags_from_the_command(capsys):
    """Failed before: archsim.train warned "set --tp/--pp/--dp, or archsim search" and "(--interleave 1)"."""
    assert main(["train", MODEL, "--cluster", NODE, "--tp", "2", "--pp", "2", "--global-batch", "8",
                 "--schedule", "interleaved-1f1b", "--format", "json"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2
    assert err[0].startswith("archsim train: note: --schedule interleaved-1f1b ran with one model chunk per "
                             "pipeline rank (--interleave 1)") and err[0].endswith("--interleave V gives each rank V chunks")
    assert err[1].endswith("; set --tp/--pp/--dp, or archsim search to choose")
    said = _warned(lambda: archsim.train(MODEL, cluster=NODE, tp=2, pp=2, global_batch=8, schedule="interleaved-1f1b"))
    assert len(said) == 2
    assert said[0].startswith("schedule='interleaved-1f1b' ran with one model chunk per pipeline rank (interleave=1)")
    assert said[0].endswith("interleave=V gives each rank V chunks") and "--" not in said[0]
    assert said[1].endswith("; set tp/pp/dp, or archsim.search to choose") and "--" not in said[1]
    # outside the library's jobs (the command's code called from Python) the flags again
    assert main(["train", MODEL, "--cluster", NODE, "--tp", "8", "--global-batch", "8"]) == 0


def test_a_layout_over_the_cluster_is_refused_in_keywords_or_flags(capsys):
    """Failed before: archsim.train(tp=4, pp=2, dp=2) was refused as "--tp × --pp × --dp = …"."""
    assert main(["train", MODEL, "--cluster", NODE, "--tp", "4", "--pp", "2", "--dp", "2", "--global-batch", "8"]) == 2
    assert capsys.readouterr().err.strip() == \
        "archsim train: error: --tp × --pp × --dp = 4 × 2 × 2 = 16 GPUs > the cluster's 8: --dp 1 fits (4 × 2 × 1 = 8 GPUs)"
    with pytest.raises(InputError) as refused:
        archsim.train(MODEL, cluster=NODE, tp=4, pp=2, dp=2, global_batch=8)
    assert str(refused.value) == "tp × pp × dp = 4 × 2 × 2 = 16 GPUs > the cluster's 8: dp=1 fits (4 × 2 × 1 = 8 GPUs)"


def test_an_empty_search_note_names_keywords_from_python(capsys):
    """Failed before: archsim.search's note on an empty answer said "give more GPUs (--gpus N up to …)"."""
    assert main(["search", GPT3, "--cluster", NODE, "--global-batch", "8", "--gpus", "1", "--top", "1",
                 "--refine", "0", "--schedule", "1f1b", "--max-micro-batch", "1", "--recompute", "none"]) == 0
    assert "(--gpus N up to the cluster's 8, or a larger cluster)" in capsys.readouterr().err
    said = _warned(lambda: archsim.search(GPT3, cluster=NODE, global_batch=8, gpus=1, top=1, refine=0,
                                          schedule="1f1b", max_micro_batch=1, recompute="none", progress=False))
    assert any("(gpus=N up to the cluster's 8, or a larger cluster)" in line for line in said), said
    assert not any("--" in line for line in said), said


# 2. a count given as its flag's text reads as the flag reads it, on every job


@pytest.mark.parametrize("keyword", ["tp", "pp", "dp", "global_batch", "micro_batch", "interleave", "seq"])
def test_train_reads_a_count_given_as_text_as_search_reads_top(keyword):
    """Failed before: archsim.train(tp="2") was refused ("must be a positive integer, got '2'") where
    archsim.search(top="2") is 2, as ``--tp 2`` and ``--top 2`` both are; seq="512" likewise on both jobs."""
    layout = {"tp": 2, "pp": 2, "dp": 2, "global_batch": 16, "micro_batch": 2, "interleave": 2, "seq": 512}
    given = {**layout, keyword: str(layout[keyword])}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        as_text, _ = archsim.train(MODEL, cluster=NODE, schedule="interleaved-1f1b", **given)
        as_int, _ = archsim.train(MODEL, cluster=NODE, schedule="interleaved-1f1b", **layout)
    assert as_text.iteration_seconds == as_int.iteration_seconds
    with pytest.raises(InputError) as refused:  # what the flag refuses, the keyword refuses in one line
        archsim.train(MODEL, cluster=NODE, **{**layout, keyword: "two"})
    assert refused.value.where.field == keyword.replace("_", "-")


def test_search_reads_seq_given_as_text():
    kept = {"cluster": NODE, "global_batch": 8, "gpus": 8, "top": 1, "refine": 0, "schedule": "1f1b",
            "max_micro_batch": 1, "recompute": "none", "sequence_parallel": "off", "progress": False}
    """Failed before: seq="512" was refused where top="2" is read (the row's uneven_gain is NaN: compare the times)."""
    as_text, as_int = archsim.search(MODEL, seq="512", **kept), archsim.search(MODEL, seq=512, **kept)
    assert [row["iteration_seconds"] for row in as_text.rows] == [row["iteration_seconds"] for row in as_int.rows]
    assert as_text.to_dict()["meta"]["seq"] == 512


# 3. Throughput.to_dict, as the other results'


def test_throughput_to_dict_is_the_train_documents_rates_and_goes_into_json(capsys):
    """Failed before: Throughput had no to_dict (an AttributeError), where TrainResult, SearchResult and
    CostResult each have one. Its keys are those archsim train's JSON meta prints, its values the same numbers."""
    _, rates = archsim.train(MODEL, cluster=NODE, tp=2, pp=2, dp=2, global_batch=16, micro_batch=2)
    as_dict = rates.to_dict()
    assert list(as_dict) == ["mfu", "tflops_per_gpu", "hardware_tflops_per_gpu", "tokens_per_second"]
    assert all(type(value) is float for value in as_dict.values())
    assert json.loads(json.dumps(as_dict, allow_nan=False)) == as_dict
    assert main(["train", MODEL, "--cluster", NODE, "--tp", "2", "--pp", "2", "--dp", "2", "--global-batch", "16",
                 "--micro-batch", "2", "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert {key: meta[key] for key in as_dict} == as_dict
    # tokens/s by hand: 16 samples × its sequence of tokens per iteration
    assert as_dict["tokens_per_second"] == pytest.approx(16 * meta["seq"] / meta["iteration_seconds"], rel=1e-12)


# 4. the train result's parallelism states the gradient accumulation that ran


@pytest.mark.parametrize(("implementation", "cluster", "layout", "ran"), [
    ("megatron", NODE, {"tp": 2, "pp": 2, "dp": 2}, "fused"),  # Megatron-LM's default
    ("pytorch-eager", str(ROOT / "configs" / "clusters" / "h100_1gpu.toml"), {"attention": "standard"}, "unfused"),  # PyTorch has no fusion
])
def test_the_results_parallelism_says_the_grad_accumulation_the_meta_states(implementation, cluster, layout, ran):
    """Failed before: result.parallelism.grad_accumulation was None (the keyword's "the implementation's own")
    while to_dict()["meta"] stated what ran; the record now says the same, and the time is that of naming it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result, _ = archsim.train(MODEL, cluster=cluster, global_batch=8, micro_batch=2, implementation=implementation,
                                  **layout)
        named, _ = archsim.train(MODEL, cluster=cluster, global_batch=8, micro_batch=2, implementation=implementation,
                                 grad_accumulation=ran, **layout)
    assert result.parallelism is not None and result.parallelism.grad_accumulation == ran
    assert result.to_dict()["meta"]["grad_accumulation"] == ran
    assert result.iteration_seconds == named.iteration_seconds and result.parallelism == named.parallelism


def test_plain_pytorchs_refusals_name_keywords_from_python(capsys):
    """Failed before: archsim.train(implementation="pytorch-eager") was told "give --attention standard". (flash
    is refused in fp32 only, Hugging Face's modules; fp16/bf16 run PyTorch's SDPA: tests/test_eager_flash.py.)"""
    one = str(ROOT / "configs" / "clusters" / "h100_1gpu.toml")
    assert main(["train", MODEL, "--cluster", one, "--global-batch", "2", "--implementation", "pytorch-eager",
                 "--attention", "flash", "--dtype", "fp32"]) == 2
    assert capsys.readouterr().err.rstrip().endswith("give --attention standard")
    for keywords, advice in (({"attention": "flash", "dtype": "fp32"}, "give attention='standard'"),
                             ({"attention": "standard", "grad_accumulation": "fused"},
                              ("plain PyTorch (implementation='pytorch-eager') has no gradient-accumulation fusion: "
                              "grad_accumulation='unfused' only"))):
        with pytest.raises(InputError) as refused:
            archsim.train(MODEL, cluster=one, global_batch=2, implementation="pytorch-eager", **keywords)
        assert str(refused.value).endswith(advice), refused.value


# 5. every stderr line through archsim.console


def test_ctrl_c_is_said_as_the_commands_error_line(capsys, monkeypatch):
    """Failed before: "archsim: interrupted", printed by hand without the command's name or a kind."""
    import archsim.training.run as run_module

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(run_module, "train", stopped)  # Ctrl-C while the iteration runs
    assert main(["train", MODEL, "--cluster", NODE, "--global-batch", "8", "--tp", "8"]) == 130
    assert capsys.readouterr().err.splitlines() == ["archsim train: error: interrupted"]


def test_numbas_compile_notice_is_a_note_named_after_the_command(capsys):
    """Failed before: "archsim: compiling …" printed by hand, outside console's prefix."""
    from numba import njit

    from archsim import jit
    from archsim.console import speaking_as

    @njit  # no cache: nothing compiled yet
    def thrice(x):
        return 3 * x

    with speaking_as("archsim cost"):
        jit.announce_compile(thrice, "a followups kernel")
    assert capsys.readouterr().err.splitlines() == [
        ("archsim cost: note: compiling a followups kernel with numba (once per install; later runs load it from the "
        "cache)…")]


def test_the_layer_builder_says_wrote_on_stderr_as_every_command(tmp_path, capsys):
    """Failed before: builders.main printed its "wrote …" lines on stdout; note_written's go to stderr."""
    from archsim.workload import builders

    assert builders.main([str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [f"wrote {tmp_path / name}.csv" for name in builders.SHIPPED]


# 6. --out against --format


@pytest.mark.parametrize(("fmt", "name", "said"), [
    ("json", "x.csv", ("--out with --format json writes JSON into {out}, whose suffix .csv says CSV; JSON files are "
                      "normally named *.json")),
    ("table", "x.json", ("--out with --format table writes a text table into {out}, whose suffix .json says JSON; "
                        "text tables are normally named *.txt")),
    ("csv", "x.csv", None), ("json", "x.json", None), ("table", "x.txt", None), ("json", "x.out", None)])
def test_cost_warns_of_an_out_whose_suffix_names_another_format(tmp_path, capsys, fmt, name, said):
    """Failed before: ``cost --format json --out x.csv`` wrote JSON into a .csv without a word, where
    ``--gantt out.json`` warns; the same warning now, after the file is written, and none where they agree."""
    out = tmp_path / name
    assert main(["cost", "layerpipe_sample", "--batch", "2", "--format", fmt, "--out", str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    warned = [] if said is None else [f"archsim cost: warning: {said.format(out=out)}"]
    assert err == [f"wrote {out}", *warned]
    if fmt == "json":
        json.loads(out.read_text(encoding="utf-8"))  # the format asked for, whatever the name


# 7. one SRAM rule for a device file and a device sweep's axis


DEVICE_SWEEP = """[sweep]
name = "sram"
model = "gpt3_1.3b"
device = "tpu_v4_like"
sram_kib_per_array = [{kib}]
chips = [4]
global_batch = 8
micro_batch = 1
recompute = "full"
dtype = "bf16"
attention = "standard"
"""


@pytest.mark.parametrize("kib", [2**19, 2**21])  # 512 MiB and 2 GiB per array: both above the 256 MiB rule
def test_a_device_sweeps_sram_above_the_rule_is_warned_as_a_device_files_never_refused(tmp_path, capsys, kib):
    """Failed before for 2 GiB: the spec's axis refused SRAM above 1 GiB per array (its own limit) while the
    device file's key warns above 256 MiB (array.sram_sizes.sram_in_bytes) and runs; now both warn, one wording."""
    spec = tmp_path / "sram.toml"
    spec.write_text(DEVICE_SWEEP.format(kib=kib), encoding="utf-8")
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if ": warning: " in line]
    # the figure is the spec's axis value, named as such (until 2026-12-05 as the device file's key)
    assert warned == [(f"archsim sweep: warning: TPU v4-like: {kib} KiB of SRAM beside each array (the spec's "
                      f"sram_kib_per_array axis) is above 256 MiB per array: if it is in bytes, write {kib // 1024} KiB")]
    device = (ROOT / "configs" / "devices" / "tpu_v4_like.toml").read_text(encoding="utf-8")
    (tmp_path / "chip.toml").write_text(device.replace("sram_kib_per_array = 4096", f"sram_kib_per_array = {kib}"),
                                        encoding="utf-8")
    from archsim.devices.device_file import implausible_figures, load_device

    assert implausible_figures(load_device(tmp_path / "chip.toml")) == (warned[0].split(": warning: ", 1)[1].replace(
        "(the spec's sram_kib_per_array axis)", "([memory] sram_kib_per_array; a .cfg's three SramSzkB together)"),)


def test_an_sram_axis_value_no_count_can_be_is_still_refused(tmp_path, capsys):
    """What stays refused: a value that is no SRAM size at all (0, negative, not whole KiB)."""
    for bad in ("0", "-4", "1.5"):
        spec = tmp_path / "sram.toml"
        spec.write_text(DEVICE_SWEEP.format(kib=bad), encoding="utf-8")
        assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--quiet"]) == 2
        assert "field 'sram_kib_per_array'" in capsys.readouterr().err
