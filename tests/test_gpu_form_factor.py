"""A GPU name stating a form factor (PCIe, SXM) names a part of that form factor or is refused in one line naming
the catalog's parts of that GPU; and train's ``gpu =`` and validate-gpu's names share one whole-name rule
(:func:`archsim.devices.gpu_lookup.read_whole`).

Failed before the fix: ``gpu = "a100-pcie"`` and "A100 PCIe 80GB" ran on the A100 SXM4 80GB module (the ``a100``
pattern), "v100-sxm3" on the V100 SXM2, "h100 sxm4" on the H100 SXM5; and the two whole-name checks read different
words (``gpu("a100 titan")`` was refused, ``find_whole_gpu("a100 titan")`` read an A100)."""

from __future__ import annotations

import pytest
from test_robustness import clean_error, write

from archsim.devices.catalog import KNOWN_GPUS
from archsim.devices.gpu_lookup import find_whole_gpu, gpu
from archsim.devices.gpu_names import form_factor_of
from archsim.errors import InputError

# the SXM modules of the catalog, from their datasheets (V100 SXM2, A100 SXM4, H100 SXM5, H200 SXM); every other
# part is a PCIe card (T4, L4, P4, the GTX and Titan cards, M40, the AMD boards)
SXM = {"v100": "sxm2", "v100-16gb": "sxm2", "a100-40gb": "sxm4", "a100-80gb": "sxm4", "h100-sxm": "sxm5", "h200": "sxm"}


def test_each_part_has_its_datasheet_form_factor():
    assert {slug: form_factor_of(spec.name) for slug, spec in KNOWN_GPUS.items()} == \
        {slug: SXM.get(slug, "pcie") for slug in KNOWN_GPUS}


@pytest.mark.parametrize(("name", "board"), [
    ("A100 PCIe 80GB", "NVIDIA A100 80GB PCIe"), ("a100 pcie 40gb", "NVIDIA A100 40GB PCIe"),
    ("NVIDIA A100-PCIE-40GB", "NVIDIA A100 40GB PCIe"), ("NVIDIA A100 80GB PCIe", "NVIDIA A100 80GB PCIe"),
    ("a100-sxm4", "NVIDIA A100 SXM4 80GB"), ("NVIDIA A100-SXM4-40GB", "NVIDIA A100 SXM4 40GB"),
    ("Tesla V100-PCIE-32GB", "NVIDIA V100 PCIe 32GB"), ("v100-sxm2", "NVIDIA V100 SXM2 32GB"),
    ("h100-pcie", "NVIDIA H100 PCIe"), ("NVIDIA H100 SXM5 80GB", "NVIDIA H100 SXM5 80GB"),
    ("h200 sxm5", "NVIDIA H200 SXM 141GB"), ("t4-pcie", "NVIDIA T4")])
def test_a_stated_form_factor_names_a_part_of_it(name, board):
    assert gpu(name).name == board


@pytest.mark.parametrize(("name", "parts"), [
    ("a100-pcie", "a100-40gb (SXM4), a100-40gb-pcie (PCIe), a100-80gb-pcie (PCIe), a100-80gb (SXM4)"),  # two PCIe
    ("v100-sxm3", "v100-32gb (SXM2), v100-16gb (SXM2), v100-pcie-32gb (PCIe)"),  # DGX-2's module: none
    ("h100 sxm4", "h100-80gb-sxm (SXM5), h100-80gb-pcie (PCIe)"), ("t4 sxm2", "t4-16gb (PCIe)")])
def test_a_form_factor_no_one_part_has_is_refused_naming_the_parts(name, parts):
    with pytest.raises(InputError) as caught:
        gpu(name)
    text = str(caught.value)
    assert "\n" not in text and text.endswith(f"parts are {parts}; name one") and repr(name) in text
    with pytest.raises(InputError):
        find_whole_gpu(name)  # validate-gpu reads the same rule


def test_validate_gpus_names_read_the_stated_form_factor():
    assert find_whole_gpu("A100 PCIe 80GB") == "a100-80gb-pcie"
    assert find_whole_gpu("NVIDIA A100-PCIE-40GB") == "a100-40gb-pcie"


@pytest.mark.parametrize(("name", "whole"), [
    ("a1000", False), ("RTX A1000", False), ("V100S", False), ("a100-40", False), ("h100x", False),  # a word in no name
    ("a100 titan", True), ("NVIDIA A100-SXM4-40GB", True), ("a100 80gb", True), ("Tesla V100-PCIE-32GB", True)])
def test_train_and_validate_gpu_share_one_whole_name_rule(name, whole):
    """A board's name is whole for train exactly where it is for validate-gpu: refused by both where a word of it is
    in no GPU name (a1000, rtx, v100s, a bare 40, h100x; "titan" is a catalog GPU's word: the Titan Xp's)."""
    try:
        gpu(name)
        refused = False
    except InputError as exc:
        assert "is in no catalog GPU's name" in str(exc), exc
        refused = True
    assert refused == (not whole) == (find_whole_gpu(name) is None)


def test_a_cluster_file_naming_a_pcie_a100_is_refused_in_one_line(tmp_path, capsys):
    from tiny_search import GPT

    model = write(tmp_path / "gpt.toml", GPT)
    cluster = write(tmp_path / "c.toml", '[cluster]\n[[servers]]\ngpus = 4\ngpu = "a100-pcie"\n')
    line = clean_error(capsys, "train", str(model), "--cluster", str(cluster), "--global-batch", "8")
    assert "field 'servers[1].gpu'" in line and "a100-40gb-pcie (PCIe), a100-80gb-pcie (PCIe)" in line, line
