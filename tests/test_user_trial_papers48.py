"""A researcher's second trial of the four papers beside LayerPipe — out-of-order backprop, SPP, BPPSA and
SPB + Jigsaw — reproducing each one's worked example from the docs, then making a user's mistakes. Each test
names the defect it found; each failed on the tree before its fix.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# Ctrl-C while Jigsaw's compiled event loop runs: the loop is on the main thread (no bar drawn, as off a
# terminal), SIGINT arrives once it has finished a few jobs (the counter it shares says so, so no timing guess).
_CTRL_C_IN_KERNEL = textwrap.dedent("""
    import os, signal, threading, time
    import numpy as np
    from functools import partial
    from archsim.cluster import JobCluster, SimConfig, build_jobs, paper_catalog, simulate, synthetic_trace
    from archsim.progress import polled, progress

    catalog = paper_catalog()
    cluster = JobCluster.uniform(45, 3, 16 * 2**30)
    jobs = build_jobs(synthetic_trace(500, 0, catalog=catalog), catalog, cluster)
    config = SimConfig(interval_s=60, gamma_s_per_byte=0.8e-9, unit_s=0, max_pack=2)
    counter = np.zeros(2, np.int64)  # as archsim cluster passes it: jobs done, and a stop slot

    signal.signal(signal.SIGINT, signal.default_int_handler)  # as at a terminal, whatever the parent ignores

    def interrupt():
        while counter[0] < 5:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    try:
        polled(partial(simulate, jobs, cluster, "jigsaw", config, counter), counter, progress(1, "c", "job", False))
    except KeyboardInterrupt:
        print("interrupted", flush=True)
""")


@pytest.mark.long
def test_ctrl_c_during_a_jigsaw_run_is_one_line_not_a_segmentation_fault():
    """Defect: Ctrl-C during `archsim cluster --compare --unit-seconds 0` (the docs' 1.5-minute run) killed the
    process with a segmentation fault (exit -11, no message; or a SystemError from numba's unpickler) instead of
    `archsim cluster: error: interrupted`, exit 130. Cause: the compiled loop ran on the main thread, where
    Python raised KeyboardInterrupt inside one of numba's callbacks into the interpreter; with a bar drawn it ran
    on a daemon thread still running when the interpreter ended. Fix: the loop runs in a thread that polls a
    stop flag, which ``polled`` sets and joins on Ctrl-C. Before the fix this script died (-11 or exit 1)."""
    done = subprocess.run([sys.executable, "-c", _CTRL_C_IN_KERNEL], check=False, capture_output=True, text=True,
                          timeout=600)
    assert (done.returncode, done.stdout.strip()) == (0, "interrupted"), done.stderr[-2000:]


@pytest.mark.parametrize(("keywords", "field"), [
    ({"up_levels": 9}, "up_levels"),
    ({"compare_levels": [5]}, "compare_levels"),
    ({"compare_levels": "full"}, "compare_levels"),
])
def test_bppsa_api_names_the_keyword_not_the_flag_for_a_bad_depth(keywords, field):
    """Defect: `archsim.bppsa_pruned_vgg11(up_levels=9)` said `--up-levels: expected an up-sweep depth …` with no
    field, where its other keywords' errors say `field 'width_divisor': …` (CLI and API disagreeing on whom they
    address). VGG-11's 21 operators allow depths 0…4 (2⌈log₂ 22⌉ − 1 = 9 levels: 4 up-sweep levels, BPPSA
    Algorithm 1 lines 1 and 8), so 9 and 5 are out of range. Before the fix the error had no field."""
    import archsim
    from archsim.errors import InputError

    with pytest.raises(InputError) as caught:
        archsim.bppsa_pruned_vgg11(width_divisor=8, **keywords)
    assert caught.value.where.field == field and "--" not in str(caught.value), str(caught.value)


def test_policy_with_a_given_order_says_the_two_conflict_not_that_per_stage_runs_take_it(tmp_path, capsys):
    """Defect: `archsim schedule --stages 2 --stage-times 1,1,1 --policy 1f1b --schedule-csv-in FILE` said
    `--policy applies only to any run on a NETWORK and any run on per-stage costs`, though this run is on per-stage
    costs: the conflict is that --policy and --schedule-csv-in both name the order (docs/papers/ooo-backprop.md:
    `--schedule-csv-in FILE` times torch's orders). Before the fix the line said 'applies only to'."""
    from archsim.cli import main

    order = tmp_path / "order.csv"
    order.write_text("0F0,0I0\n")
    argv = ["schedule", "--stages", "2", "--stage-times", "1,1,1", "--microbatches", "4", "--policy", "1f1b"]
    assert main([*argv, "--schedule-csv-in", str(order)]) == 2
    err = capsys.readouterr().err.strip()
    assert "applies only to" not in err and "--schedule-csv-in" in err and "--policy" in err, err
    assert len(err.splitlines()) == 1, err


def test_bppsa_api_size_refusal_names_keywords_not_flags():
    """Defect: `archsim.bppsa_pruned_vgg11(max_mflops=1, width_divisor=8)` said the estimate came 'from --sparsity,
    --width-divisor and the up-sweep depths' — the command's flags in a Python error whose remedy already reads
    `give max_mflops=17`. What is tested is whom the message addresses, not the estimate (docs/papers/bppsa.md
    states its accuracy). Before the fix the message held '--sparsity'."""
    import archsim
    from archsim.errors import InputError

    with pytest.raises(InputError) as caught:
        archsim.bppsa_pruned_vgg11(max_mflops=1, width_divisor=8)
    message = str(caught.value)
    assert "--" not in message and "sparsity" in message and "width_divisor" in message, message


def test_unit_cost_data_parallel_on_one_worker_waits_for_no_synchronization():
    """Defect: `archsim schedule ffnn8 --unit-costs --processors 1 --microbatches 1 --policy dp-wfbp` charged each
    layer's `--comm-units` synchronization though one worker has no peer (makespan 32, bubble 1/32), where the
    same run on the array model's costs synchronizes nothing at one worker (bubble 0). Hand count with unit costs
    (the data-parallel window: one iteration's backward, then the next one's forward): 8 forwards, 7
    layers of δ + G and layer 1's G alone (15), 8 forwards of the next iteration: 31, no idle unit. Before the fix
    the makespan was 32."""
    import archsim

    timeline = archsim.schedule("ffnn8", policy="dp-wfbp", processors=1, microbatches=1, unit_costs=True)
    assert timeline.makespan == 8 + (7 * 2 + 1) + 8


@pytest.mark.parametrize("microbatches", [0, -1])
def test_plan_on_cluster_names_microbatches_when_it_is_not_a_positive_count(microbatches):
    """Defect: `plan_on_cluster(profile, topology, "spp", 0)` (docs/api.md's SPP call with M = 0; SPP §III-B's M
    micro-batches, at least one) was refused as `field 'stages': need at least one stage and one micro-batch`,
    naming the stages the user never gave. Before the fix the field was 'stages'."""
    import archsim
    from archsim.errors import InputError
    from archsim.planners import plan_on_cluster
    from archsim.spp.topology import load_topology_file

    cluster = load_topology_file(Path(__file__).resolve().parents[1] / "configs" / "clusters" / "testbed_1080ti.toml")
    with pytest.raises(InputError) as caught:
        plan_on_cluster(archsim.profile("ffnn16", clock_ghz=1.0), cluster, "spp", microbatches)
    assert caught.value.where.field == "microbatches", str(caught.value)
