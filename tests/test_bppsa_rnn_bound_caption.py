"""The BPPSA RNN page's first caption states the speedup's true bound at each p, computed: as T grows, BP's T − 1
steps of c_BP cycles against the scan's ≈ T matrix–matrix and ≈ T matrix–vector products (Eq. 7's work) of B samples,
in waves of p, so the speedup tends to p·c_BP / (B·(c_mm + c_mv)) — 29.1× at p = 1024 with the default H = 20,
B = 16 on a 32×32 ws array (docs/papers/bppsa.md). Failed before: the caption said "bounded by p" (1024)."""

from __future__ import annotations

import math

import pytest

import archsim.bppsa.report as page
from archsim.array.analytic import gemm_cost
from archsim.array.config import ArrayConfig
from archsim.bppsa.rnn_cost import rnn_backward
from archsim.bppsa_run import rnn_page, rnn_study

HIDDEN, BATCH = 20, 16


def _cycles(m: int, k: int, n: int) -> int:
    return int(gemm_cost(m, k, n, 32, 32, "ws").scalar("cycles"))


def _bound(p: int) -> float:
    """The limit by hand: one BP step multiplies ⌈B/min(p, B)⌉ rows by H×H; the scan's products are H×H·H×H and
    1×H·H×H."""
    bp_step = _cycles(math.ceil(BATCH / min(p, BATCH)), HIDDEN, HIDDEN)
    return p * bp_step / (BATCH * (_cycles(HIDDEN, HIDDEN, HIDDEN) + _cycles(1, HIDDEN, HIDDEN)))


@pytest.mark.parametrize("p", [64, 1024])
def test_the_formula_is_the_models_limit(p):
    # the study's own speedup at a very long sequence reaches the formula from below (0.1%)
    far = rnn_backward(10**6, p, hidden=HIDDEN, batch=BATCH, array=ArrayConfig()).speedup
    assert far < _bound(p) and far == pytest.approx(_bound(p), rel=1e-3)


def test_the_caption_states_each_ps_bound_not_p(monkeypatch):
    captions = []
    monkeypatch.setattr(page, "write_page", lambda path, title, sections: captions.append(sections[0][1]))
    array = ArrayConfig()
    done = rnn_study([10], [4, 64, 1024], hidden=HIDDEN, batch=BATCH, array=array, dtype=None)
    rnn_page("p.html", done, seq_lens=[10], processors=[4, 64, 1024], hidden=HIDDEN, batch=BATCH, array=array,
             dtype=None)
    caption = captions[0]
    assert "bounded by p" not in caption
    assert round(_bound(1024), 1) == 29.1  # docs/papers/bppsa.md's "the model's limit 29.1×"
    for p in (4, 64, 1024):
        assert f"{_bound(p):.3g}× at p = {p}" in caption, caption
