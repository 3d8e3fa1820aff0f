"""User trial 69, second pass (archsim driven as a Python library): keywords that meant something else than the
flag of the same name, settings that changed nothing without a word, names a notebook could not import — each
checked against the command's own rule or words, not against the API's output."""

from __future__ import annotations

import pytest

import archsim
from archsim.errors import InputError


@pytest.fixture(scope="module")
def sample_profile():
    return archsim.profile("layerpipe_sample", array="32x32", batch=32)


# --- pipeline: bandwidth is --bandwidth's DRAM words per cycle, never a link -------------------------------------------
# Failed before: archsim.pipeline(profile, processors=3, bandwidth=4) planned over links of 4 bytes per cycle between
# the processors, while `archsim pipeline --bandwidth 4` is the cycle engine's DRAM words per cycle (and the CLI's link
# between stages is --link-bandwidth, the simulated hops'): one name, two meanings.

@pytest.mark.parametrize("method", ["layerpipe", "pipedream", "gpipe", "ooo"])
def test_pipeline_refuses_bandwidth_pointing_at_profile_and_link(sample_profile, method):
    with pytest.raises(InputError) as caught:
        archsim.pipeline(sample_profile, processors=3, method=method, bandwidth=4)
    said = str(caught.value)
    assert "\n" not in said and "DRAM words per cycle" in said
    assert "archsim.profile(" in said and "link_bandwidth" in said and "Topology.flat" in said


def test_pipeline_link_plan_stays_reachable_by_a_flat_topology(sample_profile):
    """The plan made for a link between processors, what bandwidth= gave, is processors=Topology.flat(P, B)'s:
    PipeDream's optimizer on one level at B bytes per cycle (archsim.partition.pipedream, called directly)."""
    from archsim.partition.pipedream import pipedream_partition
    from archsim.spp.topology import Topology

    plan = archsim.pipeline(sample_profile, processors=Topology.flat(3, 2.0), method="pipedream")
    assert plan == pipedream_partition(sample_profile, 3, bandwidth=2.0)


# --- pipeline: an unknown keyword's line lists the keywords a user gives, not the partitioners' parts --------------------
# Failed before: archsim.pipeline(profile, processors=3, alphaa=1) listed "alpha, axes, bandwidth, borrow, coster,
# max_rounds, search, split_axes" — internal parameters (a DeltaCoster, the search's round cap) beside the flags.

PIPELINE_LAYERPIPE_FLAGS = ("--alpha", "--borrow", "--split-axes")  # archsim pipeline's flags that tune Algorithm 1


def test_pipeline_unknown_keyword_lists_the_flags_keywords(sample_profile):
    from archsim.cli import build_parser

    parser = build_parser()
    pipeline_parser = next(action for action in parser._subparsers._group_actions).choices["pipeline"]
    assert all(flag in pipeline_parser._option_string_actions for flag in PIPELINE_LAYERPIPE_FLAGS)
    with pytest.raises(InputError) as caught:
        archsim.pipeline(sample_profile, processors=3, method="layerpipe", alphaa=1.05)
    said = str(caught.value)
    listed = said.split(" takes ")[1].split(", ")
    assert sorted(listed) == sorted(flag[2:].replace("-", "_") for flag in PIPELINE_LAYERPIPE_FLAGS)
    assert "did you mean 'alpha'" in said


@pytest.mark.parametrize("method", ["layerpipe", "pipedream", "gpipe"])
def test_pipeline_listed_keywords_are_taken(sample_profile, method):
    """Every keyword the line lists runs (at its partitioner's default), so the list offers nothing refused."""
    from archsim.api import PIPELINE_KEYWORDS

    defaults = {"alpha": 1.05, "borrow": "paper", "split_axes": "channels", "replication": False,
                "use_fewer_machines": False, "balance": "layers"}
    plan = archsim.pipeline(sample_profile, processors=2, method=method,
                            **{name: defaults[name] for name in PIPELINE_KEYWORDS[method]})
    assert plan.method == method


