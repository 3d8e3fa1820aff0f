"""A Megatron user's first hour with train and search: the refusals and notes that named the wrong fix, or
none. Each expected text is the rule it states (a CP's divisors counted by hand, the flag that answers a
rejection), not output copied from the code."""

import warnings
from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
LLAMA8B = str(ROOT / "configs" / "transformers" / "llama3_8b.toml")
MIXTRAL = str(ROOT / "tests" / "data" / "hf_configs" / "mixtral_8x7b.json")


def _cluster(tmp_path: Path, servers: int = 2, gpus: int = 8) -> str:
    """Two servers of eight H100s, eight 400 Gb/s NICs each: a cluster file as docs/formats.md states it."""
    path = tmp_path / "c.toml"
    path.write_text(f'[cluster]\n[[servers]]\ncount = {servers}\ngpus = {gpus}\ngpu = "h100-80gb-sxm"\n'
                    "[network]\nnics_per_server = 8\nnic_gbps = 400\n")
    return str(path)


# 1. a --cp that divides none of the GPUs searched is refused, naming the CPs that do

@pytest.mark.parametrize("cp, expected", [("3", "CP 1, 2, 4, 8 or 16"), ("32", "CP 1, 2, 4, 8 or 16")])
def test_search_refuses_a_cp_dividing_no_gpu_count(tmp_path, capsys, cp, expected):
    """Failed before: the search enumerated nothing and noted "every one broke a rule its flags leave ()", with
    advice (--schedule, --recompute, …) that changes nothing; 16's divisors are 1, 2, 4, 8 and 16."""
    assert main(["search", LLAMA8B, "--cluster", _cluster(tmp_path), "--global-batch", "16", "--cp", cp]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("archsim search: error: field 'cp': ") and "\n" not in err, err
    assert f"CP {cp} divides none of the 16 GPUs" in err and expected in err, err


def test_search_keeps_a_cp_dividing_one_of_the_counts(tmp_path):
    """CP 3 divides 12 of --gpus 12 16: the search runs (16 alone takes none of CP 3's layouts)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = archsim.search(LLAMA8B, cluster=_cluster(tmp_path), global_batch=12, gpus=[12, 16], cp=3,
                                seq=6144, top=1, refine=0, schedule="1f1b", recompute="full", progress=False)
    assert result.costed > 0


def test_the_library_refuses_it_in_its_keyword(tmp_path):
    with pytest.raises(InputError) as refused:
        archsim.search(LLAMA8B, cluster=_cluster(tmp_path), global_batch=16, cp=[3, 5], progress=False)
    assert refused.value.where.field == "cp" and "CP 3 and 5 divide none of the 16 GPUs" in str(refused.value)
