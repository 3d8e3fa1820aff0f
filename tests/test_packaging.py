"""Every archsim subpackage is listed in pyproject.toml, so a wheel install is complete."""

import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_pyproject_lists_every_subpackage():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "archsim").rglob("__init__.py")}
    assert found <= listed, sorted(found - listed)
    # and every listed one is a folder: a package moved away without the list following breaks
    # `pip install` on a fresh clone (an editable install made before the move hides it)
    mapped = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"].get("package-dir", {})
    missing = sorted(name for name in listed if not (ROOT / mapped.get(name, Path(*name.split(".")))).is_dir())
    assert missing == [], f"listed in pyproject.toml, no such folder: {missing}"


def run_pytest_without(package: str, *args: str, **env: str):
    """pytest in a fresh interpreter where ``import package`` fails as if it were not installed."""
    import os
    import subprocess
    import sys

    code = (f"import sys; sys.modules[{package!r}] = None; import pytest; "
            "sys.exit(pytest.main(sys.argv[1:]))")
    environment = {k: v for k, v in os.environ.items() if k != "ARCHSIM_TESTS_WITHOUT"} | env
    return subprocess.run([sys.executable, "-c", code, "-q", "-p", "no:cacheprovider", *args], cwd=ROOT,
                          env=environment, capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.long
@pytest.mark.parametrize("package, module, lost", [
    ("scalesim", "tests/test_scalesim_exact.py", "the SCALE-Sim comparisons"),
    ("torch", "tests/test_torch_import.py", "the torch.distributed.pipelining and from_torch checks"),
])
def test_a_missing_reference_package_fails_the_run_instead_of_skipping(package, module, lost):
    """Without a reference package its comparisons would all skip and the run pass: it must fail, loudly."""
    done = run_pytest_without(package, module)
    assert done.returncode == 4, done.stdout[-500:] + done.stderr[-500:]
    assert f"{package}: {lost}" in done.stderr and f"ARCHSIM_TESTS_WITHOUT={package}" in done.stderr
    # Asked for explicitly, the same run skips the module (exit 5: no test left to run).
    done = run_pytest_without(package, module, ARCHSIM_TESTS_WITHOUT=f"{package},unrelated")
    assert done.returncode == 5 and "1 skipped" in done.stdout, done.stdout[-500:] + done.stderr[-500:]
