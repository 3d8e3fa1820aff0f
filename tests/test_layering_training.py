"""The training package's own layering: no import cycle, the walk of ``archsim train`` goes down, and the
iteration's energy sits below the search's objectives (docs/architecture.md, "Two walks")."""

from import_graph import ROOT, imports_of, module_name

# `archsim train` walks down: command → run (the iteration) → stage split (the plan) → stages (per-stage
# F/I/W, hops) → pieces (ops → seconds, iteration.py) → the op lists and the machine → devices. A module
# imports only modules after it here.
TRAIN_WALK = ("archsim.training.run", "archsim.training.stage_split", "archsim.training.stages",
              "archsim.training.iteration", "archsim.training.memory", "archsim.training.machine",
              "archsim.training.layer_ops", "archsim.training.parallel")


def training_imports() -> dict[str, set[str]]:
    """Each module of ``archsim.training`` → the modules of ``archsim.training`` it imports, anywhere in it."""
    paths = {module_name(p): p for p in sorted((ROOT / "training").glob("*.py"))}
    return {name: {i for i in imports_of(path) if i in paths and i != name} for name, path in paths.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import cycle of ``graph`` found by a depth-first walk (each as the path that closes it)."""
    found, state = [], {}

    def walk(node: str, path: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                walk(nxt, [*path, nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            walk(node, [node])
    return found


def test_training_modules_never_climb_back():
    """No module of the training package imports one that (through others) imports it back."""
    assert not cycles(training_imports())


def test_cycles_are_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_train_walk_goes_down():
    graph = training_imports()
    up = [f"{low} imports {high}" for k, low in enumerate(TRAIN_WALK) for high in TRAIN_WALK[:k + 1]
          if high in graph.get(low, set())]
    assert not up, "\n".join(up)


# The iteration's energy is priced below the search's objectives: the objectives (and the search that ranks
# by them, with its coster and rows) import the energy, never the other way; both take the GPUs' board power
# from rates.
SEARCH = ("archsim.training.search", "archsim.training.search_cost", "archsim.training.search_row_maker")
BELOW = {"archsim.training.energy": ("archsim.training.objectives", *SEARCH),
         "archsim.training.rates": ("archsim.training.energy", "archsim.training.objectives", *SEARCH)}


def test_energy_does_not_import_the_objectives():
    graph = training_imports()
    up = [f"{low} imports {high}" for low, highs in BELOW.items() for high in highs if high in graph[low]]
    assert not up, "\n".join(up)


