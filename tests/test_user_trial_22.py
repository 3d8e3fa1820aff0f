"""A pipeline-parallel researcher's own network and two-server cluster: each refusal names the file the
mistake is in, and a plan that leaves processors idle says so."""

from __future__ import annotations

import json
import warnings

import pytest
from user_files import two_server_cluster, write_user_files

import archsim
from archsim.cli import main

NETWORK = """Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, Padding, Type, Inputs,
stem, 16, 16, 3, 3, 3, 16, 1, 1, conv, input,
b1, 16, 16, 3, 3, 16, 16, 1, 1, conv, stem,
b2, 16, 16, 3, 3, 16, 16, 1, 1, conv, b1,
fc, 16, 16, 16, 16, 16, 10, 1, 0, fc, b2,
"""

UNEQUAL_SERVERS = two_server_cluster("two_unequal", 25, (4, 256), (2, 256))  # GPUs, intra-server Gb/s


def _files(tmp_path):
    return write_user_files(tmp_path, ("mine.csv", NETWORK), ("two.toml", UNEQUAL_SERVERS))


def test_pipedream_on_unequal_servers_names_the_cluster_file_not_the_network(tmp_path, capsys) -> None:
    """PipeDream's optimizer needs servers of equal GPU counts; the refusal named the network CSV (which is
    fine) as the file at fault, sending the user to the wrong file."""
    network, cluster = _files(tmp_path)
    assert main(["plan", str(network), "--cluster", str(cluster), "--microbatches", "4",
                 "--method", "pipedream"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "two.toml" in err[0] and "mine.csv" not in err[0], err[0]
    assert "field 'servers'" in err[0] and "different GPU counts" in err[0], err[0]


def test_schedule_with_more_processors_than_layers_speaks_of_schedule_not_pipedreams_method(tmp_path, capsys) -> None:
    """`archsim schedule --policy 1f1b --processors 20` on a 4-layer network: the refusal spoke of "PipeDream's
    straight pipeline" and of gpipe/ooo/layerpipe *methods* (`archsim pipeline`'s), none of which the user named.
    It must say what `schedule` does (one stage of whole layers per processor) and the most processors it takes."""
    network, _ = _files(tmp_path)
    assert main(["schedule", str(network), "--policy", "1f1b", "--processors", "20", "--microbatches", "4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    line = err[0]
    assert "argument --processors" in line and "at most 4 processors, got 20" in line, line
    assert "--policy 1f1b" in line and "straight pipeline" not in line and "layer groups" not in line, line
    assert main(["schedule", str(network), "--policy", "1f1b", "--processors", "4", "--microbatches", "4"]) == 0


def test_data_parallel_schedule_prints_no_activation_peak_it_does_not_model(tmp_path, capsys) -> None:
    """`schedule --policy dp-wfbp` on a real network printed `peak_activation_bytes` 0: its iteration window
    allocates no stash, so the 0 read as "holds no activations", which a worker training 4 micro-batches of
    these conv layers does. A column the run does not compute is left out (as `flush` is), while 1f1b on the
    same network still reports its positive peak."""
    network, _ = _files(tmp_path)
    common = [str(network), "--processors", "2", "--microbatches", "4", "--format", "json"]
    assert main(["schedule", *common, "--policy", "1f1b"]) == 0
    pipelined = json.loads(capsys.readouterr().out)["rows"][0]
    assert pipelined["peak_activation_bytes"] > 0
    for policy in ("dp-wfbp", "dp-priority"):  # one window: no micro-batch count (refused since 2026-12-03)
        assert main(["schedule", str(network), "--processors", "2", "--format", "json", "--policy", policy]) == 0
        row = json.loads(capsys.readouterr().out)["rows"][0]
        assert "peak_activation_bytes" not in row, (policy, row)
        assert row["makespan"] > 0


def test_pipeline_says_when_processors_stay_idle(tmp_path, capsys) -> None:
    """`archsim pipeline --processors 6 --method gpipe` on a 4-layer network plans 4 stages: 2 of the 6 processors
    get nothing, and the only sign was a `stages: 4` meta line under `processors: 6`. A note on stderr says so;
    a plan that fills every processor prints none."""
    network, _ = _files(tmp_path)
    base = ["pipeline", str(network), "--batch", "8", "--format", "json"]
    assert main([*base, "--processors", "6", "--method", "gpipe"]) == 0
    captured = capsys.readouterr()
    meta = json.loads(captured.out)["meta"]
    assert (meta["processors"], meta["stages"]) == (6, 4)
    notes = captured.err.strip().splitlines()
    assert len(notes) == 1 and notes[0].startswith("archsim pipeline: note: "), notes
    assert "4 of the 6 processors" in notes[0] and "2 stay idle" in notes[0], notes[0]
    assert main([*base, "--processors", "3", "--method", "gpipe"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["meta"]["stages"] == 3 and captured.err == ""


def test_api_pipeline_warns_the_idle_processors_note_as_the_command_does(tmp_path) -> None:
    """CLI/API parity: `archsim.pipeline(profile, processors=6, method="gpipe")` on 4 layers warns the line
    `archsim pipeline` prints on stderr; a plan filling its processors warns nothing."""
    network, _ = _files(tmp_path)
    profile = archsim.profile(str(network), array="32x32", batch=8, mode="exact")
    with pytest.warns(UserWarning, match=r"^gpipe's plan uses 4 of the 6 processors; 2 stay idle$"):
        plan = archsim.pipeline(profile, processors=6, method="gpipe")
    assert len(plan.stages) == 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(archsim.pipeline(profile, processors=2, method="gpipe").stages) == 2


@pytest.mark.long  # a sweep and its report: about a second
def test_report_of_an_own_network_names_itself_and_says_how_to_get_the_left_out_sections(tmp_path, capsys) -> None:
    """`archsim report RESULTS` of a sweep over the user's own CSV leaves out the per-layer and Gantt sections
    (the file is outside the results folder); its stderr line was a bare `note:` (every other command's note
    names it: `archsim plan: note: …`) and gave no way to get them back."""
    _files(tmp_path)  # mine.csv beside the spec
    spec = tmp_path / "mine.toml"
    spec.write_text('[sweep]\nname = "mine"\nnetworks = ["mine.csv"]\narrays = ["16x16"]\nbatches = [4]\n'
                    'processors = [2]\nmethods = ["layerpipe"]\n')
    out = tmp_path / "res"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["report", str(out), "--out", str(tmp_path / "r.html")]) == 0
    err = [line for line in capsys.readouterr().err.strip().splitlines() if "note" in line]
    assert len(err) == 1 and err[0].startswith("archsim report: note: "), err
    assert "mine.csv" in err[0] and "archsim sweep SPEC --report" in err[0], err[0]


def test_alpha_below_one_is_refused_saying_its_bound_once(tmp_path, capsys) -> None:
    """`--alpha 0.5` said "expected a number > 1 > 1 and <= 1e+06": the flag's description already stated the
    bound the parser appends."""
    network, _ = _files(tmp_path)
    assert main(["pipeline", str(network), "--processors", "2", "--method", "layerpipe", "--alpha", "0.5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "argument --alpha" in err[0], err
    assert err[0].count("> 1") == 1 and "> 1 and <= 1e+06, got '0.5'" in err[0], err[0]


def _help(command: str, capsys) -> str:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    return " ".join(capsys.readouterr().out.split())


def test_batch_help_says_what_each_command_does_with_microbatches(capsys) -> None:
    """`plan --help` said `--batch` is split into micro-batches "as in every command", but `pipeline` and
    `schedule` run --microbatches micro-batches of --batch samples each (docs/cli.md): a user moving from
    `plan --batch 32 --microbatches 4` to `pipeline` would cost 4× the samples. Each help says its own rule."""
    assert "as in every command" not in _help("plan", capsys)
    for command in ("pipeline", "schedule"):
        text = _help(command, capsys)
        assert "micro-batches of --batch samples each" in text, (command, text)


def test_sweep_spec_with_an_absolute_network_path_names_the_spec(tmp_path, capsys) -> None:
    """A spec naming its network by absolute path is refused (names stay inside the spec's folder), but the line
    said only "field 'networks'", where every other spec error names the spec file, as an `.cfg` array does."""
    network, _ = _files(tmp_path)
    spec = tmp_path / "abs.toml"
    spec.write_text(f'[sweep]\nnetworks = ["{network}"]\narrays = ["16x16"]\nbatches = [4]\nprocessors = [2]\n'
                    'methods = ["layerpipe"]\n')
    assert main(["sweep", str(spec), "--out", str(tmp_path / "res"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("archsim sweep: error: "), err
    assert "abs.toml, line 2, field 'networks'" in err[0] and "must stay inside" in err[0], err[0]
    assert not (tmp_path / "res").exists()
