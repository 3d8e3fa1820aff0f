"""archsim's energy model beside ZigZag's on the same forward GEMMs with the same per-access energies.

    python3 -m venv .venv-zz && .venv-zz/bin/pip install -e ".[zigzag]"   # its own venv: ZigZag pulls numpy 2.4
    .venv-zz/bin/python benchmarks/bench_zigzag_energy.py [--network layerpipe_sample] [--batch 1]
        [--out benchmarks/results/zigzag_energy.csv]

ZigZag (KULeuven-MICAS, ``zigzag-dse`` on PyPI) is run unchanged through its API
(``get_hardware_performance_zigzag``, energy-optimal temporal mapping found by its LOMA search) on an
accelerator this script writes from archsim's :class:`~archsim.energy.AccessEnergies` for a 32×32
weight-stationary array with 64 KiB ifmap/filter/ofmap SRAMs: the same pJ per MAC, per register
word, per SRAM word of each operand and per DRAM word. Each forward op of the network is one GEMM
(im2col: rows = N·E·F, reduction = R·S·C, columns = filters), ZigZag's ``O[b][k] += I[b][c]·W[c][k]``
with inputs, weights and final outputs 8 bits (archsim's element size) and partial sums at archsim's
accumulator width (:func:`~archsim.energy.table.accumulator_bits`, 32 bits: ZigZag's ``O`` precision and a
32-bit output register at ``psum_register_pj``; since 2026-12-05, when archsim began moving partial sums at
32 bits — until then 8 bits, which made archsim's register energy look 22–26× ZigZag's).

Spatial mapping as SCALE-Sim's ws: array rows ← reduction (C), columns ← filters (K). ZigZag's
memory hierarchy per operand: a register level, the operand's SRAM, DRAM. It cannot express the
systolic pipeline: inputs are a register per array row broadcast along it, partial sums a register
per column reduced spatially (an adder tree), weights a register per PE. Every port is 8..256 bits
wide with the cost of a 256-bit access = 32 × the per-byte figure, so ZigZag's access counts
(ceil(bits / min) · min / max per period) cost bytes × per-byte energy, as archsim's do.

What differs, and why (printed with the numbers):

* **Mapping.** archsim costs SCALE-Sim's fixed ws order (fold by fold, the streamed operand re-read
  from SRAM once per column fold, partial sums written once per reduction fold); ZigZag searches
  loop orders and tilings for the least energy, so its SRAM traffic is at most archsim's and usually
  less (it keeps outputs in place over the whole reduction when they fit).
* **Memory levels.** archsim's analytic engine charges DRAM once per operand word (compulsory, a
  floor that ignores SRAM capacity); ZigZag re-fetches what its 64 KiB SRAMs cannot hold under
  its best loop order; archsim's cycle engine (printed as ``dram (cycle)``) re-fetches what
  SCALE-Sim's fixed fold order and prefetch model re-fetch, which is more.
* **In the array.** archsim charges two register moves per MAC (systolic hops) + stationary loads;
  ZigZag charges its register levels per access under broadcast/reduction, which is far fewer.
* **Partial sums outside the array.** ZigZag's precision is one per operand, not per level: its partial
  sums are 32 bits in the ofmap SRAM and DRAM too (only final outputs, ``O_final``, 8 bits), while archsim
  reads and writes every ofmap SRAM word, partial sum or not, at the element's 8 bits. So ZigZag's ofmap
  SRAM is ≈ 4× archsim's, and its 32-bit partial sums fill the 64 KiB SRAM sooner, which moves its
  mapping and DRAM on conv3–4. Only the register level is like for like.

Measured 2026-12-05 (``benchmarks/results/zigzag_energy_layerpipe_sample.csv``, the sample's four conv
layers, batch 1; figures of 2026-11-24, 8-bit partial sums on both sides, until 2026-12-05): MAC energy
equal (same count × same figure); ZigZag's DRAM equals the compulsory floor on conv1–2 and is 1.7× it on
conv3, 2.9× on conv4 (1.6–1.7× until 2026-12-05); archsim's cycle engine (SCALE-Sim's traffic) is
1.6–5.5× ZigZag's DRAM energy, since SCALE-Sim's ws order re-reads the ifmap per column fold and counts
whole prefetch lines; register energy archsim ≈ 7–9× ZigZag (9–10× until 2026-12-05: systolic hops vs
broadcast and spatial reduction); filter SRAM ZigZag 8.5–16× archsim (up to 8× until 2026-12-05: its
8-bit weight register per PE is refilled when the searched loop order revisits a weight; SCALE-Sim's ws
loads each weight once per fold); ifmap SRAM within 0.83–1.0×; ofmap SRAM ZigZag ≈ 4× archsim (32-bit
partial sums, above; archsim 0.86–0.98× ZigZag until 2026-12-05). Totals (analytic engine): ZigZag 7–9 % above archsim on
conv1–2 (within 1–3 % until 2026-12-05), 1.6× on conv3 and 2.4× on conv4 through its DRAM re-fetches
(1.4× until 2026-12-05). DRAM dominates every total, so which memory model is right for a design matters
more than any per-access figure.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import sys
import tempfile
from pathlib import Path

import pandas as pd

from archsim.array.config import ArrayConfig
from archsim.energy import access_energies, op_energy
from archsim.energy.table import accumulator_bits
from archsim.lowering import lower_network
from archsim.workload import load_network

WIDE = 256  # bits of one port access; cost = WIDE / 8 × the per-byte figure


def _memory(name: str, bits: int, operands: list[str], per_byte_read: float, per_byte_write: float,
            served: str) -> str:
    reads, writes = [], []
    for op in operands:
        reads.append(f"{op}, tl")
        writes.append(f"{op}, fh")
        if op == "O":
            reads.append("O, th")
            writes.append("O, fl")
    scale = WIDE / 8
    return f"""  {name}:
    size: {bits}
    r_cost: {per_byte_read * scale}
    w_cost: {per_byte_write * scale}
    area: 0
    latency: 1
    auto_cost_extraction: False
    operands: [{', '.join(operands)}]
    ports:
      - name: r_port_1
        type: read
        bandwidth_min: 8
        bandwidth_max: {WIDE}
        allocation: [{', '.join(f'"{a}"' for a in reads)}]
      - name: w_port_1
        type: write
        bandwidth_min: 8
        bandwidth_max: {WIDE}
        allocation: [{', '.join(f'"{a}"' for a in writes)}]
    served_dimensions: [{served}]
