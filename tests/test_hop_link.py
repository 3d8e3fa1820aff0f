"""``pipeline`` and ``schedule`` price a stage-to-stage hop by one rule (archsim/policies/hop_link.py): the same
``--link-bandwidth`` (bytes per cycle), else free hops (a ``--config`` device file's chip-to-chip link is not the
link between arrays of its one chip, which are these commands' processors). References are hand counts of layers/layerpipe_sample.csv's activations: conv1's output is 112 × 112 × 32,
conv2's 56 × 56 × 64, conv3's 28 × 28 × 128 elements a sample; with one layer a stage (4 processors) each crosses
one boundary forward, and its gradient, the same size, crosses it back."""

from __future__ import annotations

import json

import pytest

from archsim.cli import main

SAMPLE = ["layerpipe_sample", "--batch", "8", "--processors", "4", "--array", "64x64"]
PIPELINE = ["pipeline", *SAMPLE, "--method", "pipedream", "--schedule", "1f1b", "--format", "json"]
SCHEDULE = ["schedule", *SAMPLE, "--policy", "1f1b", "--format", "json"]
# the three boundaries' activations, elements per sample × batch 8
BOUNDARY_ELEMENTS = (112 * 112 * 32 + 56 * 56 * 64 + 28 * 28 * 128) * 8


def _makespan(capsys, argv: list[str]) -> tuple[float, str]:
    assert main(argv) == 0
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    meta = document.get("meta", {})
    rows = document["rows"]
    return float(meta["makespan"] if "makespan" in meta else rows[0]["makespan"]), captured.err


@pytest.mark.parametrize("link", [None, "64"])
def test_pipeline_and_schedule_give_one_makespan_on_one_split_and_order(capsys, link):
    """Same split (PipeDream's, one layer a processor), same 1F1B order, same link: same makespan; without the flag
    both run free hops (until 2026-12-05 schedule charged 64 B/cycle, pipeline none: 6,816,215 against 6,464,983 at
    fp16). The priced run is longer than the free one by every hop on the critical path: with one layer a stage and
    4 micro-batches, the first micro-batch's activations down and the last one's gradients back up, 2 bytes an
    element at fp16, bytes ÷ 64 cycles each, not rounded."""
    flag = ["--link-bandwidth", link] if link else []
    common = ["--microbatches", "4", "--dtype", "fp16", *flag]
    piped, _ = _makespan(capsys, [*PIPELINE, *common])
    scheduled, _ = _makespan(capsys, [*SCHEDULE, *common])
    assert piped == scheduled
    if link:
        free, _ = _makespan(capsys, [*PIPELINE, "--microbatches", "4", "--dtype", "fp16"])
        assert piped - free == 2 * BOUNDARY_ELEMENTS * 2 / 64 == 351_232


def test_one_hop_takes_its_bytes_over_the_link_unrounded(capsys):
    """One micro-batch runs serially: the link adds each boundary's activation and gradient, bytes / B cycles
    (int8: 1 byte an element), 48 B/cycle giving a fraction the simulator keeps (no ceiling)."""
    one = ["--microbatches", "1"]
    free, _ = _makespan(capsys, [*PIPELINE, *one])
    for command in (PIPELINE, SCHEDULE):
        linked, _ = _makespan(capsys, [*command, *one, "--link-bandwidth", "48"])
        assert linked - free == pytest.approx(2 * BOUNDARY_ELEMENTS / 48, abs=1e-6)
        assert (linked - free) % 1 != 0


def _device(tmp_path, gbps: float, mhz: float):
    """A device TOML of 4 arrays of 64 × 64 at ``mhz`` whose chip-to-chip link is ``gbps`` GB/s per direction."""
    path = tmp_path / "chip.toml"
    path.write_text(f"""[device]
name = "hop chip"
[compute]
arrays = 4
rows = 64
cols = 64
clock_mhz = {mhz}
[memory]
sram_kib_per_array = 256
hbm_gib = 16
hbm_gbps = 400
[links]
intra_gbps = {gbps}
""")
    return str(path)


@pytest.mark.parametrize("command", [PIPELINE, SCHEDULE])
def test_a_device_files_chip_to_chip_link_does_not_price_hops_between_its_arrays(tmp_path, capsys, command):
    """The processors are the chip's 4 arrays, which its [links] intra_gbps (between chips) does not join: the hops
    stay free on the device file, as on the array flags, with no note; --link-bandwidth prices them, 2 × bytes / 64
    (the file prices fp16, 2 bytes an element)."""
    chip = _device(tmp_path, 128, 1000)
    base = [arg for arg in command if arg not in ("--array", "64x64")] + ["--microbatches", "1", "--config", chip]
    free, _ = _makespan(capsys, [*PIPELINE, "--microbatches", "1", "--dtype", "fp16"])
    read, err = _makespan(capsys, base)
    assert read == free and "intra_gbps" not in err
    flagged, _ = _makespan(capsys, [*base, "--link-bandwidth", "64"])
    assert flagged - free == 2 * BOUNDARY_ELEMENTS * 2 / 64


def test_data_parallel_sync_keeps_its_64_bytes_a_cycle(capsys):
    """A sync cannot be free: without the flag dp-* still runs at 64 B/cycle, as before."""
    dp = ["schedule", "layerpipe_sample", "--batch", "8", "--processors", "2", "--policy", "dp-wfbp", "--format", "json"]
    default, _ = _makespan(capsys, dp)
    given, _ = _makespan(capsys, [*dp, "--link-bandwidth", "64"])
    slower, _ = _makespan(capsys, [*dp, "--link-bandwidth", "8"])
    assert default == given < slower


def test_pipelines_link_flag_needs_micro_batches(capsys):
    assert main(["pipeline", *SAMPLE, "--link-bandwidth", "64"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--link-bandwidth" in err[0] and "--microbatches" in err[0]


def test_the_library_prices_hops_as_the_commands_do():
    """archsim.simulate(…, link_bandwidth=…) and archsim.schedule(…, link_bandwidth=…) take the flag's rule: one
    micro-batch, int8, the hand count of test_one_hop_takes_its_bytes_over_the_link_unrounded; archsim.pipeline
    points the keyword at simulate."""
    import archsim
    from archsim.errors import InputError

    profile = archsim.profile("layerpipe_sample", array="64x64", batch=8)
    plan = archsim.pipeline(profile, processors=4, method="pipedream")
    free = archsim.simulate(plan, profile, microbatches=1, schedule="1f1b").makespan
    linked = archsim.simulate(plan, profile, microbatches=1, schedule="1f1b", link_bandwidth="64").makespan
    scheduled = archsim.schedule("layerpipe_sample", policy="1f1b", processors=4, microbatches=1, batch=8,
                                 array="64x64", link_bandwidth=64).row["makespan"]
    assert linked - free == 2 * BOUNDARY_ELEMENTS / 64 and scheduled == linked
    with pytest.raises(InputError, match="archsim.simulate"):
        archsim.pipeline(profile, processors=4, method="pipedream", link_bandwidth=64)


@pytest.mark.parametrize("command", ["pipeline", "schedule"])
def test_link_bandwidths_help_names_no_device_file_default(capsys, command):
    """The flag's help says what the default is: free hops (schedule: and a 64 B/cycle sync), never a device file's
    intra_gbps, which the commands do not read for a hop (the test above)."""
    with pytest.raises(SystemExit):
        main([command, "--help"])
    lines = capsys.readouterr().out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("--link-bandwidth"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("-"))
    flag = " ".join(" ".join(lines[start:end]).split())
    assert "free" in flag and "intra_gbps at its clock" not in flag
