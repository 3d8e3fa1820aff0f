"""Hierarchical context parallelism (``--cp-comm a2a+p2p --cp-hierarchy A P``, TransformerEngine's ``a2a+p2p`` as
Megatron-LM runs it with ``--hierarchical-context-parallel-sizes A P``) against independent references: the bytes
of the inner all-to-alls and of the outer ring counted by hand from Llama-3-8B's shape (32 query heads, 8 K/V heads
of 128), their seconds on links of known bandwidth, the GPUs of each level (Megatron's ``create_hierarchical_groups``
worked by hand on two 8-GPU servers), the attention's causal pairs, the buffers, the refusals Megatron-LM and
TransformerEngine make, and the two ends (A = 1 is p2p, P = 1 is a2a: TransformerEngine swaps the type) checked
exchange by exchange and as whole iterations. Every test failed before the option existed (``a2a+p2p`` refused)."""

from __future__ import annotations

import json
import warnings
from dataclasses import replace
from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.collectives import LinkClass, Spanning
from archsim.errors import InputError
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.context_parallel import flash_steps, ring_sends
from archsim.training.iteration import clear_model_cache, model_pieces
from archsim.training.parallel import Parallelism
from archsim.workload.model_files import load_transformer

ROOT = Path(__file__).resolve().parents[1]
LLAMA = ROOT / "tests" / "data" / "hf_configs" / "llama3_8b.json"  # 32 heads, 8 K/V heads, head dim 128
GPT = ROOT / "configs" / "transformers" / "gpt3_1.3b.toml"  # 16 heads (and 16 K/V heads)
H100 = ROOT / "configs" / "clusters" / "h100_2_servers.toml"  # 2 servers of 8 H100s
MIB = 2**20


def _par(a: int, p: int, tp: int = 2, **keys) -> Parallelism:
    return Parallelism(tp, 1, 1, 1, cp=a * p, cp_comm="a2a+p2p", cp_hierarchy=(a, p), attention="flash",
                       recompute="none", **keys)