"""


def accelerator_yaml(array: ArrayConfig) -> str:
    e = access_energies(array)
    kib = lambda k: k * 1024 * 8
    psum = accumulator_bits(array.element_bytes)  # archsim's partial-sum register width (32 for int8)
    per_byte_psum = e.psum_register_pj / (psum // 8)  # = register_pj per byte: a psum move costs psum_register_pj
    return ("name: archsim_ws\n\nmemories:\n"
            + _memory("reg_I", 8, ["I1"], e.register_pj, e.register_pj, "D2")
            + _memory("reg_W", 8, ["I2"], e.register_pj, e.register_pj, "")
            + _memory("reg_O", psum, ["O"], per_byte_psum, per_byte_psum, "D1")
            + _memory("sram_I", kib(array.ifmap_sram_kb), ["I1"], e.ifmap_read_pj, e.ifmap_write_pj, "D1, D2")
            + _memory("sram_W", kib(array.filter_sram_kb), ["I2"], e.filter_read_pj, e.filter_write_pj, "D1, D2")
            + _memory("sram_O", kib(array.ofmap_sram_kb), ["O"], e.ofmap_read_pj, e.ofmap_write_pj, "D1, D2")
            + _memory("dram", 10**12, ["I1", "I2", "O"], e.dram_read_pj, e.dram_write_pj, "D1, D2")
            + f"\noperational_array:\n  input_precision: [8, 8]\n  unit_energy: {e.mac_pj}\n  unit_area: 1\n"
              f"  dimensions: [D1, D2]\n  sizes: [{array.rows}, {array.cols}]\n")


MAPPING = """- name: default
  spatial_mapping:
    D1:
      - C, {rows}
    D2:
      - K, {cols}
  memory_operand_links:
    O: O
    W: I2
    I: I1
