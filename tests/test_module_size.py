"""Every library module stays at or under 400 lines (small modules with one job, docs/architecture.md): a module
that outgrows it is split by concept, as ``commands/network_args.py`` left ``commands/common.py``."""

from pathlib import Path

LIMIT = 400
LIBRARY = Path(__file__).resolve().parents[1] / "archsim"


def test_no_library_module_passes_400_lines():
    over = {str(p.relative_to(LIBRARY)): n for p in sorted(LIBRARY.rglob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > LIMIT}
    assert not over, f"modules over {LIMIT} lines: {over}"
