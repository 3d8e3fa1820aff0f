"""``plan``'s run is split over modules (flags, cluster, profile, result, the SPP and PipeDream runs) that import
one way: the run (``plan_run``) calls the others, and none of them imports it back, so each reads alone, top to
bottom. The record both runs build, ``PlanRun``, lives below them in ``plan_result``."""

from import_graph import ROOT, imports_of

PLAN_MODULES = ("plan_flags", "plan_cluster", "plan_profile", "plan_result", "plan_spp", "plan_pipedream")


def _plan_imports(module: str) -> set[str]:
    return {name.split(".")[1] for name in imports_of(ROOT / f"{module}.py")
            if name.startswith("archsim.plan_")}


def test_no_part_of_the_plan_run_imports_the_run():
    assert {module: sorted(_plan_imports(module)) for module in PLAN_MODULES
            if "plan_run" in _plan_imports(module)} == {}


def test_the_plan_modules_import_downward_only():
    """Each imports only modules before it in PLAN_MODULES' order (flags first, the two runs last)."""
    later = {module: [m for m in _plan_imports(module) if m in PLAN_MODULES
                      and PLAN_MODULES.index(m) >= PLAN_MODULES.index(module)] for module in PLAN_MODULES}
    assert {module: names for module, names in later.items() if names} == {}