"""


def gemm_workload(m: int, k: int, n: int, array: ArrayConfig) -> list[dict]:
    """ZigZag's workload of out[m×n] = A[m×k]·B[k×n]: operands and final outputs 8 bits (the script's 1-byte
    words), partial sums (``O``) at archsim's accumulator width (bits), as archsim's register moves price them."""
    word = 8
    return [{"id": 0, "operator_type": "Gemm", "equation": "O[b][k]+=I[b][c]*W[c][k]",
             "dimension_relations": [], "loop_dims": ["B", "C", "K"], "loop_sizes": [m, k, n],
             "operand_precision": {"W": word, "I": word, "O": accumulator_bits(array.element_bytes), "O_final": word},
             "operand_source": {"I": 0, "W": 0}}]


def zigzag_energy(m: int, k: int, n: int, array: ArrayConfig, folder: Path) -> dict[str, float]:
    """ZigZag's energy breakdown (pJ) of out[m×n] = A[m×k]·B[k×n]: MAC, and per operand per level."""
    from zigzag.api import get_hardware_performance_zigzag

    accelerator, mapping = folder / "accelerator.yaml", folder / "mapping.yaml"
    accelerator.write_text(accelerator_yaml(array))
    mapping.write_text(MAPPING.format(rows=array.rows, cols=array.cols))
    workload = gemm_workload(m, k, n, array)
    logging.disable(logging.CRITICAL)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        energy, _, cmes = get_hardware_performance_zigzag(
            workload, str(accelerator), str(mapping), opt="energy", dump_folder=str(folder / "out"),
            loma_show_progress_bar=False)
    cme = cmes[0][1][0][0] if isinstance(cmes[0][1], list) else cmes[0][0]
    row = {"mac": float(cme.mac_energy)}
    names = {"I": "ifmap", "W": "filter", "O": "ofmap"}
    for operand, levels in cme.mem_energy_breakdown.items():
        label = names[str(operand)]
        row[f"{label}_register"], row[f"{label}_sram"], row[f"{label}_dram"] = (float(x) for x in levels)
    row["total"] = float(energy)
    return row


def archsim_energy(op, array: ArrayConfig) -> dict[str, float]:
    e = op_energy([op], array).iloc[0]
    cycle = op_energy([op], array, engine="cycle").iloc[0]
    return {"dram_cycle_engine": cycle.dram_read_pj + cycle.dram_write_pj, "mac": e.mac_pj, "register": e.register_pj,
            "ifmap_sram": e.ifmap_sram_read_pj + e.ifmap_sram_write_pj,
            "filter_sram": e.filter_sram_read_pj + e.filter_sram_write_pj,
            "ofmap_sram": e.ofmap_sram_read_pj + e.ofmap_sram_write_pj,
            "dram": e.dram_read_pj + e.dram_write_pj, "total": e.energy_pj}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--network", default="layerpipe_sample")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    array = ArrayConfig(32, 32, "ws")
    rows = []
    for item in lower_network(load_network(args.network), args.batch, "exact"):
        op = item.op("F")
        if op is None or len(op.gemms) != 1:
            continue
        gemm = op.gemms[0]
        with tempfile.TemporaryDirectory(prefix="archsim-zigzag-") as folder:
            zz = zigzag_energy(gemm.m, gemm.k, gemm.n, array, Path(folder))
        ours = archsim_energy(op, array)
        zz_register = sum(v for key, v in zz.items() if key.endswith("_register"))
        row = {"layer": item.layer.name, "m": gemm.m, "k": gemm.k, "n": gemm.n}
        for part in ("mac", "register", "ifmap_sram", "filter_sram", "ofmap_sram", "dram", "total"):
            theirs = zz_register if part == "register" else (
                sum(zz[f"{o}_dram"] for o in ("ifmap", "filter", "ofmap")) if part == "dram" else zz[part])
            row[f"archsim_{part}_pj"], row[f"zigzag_{part}_pj"] = ours[part], theirs
        row["archsim_cycle_engine_dram_pj"] = ours["dram_cycle_engine"]
        rows.append(row)
    frame = pd.DataFrame(rows)
    pd.set_option("display.width", 250)
    for _, r in frame.iterrows():
        print(f"\n{r.layer}: GEMM {r.m}×{r.k}×{r.n}   (pJ)      archsim       zigzag    ratio")
        for part in ("mac", "register", "ifmap_sram", "filter_sram", "ofmap_sram", "dram", "total"):
            a, z = r[f"archsim_{part}_pj"], r[f"zigzag_{part}_pj"]
            print(f"  {part:<12} {a:>20.4g} {z:>12.4g} {a / z if z else float('nan'):>8.3g}")
        a = r["archsim_cycle_engine_dram_pj"]
        print(f"  {'dram (cycle)':<12} {a:>20.4g} {r['zigzag_dram_pj']:>12.4g} {a / r['zigzag_dram_pj']:>8.3g}"
              "   (archsim's cycle engine: SCALE-Sim's capacity-aware DRAM traffic)")
    if args.out:
        from importlib.metadata import version

        import zigzag  # noqa: F401

        header = (f"# archsim vs ZigZag {version('zigzag-dse')} energy (pJ), {args.network} forward GEMMs, batch "
                  f"{args.batch}, 32x32 ws, 64 KiB SRAMs, configs/energy/horowitz45.toml; produced by: python "
                  f"benchmarks/bench_zigzag_energy.py --network {args.network} --batch {args.batch} --out {args.out}\n")
        Path(args.out).write_text(header + frame.to_csv(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