def _quiet(model=LLAMA, **keys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return archsim.train(str(model), cluster=str(H100), dtype="bf16", **keys)


def _cp_rows(result) -> list[tuple[str, str, float]]:
    """The exchange's rows of an iteration (name, F/B, seconds), as train's JSON lists them."""
    return [(r["name"], r["op"], r["seconds"]) for r in result.ops if r["name"].startswith("cp.")]


def test_the_levels_gpus_by_hand():
    """TP 2 × CP 8 on two 8-GPU servers: the CP group of TP rank 0 is GPUs 0, 2, …, 14. A 4 × P 2: the inner groups
    are CP ranks 0-3 (GPUs 0, 2, 4, 6: one server) and 4-7, the rings CP ranks {0, 4} (GPUs 0 and 8: across the
    servers), … So the all-to-all's link is that of TP 2 × CP 4's group (the same four GPUs), the ring's hop that of
    TP 8 × CP 2's ring (GPU 0 to GPU 8); plain a2a's group of 8 spans both servers."""
    cluster = load_gpu_cluster(str(H100), "bf16")
    links = cluster.machine(_par(4, 2)).links
    four = cluster.machine(Parallelism(2, 1, 2, 2, cp=4)).links
    pair = cluster.machine(Parallelism(8, 1, 1, 1, cp=2)).links
    assert links.cp == four.cp and not isinstance(links.cp, Spanning)
    assert links.cp_hop == pair.cp_hop
    assert isinstance(cluster.machine(Parallelism(2, 1, 1, 1, cp=8, cp_comm="a2a")).links.cp, Spanning)


def test_flash_steps_cover_a_ranks_share_of_the_causal_pairs():
    """After the all-to-all a rank holds 1/A of the heads over s/P tokens and runs p2p's ring of P: its kernels
    cover 1/CP of the sequence's s(s + 1)/2 causal pairs at all heads (the load-balanced split gives every rank the
    same share), counted as pairs × heads; the first is causal over s/P tokens at heads/A."""
    s, heads = 4096, 16
    for a, p in ((2, 4), (4, 2), (8, 1), (1, 8)):
        steps = flash_steps(s, heads, 8, a * p, True, "a2a+p2p", (a, p))
        covered = sum(t * (t + 1) // 2 * h if causal else t * t * h for t, h, _, causal in steps)
        assert covered * a * p == s * (s + 1) // 2 * heads
        assert steps[0] == (s // p, heads // a, 8 // a, True) and len(steps) == p


def test_the_ring_sends_by_hand():
    """The ring's K/V of s/P tokens at K/V heads/A: at 32,768 tokens, A 4 × P 2, 16,384 tokens × 1 K/V head (4 per TP
    2 rank over 4) × 128 × 2 tensors × 2 bytes = 8 MiB, the bytes of p2p's 4,096 tokens at all 4; P steps forward
    (the last sends nothing), backward K/V, then dK/dV; A 2 × P 4: three sends forward, the middle backward ones
    carrying K/V and dK/dV."""
    c = load_transformer(str(LLAMA), seq=32768)
    one = 16384 * 1 * 128 * 2 * 2
    assert one == 8 * MIB == 4096 * 4 * 128 * 2 * 2
    assert ring_sends(c, _par(4, 2)) == ([one, 0.0], [one, one])
    assert ring_sends(c, _par(2, 4)) == ([one, one, one, 0.0], [one, 2 * one, 2 * one, one])


def test_the_inner_all_to_alls_and_the_outer_ring_seconds_by_hand():
    """A 4 × P 2 at 32,768 tokens, TP 2: a rank's 4,096 tokens give Q and O of 4,096 × 16 × 128 × 2 bytes = 16 MiB,
    K and V 4 MiB. On an inner link of 1 GB/s without latency an all-to-all over the 4 ranks sends 3/4 of its
    buffer: 3/4 · (16 + 4 + 4 + 16) MiB / 10⁹ s each way, none under attention (over all 8 ranks it would be 7/8).
    On an outer hop of 0.1 GB/s the ring adds Σ max(0, bytes / 10⁸ − step) over the layer's own attention steps."""
    c = load_transformer(str(LLAMA), seq=32768)
    par = _par(4, 2)
    machine = load_gpu_cluster(str(H100), "bf16").machine(par)
    inner, outer = LinkClass("inner", 1e9, 1.0, 0.0, 0.0), LinkClass("outer", 1e8, 1.0, 0.0, 0.0)
    machine = replace(machine, links=replace(machine.links, cp=inner, cp_hop=outer))
    clear_model_cache()
    layer = model_pieces(c, par, machine)["layer"]
    clear_model_cache()
    q, kv = 4096 * 16 * 128 * 2, 4096 * 4 * 128 * 2
    assert (q, kv) == (16 * MIB, 4 * MIB)
    a2a = 3 / 4 * (q + kv + kv + q) / 1e9
    steps_f = [t for name, kind, t in layer.ops if name == "flash_attention" and kind == "F"]
    steps_b = [t for name, kind, t in layer.ops if name == "flash_attention" and kind == "D"][::-1]
    one = 8 * MIB
    ring_f = sum(max(0.0, b / 1e8 - t) for b, t in zip([one, 0], steps_f, strict=True))
    ring_b = sum(max(0.0, b / 1e8 - t) for b, t in zip([one, one], steps_b, strict=True))
    assert ring_f > 0 and ring_b > 0
    assert layer.cp_forward == pytest.approx(a2a + ring_f, rel=1e-12)
    assert layer.cp_backward == pytest.approx(a2a + ring_b, rel=1e-12)


def test_memory_holds_the_larger_of_the_all_to_all_and_the_ring_buffers_by_hand():
    """TP 2 × CP 8 (A 4 × P 2) at 32,768 tokens: the all-to-alls hold each of Q, K, V's send copy and receive buffer,
    2 × (16 + 4 + 4) = 48 MiB; while the ring runs a rank holds the Q, K, V they brought (24 MiB) and p2p's two K/V
    and dK/dV buffers of 8 MiB each, 4 × 8 = 32 MiB: 56 MiB, the larger. p2p holds its 32 MiB: 24 MiB apart."""
    keys = {"tp": 2, "cp": 8, "global_batch": 1, "seq": 32768}
    p2p, _ = _quiet(**keys)
    hier, _ = _quiet(cp_comm="a2a+p2p", cp_hierarchy=(4, 2), **keys)
    assert hier.memory[0].activations - p2p.memory[0].activations == 24 * MIB
    assert hier.memory[0].parameters == p2p.memory[0].parameters


def test_inner_group_of_one_is_p2p_and_outer_ring_of_one_is_a2a():
    """TransformerEngine runs a2a+p2p with A = 1 as p2p and with P = 1 as a2a. By hand: A 1 × P 4 sends p2p's three
    K/V of 4,096 × 4 × 128 × 2 × 2 bytes forward and nothing is all-to-all'd; A 4 × P 1 all-to-alls over all 4 and
    rings nothing. GPT-3 1.3B (16 heads) at TP 2 × CP 4: the iterations are p2p's and a2a's, to the bit."""
    c = load_transformer(str(LLAMA), seq=32768)
    one = 8192 * 4 * 128 * 2 * 2
    assert ring_sends(c, _par(1, 4)) == ([one, one, one, 0.0], [one, 2 * one, 2 * one, one])
    assert _par(1, 4).cp_a2a == 1 and _par(4, 1).cp_a2a == 4 and _par(2, 2).cp_a2a == 2
    keys = {"tp": 2, "cp": 4, "dp": 2, "global_batch": 2, "seq": 8192}
    for comm, (a, p) in (("p2p", (1, 4)), ("a2a", (4, 1))):
        plain, _ = _quiet(GPT, cp_comm=comm, **keys)
        hier, _ = _quiet(GPT, cp_comm="a2a+p2p", cp_hierarchy=(a, p), **keys)
        assert hier.iteration_seconds == plain.iteration_seconds
        assert hier.memory == plain.memory
        assert _cp_rows(hier) == _cp_rows(plain)
    mixed, _ = _quiet(GPT, cp_comm="a2a+p2p", cp_hierarchy=(2, 2), **keys)
    names = [name for name, _, _ in _cp_rows(mixed)]
    assert any("all-to-all (a2a over 2" in n for n in names) and any("kv-ring (p2p, 1 ×" in n for n in names)


def test_refusals_as_megatron_and_transformer_engine_refuse(capsys):
    """Megatron-LM requires the sizes with a2a+p2p and asserts A × P = CP; TransformerEngine splits each TP rank's
    heads in A parts (Llama-3-8B at TP 2: 4 K/V heads, so A 8 is refused and A 2 or 4 offered); sizes beside
    another exchange change nothing and are refused."""
    with pytest.raises(InputError) as err:
        Parallelism(2, 1, 1, 1, cp=8, cp_comm="a2a+p2p")
    assert err.value.where.field == "cp-comm" and "--cp-hierarchy A P" in err.value.message
    with pytest.raises(InputError) as err:
        Parallelism(2, 1, 1, 1, cp=8, cp_comm="a2a+p2p", cp_hierarchy=(4, 4))
    assert err.value.where.field == "cp-hierarchy" and "16 ranks, not CP 8" in err.value.message
    with pytest.raises(InputError) as err:
        Parallelism(2, 1, 1, 1, cp=8, cp_hierarchy=(4, 2))
    assert err.value.where.field == "cp-hierarchy"
    common = ["train", str(LLAMA), "--cluster", str(H100), "--seq", "16384", "--tp", "2", "--cp", "8",
              "--global-batch", "1", "--dtype", "bf16"]
    assert main([*common, "--cp-comm", "a2a+p2p", "--cp-hierarchy", "8", "1"]) == 2
    err_text = capsys.readouterr().err
    assert "4 key/value heads" in err_text and "A 2 or 4 does" in err_text
    assert main([*common, "--cp-comm", "a2a+p2p"]) == 2
    assert "--cp-hierarchy A P" in capsys.readouterr().err
    assert main([*common, "--cp-hierarchy", "4", "2"]) == 2
    assert "a2a+p2p only" in capsys.readouterr().err


def test_train_meta_runs_file_and_search_name_the_levels(tmp_path, capsys):
    """train's JSON meta names the levels; a runs file's ``cp_hierarchy`` cell "4 2" runs the same iteration; search
    tries A × P = 8 with both above 1 — (2, 4) and (4, 2) — beside p2p, and its rows' commands and Megatron-LM
    arguments name them and run through train to the rows' seconds (each row on its own levels' links, not on those
    of the first candidate of its TP × CP built)."""
    keys = ["--seq", "16384", "--dtype", "bf16", "--cluster", str(H100)]
    assert main(["train", str(LLAMA), *keys, "--tp", "2", "--cp", "8", "--global-batch", "1", "--cp-comm", "a2a+p2p",
                 "--cp-hierarchy", "4", "2", "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert (meta["cp_comm"], meta["cp_hierarchy"]) == ("a2a+p2p", [4, 2])
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,cp,cp_comm,cp_hierarchy,micro_batch,global_batch\n2,1,1,8,a2a+p2p,4 2,1,1\n",
                    encoding="utf-8")
    assert main(["train", str(LLAMA), *keys, "--runs", str(runs), "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert row["cp_hierarchy"] == "4 2"
    assert row["predicted_seconds"] == pytest.approx(meta["iteration_seconds"], rel=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = archsim.search(str(LLAMA), cluster=str(H100), global_batch=1, top=40, schedule="1f1b",
                                max_micro_batch=1, recompute="full", sequence_parallel="off", dtype="bf16",
                                seq=16384, cp=[8], cp_comm=["p2p", "a2a+p2p"])
    levels = {r.get("cp_hierarchy") for r in result.rows if r["tp"] == 2}
    assert levels == {None, "2 4", "4 2"}  # p2p's row, then a2a+p2p's two
    for level in ("2 4", "4 2"):  # each priced on its own levels' links (not the first one's, cached)
        row = next(r for r in result.rows if r.get("cp_hierarchy") == level and r["tp"] == 2)
        assert f"--cp 8 --cp-comm a2a+p2p --cp-hierarchy {level}" in row["command"]
        assert f"--cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes {level}" in row["megatron_args"]
        assert main(["train", *row["command"].split()[2:], "--format", "json"]) == 0
        got = json.loads(capsys.readouterr().out)["meta"]
        assert got["iteration_seconds"] == pytest.approx(row["iteration_seconds"], rel=1e-12)


def test_an_inner_group_across_servers_is_warned_of_and_one_inside_is_not():
    """GPT-3 1.3B at TP 4 × CP 8 on 8-GPU servers: the CP group of TP rank 0 is GPUs 0, 4, 8, …, 28. A 4 × P 2's
    inner group is GPUs 0, 4, 8, 12 — two servers: its all-to-alls cross the network, one line; A 2 × P 4's is GPUs
    0 and 4, one server: no line (its ring crosses servers, as p2p's does, unwarned)."""
    pod = str(ROOT / "configs" / "clusters" / "dgx_h100_superpod.toml")
    lines = []
    for a, p in ((4, 2), (2, 4)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            archsim.train(str(GPT), cluster=pod, tp=4, cp=8, cp_comm="a2a+p2p", cp_hierarchy=(a, p), global_batch=1,
                          dtype="bf16")
        lines.append([str(w.message) for w in caught if "spans" in str(w.message)])
    line = "an all-to-all group of a2a+p2p (A = 4) spans 2 servers: its all-to-alls (a2a) cross the network"
    assert lines == [[line], []]
