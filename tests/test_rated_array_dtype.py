"""An :class:`ArrayConfig` read from a device file that states MACs per PE per cycle (a ``.cfg``'s ``[macs_per_pe]``,
a TOML's ``[compute] macs_per_pe``) carries the dtype its rate is of (``mac_dtype``), and is refused in one line
where it is costed at another dtype, naming what to give instead: the file as ``config=`` with that dtype, which
reads that dtype's rate. Before, ``archsim.array_config(config=f, dtype="fp16")`` costed as ``bf16`` (the same
width) kept fp16's rate silently, an array built at ``bf16`` (rate 1) costed as fp16 ran at 1 where ``f`` states 2,
and ``archsim.schedule`` re-made such an array at another width with its rate kept. A rate given by hand names its
dtype as ``mac_dtype`` to be costed at one.

Reference: SCALE-Sim's os cycles of (m, ⌈k / r⌉, n) on the files' 8 × 8 array by hand
(tests/test_schedule_mac_rate.py's ``_os``): fc1 (40 → 8) at batch 16, 107 cycles at rate 1, 67 at rate 2."""

from __future__ import annotations

import warnings

import pytest
from test_cfg_mac_rates import CFG, TOML
from test_schedule_mac_rate import NETWORK, _os

import archsim
from archsim.array.config import ArrayConfig
from archsim.errors import InputError

CLUSTER = '[cluster]\nname = "one"\n\n[[servers]]\ncount = 1\ngpus = 1\nintra_server_gbps = 100\n'


@pytest.fixture
def files(tmp_path) -> dict[str, str]:
    (tmp_path / "net.csv").write_text(NETWORK)
    (tmp_path / "rated.cfg").write_text(CFG.format(rates="[macs_per_pe]\nfp16 = 2\n", device=""))
    (tmp_path / "plain.cfg").write_text(CFG.format(rates="", device=""))
    (tmp_path / "chip.toml").write_text(TOML.format(rates="macs_per_pe = { fp16 = 2 }\n"))
    (tmp_path / "one.toml").write_text(CLUSTER)
    return {path.name: str(path) for path in tmp_path.iterdir()}


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


def _f_cycles(files, array, **keywords) -> int:
    """fc1's forward cycles as ``archsim.cost`` prices them on ``array``."""
    return int(_quiet(archsim.cost, files["net.csv"], array=array, batch=16, **keywords).table["F_cycles"].iloc[0])


# every API job that takes an ArrayConfig and a dtype: each costs the array at that dtype
JOBS = {
    "cost": lambda f, a, d: archsim.cost(f["net.csv"], array=a, batch=16, dtype=d),
    "profile": lambda f, a, d: archsim.profile(f["net.csv"], array=a, batch=16, dtype=d),
    "iteration_energy": lambda f, a, d: archsim.iteration_energy(f["net.csv"], array=a, batch=16, dtype=d),
    "schedule": lambda f, a, d: archsim.schedule(f["net.csv"], policy="mp", processors=1, batch=16, array=a, dtype=d),
    "plan": lambda f, a, d: archsim.plan(f["net.csv"], cluster=f["one.toml"], microbatches=2, array=a, dtype=d),
    "bppsa_rnn": lambda f, a, d: archsim.bppsa_rnn(array=a, dtype=d),
}


@pytest.mark.parametrize("job", JOBS)
@pytest.mark.parametrize(("built", "costed"), [("fp16", "bf16"), ("bf16", "fp16"), ("fp16", "fp32")])
def test_an_array_read_at_one_dtype_is_refused_at_another(files, job, built, costed):
    """fp16's rate 2 kept at bf16 (the same width), bf16's rate 1 kept at fp16 (whose rate is 2), and fp16's kept
    at fp32 (another width): each refused in one line naming config= and the dtype asked for."""
    array = _quiet(archsim.array_config, config=files["rated.cfg"], dtype=built)
    assert array.mac_dtype == built
    with pytest.raises(InputError, match=f"rate of {built} .*, not of {costed}") as refused:
        _quiet(JOBS[job], files, array, costed)
    said = str(refused.value)
    assert "\n" not in said and "config=" in said and f"dtype={costed!r}" in said


