"""``archsim.schedule`` on a :class:`LayerProfile` applies the op limit a network's run (and the command) applies,
through the one check both runs go through, with the same refusal.

Failed before the fix: on a profile ``max_ops`` was refused as a keyword that would cost a network ("a profile
carries its costs"), and no limit at all was applied, so a job of millions of ops was built and simulated."""

import pytest

import archsim
from archsim.cli import main
from archsim.errors import InputError

# ffnn8 (8 fc layers, exact mode: the first layer's δ is not computed) under gpipe over 4 micro-batches:
# per micro-batch F and G of 8 layers and 7 δs, plus the flush barrier: 4 · (16 + 7) + 1 = 93 ops, by hand
OPS = 93
SETTINGS = {"policy": "gpipe", "processors": 2, "microbatches": 4}


def _refusal(network, **extra) -> InputError:
    with pytest.raises(InputError) as caught:
        archsim.schedule(network, **(SETTINGS | extra))
    return caught.value


def test_a_profile_run_is_refused_above_max_ops_as_a_networks_is():
    profile = archsim.profile("ffnn8")
    on_profile, on_network = _refusal(profile, max_ops=OPS - 1), _refusal("ffnn8", max_ops=OPS - 1)
    assert on_profile.message.endswith(f"above the limit of {OPS - 1}; give max_ops={OPS} to run it anyway")
    assert (str(on_profile), on_profile.where.field) == (str(on_network), on_network.where.field)
    assert archsim.schedule(profile, **SETTINGS, max_ops=OPS).makespan > 0  # the limit itself runs


def test_the_command_refuses_the_same_job_naming_its_flag(capsys):
    assert main(["schedule", "ffnn8", "--policy", "gpipe", "--processors", "2", "--microbatches", "4",
                 "--max-ops", str(OPS - 1)]) == 2
    err = capsys.readouterr().err
    assert err.endswith(f"above the limit of {OPS - 1}; give --max-ops {OPS} to run it anyway\n")
    said = err.removeprefix("archsim schedule: error: ").strip()  # the flag spelled as the keyword: the same line
    assert said.replace("--max-ops ", "max_ops=").replace("argument --max-ops", "field 'max_ops'") == \
        str(_refusal(archsim.profile("ffnn8"), max_ops=OPS - 1))


def test_a_profile_run_takes_the_default_limit():
    """Without max_ops the default 10⁶: 50,000 micro-batches are 50,000 · 23 + 1 ops, refused before any work."""
    said = _refusal(archsim.profile("ffnn8"), microbatches=50_000)
    assert "above the limit of 1,000,000" in said.message and "give max_ops=1150001" in said.message


def test_max_ops_on_a_profile_is_checked_as_on_a_network():
    said, on_network = _refusal(archsim.profile("ffnn8"), max_ops=0), _refusal("ffnn8", max_ops=0)
    assert (str(said), said.where.field) == (str(on_network), on_network.where.field)
