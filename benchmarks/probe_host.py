"""The probe's ``kernel``, ``host`` and ``launches`` sections: the per-kernel overhead on the GPU, the host's
time to issue ops, and the kernels plain PyTorch launches per archsim op (module docstring of
``gpu_efficiency_probe.py``)."""

from __future__ import annotations

import sys
import time

from benchmarks.gpt_model import Shape, archsim_config, build_model
from benchmarks.gpu_timing import queued, spread
from benchmarks.probe_rows import row

HOST_SHAPE = Shape("host_64h_4l", 64, 4, 4, 32, 1000, 256)  # the tiny GPT whose iteration the host rows time


def measure_kernels(torch, repeats: int, device: str) -> list[dict[str, object]]:
    """GPU seconds per kernel of 1000 tiny kernels queued back to back behind a GPU sleep."""
    x = torch.zeros(1024, device=device, dtype=torch.float16)
    n = 1000
    rows = []
    for name, fn in (("add_.1024", lambda: x.add_(1.0)), ("mul_.1024", lambda: x.mul_(1.0))):
        fn()
        gpu = [queued(torch, device.startswith("cuda"), n, fn)[0] / n for _ in range(repeats)]
        rows.append(row("kernel", name, spread(gpu), ops=n))
    return rows


def measure_host(torch, repeats: int, dtype, device: str) -> list[dict[str, object]]:
    """Host seconds per op issued behind a GPU sleep (elementwise ops, plain and under autograd), then one
    forward + backward of the tiny GPT per recompute: queued, on an idle GPU up to a synchronize, and (CUDA)
    the kernels it launches; ``ops`` = archsim's op count of that iteration."""
    from archsim.training.layer_ops import block_work, embedding_work, head_work

    cuda = device.startswith("cuda")
    n = 500
    rows = []
    x = torch.zeros(64, device=device, dtype=dtype)
    leaf = torch.zeros(64, device=device, dtype=dtype, requires_grad=True)
    for name, fn in (("issue.add", lambda: torch.add(x, 1.0)), ("issue.add_autograd", lambda: torch.add(leaf, 1.0))):
        fn()
        host = [queued(torch, cuda, n, fn)[1] / n for _ in range(repeats)]
        rows.append(row("host", name, spread(host), ops=n))
    shape = HOST_SHAPE
    config = archsim_config(shape)
    layer, emb, head = block_work(config, 1), embedding_work(config, 1), head_work(config, 1)
    forward_ops = shape.layers * len(layer.forward) + len(emb.forward) + len(head.forward)
    backward_ops = shape.layers * len(layer.backward) + len(emb.backward) + len(head.backward)
    torch.manual_seed(0)
    model = build_model(torch, shape, dtype, device)
    tokens = torch.randint(0, shape.vocab, (1, shape.seq), device=device)
    for recompute in ("none", "full"):
        model.recompute = recompute
        ops = forward_ops + backward_ops + (shape.layers * len(layer.forward) if recompute == "full" else 0)

        def step():
            model(tokens, tokens).backward()

        step()
        host = [queued(torch, cuda, 1, step)[1] for _ in range(repeats)]
        rows.append(row("host", f"tiny_gpt.fwd_bwd.recompute_{recompute}", spread(host), model=shape.name,
                        micro_batch=1, ops=ops))
        # the same on an idle GPU, synchronized after: an upper bound (a hidden sync would show above)
        idle = []
        for _ in range(repeats):
            if cuda:
                torch.cuda.synchronize()
            began = time.perf_counter()
            step()
            if cuda:
                torch.cuda.synchronize()
            idle.append(time.perf_counter() - began)
        rows.append(row("host", f"tiny_gpt.fwd_bwd.recompute_{recompute}.synchronized", spread(idle),
                        model=shape.name, micro_batch=1, ops=ops))
        kernels = count_kernels(torch, step) if cuda else 0
        print(f"  tiny GPT recompute {recompute}: {kernels} kernels launched for {ops} archsim ops", file=sys.stderr)
        if kernels:
            rows.append(row("launches", f"tiny_gpt.fwd_bwd.recompute_{recompute}", (idle[0], idle[0], idle[0], 1),
                            model=shape.name, micro_batch=1, ops=ops, count=kernels))
    return rows


def count_kernels(torch, fn) -> int:
    """CUDA kernels, memsets and copies one call of ``fn`` launches (torch.profiler); 0 if it cannot tell."""
    try:
        from torch.profiler import ProfilerActivity, profile

        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        return sum(1 for e in prof.events() if str(e.device_type).endswith("CUDA"))
    except Exception as exc:  # noqa: BLE001  (the profiler is optional: CUPTI may be missing)
        print(f"  kernel count skipped: {exc!r}", file=sys.stderr)
        return 0
