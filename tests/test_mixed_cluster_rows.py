"""On a mixed cluster the per-op rows and the breakdown are one rank's: the meta names that rank and its GPU.

Before, a mixed cluster's meta listed every GPU (``gpu``: "A100…, H100…, V100…") and the rows came from the rank that
finished last with nothing saying which (both tests below failed: no ``rows_gpu``)."""

import json

from archsim.cli import main

MIXED = "configs/clusters/mixed_h100_a100_v100.toml"


def _train(capsys, cluster: str, pp: int) -> dict:
    main(["train", "gpt_1024h_24l", "--cluster", cluster, "--tp", "8", "--pp", str(pp), "--dp", "1",
          "--global-batch", "8", "--micro-batch", "1", "--format", "json"])
    return json.loads(capsys.readouterr().out)


def test_rows_name_the_rank_that_finishes_and_its_gpu(capsys):
    doc = _train(capsys, MIXED, 4)
    meta = doc["meta"]
    ends = {}  # each rank's last bar, from the timeline, plus what runs after its last backward
    for slot in meta["timeline"]:
        rank = int(slot["rank"].lstrip("r"))
        ends[rank] = max(ends.get(rank, 0.0), slot["end_s"])
    finish = {r: ends[r] + sum(meta["after_backward_seconds"][r].values()) for r in ends}
    rank = max(finish, key=finish.get)
    assert meta["rows_rank"] == rank
    assert meta["rows_gpu"] == meta["memory_per_rank"][rank]["gpu"]
    assert abs(finish[rank] - meta["iteration_seconds"]) <= 1e-9 * meta["iteration_seconds"]


def test_rows_are_that_gpus_ops(capsys, tmp_path):
    """The layer's rows equal those of a cluster of that GPU's servers alone (same server link)."""
    doc = _train(capsys, MIXED, 4)
    assert doc["meta"]["rows_gpu"] == "NVIDIA H100 SXM5 80GB"
    alone = tmp_path / "h100.toml"
    alone.write_text('[cluster]\nname = "h100s"\ninter_server_gbps = 200\ninter_server_link = "per_gpu_pair"\n\n'
                     '[[servers]]\ncount = 4\ngpus = 8\nintra_server_gbps = 7200\ngpu = "h100-80gb-sxm"\n')
    same = _train(capsys, str(alone), 4)
    assert "rows_gpu" not in same["meta"]  # one GPU kind: the meta as before
    layer = [r for r in doc["rows"] if r["piece"] == "layer"]
    assert layer == [r for r in same["rows"] if r["piece"] == "layer"]
