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
    one = archsim.gemm(m=64, k=128, n=96, array="16x16", engine="cycle")  # SCALE-Sim-exact GEMM (also sparse)
    spp = archsim.plan("vgg16", cluster="configs/clusters/testbed_1080ti.toml", microbatches=8)  # SPP on a cluster
    result, rates = archsim.train("configs/transformers/gpt3_1.3b.toml", cluster="configs/clusters/a100_node.toml",
                                  tp=2, dp=4, global_batch=32)              # seconds, memory; MFU, TFLOP/s
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from archsim.lazy import lazy_exports

if TYPE_CHECKING:  # the lazy names below for a type checker (archsim.cost(...) is a CostResult, not Any); "x as x" re-exports
    from archsim.api import CollectiveCost as CollectiveCost
    from archsim.api import PlanResult as PlanResult
    from archsim.api import ScheduleResult as ScheduleResult
    from archsim.api import SweepResult as SweepResult
    from archsim.api import array_config as array_config
    from archsim.api import bppsa_network as bppsa_network
    from archsim.api import bppsa_pruned_vgg11 as bppsa_pruned_vgg11
    from archsim.api import bppsa_rnn as bppsa_rnn
    from archsim.api import cluster_jobs as cluster_jobs
    from archsim.api import collective as collective
    from archsim.api import cost as cost
    from archsim.api import gemm as gemm
    from archsim.api import iteration_energy as iteration_energy
    from archsim.api import load_network as load_network
    from archsim.api import pipeline as pipeline
    from archsim.api import pipeline_dfg as pipeline_dfg
    from archsim.api import pipeline_memory as pipeline_memory
    from archsim.api import plan as plan
    from archsim.api import profile as profile
    from archsim.api import run_sweep as run_sweep
    from archsim.api import schedule as schedule
    from archsim.api import search as search
    from archsim.api import simulate as simulate
    from archsim.api import sparse as sparse
    from archsim.api import sweep_cache as sweep_cache
    from archsim.api import train as train
    from archsim.api import train_runs as train_runs
    from archsim.api import train_sweep as train_sweep
    from archsim.api import validate_gpu as validate_gpu
    from archsim.api import write_report as write_report
    from archsim.array.analytic import GemmCost as GemmCost
    from archsim.array.analytic import gemm_cost as gemm_cost
    from archsim.array.config import ArrayConfig as ArrayConfig
    from archsim.array.config import read_scalesim_cfg as read_scalesim_cfg
    from archsim.cost_json import CostResult as CostResult
    from archsim.dfg.of_plan import PlanDFG as PlanDFG
    from archsim.errors import InputError as InputError
    from archsim.partition.profile import LayerProfile as LayerProfile
    from archsim.partition.result import Partition as Partition
    from archsim.sim.timeline import Timeline as Timeline
    from archsim.sweep.cache import CacheUse as CacheUse
    from archsim.table_result import TableResult as TableResult
    from archsim.training.run import TrainResult as TrainResult
    from archsim.training.runs_result import RunsResult as RunsResult
    from archsim.training.search_result import SearchResult as SearchResult
    from archsim.training.throughput import Throughput as Throughput
    from archsim.workload.layer import Layer as Layer
    from archsim.workload.layer import Network as Network
    from archsim.workload.transformer import TransformerConfig as TransformerConfig

__version__ = "0.1.0"

# public name -> "module:attribute"; resolved lazily by __getattr__ (PEP 562)
_EXPORTS = {
    "load_network": "archsim.api:load_network",
    "array_config": "archsim.api:array_config",
    "cost": "archsim.api:cost",
    "cluster_jobs": "archsim.api:cluster_jobs",
    "collective": "archsim.api:collective",
    "bppsa_rnn": "archsim.api:bppsa_rnn",
    "bppsa_pruned_vgg11": "archsim.api:bppsa_pruned_vgg11",
    "bppsa_network": "archsim.api:bppsa_network",
    "gemm": "archsim.api:gemm",
    "iteration_energy": "archsim.api:iteration_energy",
    "sparse": "archsim.api:sparse",
    "profile": "archsim.api:profile",
    "pipeline": "archsim.api:pipeline",
    "simulate": "archsim.api:simulate",
    "pipeline_dfg": "archsim.api:pipeline_dfg",
    "pipeline_memory": "archsim.api:pipeline_memory",
    "plan": "archsim.api:plan",
    "schedule": "archsim.api:schedule",
    "run_sweep": "archsim.api:run_sweep",
    "sweep_cache": "archsim.api:sweep_cache",
    "write_report": "archsim.api:write_report",
    "train": "archsim.api:train",
    "search": "archsim.api:search",
    "train_runs": "archsim.api:train_runs",
    "train_sweep": "archsim.api:train_sweep",
    "validate_gpu": "archsim.api:validate_gpu",
    "gemm_cost": "archsim.array.analytic:gemm_cost",
    "read_scalesim_cfg": "archsim.array.config:read_scalesim_cfg",
    "ArrayConfig": "archsim.array.config:ArrayConfig",
    "Layer": "archsim.workload.layer:Layer",
    "Network": "archsim.workload.layer:Network",
    "InputError": "archsim.errors:InputError",
    # the model train, search, train_runs and train_sweep take built in Python, as Layer and Network are cost's
    "TransformerConfig": "archsim.workload.transformer:TransformerConfig",
    # the jobs' result types, for a user's type hints (def f(result: archsim.TrainResult)); loaded on first use too
    "CacheUse": "archsim.sweep.cache:CacheUse",
    "CollectiveCost": "archsim.api:CollectiveCost",
    "CostResult": "archsim.cost_json:CostResult",
    "GemmCost": "archsim.array.analytic:GemmCost",
    "LayerProfile": "archsim.partition.profile:LayerProfile",
    "Partition": "archsim.partition.result:Partition",
    "PlanDFG": "archsim.dfg.of_plan:PlanDFG",
    "PlanResult": "archsim.api:PlanResult",
    "RunsResult": "archsim.training.runs_result:RunsResult",
    "ScheduleResult": "archsim.api:ScheduleResult",
    "SearchResult": "archsim.training.search_result:SearchResult",
    "SweepResult": "archsim.api:SweepResult",
    "TableResult": "archsim.table_result:TableResult",
    "Throughput": "archsim.training.throughput:Throughput",
    "Timeline": "archsim.sim.timeline:Timeline",
    "TrainResult": "archsim.training.run:TrainResult",
}

__all__ = ["__version__", *sorted(_EXPORTS)]  # noqa: PLE0604 (the lazy exports' names, strings)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
