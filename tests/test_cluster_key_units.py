"""A cluster file's unknown key told the key meant: a rate written in GB/s under a bytes name (``nic_gbs = 50``) is told
the Gbit/s key with the figure to write, 8× it (before, "did you mean 'nic_gbps'?" alone led to ``nic_gbps = 50``, a
real NIC speed run 8× slow with no warning), and other tools' names for a [network] key (rails, leaf size, tiers,
blocking factor) or for [[servers]]' GPU count under [network] are told theirs, not the nearest spelling."""

import pytest

from archsim.errors import InputError
from archsim.training.cluster_file import load_gpu_cluster

SERVERS = '[[servers]]\ncount = 2\ngpus = 8\ngpu = "h100"\n'


def _refusal(tmp_path, text):
    path = tmp_path / "c.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_gpu_cluster(path)
    return str(err.value)


@pytest.mark.parametrize("line, told", [
    ("nic_gbs = 50", "(did you mean 'nic_gbps'? it takes Gbit/s: 50 GB/s is nic_gbps = 400)"),  # 8 bits a byte
    ("nic_GBps = 25", "(did you mean 'nic_gbps'? it takes Gbit/s: 25 GB/s is nic_gbps = 200)"),
    ("rails = 8", "(did you mean 'nics_per_server'?)"),
    ("leaf_size = 4", "(did you mean 'servers_per_leaf'?)"),
    ("tiers = 2", "(did you mean 'switch_tiers'?)"),
    ("blocking_factor = 2", "(did you mean 'oversubscription'?)"),
    ("gpus_per_server = 8", "(did you mean 'gpus' of [[servers]]?)"),  # was told 'nics_per_server'
    ("inter_server_gbs = 50", ("(did you mean 'inter_server_gbps' of [cluster]? it takes Gbit/s: 50 GB/s is "
                               "inter_server_gbps = 400)")),
])
def test_network_keys(tmp_path, line, told):
    err = _refusal(tmp_path, f"[cluster]\n[network]\nnics_per_server = 8\nnic_gbps = 400\n{line}\n{SERVERS}")
    assert told in err and "\n" not in err


def test_cluster_and_server_rates_in_gbytes(tmp_path):
    err = _refusal(tmp_path, f"[cluster]\ninter_server_gbs = 12.5\n{SERVERS}")
    assert "(did you mean 'inter_server_gbps'? it takes Gbit/s: 12.5 GB/s is inter_server_gbps = 100)" in err
    err = _refusal(tmp_path, f"[cluster]\ninter_server_gbps = 100\n{SERVERS}intra_server_gbs = 900\n")
    # both directions together in Gbit/s: 900 GB/s both ways × 8, or 900 a direction × 16
    assert ("(did you mean 'intra_server_gbps'? it takes Gbit/s both directions together: 900 GB/s both ways is "
            "intra_server_gbps = 7200, 900 GB/s a direction 14400)") in err


def test_near_spellings_keep_their_hint(tmp_path):
    """A slip of the key itself (not another unit or tool) is told its nearest key, as before."""
    assert "(did you mean 'nic_gbps'?)" in _refusal(
        tmp_path, f"[cluster]\n[network]\nnics_per_server = 8\nnic_gpbs = 400\n{SERVERS}")
    assert "(did you mean 'gpus'?)" in _refusal(tmp_path, f"[cluster]\ninter_server_gbps = 100\n{SERVERS}"
                                                          "num_gpus = 8\n")
