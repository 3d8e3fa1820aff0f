"""Calls a notebook makes, for mypy (tests/test_user_trial_api72.py): every line passes the type checker but those
marked `# refused`, each a value the run refuses too. Checked only, never run (no file here exists)."""

from pathlib import Path

import numpy as np

import archsim
from archsim.array.config import ArrayConfig
from archsim.read_only import ResultDict

tp, batch = np.int64(2), np.float64(8.0)

# counts as numpy integers, whole floats and texts, as the run reads them
result, rates = archsim.train("gpt2", cluster=Path("c.toml"), global_batch=batch, tp=tp, pp=np.int32(1), micro_batch=8.0,
                              seq="2048", moe_load_imbalance=np.float32(1.5), stage_layers=[np.int64(12), 12.0])
found = archsim.search("gpt2", cluster="c.toml", global_batch=np.int64(8), gpus=[np.int64(8)], tp=np.array([1, 2]),
                       top=3.0, sequence_parallel=True)
archsim.cost("vgg16", batch=np.int64(4), clock_ghz=np.float32(1.0), sram_kb=[64.0, 64, np.int64(64)])
archsim.gemm(m=np.int64(64), k=64.0, n="64", bandwidth=np.uint8(10))
archsim.schedule("ffnn8", policy="1f1b", processors=np.int64(2), microbatches=4.0, array=ArrayConfig())
archsim.collective("all-reduce", np.float64(1e9), cluster="c.toml", gpus=np.int64(8), per_server=np.int16(4))
archsim.plan("vgg16", cluster="c.toml", microbatches=np.int64(4), seed=np.int64(0))
archsim.train_runs("gpt2", runs="runs.csv", cluster=Path("c.toml"), seq=np.int64(2048), max_ops=1e6)
archsim.train_sweep("gpt2", sweep={"tp": [1, 2]}, cluster="c.toml", global_batch=np.int64(8), tp=tp, micro_batch=2.0,
                    moe_load_imbalance=np.float32(1.2))
archsim.run_sweep("spec.toml", workers=np.int64(2))
archsim.write_report("results", spec=Path("spec.toml"))

# an ArrayConfig where gemm_cost takes an array
archsim.gemm_cost(64, 64, 64, array=ArrayConfig(rows=16, cols=8))
archsim.gemm_cost(64, 64, 64, ArrayConfig(rows=16, cols=8))

# a search result is the sequence of its read-only rows
best: ResultDict = found[0]
first: tuple[ResultDict, ...] = found[:2]
seconds = [r["iteration_seconds"] for r in found]

# what no run takes
archsim.train("gpt2", cluster=8, global_batch=8)  # refused
archsim.train("gpt2", cluster="c.toml", global_batch=8, tp=b"2")  # refused
archsim.search(["gpt2"], cluster="c.toml", global_batch=8)  # refused
archsim.collective("all-reduce", 1e9, cluster=3.0, gpus=8)  # refused
archsim.schedule("ffnn8", policy="1f1b", processors=2, array=16.5)  # refused
archsim.sweep_cache(3)  # refused
archsim.train_runs("gpt2", runs="runs.csv", cluster=8)  # refused
archsim.train_sweep(["gpt2"], sweep="tp=1,2", cluster="c.toml", global_batch=8)  # refused
