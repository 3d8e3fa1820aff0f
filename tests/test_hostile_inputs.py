"""The second hostile round's reproducers (issues 27, 28 and 32), one test each: every one is one
clean line and exit 2 — bad bytes, special files, paths that leave their folder, numbers too long,
too deep, too small or too large for what they measure, and inputs that used to be accepted wrongly."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import USAGE
from onnx import helper
from onnx_models import model, value, weight

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = str(ROOT / "configs/clusters/testbed_v100.toml")
CFG = (ROOT / "configs/arrays/scalesim_32x32_ws.cfg").read_text(encoding="utf-8")
TABLE = (ROOT / "configs/energy/horowitz45.toml").read_text(encoding="utf-8")
GPT = '[transformer]\nname = "t"\nfamily = "gpt"\nlayers = 2\nhidden = 64\nheads = 2\nvocab = 100\nseq = 16\n'
NON_UTF8 = b"forward,backward_input,backward_weight\n\xff\xfe,1,1\n"


def refused(capsys, *argv, words: str = "") -> str:
    """``archsim ARGV`` exits 2 with one ``archsim COMMAND: error:`` line (containing ``words``) and no output."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (code, out[-500:], err[-2000:])
    assert len(err.splitlines()) == 1 and USAGE.match(err), err
    assert words in err, err
    return err


def write(path: Path, content: str | bytes) -> Path:
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


# -- issue 28's reproducers ----------------------------------------------------------------------
def test_non_utf8_stage_profile(tmp_path, capsys):
    refused(capsys, "schedule", "--stage-profile", write(tmp_path / "s.csv", NON_UTF8), "--microbatches", 4,
            "--policy", "1f1b", words="not UTF-8")


def test_non_utf8_schedule_csv(tmp_path, capsys):
    refused(capsys, "schedule", "--stages", 1, "--stage-times", "1,1,1", "--schedule-csv-in",
            write(tmp_path / "o.csv", NON_UTF8), words="not UTF-8")


def test_non_utf8_energy_table(tmp_path, capsys):
    refused(capsys, "energy", "layerpipe_sample", "--energy-table", write(tmp_path / "t.toml", NON_UTF8),
            words="not UTF-8")


def test_a_profile_name_too_long_for_the_file_system(tmp_path, capsys):
    refused(capsys, "plan", tmp_path / ("x" * 300 + ".txt"), "--cluster", CLUSTER, "--microbatches", 4,
            "--method", "pipedream", words="File name too long")


def test_a_subnormal_clock(capsys):
    refused(capsys, "cost", "layerpipe_sample", "--clock-ghz", "1e-320")


@pytest.mark.parametrize("capacity", ["nan", "-5", "0", "inf"])
def test_capacity_must_be_a_positive_number(capacity, capsys):
    refused(capsys, "pipeline", "layerpipe_sample", "--processors", 2, "--microbatches", 4, "--capacity-gb", capacity,
            words="capacity-gb")


# -- issue 27: bytes, special files, sizes -------------------------------------------------------
def test_non_utf8_cfg(tmp_path, capsys):
    refused(capsys, "cost", "layerpipe_sample", "--config", write(tmp_path / "a.cfg", CFG.encode() + b"\n#\xff\n"),
            words="not UTF-8")


