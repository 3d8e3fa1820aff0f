"""The device files the tests write, each form's text once: a device TOML (:func:`device_toml`) and a SCALE-Sim
``.cfg`` with archsim's device sections (:func:`scalesim_chip_cfg`), laid out as the shipped
configs/devices/scalesim_32x32_device.cfg and docs/formats.md ("Device files") lay them out. A test states its own
chip's figures (a user trial's chip is that user's); a line a chip need not state (``gemm``, ``dataflow``,
``arrays_per_core``, ``links``, a .cfg's ``Bandwidth`` and ``static_watts``) is written only when given. A figure is
written as ``str()`` writes it, so a test may pass the text a user typed (``"1e14"``, ``"abc"``)."""

from __future__ import annotations


def _line(key: str, value: object) -> str:
    return "" if value is None else f"{key} = {value}\n"


def device_toml(*, name: str, arrays: object, rows: object, cols: object, clock_mhz: object, sram_kib: object,
                hbm_gib: object, hbm_gbps: object, intra_gbps: object, gemm: str | None = None,
                dataflow: str | None = None, arrays_per_core: object = None, links: object = None) -> str:
    """A device TOML: ``arrays`` arrays of ``rows`` × ``cols`` PEs at ``clock_mhz`` MHz, ``sram_kib`` KiB of SRAM
    per array, ``hbm_gib`` GiB of HBM at ``hbm_gbps`` GB/s, ``links`` links of ``intra_gbps`` GB/s; its
    ``[links]`` table last, so that a test may append a key to it."""
    device = f'[device]\nname = "{name}"\n' + ("" if gemm is None else f'gemm = "{gemm}"\n')
    compute = (f"[compute]\narrays = {arrays}\n" + _line("arrays_per_core", arrays_per_core) + f"rows = {rows}\n"
               f"cols = {cols}\n" + ("" if dataflow is None else f'dataflow = "{dataflow}"\n')
               + f"clock_mhz = {clock_mhz}\n")
    memory = f"[memory]\nsram_kib_per_array = {sram_kib}\nhbm_gib = {hbm_gib}\nhbm_gbps = {hbm_gbps}\n"
    return "\n".join([device, compute, memory, f"[links]\nintra_gbps = {intra_gbps}\n" + _line("links", links)])


def scalesim_chip_cfg(arrays: object = 1, clock_ghz: float = 1.0, hbm_gbps: object = 1e9, run_name: str = "chip",
                      device_name: str | None = None, *, size: object = 64, sram_kb: tuple = (683, 683, 682),
                      dataflow: str = "ws", bandwidth: object = None, hbm_gib: object = 16, intra_gbps: object = 100,
                      arrays_per_core: object = None, static_watts: object = None, links: object = None) -> str:
    """A SCALE-Sim ``.cfg`` device file of ``arrays`` ``size`` × ``size`` arrays (weight-stationary unless
    ``dataflow``), each with ``sram_kb`` KiB of SRAM (ifmap, filter, ofmap; SCALE-Sim's 683 + 683 + 682 by
    default), at ``clock_ghz``, with ``hbm_gib`` GiB of HBM at ``hbm_gbps`` GB/s (the default so fast no GEMM is
    memory-bound) and ``intra_gbps`` GB/s links; ``device_name`` None: ``RUN_NAME_{arrays}x_{clock}ghz``."""
    name = device_name or f"{run_name}_{arrays}x_{clock_ghz:g}ghz"
    ifmap, filters, ofmap = sram_kb
    presets = (f"[architecture_presets]\nArrayHeight:    {size}\nArrayWidth:     {size}\nIfmapSramSzkB:    {ifmap}\n"
               f"FilterSramSzkB:   {filters}\nOfmapSramSzkB:    {ofmap}\nIfmapOffset:    0\n"
               f"FilterOffset:   10000000\nOfmapOffset:    20000000\n"
               + ("" if bandwidth is None else f"Bandwidth : {bandwidth}\n") + f"Dataflow : {dataflow}\n")
    device = (f"[device]\nname = {name}\narrays = {arrays}\n" + _line("arrays_per_core", arrays_per_core)
              + _line("static_watts", static_watts))
    return "\n".join([f"[general]\nrun_name = {run_name}\n", presets, f"[archsim]\nClockGHz = {clock_ghz}\n", device,
                      f"[memory]\nhbm_gib = {hbm_gib}\nhbm_gbps = {hbm_gbps}\n",
                      f"[links]\nintra_gbps = {intra_gbps}\n" + _line("links", links)])


def write_file(tmp_path, name: str, text: str):
    """``text`` written to ``tmp_path / name``; the path."""
    path = tmp_path / name
    path.write_text(text)
    return path


def device_error(path):
    """The InputError reading the device file ``path`` raises (the test fails if it reads)."""
    import pytest

    from archsim.devices.device_file import load_device
    from archsim.errors import InputError

    with pytest.raises(InputError) as caught:
        load_device(path)
    return caught.value


def device_message(path) -> str:
    """:func:`device_error`'s one-line message."""
    return str(device_error(path))


def trial_array_chip_toml(*, lanes: int | None = None, lane_rows: int | None = None, lane_cols: int | None = None,
                          mac_pj: object = 0.3) -> str:
    """An accelerator architect's chip (the energy trial's): 4 weight-stationary 128 × 128 arrays at 1 GHz, 2 MiB of
    SRAM per array, 16 GiB of HBM at 1000 GB/s, 20 W static, an fp8 peak at the arrays' rate (2 · 4 · 128² · 1 GHz =
    131.072 TFLOP/s, so ``train --fp8`` runs), ``[energy] mac_pj`` (None: none stated); with ``lanes``, fp32 lanes of
    ``lane_rows`` × ``lane_cols`` beside the arrays."""
    text = device_toml(name="mychip", arrays=4, rows=128, cols=128, dataflow="ws", clock_mhz=1000, sram_kib=2048,
                       hbm_gib=16, hbm_gbps=1000, intra_gbps=200, links=4)
    text = text.replace('name = "mychip"\n', 'name = "mychip"\nstatic_watts = 20\n')
    if lanes is not None:
        text = text.replace("clock_mhz = 1000\n", "clock_mhz = 1000\n" + _line("lanes", lanes)
                            + _line("lane_rows", lane_rows) + _line("lane_cols", lane_cols))
    return text + "\n[compute.peak_tflops]\nfp8 = 131.072\n" + ("" if mac_pj is None else f"\n[energy]\nmac_pj = {mac_pj}\n")