@pytest.mark.parametrize("job", JOBS)
def test_every_job_takes_the_array_at_its_own_dtype_or_none(files, job):
    array = _quiet(archsim.array_config, config=files["rated.cfg"], dtype="fp16")
    for dtype in ("fp16", None):
        assert _quiet(JOBS[job], files, array, dtype) is not None


def test_the_dtype_the_rate_is_of_costs_as_the_file_does(files):
    """At its own dtype (or none given) the array costs as config= at that dtype: the hand count, 67 at rate 2."""
    for dtype, rate in (("fp16", 2), ("bf16", 1)):
        array = _quiet(archsim.array_config, config=files["rated.cfg"], dtype=dtype)
        named = _f_cycles(files, None, config=files["rated.cfg"], dtype=dtype)
        assert _f_cycles(files, array, dtype=dtype) == _f_cycles(files, array) == named == _os(16, 40, 8, rate)


def test_an_array_read_without_a_dtype_is_int8_s(files):
    """array_config(config=f) is SCALE-Sim's int8 word at one MAC: costed as fp16, whose rate f states as 2, it is
    refused, not run at 1."""
    array = _quiet(archsim.array_config, config=files["rated.cfg"])
    assert (array.mac_dtype, array.mac_rate) == ("int8", 1)
    assert _f_cycles(files, array, dtype="int8") == _os(16, 40, 8, 1)  # 107
    with pytest.raises(InputError, match="rate of int8 .*, not of fp16"):
        _f_cycles(files, array, dtype="fp16")


def test_a_device_toml_s_array_carries_its_dtype_alike(files):
    array = _quiet(archsim.array_config, config=files["chip.toml"], dtype="fp16")
    assert (array.mac_dtype, array.mac_rate) == ("fp16", 2)
    with pytest.raises(InputError, match="rate of fp16 .*, not of bf16"):
        _f_cycles(files, array, dtype="bf16")


def test_a_file_stating_no_rate_gives_an_array_of_every_dtype(files):
    """A plain .cfg states one MAC per PE per cycle for every dtype: its array is re-costed at any, as before."""
    array = _quiet(archsim.array_config, config=files["plain.cfg"], dtype="fp16")
    assert array.mac_dtype is None
    assert _f_cycles(files, array, dtype="bf16") == _f_cycles(files, array, dtype="fp32") == _os(16, 40, 8, 1)


def test_a_rate_given_by_hand_names_its_dtype(files):
    """ArrayConfig(mac_rate=2) names no dtype: costed at one it is refused, pointing at mac_dtype; with mac_dtype it
    costs at that dtype (the hand count) and is refused at another."""
    bare = ArrayConfig(rows=8, cols=8, dataflow="os", element_bytes=2, mac_rate=2)
    with pytest.raises(InputError, match="mac_dtype") as refused:
        _f_cycles(files, bare, dtype="bf16")
    assert "\n" not in str(refused.value)
    assert _f_cycles(files, bare) == _os(16, 40, 8, 2)  # no dtype: its own rate and width, as before
    named = ArrayConfig(rows=8, cols=8, dataflow="os", element_bytes=2, mac_rate=2, mac_dtype="bf16")
    assert _f_cycles(files, named, dtype="bf16") == _os(16, 40, 8, 2)
    with pytest.raises(InputError, match="rate of bf16 .*, not of fp16"):
        _f_cycles(files, named, dtype="fp16")


@pytest.mark.parametrize(("fields", "says"), [
    ({"mac_dtype": "fp32", "element_bytes": 2}, "fp32 is 4-byte elements"),
    ({"mac_dtype": "int4"}, "expected one of"),
])
def test_a_mac_dtype_is_a_dtype_of_the_array_s_width(fields, says):
    with pytest.raises(InputError, match=says) as refused:
        ArrayConfig(**fields)
    assert "\n" not in str(refused.value) and refused.value.where.field == "mac_dtype"
