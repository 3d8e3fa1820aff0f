"""A device sweep's report says what its joules hold: the energy model's dynamic joules alone, or with the static
power per chip the spec assumes. Before, a spec's ``static_watts = 150`` moved every point's energy (150 W × 8 chips
× the iteration's seconds) and the report's caption named batch, recompute, dtype and attention but not it."""

from __future__ import annotations

import re

import pytest
from test_robustness import write

from archsim.cli import main

SPEC = """[sweep]
name = "one"
model = "gpt2"
device = "tpu_v4_like"
chips = [4]
global_batch = 16
dtype = "bf16"
attention = "standard"
{static}"""


def _caption(tmp_path, static: str) -> str:
    spec = write(tmp_path / "one.toml", SPEC.format(static=static))
    html = tmp_path / "one.html"
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--quiet", "--report", str(html)]) == 0
    page = html.read_text(encoding="utf-8")
    return re.sub(r"\s+", " ", page[page.index("gpt2 on TPU v4-like: global batch"):][:600])


@pytest.mark.long
@pytest.mark.parametrize(("static", "words"), [
    ("static_watts = 150\n", "plus 150 W of static power per chip"),
    ("", "dynamic joules (no static power)"),
])
def test_the_caption_says_what_the_joules_hold(tmp_path, capsys, static, words):
    caption = _caption(tmp_path, static)
    assert words in caption.split("Reproduce")[0], caption
