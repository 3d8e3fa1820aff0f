"""One chip stated twice — a SCALE-Sim ``.cfg`` device file and a device TOML — for the tests that check the two forms
price one chip alike (``train``: test_device_toml_energy.py; ``energy``: test_energy_device_toml.py), and the
chip of user trial 37 (test_user_trial37.py): 8 output-stationary 64 × 64 arrays (4 per core) at 1.2 GHz, SRAMs
512/512/256 KiB, 32 GiB of HBM at 1,200 GB/s. Templates: ``{energy}`` is the ``[energy]`` section's body
(:func:`energy_body`; empty: the default table, as with no section); the TOML's ``{lanes}`` its lane lines.
Beside it, a one-server cluster of the chip and a one-layer GPT whose MACs are counted by hand (:func:`hand_macs`)."""

import json

from archsim.cli import main

_CFG = """[architecture_presets]
ArrayHeight:    64
ArrayWidth:     64
IfmapSramSzkB:    512
FilterSramSzkB:   512
OfmapSramSzkB:    256
IfmapOffset:    0
FilterOffset:   10000000
OfmapOffset:    20000000
Dataflow : os

[archsim]
ClockGHz = 1.2

[device]
name = chip
arrays = 8
arrays_per_core = 4
{device}
[memory]
hbm_gib = 32
hbm_gbps = 1200

[links]
intra_gbps = 100

[energy]
{energy}"""

_TOML = """[device]
name = "chip"
{device}
[compute]
arrays = 8
arrays_per_core = 4
rows = 64
cols = 64
dataflow = "os"
clock_mhz = 1200
{lanes}
[memory]
sram_kib_per_array = [512, 512, 256]
hbm_gib = 32
hbm_gbps = 1200

[links]
intra_gbps = 100

[energy]
{energy}"""

# every [energy] figure but mac_pj: set to 0, a total is MACs × mac_pj
ENERGY_ZEROS = ("vector_pj", "register_pj", "psum_register_pj", "ifmap_read_pj", "filter_read_pj", "ofmap_read_pj", "ifmap_write_pj",
                "filter_write_pj", "ofmap_write_pj", "dram_read_pj", "dram_write_pj", "lane_pj", "exp_pj", "int_pj",
                "int_mult_pj")


def chip_cfg(static_watts: float | None = None) -> str:
    """The ``.cfg`` template (``{energy}`` left to fill), with the chip's static power when given."""
    return _CFG.replace("{device}", "" if static_watts is None else f"static_watts = {static_watts:g}\n")


def chip_toml(static_watts: float | None = None) -> str:
    """The TOML template (``{energy}`` and ``{lanes}`` left to fill), with the chip's static power when given."""
    return _TOML.replace("{device}", "" if static_watts is None else f"static_watts = {static_watts:g}\n")


def energy_body(lines: dict[str, object], toml: bool) -> str:
    """An ``[energy]`` section's body in either form: a .cfg's ``key = text``, a TOML's typed values."""
    return "".join(f"{key} = {json.dumps(value) if toml else value}\n" for key, value in lines.items())


# a one-server cluster of one chip, the device file named by ``{device}``
CLUSTER = """[cluster]
name = "chip"

[[servers]]
gpus = 1
device = "{device}"
"""

# a one-layer GPT small enough to count its MACs by hand
TINY = """[transformer]
family = "gpt"
layers = 1
hidden = 64
heads = 1
vocab = 128
seq = 16
"""


def hand_macs() -> int:
    """One iteration's MACs of TINY at micro-batch 1, no recompute, standard attention (s = 16 tokens, h = 64,
    V = 128, the MLP 4h wide): forward QKV s·h·3h, scores and context s·s·h each, projection s·h·h, MLP
    2 · s·h·4h, LM head s·h·V; backward twice the forward (each GEMM's two gradients)."""
    s, h, v = 16, 64, 128
    return 3 * (s * h * 3 * h + 2 * s * s * h + s * h * h + 2 * s * h * 4 * h + s * h * v)


def train_meta(tmp_path, capsys, name: str, text: str) -> dict:
    """``archsim train`` of TINY (one GPU, micro-batch 1, no recompute, standard attention) on a cluster of the
    device file ``name`` holding ``text``, written into ``tmp_path``: the JSON output's meta."""
    (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / f"{name}.cluster.toml").write_text(CLUSTER.format(device=name), encoding="utf-8")
    (tmp_path / "tiny.toml").write_text(TINY, encoding="utf-8")
    code = main(["train", str(tmp_path / "tiny.toml"), "--cluster", str(tmp_path / f"{name}.cluster.toml"), "--tp",
                 "1", "--pp", "1", "--dp", "1", "--global-batch", "1", "--micro-batch", "1", "--recompute", "none",
                 "--attention", "standard", "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)["meta"]
