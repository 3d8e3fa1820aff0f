"""An array sweep on the cycle engine of a device ``.cfg`` stating ``[memory] hbm_gbps`` (and no SCALE-Sim
``Bandwidth``) runs at that rate, as ``archsim cost --config FILE --engine cycle`` does: hbm_gbps ÷ (element bytes ×
GHz) words/cycle per operand buffer, a half up, in each design's element size; a spec's ``bandwidths`` wins. And an
``archsim.array_config`` made on such a file at one dtype reads the file's GB/s in the words of another, when re-made
at that width. Each figure is checked against ``archsim.cost`` run with the hand-computed words given as ``bandwidth``
(the plain flag's path, which reads no device rate). Failed before: the sweep ran at SCALE-Sim's default 10
words/cycle; the config kept the first width's words."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest
from device_files import scalesim_chip_cfg

import archsim
from archsim.cli import main

# one 16 × 16 array with 4 KiB SRAMs (memory-bound on the layer below) at 0.8 GHz with 4 GB/s of HBM: by hand
# 4 ÷ (1 B × 0.8 GHz) = 5 words/cycle of 1-byte words, 4 ÷ (2 B × 0.8 GHz) = 2.5 → 3 of 2-byte words (a half up)
SLOW = scalesim_chip_cfg(1, 0.8, 4, "slow", "slow", size=16, sram_kb=(4, 4, 4))
HAND_WORDS = {1: 5, 2: 3}
LAYER = ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
         "fc1, 1, 1, 1, 1, 128, 64, 1,\n")


def _sweep(folder, extra: str = "") -> pd.DataFrame:
    """The cycle-engine sweep of the slow chip's .cfg over the one layer at batch 4 on one processor, run by the
    CLI into ``folder/res``; its results."""
    (folder / "slow.cfg").write_text(SLOW)
    (folder / "fc.csv").write_text(LAYER)
    spec = folder / "spec.toml"
    spec.write_text('[sweep]\nname = "rate"\nnetworks = ["fc.csv"]\narrays = ["slow.cfg"]\nbatches = [4]\n'
                    f'processors = [1]\nmethods = ["gpipe"]\nengine = "cycle"\n{extra}')
    assert main(["sweep", str(spec), "--out", str(folder / "res"), "--quiet"]) == 0
    return pd.read_csv(folder / "res" / "results.csv")


def _cost(folder, words: int, width: int) -> float:
    """One iteration's cycles (F + G + δ with the memory stalls) ``archsim cost`` gives the layer on the file at
    ``words`` DRAM words/cycle given as such, in ``width``-byte words."""
    table = archsim.cost(str(folder / "fc.csv"), config=str(folder / "slow.cfg"), engine="cycle", batch=4,
                         bandwidth=words, element_bytes=width)
    return float(table["total_cycles"].sum())


def test_a_design_sweep_runs_the_files_rate_in_each_width(tmp_path, capsys):
    rows = _sweep(tmp_path, "element_bytes = [1, 2]\n").set_index("element_bytes")
    assert rows["bandwidth_words_per_cycle"].to_dict() == HAND_WORDS
    for width, words in HAND_WORDS.items():
        assert rows.at[width, "single_processor_cycles"] == _cost(tmp_path, words, width)
        assert _cost(tmp_path, words, width) != _cost(tmp_path, 10, width)  # the default rate would differ
    err = capsys.readouterr().err
    assert ("slow.cfg: the cycle engine ran at 5 words/cycle per operand buffer in 1-byte words (4 GB/s) and 3 in "
            "2-byte words (4.8 GB/s), [memory] hbm_gbps = 4 GB/s at the file's 0.8 GHz") in err
    assert "does not" not in err  # the note that it ran at SCALE-Sim's default is gone with it
    from archsim.sweep.report import spec_record

    record = spec_record(tmp_path / "res")
    assert record["arrays"][0]["array"]["bandwidth"] == [5]  # the file's rate, recorded in its own 1-byte words
    assert record["arrays"][0]["array"]["dram_rate"] == [4.0, 0.8]


def test_the_reports_commands_name_the_rate_each_row_ran_at(tmp_path):
    from archsim.sweep.report import spec_record, sweep_array

    rows = _sweep(tmp_path, "element_bytes = [1, 2]\n")
    record = spec_record(tmp_path / "res")
    for _, row in rows.iterrows():
        array, engine, flags = sweep_array(record, row)
        words = HAND_WORDS[int(row.element_bytes)]
        assert (engine, flags, array.bandwidth) == ("cycle", f" --engine cycle --bandwidth {words}", (words,))


def test_a_plain_sweep_runs_the_files_rate(tmp_path):
    from archsim.sweep.report import spec_record, sweep_array

    rows = _sweep(tmp_path)
    assert rows["single_processor_cycles"].tolist() == [_cost(tmp_path, 5, 1)]
    assert sweep_array(spec_record(tmp_path / "res"), rows.iloc[0])[2] == " --engine cycle --bandwidth 5"


def test_a_specs_bandwidths_win_over_the_files_rate(tmp_path, capsys):
    rows = _sweep(tmp_path, "bandwidths = [2]\nelement_bytes = [2]\n")
    assert rows["bandwidth_words_per_cycle"].tolist() == [2]
    assert rows["single_processor_cycles"].tolist() == [_cost(tmp_path, 2, 2)]
    assert "hbm_gbps" not in capsys.readouterr().err


def test_a_hand_built_specs_array_keeps_the_note_that_it_ran_at_the_default(tmp_path):
    """A spec built by hand from the .cfg's array as read (no rate carried) runs at 10 words/cycle: the note that
    says so is kept for it, naming the rate a spec file's reading would give."""
    from archsim.sweep.spec import load_spec
    from archsim.sweep.spec_arrays import array_file_notes, read_array

    (tmp_path / "slow.cfg").write_text(SLOW)
    (tmp_path / "fc.csv").write_text(LAYER)
    spec_file = tmp_path / "spec.toml"
    spec_file.write_text('[sweep]\nnetworks = ["fc.csv"]\narrays = ["slow.cfg"]\nbatches = [4]\nprocessors = [1]\n'
                         'methods = ["gpipe"]\nengine = "cycle"\n')
    spec = load_spec(spec_file)
    assert any("ran at 5 words/cycle" in note for note in array_file_notes(spec))
    by_hand = replace(spec, arrays=(read_array("slow.cfg", tmp_path, str(spec_file)),))
    assert [note for note in array_file_notes(by_hand) if "hbm_gbps" in note] == [
        ("slow.cfg states [memory] hbm_gbps = 4 GB/s, which the spec's array does not carry (a spec read from its "
         "file does, as cost --config reads it): it ran at 10 words/cycle per operand, SCALE-Sim's default (8 GB/s of "
         "1-byte words at 0.8 GHz); bandwidths = [5] is 4 GB/s")]


