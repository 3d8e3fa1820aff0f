"""Run the real SCALE-Sim 3.0.0 with custom layouts, from files, as its own driver reads them.

``scalesim_files`` reads a ``.cfg`` (``scale_config.read_conf_file``), a GEMM topology
(``topologies.load_arrays(mnk_inputs=True)``) and a layout file (``layouts.load_arrays``) — the three
files ``python -m scalesim.scale -c … -t … -l … -i gemm`` takes — and runs each layer through
``single_layer_sim`` (no report files), returning its compute report and DRAM counts. ``layout_cfg``
writes a USER-mode ``.cfg`` in SCALE-Sim's format (scalesim_reference's template) with the ``[layout]``
section set; ``layout_csv`` a layout file in its format (header, a trailing comma on every row).
``scalesim`` is imported lazily.
"""

from __future__ import annotations

from scalesim_reference import CONFIG, silenced

HEADER = ("Layer name, IFMAP Height Intraline Factor, IFMAP Width Intraline Factor, Filter Height Intraline Factor, "
          "Filter Width Intraline Factor, Channel Intraline Factor, Num Filter Intraline Factor, IFMAP Height "
          "Intraline Order, IFMAP Width Intraline Order, Channel Intraline Order, IFMAP Height Interline Order, "
          "IFMAP Width Interline Order, Channel Interline Order, Num Filter Intraline Order, Channel Intraline "
          "Order, Filter Height Intraline Order, Filter Width Intraline Order, Num Filter Interline Order, Channel "
          "Interline Order, Filter Height Interline Order, Filter Width Interline Order,")


def layout_cfg(rows: int, cols: int, dataflow: str, *, ifmap: tuple, filter: tuple, kb=(1, 1, 1), bandwidth: int = 4,
               filter_offset: int = 10000000) -> str:
    """``ifmap``/``filter``: (custom layout on, bank bandwidth, banks, ports per bank)."""
    return CONFIG.format(rows=rows, cols=cols, dataflow=dataflow, ifmap_kb=kb[0], filter_kb=kb[1], ofmap_kb=kb[2],
                         filter_offset=filter_offset, bandwidth=bandwidth, mode="USER", ifmap=ifmap, filter=filter,
                         sparse="false", representation="ellpack_block", optimized="false", block_size=8, seed=40)


def layout_csv(*rows: tuple) -> str:
    """A layout file: each row is (name, 20 integers)."""
    return HEADER + "\n" + "".join(",".join(str(x) for x in row) + ",\n" for row in rows)


def gemm_csv(*gemms: tuple) -> str:
    """A GEMM topology file (SCALE-Sim's ``Layer, M, N, K,`` format): each row (name, M, N, K)."""
    return "Layer,M,N,K,\n" + "".join(",".join(str(x) for x in row) + ",\n" for row in gemms)


def scalesim_files(cfg_path, topology_path, layout_path) -> list[dict]:
    """SCALE-Sim's figures per layer for the three files, as its driver reads them."""
    from scalesim.layout_utils import layouts
    from scalesim.scale_config import scale_config
    from scalesim.single_layer_sim import single_layer_sim
    from scalesim.topology_utils import topologies

    out = []
    with silenced():
        config = scale_config()
        config.read_conf_file(str(cfg_path))
        topology = topologies()
        topology.load_arrays(str(topology_path), mnk_inputs=True)
        layout = layouts()
        layout.load_arrays(str(layout_path))
        for layer_id in range(topology.get_num_layers()):
            sim = single_layer_sim()
            sim.set_params(layer_id=layer_id, config_obj=config, topology_obj=topology, layout_obj=layout,
                           verbose=False)
            sim.run()
            incl_prefetch, compute, stalls, *_ = sim.get_compute_report_items()
            detail = sim.get_detail_report_items()
            out.append({"cycles_incl_prefetch": int(incl_prefetch), "cycles": int(compute), "stall_cycles": int(stalls),
                        "ifmap_dram_reads": int(detail[11]), "filter_dram_reads": int(detail[14]),
                        "ofmap_dram_writes": int(detail[17])})
    return out
