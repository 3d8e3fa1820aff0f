"""An out-of-memory search names ``--gpus`` only where the cluster has GPUs the search left out: on all of
them the note said "--gpus N up to the cluster's 2" to a search already on 2."""

from pathlib import Path

import pytest

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
GPT3 = ROOT / "configs" / "transformers" / "gpt3_175b.toml"


def _cluster(tmp_path: Path, gpus: int) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(f'[cluster]\nname = "c"\n[[servers]]\ngpus = {gpus}\ngpu = "h100-80gb-sxm"\n')
    return path


@pytest.mark.parametrize("gpus, flags", [(1, []), (2, []), (2, ["--gpus", "2"])])
def test_a_search_on_every_gpu_asks_for_a_larger_cluster(tmp_path, capsys, gpus, flags):
    assert main(["search", str(GPT3), "--cluster", str(_cluster(tmp_path, gpus)), "--global-batch", "8", *flags]) == 0
    err = capsys.readouterr().err
    assert "all out of memory" in err and f"a cluster of more than its {gpus}" in err and "--gpus" not in err, err


def test_a_search_on_some_gpus_still_names_gpus(tmp_path, capsys):
    assert main(["search", str(GPT3), "--cluster", str(_cluster(tmp_path, 2)), "--global-batch", "8",
                 "--gpus", "1"]) == 0
    err = capsys.readouterr().err
    assert "all out of memory" in err and "--gpus N up to the cluster's 2" in err, err