@pytest.mark.parametrize("suffix, text", [
    (".toml", "[transformer]\nx = " + "[" * 3000 + "]" * 3000 + "\n"),
    (".json", '{"model_type": "gpt2", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"),
    (".toml", "[transformer]\nlayers = 1" + "0" * 5000 + "\n"),
    (".json", '{"model_type": "gpt2", "n_layer": 1' + "0" * 5000 + "}"),
])
def test_deep_or_long_documents(suffix, text, tmp_path, capsys):
    refused(capsys, "cost", write(tmp_path / f"m{suffix}", text), words="not valid")


def test_deeply_nested_energy_table_and_cluster(tmp_path, capsys):
    deep = "x = " + "{a=" * 2000 + "1" + "}" * 2000 + "\n"
    refused(capsys, "energy", "layerpipe_sample", "--energy-table", write(tmp_path / "t.toml", deep), words="nested")
    refused(capsys, "plan", "layerpipe_sample", "--cluster", write(tmp_path / "c.toml", deep), "--microbatches", 2,
            words="nested")


def test_interpolation_syntax_in_cfg_energy_is_a_value_not_a_crash(tmp_path, capsys):
    cfg = write(tmp_path / "a.cfg", CFG + "\n[energy]\nmac_pj = %(x)s\n")
    refused(capsys, "energy", "layerpipe_sample", "--config", cfg, words="mac_pj")


def test_numbers_too_long_or_too_large(tmp_path, capsys):
    refused(capsys, "cost", "layerpipe_sample", "--engine", "cycle", "--sram-kb", "9" * 5000, words="sram-kb")
    huge = TABLE.replace("pj_per_bit = 0.009", "pj_per_bit = 1" + "0" * 400)
    refused(capsys, "energy", "layerpipe_sample", "--energy-table", write(tmp_path / "t.toml", huge),
            words="pj_per_bit")
    refused(capsys, "cost", write(tmp_path / "m.toml", GPT.replace("layers = 2", "layers = 1" + "0" * 400)),
            words="layers")


def test_a_csv_field_over_128_kib(tmp_path, capsys):
    text = "forward,backward_input,backward_weight\n" + '"' + "1" * 140_000 + '",1,1\n'
    refused(capsys, "schedule", "--stage-profile", write(tmp_path / "s.csv", text), "--microbatches", 2,
            words="malformed CSV")


@pytest.mark.parametrize("flag", ["--stage-profile", "--schedule-csv-in"])
def test_special_files_are_not_read(flag, tmp_path, capsys):
    zero, loop, fifo = tmp_path / "zero.csv", tmp_path / "loop.csv", tmp_path / "fifo.csv"
    zero.symlink_to("/dev/zero")
    loop.symlink_to(loop)
    os.mkfifo(fifo)
    # an order read from a CSV fixes its own micro-batches: --microbatches only beside a profile
    extra = ["--stages", 1, "--stage-times", "1,1,1"] if flag == "--schedule-csv-in" else ["--microbatches", 1]
    for path, words in ((zero, "device"), (loop, "symlink loop"), (fifo, "FIFO")):
        refused(capsys, "schedule", *extra, flag, path, words=words)


def test_a_pipedream_profile_that_is_a_fifo_does_not_block(tmp_path, capsys):
    fifo = tmp_path / "graph.txt"
    os.mkfifo(fifo)
    refused(capsys, "plan", fifo, "--cluster", CLUSTER, "--microbatches", 4, "--method", "pipedream", words="FIFO")


def test_a_gpu_sm_count_beyond_any_gpu(tmp_path, capsys):
    csv = write(tmp_path / "k.csv", "# gpu: V100\n# sm_count: " + "1" + "0" * 30 + "\n"
                "network,layer,batch,op,measured_ms,ifmap_h,channels\nvgg16,conv1_1,1,F,0.5,224,3\n")
    refused(capsys, "validate-gpu", "--csv", csv, words="sm_count")


@pytest.mark.parametrize("key, value", [("inter_server_gbps", "[1e-320, 1e-320]"), ("gpu_memory_gb", "1e-300")])
def test_subnormal_cluster_figures(key, value, tmp_path, capsys):
    text = f'[cluster]\nname = "c"\n{key} = {value}\n' + ("inter_server_gbps = 100\n" if key != "inter_server_gbps"
                                                           else "") + "[[servers]]\ncount = 2\ngpus = 2\nintra_server_gbps = 128\n"
    refused(capsys, "plan", "layerpipe_sample", "--cluster", write(tmp_path / "c.toml", text), "--microbatches", 2,
            words=key)


@pytest.mark.parametrize("argv, words", [
    (["--stages", "1000000000", "--stage-times", "1,1,1", "--microbatches", "4"], "processor count"),
    (["--stages", "4", "--stage-times", "1,1,1", "--microbatches", "2147483647"], "max-ops"),
    (["--stages", "4", "--stage-times", "1e-320,1,1", "--microbatches", "4"], "1e-12"),
    (["--stages", "4", "--stage-times", "1,1,1", "--comm", "1e-320", "--microbatches", "4"], "1e-12"),
])
def test_absurd_or_subnormal_stage_flags(argv, words, capsys):
    refused(capsys, "schedule", *argv, words=words)


@pytest.mark.parametrize("text, words", [
    ('{"model_type": "gpt2", "n_embd": 64, "n_head": 2, "n_layer": 2000000000, "vocab_size": 100, "n_positions": 16}',
     "field 'n_layer'"),  # the file's key, not the [transformer] TOML's 'layers'
    ('{"model_type": "gpt2", "n_embd": 64, "n_head": 2, "n_layer": 2, "vocab_size": 3000000000, "n_positions": 16}',
     "vocab"),
    ('{"model_type": "gpt2", "n_embd": 64, "n_head": 2, "n_layer": 2, "vocab_size": 100}', "n_positions"),
    ('{"model_type": "bert", "hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 2, "vocab_size": 100, '
     '"max_position_embeddings": 16, "intermediate_size": 128, "type_vocab_size": 1' + "0" * 400 + "}", "type_vocab"),
])
def test_hugging_face_configs_out_of_range(text, words, tmp_path, capsys):
    refused(capsys, "cost", write(tmp_path / "config.json", text), words=words)


def test_a_toml_name_that_is_not_a_string(tmp_path, capsys):
    refused(capsys, "cost", write(tmp_path / "t.toml", GPT.replace('name = "t"', "name = 5")), words="name")


def _onnx_file(path: Path, batch: int = 1, stride: int = 1) -> Path:
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", strides=[stride, stride])
    out = 1 if stride > 8 else 6
    onnx_model = model([node], [value("x", [batch, 3, 8, 8])], [value("y", [batch, 4, out, out])],
                       [weight("w", 4, 3, 3, 3)])
    path.write_bytes(onnx_model.SerializeToString())
    return path


def test_onnx_stride_and_zero_batch(tmp_path, capsys):
    refused(capsys, "cost", _onnx_file(tmp_path / "s.onnx", stride=2**40), words="strides")
    refused(capsys, "cost", _onnx_file(tmp_path / "b.onnx", batch=0), words="batch")


def test_an_empty_torch_schedule_is_not_zero_steps(tmp_path, capsys):
    refused(capsys, "schedule", "--torch-steps", "--schedule-csv-in", write(tmp_path / "e.csv", ""), words="no actions")


@pytest.mark.parametrize("change, words", [
    (lambda t: t + "\n[bogus]\nx = 1\n", "bogus"),
    (lambda t: t.replace("[dram]\n", "[dram]\npj_per_bitt = 1\n"), "pj_per_bitt"),
    (lambda t: t.replace("pj_per_bit = 0.009", "pj_per_bit = 1e-320"), "pj_per_bit"),
])
def test_energy_tables_refuse_unknown_keys_and_subnormals(change, words, tmp_path, capsys):
    refused(capsys, "energy", "layerpipe_sample", "--energy-table", write(tmp_path / "t.toml", change(TABLE)),
            words=words)


@pytest.mark.parametrize("extra, words", [
    ("\n[archsm]\nClockGHz = 1\n", "archsm"),
    ("\n[archsim]\nClockGHz = 1e-320\n", "ClockGHz"),
    ("\n[archsim]\nClockGhz2 = 1\n", "ClockGhz2"),  # named as the file spells it, not configparser's lowering
    ("\n[energy]\nmac_pjj = 1\n", "mac_pjj"),
])
def test_cfg_refuses_unknown_sections_keys_and_subnormal_clocks(extra, words, tmp_path, capsys):
    refused(capsys, "energy", "layerpipe_sample", "--config", write(tmp_path / "a.cfg", CFG + extra), words=words)


def test_a_network_name_with_a_newline(tmp_path, capsys):
    csv = (ROOT / "layers/layerpipe_sample.csv").read_text(encoding="utf-8")
    refused(capsys, "cost", write(tmp_path / "vgg\n16.csv", csv), words="control characters")


# -- issue 32: names stay inside their folder ----------------------------------------------------
@pytest.mark.parametrize("name", ["../../../../tmp/evil", "/no/such/evil", "sub/../../x"])
def test_an_energy_table_name_stays_in_the_shipped_folder(name, capsys):
    refused(capsys, "energy", "layerpipe_sample", "--energy-table", name, words="energy table")


def test_an_energy_table_name_leading_to_a_real_file_outside_is_refused(tmp_path, capsys):
    """Issue 32: the name leads (by ..) from configs/energy to a table that exists elsewhere; refused,
    while the same file given as a path is the user's explicit choice and loads."""
    from archsim.validate import shipped_configs

    evil = write(tmp_path / "evil.toml", TABLE)
    name = os.path.relpath(tmp_path / "evil", Path(str(shipped_configs("energy"))))
    refused(capsys, "energy", "layerpipe_sample", "--energy-table", name, words="inside energy/")
    assert main(["energy", "layerpipe_sample", "--energy-table", str(evil)]) == 0
    capsys.readouterr()


SPEC = '[sweep]\nnetworks = [{network}]\narrays = ["16x16"]\nbatches = [4]\nprocessors = [2]\nmethods = ["gpipe"]\n'


@pytest.mark.parametrize("network", ['"../outside.csv"', '"/etc/x.csv"', '"link.csv"'])
def test_a_spec_reads_only_inside_its_folder(network, tmp_path, capsys):
    folder = tmp_path / "specs"
    folder.mkdir()
    outside = write(tmp_path / "outside.csv", (ROOT / "layers/layerpipe_sample.csv").read_text(encoding="utf-8"))
    (folder / "link.csv").symlink_to(outside)
    spec = write(folder / "s.toml", SPEC.format(network=network))
    refused(capsys, "sweep", spec, "--out", tmp_path / "out", "--quiet", words="network")


def test_a_spec_energy_table_path_stays_in_its_folder(tmp_path, capsys):
    folder = tmp_path / "specs"
    folder.mkdir()
    write(tmp_path / "evil.toml", TABLE)
    spec = write(folder / "s.toml", SPEC.format(network='"layerpipe_sample"') + 'energy_tables = ["../evil.toml"]\n')
    refused(capsys, "sweep", spec, "--out", tmp_path / "out", "--quiet", words="energy")


def test_a_spec_may_name_a_file_beside_it(tmp_path, capsys):
    """The rule keeps explicit files in the spec's folder working (and the user's own paths on flags)."""
    write(tmp_path / "net.csv", (ROOT / "layers/layerpipe_sample.csv").read_text(encoding="utf-8"))
    spec = write(tmp_path / "s.toml", SPEC.format(network='"net.csv"'))
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    capsys.readouterr()


def test_a_name_whose_symlink_leaves_the_folder_is_refused(tmp_path):
    from archsim.errors import InputError
    from archsim.validate import resolve_name

    folder = tmp_path / "tables"
    folder.mkdir()
    write(folder / "ok.toml", TABLE)
    (folder / "out.toml").symlink_to(write(tmp_path / "secret.toml", TABLE))
    assert resolve_name(folder, "ok", ".toml", "energy table") == folder / "ok.toml"
    with pytest.raises(InputError, match="resolves outside tables/"):
        resolve_name(folder, "out", ".toml", "energy table")


def test_a_dim_that_names_no_dimension(tmp_path, capsys):
    from onnx_models import mixed_cnn

    onnx_file = tmp_path / "m.onnx"
    onnx_file.write_bytes(mixed_cnn().SerializeToString())
    refused(capsys, "cost", onnx_file, "--dim", "foo=3", words="names no symbolic dimension")
    refused(capsys, "cost", "layerpipe_sample", "--dim", "foo=3", words="--dim applies to ONNX")


def test_a_truncated_results_csv_is_refused_by_report(tmp_path, capsys):
    """#27: a results.csv cut short (as by a full disk or a copy interrupted) gave a report of NaN and exit 0."""
    from archsim.cli import main

    out = tmp_path / "sweep"
    spec = tmp_path / "s.toml"
    spec.write_text('[sweep]\nname = "cut"\nnetworks = ["layerpipe_sample"]\narrays = ["32x32"]\ndataflows = ["ws"]\n'
                    'batches = [8]\nprocessors = [2, 3]\nmethods = ["layerpipe", "gpipe"]\nmode = "paper"\n')
    assert main(["sweep", str(spec), "--out", str(out)]) == 0
    capsys.readouterr()
    whole = (out / "results.csv").read_text()
    for cut in (whole[:-1], whole[:whole.rindex(",", 0, len(whole) - 40)] + "\n"):
        (out / "results.csv").write_text(cut)
        code = main(["report", str(out), "--out", str(tmp_path / "r.html")])
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1 and "cut short" in err, err
        assert not (tmp_path / "r.html").exists()
