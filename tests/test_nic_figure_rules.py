"""A server's NIC figure read by one rule wherever it is written (issues #38, #40).

* A device file's ``[links] inter_node_gbps`` stands in for a cluster file's ``inter_server_gbps`` where the cluster
  states none, but had no upper bound of its own: 10⁷ Gb/s was refused as the *cluster file's*
  ``inter_server_gbps`` (a key the user never wrote), and read silently where it stood in for nothing. Now the
  device file's own line and key refuse it, by the cluster reader's bound (:data:`archsim.cluster_keys.MAX_GBPS`).
* ``inter_server_gbps`` with ``inter_server_link = "shared"`` is one NIC for the whole server
  (:func:`archsim.network.read_network` builds ``Network(1, gbps, …)``, docs/formats.md: "with `shared` one NIC for
  the server"), but the NIC-speed warning judged it only with ``per_gpu_pair``. Now it is judged as the one NIC it is.

References: the cluster reader's own refusal of the same figure written as ``inter_server_gbps`` (the bound), and a
twin cluster stating the same NIC as a ``[network]`` table of one NIC per server (the warning).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from archsim.cli import main
from archsim.devices.device_file import load_device
from archsim.errors import InputError
from archsim.training.cluster_file import load_gpu_cluster
from tests.test_user_trial_cfg_chip import CFG

ROOT = Path(__file__).resolve().parents[1]
GPT2 = str(ROOT / "configs" / "transformers" / "gpt2.json")
TPU = ROOT / "configs" / "devices" / "tpu_v4_like.toml"  # states no [links] inter_node_gbps
PLAN = ["plan", "layerpipe_sample", "--microbatches", "4"]


def _chip(folder: Path, gbps: str, suffix: str = ".toml") -> Path:
    """The shipped TPU-v4-like device file (or the user-trial .cfg chip) with ``[links] inter_node_gbps = gbps``."""
    text = TPU.read_text(encoding="utf-8") if suffix == ".toml" else CFG
    path = folder / f"chip{suffix}"
    path.write_text(re.sub(r"(?m)^\[links\]$", f"[links]\ninter_node_gbps = {gbps}", text, count=1), encoding="utf-8")
    return path


def _servers(folder: Path, device: str, inter: str = "", count: int = 2) -> str:
    path = folder / "c.toml"
    path.write_text(f'[cluster]\nname = "chips"\n{inter}[[servers]]\ncount = {count}\ngpus = 4\n'
                    f'intra_server_gbps = 4800\ndevice = "{device}"\n', encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("suffix", [".toml", ".cfg"])
@pytest.mark.parametrize("gbps", ["1e7", "1e-7"])
def test_a_device_files_nic_outside_the_gbit_bound_is_refused_at_its_own_key(tmp_path, suffix, gbps):
    """Failed before the fix: load_device read 10⁷ and 10⁻⁷ Gb/s without a word. (A .cfg's value is shown as
    written, a TOML's as the number read.)"""
    path = _chip(tmp_path, gbps, suffix)
    with pytest.raises(InputError) as caught:
        load_device(path)
    line = path.read_text(encoding="utf-8").splitlines().index(f"inter_node_gbps = {gbps}") + 1
    shown = repr(float(gbps)) if suffix == ".toml" else gbps
    assert str(caught.value) == (f"{path}, line {line}, field 'links.inter_node_gbps': expected 0 (none) or a number "
                                 f"in [1e-06, 1e+06], got '{shown}'")


@pytest.mark.parametrize("gbps", ["0", "1e-6", "400", "1e6"])
def test_none_and_every_figure_the_cluster_reader_takes_are_read(tmp_path, gbps):
    """The bound is the cluster reader's: inter_server_gbps = 1e-6 and 1e6 are taken there, so here too."""
    assert load_device(_chip(tmp_path, gbps)).inter_node_gbps == float(gbps)


@pytest.mark.parametrize("argv", [["train", GPT2, "--tp", "4", "--dp", "2", "--global-batch", "8", "--seq", "128"],
                                  PLAN], ids=["train", "plan"])
def test_the_stand_in_names_the_device_file_not_the_cluster_files_key(tmp_path, capsys, argv):
    """Failed before the fix: "c.toml, field 'inter_server_gbps': expected a number in [1e-06, 1e+06] …", a key the
    cluster file does not state. The cluster reader refuses the same figure written there by the same bound."""
    _chip(tmp_path, "1e7")
    assert main([*argv, "--cluster", _servers(tmp_path, "chip.toml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "chip.toml, line 28, field 'links.inter_node_gbps'" in err, err
    assert "inter_server_gbps" not in err
    _chip(tmp_path, "0")  # the reference: the cluster file's own figure, 10⁷, refused by the bound 10⁶
    assert main([*argv, "--cluster", _servers(tmp_path, "chip.toml", "inter_server_gbps = 1e7\n")]) == 2
    assert "field 'inter_server_gbps': expected a number in [1e-06, 1e+06]" in capsys.readouterr().err


def test_one_server_refuses_it_too(tmp_path, capsys):
    """Failed before the fix: with one server the figure stands in for nothing, and 10⁷ ran without a word."""
    _chip(tmp_path, "1e7")
    cluster = _servers(tmp_path, "chip.toml", count=1)
    assert main(["train", GPT2, "--tp", "4", "--global-batch", "8", "--seq", "128", "--cluster", cluster]) == 2
    assert "field 'links.inter_node_gbps'" in capsys.readouterr().err


def _cluster(folder: Path, cluster: str) -> str:
    path = folder / "s.toml"
    path.write_text(f'[cluster]\n{cluster}\n[[servers]]\ncount = 2\ngpus = 8\ngpu = "h100-sxm"\n', encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(("gbps", "unit"), [(400000, "Mb/s"), (0.4, "Tb/s")])
@pytest.mark.parametrize("link", ['inter_server_link = "shared"\n', ""], ids=["shared", "default"])
def test_a_shared_nic_is_warned_as_the_one_nic_table_twin_is(tmp_path, gbps, unit, link):
    """Failed before the fix: no warning (only per_gpu_pair was judged). The reference: the same server written as a
    [network] table of one NIC, which read_network builds alike and which is warned under its own key."""
    shared = load_gpu_cluster(_cluster(tmp_path, f"inter_server_gbps = {gbps}\n{link}"))
    twin = load_gpu_cluster(_cluster(tmp_path, f"[network]\nnics_per_server = 1\nnic_gbps = {gbps}"))
    assert shared.network == twin.network
    (warning,) = twin.warnings
    assert warning.startswith(f"nic_gbps = {gbps:g} Gb/s per NIC") and f"in {unit}" in warning
    assert shared.warnings[0].startswith(warning.replace("nic_gbps", "inter_server_gbps"))


def test_a_shared_figure_above_every_nic_also_names_the_network_table(tmp_path, capsys):
    """6400 Gb/s shared may be 8 × 800 Gb/s summed; read as one NIC a lone send gets all 6400, so the warning names
    the [network] table as the other fix. plan writes the same line as train."""
    cluster = _cluster(tmp_path, "inter_server_gbps = 6400\n")
    (warning,) = load_gpu_cluster(cluster).warnings
    assert warning == ("inter_server_gbps = 6400 Gb/s per NIC is above any NIC sold (≤ 3200 Gb/s): if it is in Mb/s, "
                       "write inter_server_gbps = 6.4; if it is the server's NICs together, give a [network] table "
                       "(nics_per_server, nic_gbps)")
    assert main([*PLAN, "--cluster", cluster]) == 0
    assert f"archsim plan: warning: {warning}\n" in capsys.readouterr().err


@pytest.mark.parametrize("gbps", [1, 50, 400, 3200])
def test_a_shared_nic_some_nic_has_offered_is_read_without_a_warning(tmp_path, gbps):
    assert load_gpu_cluster(_cluster(tmp_path, f"inter_server_gbps = {gbps}\n")).warnings == ()
