"""archsim: cycle-exact systolic-array costs and pipeline/schedule planning for DNN training.

The main jobs as keyword-only functions (:mod:`archsim.api`), loaded on first use so that
``import archsim`` and ``archsim --help`` stay fast::

    import archsim

    net = archsim.load_network("layerpipe_sample")
    table = archsim.cost(net, array="32x32", batch=32, mode="paper")        # per-layer F/G/D cycles (default exact)
    profile = archsim.profile(net, array="32x32", batch=32, mode="paper")
    plan = archsim.pipeline(profile, processors=3, method="layerpipe")      # stages, speedup
    timeline = archsim.simulate(plan, profile, microbatches=8)              # .makespan, .to_frame()
    ooo = archsim.schedule("ffnn8", policy="ooo-pipe2", processors=2, unit_costs=True)  # out-of-order backprop
    result, rates = archsim.train("configs/transformers/gpt3_1.3b.toml", cluster="configs/clusters/a100_node.toml",
                                  tp=2, dp=4, global_batch=32)              # seconds, memory; MFU, TFLOP/s
"""

from __future__ import annotations

from archsim.lazy import lazy_exports

__version__ = "0.1.0"

# public name -> "module:attribute"; resolved lazily by __getattr__ (PEP 562)
_EXPORTS = {
    "load_network": "archsim.api:load_network",
    "array_config": "archsim.api:array_config",
    "cost": "archsim.api:cost",
    "profile": "archsim.api:profile",
    "pipeline": "archsim.api:pipeline",
    "simulate": "archsim.api:simulate",
    "pipeline_dfg": "archsim.api:pipeline_dfg",
    "schedule": "archsim.api:schedule",
    "run_sweep": "archsim.api:run_sweep",
    "write_report": "archsim.api:write_report",
    "train": "archsim.api:train",
    "search": "archsim.api:search",
    "train_runs": "archsim.api:train_runs",
    "gemm_cost": "archsim.array.analytic:gemm_cost",
    "read_scalesim_cfg": "archsim.array.config:read_scalesim_cfg",
    "ArrayConfig": "archsim.array.config:ArrayConfig",
    "Layer": "archsim.workload.layer:Layer",
    "Network": "archsim.workload.layer:Network",
    "InputError": "archsim.errors:InputError",
}

__all__ = ["__version__", *sorted(_EXPORTS)]  # noqa: PLE0604 (the lazy exports' names, strings)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