# --- cost: energy_table without energy prices the areas, so it is taken, and the help says so ---------------------------
# The trial took archsim.cost(..., energy_table=T) without energy=True (and --energy-table without --energy) for a
# setting that changes nothing; it prices the meta's areas, which cost states with or without --energy. Failed before:
# --energy-table's help named no area, so nothing told a user why the flag is taken alone.

def test_energy_table_alone_prices_the_areas(tmp_path):
    """A table whose 1-byte MAC is 419 µm² larger: a 32 × 32 array's PE area grows by 1024 × 419 µm² (hand count),
    with energy left off; nothing else in the meta's areas moves."""
    from test_docs import ROOT

    text = (ROOT / "configs" / "energy" / "horowitz45.toml").read_text(encoding="utf-8")
    assert '"1" = { pj = 0.3, um2 = 419.0 }' in text
    table = tmp_path / "bigmac.toml"
    table.write_text(text.replace('"1" = { pj = 0.3, um2 = 419.0 }', '"1" = { pj = 0.3, um2 = 838.0 }'), encoding="utf-8")
    shipped = archsim.cost("ffnn8", array="32x32").meta
    bigger = archsim.cost("ffnn8", array="32x32", energy_table=table).meta
    assert bigger["pe_array_mm2"] - shipped["pe_array_mm2"] == pytest.approx(1024 * 419e-6, rel=1e-9)
    assert bigger["sram_mm2"] == shipped["sram_mm2"]


