"""A notebook author's trial of the library (2026-12-05): what a user importing archsim met, each test failing before
its fix."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

import archsim
from archsim.errors import InputError

ROOT = Path(__file__).resolve().parents[1]


# --- the package tells a type checker it is typed (PEP 561) ----------------------------------------------------------
# Failed before: no archsim/py.typed, so mypy on a notebook's script skipped an installed archsim ("module is
# installed, but missing library stubs or py.typed marker") and every archsim.train(...) result was Any, where
# docs/api.md says a type checker sees a (TrainResult, Throughput) pair.


def test_the_py_typed_marker_is_in_the_package_and_in_its_data():
    assert (ROOT / "archsim" / "py.typed").is_file()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]
    assert "py.typed" in data.get("archsim", []), "a wheel ships only the package data pyproject.toml lists"


# --- the model train takes, built in Python, is exported as the networks cost takes are ------------------------------
# Failed before: archsim.TransformerConfig was an AttributeError; a notebook building its own model for
# archsim.train had to find archsim.workload.transformer, where archsim.Network and archsim.Layer are exported.


def test_transformer_config_is_exported_and_trains():
    from archsim.workload.transformer import TransformerConfig

    assert archsim.TransformerConfig is TransformerConfig
    assert "TransformerConfig" in archsim.__all__ and "TransformerConfig" in dir(archsim)
    tiny = archsim.TransformerConfig("tiny", "gpt", layers=2, hidden=64, heads=4, vocab=256, seq=128, ffn=256,
                                     kv_heads=4)
    result, _ = archsim.train(tiny, cluster=ROOT / "configs" / "clusters" / "h100_1gpu.toml", global_batch=2)
    # 2 layers on one rank, no position table (positions=0: rotary): the tied embedding 256 × 64, per layer QKV
    # 64 × 192 + 192, projection 64 × 64 + 64, the FFN 64 × 256 + 256 and 256 × 64 + 64, two layer norms 2 × 128,
    # and the final norm 128. StageMemory.parameters is that count (its states and activations are bytes)
    per_layer = 64 * 192 + 192 + 64 * 64 + 64 + 64 * 256 + 256 + 256 * 64 + 64 + 2 * 128
    assert result.memory[0].parameters == 256 * 64 + 2 * per_layer + 128


def test_transformer_config_refuses_a_bad_field_by_name():
    with pytest.raises(InputError, match="field 'kv_heads'"):
        archsim.TransformerConfig("bad", "gpt", layers=2, hidden=64, heads=4, vocab=256, seq=128, ffn=256, kv_heads=3)


# --- a schedule's row and meta are copies, as a table result's meta is -----------------------------------------------
# Failed before: ScheduleResult is frozen, yet result.row["makespan"] = 0 changed what to_dict(), to_frame() and the
# repr said, where a TableResult's meta (cost, plan, sweeps) is a copy and its document stays what the run printed.


def test_a_schedules_row_and_meta_are_copies_its_document_keeps():
    import copy
    import pickle

    result = archsim.schedule(stages=4, stage_times="1,1,1", microbatches=8, policy="1f1b")
    result.row["makespan"] = 0
    result.meta["comm"] = "99"
    # the zero-bubble paper's 1F1B on p = 4 stages of F = B = W = 1, m = 8: 3m + (p - 1)(F + B + W) = 24 + 9 = 33
    assert result.row["makespan"] == 33 == result.to_dict()["rows"][0]["makespan"] == result.to_frame()["makespan"][0]
    assert result.meta["comm"] == "0.0" == result.to_dict()["meta"]["comm"]  # no comm= given: hops take no time
    assert "makespan=33" in repr(result) and result.makespan == 33  # the timeline's, answered on the result
    for again in (pickle.loads(pickle.dumps(result)), copy.deepcopy(result)):
        assert again.row == result.row and again.meta == result.meta


# --- a profile's arrays are read-only, as the frozen profile they belong to ------------------------------------------
# Failed before: profile.forward[0] *= 50 was allowed, and the planners, which keep what they derive from a profile by
# its identity (archsim.partition.memo), planned on the stale costs: PipeDream's plan of the changed profile was the
# unchanged one's, LayerPipe's a mixture of both, with no word.

ARRAYS = ("forward", "weight_grad", "delta", "activation_bytes", "delta_bytes", "weight_bytes", "stash_bytes")


def test_a_profiles_arrays_cannot_be_changed_in_place():
    import copy
    import pickle

    profile = archsim.profile("layerpipe_sample", array="32x32", batch=8)
    archsim.pipeline(profile, processors=2, method="pipedream")  # what it derives is kept by the profile's identity
    for one in (profile, copy.deepcopy(profile), pickle.loads(pickle.dumps(profile))):
        for name in ARRAYS:
            with pytest.raises(ValueError, match="read-only"):
                getattr(one, name)[0] += 1


def test_a_profile_from_given_costs_leaves_the_callers_arrays_writeable():
    import numpy as np

    from archsim.partition.profile import profile_from_costs

    forward = np.array([4.0, 2.0, 3.0])
    profile = profile_from_costs(["a", "b", "c"], forward, forward, forward)
    forward[0] = 1.0  # the caller's own array: still theirs to change, and no longer the profile's costs
    assert not profile.forward.flags.writeable and forward.flags.writeable
    assert profile.forward.tolist() == [4.0, 2.0, 3.0] and profile.total.tolist() == [12.0, 6.0, 9.0]


# --- only= (--only) takes layer kinds and says so ---------------------------------------------------------------------
# Failed before: only="conv,conv2" (a layer's name beside a kind) dropped conv2 without a word and costed the convs;
# only="linear", the fc type's spelling a topology CSV takes, was "no layers of kind linear"; neither named only.


def test_only_refuses_a_word_that_is_no_layer_kind_and_reads_a_kinds_spelling():
    with pytest.raises(InputError, match=r"'conv2': not a layer kind; kinds are conv, fc, .*not by name") as refused:
        archsim.cost("vgg16", only="conv,conv2")
    assert refused.value.where.field == "only"
    assert archsim.cost("vgg16", only="linear")["layer"].tolist() == ["fc6", "fc7", "fc8"]  # layers/vgg16.csv's fc
    with pytest.raises(InputError, match="no layers of kind deconv; its kinds: conv, elementwise, pool, fc"):
        archsim.cost("vgg16", only="deconv")
