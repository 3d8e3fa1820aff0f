"""Cluster scheduling with structured partial backprop (SPB, Kumar et al. 2021): the SPB job model,
the Jigsaw iteration-level scheduler, gang baselines (Gandiva-style packing, Tiresias 2D-LAS),
traces (Tiresias CSV, the §4.2 synthetic workload), metrics and the HTML report."""

from archsim.choices.cluster import MAIN_POLICIES, POLICIES
from archsim.cluster.catalog import ModelProfile, model_profile_from_costs, paper_catalog, paper_profile
from archsim.cluster.jobs import JobCluster, JobSpec, SimConfig, SimResult, build_jobs
from archsim.cluster.metrics import aggregate, jct_cdf, migrations_per_iteration, summarize, utilization_series
from archsim.cluster.profile_csv import load_profile_csv, parse_profile_csv, write_profile_csv
from archsim.cluster.simulate import compare, simulate, simulate_trace
from archsim.cluster.spb import (
                                 JobLayerCosts,
                                 TaskCost,
                                 backprop_sweep,
                                 layer_costs_from_network,
                                 spb_tasks,
                                 suffix_lengths,
                                 task_cost,
)
from archsim.cluster.trace import TraceJob, load_tiresias_csv, parse_tiresias_csv, synthetic_trace, trace_to_csv

__all__ = ["MAIN_POLICIES", "POLICIES", "JobCluster", "JobLayerCosts", "JobSpec", "ModelProfile", "SimConfig",
           "SimResult", "TaskCost", "TraceJob", "aggregate", "backprop_sweep", "build_jobs", "compare", "jct_cdf",
           "layer_costs_from_network", "load_profile_csv", "load_tiresias_csv", "migrations_per_iteration",
           "model_profile_from_costs", "paper_catalog", "paper_profile", "parse_profile_csv", "parse_tiresias_csv",
           "simulate", "simulate_trace", "spb_tasks", "suffix_lengths", "summarize", "synthetic_trace",
           "task_cost", "trace_to_csv", "utilization_series", "write_profile_csv"]
