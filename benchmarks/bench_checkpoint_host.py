"""What activation checkpointing costs the host, in units of the checkpointed layer's own forward issue time.

    python benchmarks/bench_checkpoint_host.py [--repeats 9] > benchmarks/results/checkpoint_host_cpu.md

No GPU and no GPU data: it runs ``benchmarks/gpu_train_measure.py``'s GPT (``benchmarks/gpt_model.py``) on the
CPU at shapes so small (hidden 16, sequence 8, micro-batch 1) that every op's time is PyTorch's host-side overhead (Python,
the dispatcher, autograd), and times one layer's forward, forward + backward, and both again with the
layer wrapped in ``torch.utils.checkpoint`` — non-reentrant (``use_reentrant=False``, what
gpu_train_measure.py runs) and reentrant (``use_reentrant=True``, the structure of Megatron's own
``CheckpointFunction``: forward under ``no_grad``, a nested backward after the recomputation). Per
layer = (time at 12 layers − time at 4 layers) / 8, so the embedding, head and loss cancel. It prints, per layer,

* ``forward extra``: the checkpointed forward's host time less the plain forward's;
* ``backward extra``: the backward's host time with recomputation less the plain backward's and less one
  plain forward (the recomputed forward itself, which archsim already issues again);

and both over the plain forward's time.

Why it is host time alone: PyTorch's checkpoint does not synchronize the device (its RNG stash and
restore copy the CPU generator's state and the CUDA generator's seed and offset, both host-side), so
what it adds is host work — Python hooks per saved tensor (non-reentrant: a pack hook in the forward
recording shape, dtype and device, a pack hook in the recomputation, which also records a new autograd
graph, an unpack hook in the backward), or a nested autograd call (reentrant). That work launches no
kernel, so the host-issue variant (benchmarks/host_issue.py, tried in bench_e2e_variants.py and not adopted:
archsim does not add it) takes the extra microseconds as seconds, as they are on this CPU
(a slower host takes longer: a lower bound there). The ratios, over a forward whose ops launch nothing
here, are an upper bound of the same overhead on a GPU, where every forward op also pays a kernel launch.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LAYERS = (4, 12)


def per_iteration_us(torch, layers: int, recompute: str, backward: bool, reentrant: bool, repeats: int) -> float:
    """Microseconds of one forward (and backward) of gpu_train_measure.py's GPT at tiny shapes: the fastest
    of ``repeats`` rounds (host overhead on a shared CPU: load only ever adds to it)."""
    import torch.utils.checkpoint as checkpointing

    from benchmarks.gpt_model import Shape, build_model

    original = checkpointing.checkpoint
    checkpointing.checkpoint = functools.partial(_with_reentrant, original, reentrant)
    try:
        torch.manual_seed(0)
        model = build_model(torch, Shape("host", 16, 2, layers, 8, 64, 64), torch.float32, "cpu")
    finally:
        checkpointing.checkpoint = original
    model.recompute = recompute
    tokens = torch.randint(0, 64, (1, 8))
    labels = torch.randint(0, 64, (1, 8))

    def step() -> None:
        loss = model(tokens, labels)
        if backward:
            loss.backward()

    for _ in range(30):
        step()
    samples = []
    for _ in range(repeats):
        began = time.perf_counter()
        for _ in range(50):
            step()
        samples.append((time.perf_counter() - began) / 50)
    return min(samples) * 1e6  # the least-disturbed round: other work on a shared CPU only adds time


def _with_reentrant(original, reentrant: bool, fn, *args, use_reentrant=None, **kwargs):
    return original(fn, *args, use_reentrant=reentrant, **kwargs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9, help="timed rounds of 50 iterations each; the fastest kept")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    print("# Host cost of activation checkpointing (benchmarks/bench_checkpoint_host.py; CPU, no GPU data)\n")
    print("| checkpoint | forward µs/layer | fwd+bwd µs/layer | checkpointed forward µs/layer "
          "| checkpointed fwd+bwd µs/layer | forward extra µs | backward extra µs | forward ratio | backward ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for reentrant in (False, True):
        per = {}
        for recompute in ("none", "full"):
            for backward in (False, True):
                low, high = (per_iteration_us(torch, n, recompute, backward, reentrant, args.repeats) for n in LAYERS)
                per[recompute, backward] = (high - low) / (LAYERS[1] - LAYERS[0])
        forward, both = per["none", False], per["none", True]
        ck_forward, ck_both = per["full", False], per["full", True]
        name = "reentrant (Megatron's structure)" if reentrant else "non-reentrant (use_reentrant=False)"
        extra_forward, extra_backward = ck_forward - forward, ck_both - ck_forward - both
        print(f"| {name} | {forward:.1f} | {both:.1f} | {ck_forward:.1f} | {ck_both:.1f} | {extra_forward:.1f} "
              f"| {extra_backward:.1f} | {extra_forward / forward:.2f} | {extra_backward / forward:.2f} |")
    print(f"\ntorch {torch.__version__}, one CPU thread; per layer = (iteration at {LAYERS[1]} layers − at "
          f"{LAYERS[0]}) / {LAYERS[1] - LAYERS[0]}. forward extra = checkpointed forward − forward; backward extra = "
          "checkpointed fwd+bwd − checkpointed forward − fwd+bwd (the backward's host time beyond the recomputed "
          "forward); ratios: over the forward.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