# an array_config made for one element size, re-made at another: 300 GB/s at 0.8 GHz is 300 ÷ (2 × 0.8) = 187.5 → 188
# words of bf16, 300 ÷ (4 × 0.8) = 93.75 → 94 of fp32, 375 of int8
FAST = scalesim_chip_cfg(1, 0.8, 300, "fast", "fast", size=64, sram_kb=(256, 256, 256))


def test_an_array_config_re_made_at_another_width_reads_the_files_rate_in_its_words(tmp_path):
    (tmp_path / "fast.cfg").write_text(FAST)
    bf16 = archsim.array_config(config=str(tmp_path / "fast.cfg"), dtype="bf16")
    assert bf16.bandwidth == (188,)
    assert archsim.array_config(bf16, dtype="fp32").bandwidth == (94,)
    assert replace(bf16, element_bytes=1).bandwidth == (375,)
    assert archsim.array_config(bf16, dtype="fp32", bandwidth=7).bandwidth == (7,)  # words given win, at any width
    assert replace(archsim.array_config(bf16, bandwidth=7), element_bytes=4).bandwidth == (7,)
    network = str(tmp_path / "fc.csv")
    (tmp_path / "fc.csv").write_text(LAYER)
    on_config = archsim.cost(network, array=bf16, dtype="fp32", engine="cycle", batch=4)
    by_hand = archsim.cost(network, config=str(tmp_path / "fast.cfg"), dtype="fp32", engine="cycle", batch=4,
                           bandwidth=94)
    assert on_config.meta["bandwidth_words_per_cycle"] == 94
    assert on_config["total_cycles"].tolist() == by_hand["total_cycles"].tolist()


def test_a_dram_rate_beside_read_bandwidths_is_refused():
    from archsim.array.config import ArrayConfig
    from archsim.errors import InputError

    with pytest.raises(InputError, match="give no read_bandwidth beside it"):
        ArrayConfig(read_bandwidth=(2, 3), dram_rate=(4.0, 0.8))
    with pytest.raises(InputError, match=r"expected \(GB/s, GHz\), two positive numbers"):
        ArrayConfig(dram_rate=(0.0, 0.8))
