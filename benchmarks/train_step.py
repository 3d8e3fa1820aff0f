"""One training iteration of the measured GPT as Megatron runs it (``gpu_train_measure.py``): gradient
accumulation over the micro-batches, then fp16 mixed precision as Megatron does it, not torch.autocast.

The model's parameters are fp16, an fp32 master copy lives in the optimizer, fp16 gradients are accumulated
over the micro-batches, then each is copied to an fp32 master gradient (and the fp16 one freed, as Megatron's
``_copy_model_grads_to_main_grads``), unscaled, checked for inf/NaN (dynamic loss scale), Adam steps the fp32
masters, and they are copied back to the fp16 parameters. autocast + GradScaler would keep fp32 parameters and
recast them to fp16 in every forward (and recomputed forward): other kernels, other memory (4 + 4 bytes of fp32
weight and gradient per parameter) than the runs. Not as Megatron: PyTorch's Adam, not apex's FusedAdam.

bf16 parameters (``loss_scaling=False``) as Megatron runs bf16: no loss scale, so neither the unscale nor the
inf/NaN check (and its host sync); the gradients are copied to fp32, Adam steps the masters, they are copied back.
"""

from __future__ import annotations

INITIAL_LOSS_SCALE = 2.0**12  # dynamic: halved on an overflow (the step skipped); no overflow at this scale in practice


class MixedPrecisionAdam:
    """fp32 master weights + Adam for fp16 parameters, with a dynamic loss scale (module docstring)."""

    def __init__(self, torch, params, lr: float = 1e-4, loss_scaling: bool = True) -> None:
        self.torch = torch
        self.loss_scaling = loss_scaling
        self.params = [p for p in params if p.requires_grad]
        self.master = [p.detach().float().clone() for p in self.params]
        fast = {"fused": True} if self.params[0].is_cuda else {"foreach": True}
        self.adam = torch.optim.Adam(self.master, lr=lr, betas=(0.9, 0.95), eps=1e-8, **fast)
        self.scale = INITIAL_LOSS_SCALE if loss_scaling else 1.0
        self.skipped = 0

    def step(self) -> bool:
        """Copy gradients to fp32, unscale, Adam on the masters, masters → fp16 params; False if skipped."""
        torch = self.torch
        for p, m in zip(self.params, self.master):
            m.grad = p.grad.float()
            p.grad = None  # as Megatron: free the fp16 gradient once copied
        grads = [m.grad for m in self.master]
        finite = True
        if self.loss_scaling:
            torch._foreach_mul_(grads, 1.0 / self.scale)
            finite = bool(torch.stack(torch._foreach_norm(grads)).isfinite().all())  # one host sync, as Megatron's
        if finite:
            self.adam.step()
            with torch.no_grad():
                torch._foreach_copy_(self.params, self.master)
        else:
            self.scale /= 2
            self.skipped += 1
        for m in self.master:
            m.grad = None
        return finite

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None
        for m in self.master:
            m.grad = None


def iteration(torch, model, optimizer: MixedPrecisionAdam, tokens, labels):
    """One training iteration over the micro-batches in ``tokens`` [m, b, s]; returns the last loss (a tensor)."""
    m = tokens.shape[0]
    loss = None
    for i in range(m):
        loss = model(tokens[i], labels[i])
        (loss * (optimizer.scale / m)).backward()
    optimizer.step()
    return loss.detach()