def test_energy_table_help_says_it_prices_the_areas(capsys):
    from archsim.cli import main

    with pytest.raises(SystemExit):
        main(["cost", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    flag = help_text[help_text.index("--energy-table NAME|FILE.toml per-access"):]
    flag = flag[:flag.index("--geometry")]
    assert "area" in flag and "without --energy" in flag


# --- archsim exports the types its jobs return --------------------------------------------------------------------------
# Failed before: archsim.TrainResult, archsim.SearchResult, archsim.CostResult, archsim.ScheduleResult, … raised
# AttributeError, so a notebook's `def report(run: archsim.TrainResult)` could not be written.

def _returned_type_names(annotation: str) -> set[str]:
    """The archsim class names a job's return annotation (a string: the modules use postponed annotations) spells,
    less the standard ones (Path) and pandas' (pd.DataFrame)."""
    import re

    return {name for name in re.findall(r"(?<![.\w])([A-Z]\w*)", annotation) if name != "Path"}


def test_every_jobs_return_type_is_exported():
    import inspect

    jobs = {name: getattr(archsim, name) for name in archsim.__all__ if name[0].islower() and name != "__version__"}
    returned: set[str] = set()
    for name, job in jobs.items():
        if inspect.isfunction(job):
            returned |= _returned_type_names(str(inspect.signature(job).return_annotation))
    assert {"TrainResult", "Throughput", "SearchResult", "CostResult", "ScheduleResult", "TableResult"} <= returned
    for name in sorted(returned):
        assert name in archsim.__all__ and name in dir(archsim), name
        assert inspect.isclass(getattr(archsim, name)) and getattr(archsim, name).__name__ == name


def test_a_jobs_result_is_an_instance_of_the_exported_type(sample_profile):
    plan = archsim.pipeline(sample_profile, processors=2)
    assert isinstance(sample_profile, archsim.LayerProfile) and isinstance(plan, archsim.Partition)
    assert isinstance(archsim.cost("ffnn8", array="32x32"), archsim.CostResult)
    assert isinstance(archsim.cost("ffnn8", array="32x32"), archsim.TableResult)


def test_import_archsim_loads_no_result_module():
    """The result types load on first use, as the jobs do: `import archsim` (and `archsim --help`) stays small."""
    import subprocess
    import sys

    code = ("import sys, archsim; print(sorted(m for m in sys.modules if m.startswith('archsim')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "['archsim', 'archsim.lazy']"


# --- a TransformerConfig built in Python keeps its learned position table's limit, as a config.json does ---------------
# Failed before: TransformerConfig(..., positions=1024) (position_limit left 0) trained at seq=2048 without a word,
# while `archsim train gpt2.json --seq 2048` refused: GPT-2's table has 1024 rows and no row past them.

def _gpt(**extra):
    from archsim.workload.transformer import TransformerConfig

    return TransformerConfig("tiny-gpt", "gpt", 2, 64, 4, 256, 1024, 256, 4, positions=1024, **extra)


def test_a_python_config_refuses_a_seq_past_its_positions_as_a_file_does():
    from test_docs import ROOT

    cluster = str(ROOT / "configs" / "clusters" / "a100_node.toml")
    with pytest.raises(InputError) as built:
        archsim.train(_gpt(), cluster=cluster, global_batch=8, seq=2048)
    with pytest.raises(InputError) as read:  # GPT-2's config.json: n_positions 1024, the same rule
        archsim.train(str(ROOT / "configs" / "transformers" / "gpt2.json"), cluster=cluster, global_batch=8, seq=2048)
    for caught in (built, read):
        assert caught.value.where.field == "seq" and "learns 1024 position embeddings" in str(caught.value)
        assert "at most 1024" in str(caught.value)


def test_a_stated_limit_and_a_toml_keep_their_rule():
    """position_limit given wins over positions (0: none, as a [transformer] TOML's stand-in table, which takes any
    seq); seq up to the table's rows runs."""
    from dataclasses import replace

    from test_docs import ROOT

    from archsim.workload.model_files import load_transformer

    assert _gpt().seq_limit == 1024 and replace(_gpt(), seq=1024).seq == 1024
    assert replace(_gpt(position_limit=0), seq=4096).seq == 4096
    with pytest.raises(InputError, match="learns 1024"):
        replace(_gpt(position_limit=0), position_limit=1024, seq=2048)
    toml = load_transformer(ROOT / "configs" / "transformers" / "gpt3_1.3b.toml")
    assert toml.positions == toml.seq and toml.seq_limit == 0
    assert replace(toml, seq=4 * toml.seq).seq == 4 * toml.seq


# --- run_sweep: a TOML document given as text is refused as text --------------------------------------------------------
# Failed before: archsim.run_sweep(toml_text) printed the whole TOML as a file name, then ": sweep spec not found".

SWEEP_TEXT = ('[sweep]\nname = "t"\nnetworks = ["ffnn8"]\narrays = ["32x32"]\nbatches = [16]\nprocessors = [2]\n'
              'methods = ["layerpipe"]\n')


@pytest.mark.parametrize("job", ["run_sweep", "sweep_cache"])
def test_sweep_spec_text_is_refused_as_text(tmp_path, job):
    with pytest.raises(InputError) as caught:
        getattr(archsim, job)(SWEEP_TEXT, out=tmp_path / "out")
    said = str(caught.value)
    assert caught.value.where.field == "spec" and "\n" not in said
    assert "expects a path to a sweep spec TOML, got text" in said and "not found" not in said
    assert 'name = "t"' not in said  # the document is not echoed as a file name
    assert not (tmp_path / "out").exists()


def test_write_report_spec_text_is_refused_as_text(tmp_path):
    with pytest.raises(InputError, match="expects a path to a sweep spec TOML, got text"):
        archsim.write_report(tmp_path, spec=SWEEP_TEXT)


def test_a_spec_path_still_runs(tmp_path):
    """A real path (this one holds '=' in its folder name) is a path, read as before."""
    folder = tmp_path / "a=b"
    folder.mkdir()
    spec = folder / "t.toml"
    spec.write_text(SWEEP_TEXT, encoding="utf-8")
    use = archsim.sweep_cache(str(spec), out=tmp_path / "out")
    assert use is not None
