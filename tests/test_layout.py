"""The package's layout: no import cycle among dsr's modules, and the families' sub-packages."""

from __future__ import annotations

import ast
import pathlib

import dsr

ROOT = pathlib.Path(dsr.__file__).parent


def _module(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _target(importer: str, is_pkg: bool, level: int, name: str | None) -> str:
    base = importer.split(".") if is_pkg else importer.split(".")[:-1]
    base = base[: len(base) - (level - 1)] if level else []
    return ".".join(base + ([name] if name else []))


def import_graph() -> dict[str, set[str]]:
    """Module → the dsr modules it imports, at module level or inside functions (a deferred
    import is still an edge: it only hides a cycle)."""
    files = {_module(p): p for p in ROOT.rglob("*.py")}
    graph = {m: set() for m in files}
    for mod, path in files.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                tgt = _target(mod, is_pkg, node.level, node.module) if node.level else node.module
                for a in node.names:  # `from . import _x` imports a module
                    sub = f"{tgt}.{a.name}"
                    graph[mod].add(sub if sub in files else tgt)
            elif isinstance(node, ast.Import):
                graph[mod].update(a.name for a in node.names)
        graph[mod] = {t for t in graph[mod] if t in files and t != mod}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (as a list of modules), or None. A package's `__init__` importing its
    own sub-modules is not a cycle unless a sub-module imports the package back."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                return stack[stack.index(t):] + [t]
            if t not in state and (c := visit(t)):
                return c
        state[m] = 2
        stack.pop()
        return None

    for m in sorted(graph):
        if m not in state and (c := visit(m)):
            return c
    return None


def test_no_import_cycle_in_dsr():
    graph = import_graph()
    assert len(graph) > 50 and "dsr._solvers._resolve" in graph["dsr"]
    assert find_cycle(graph) is None, " → ".join(find_cycle(graph))


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_families_are_sub_packages():
    solvers = {p.stem for p in (ROOT / "_solvers").glob("*.py")}
    training = {p.stem for p in (ROOT / "_training").glob("*.py")}
    assert {"_base", "_sequential", "_deer", "_resolve", "_scan"} <= solvers
    assert {"_fit", "_setup", "_trainer", "_step", "_checkpoint", "_history"} <= training
    flat = {p.stem for p in ROOT.glob("*.py")} - {"__init__"}
    assert not flat & (solvers | training), flat & (solvers | training)


def test_the_documented_tree_lists_every_module():
    """docs/internals.md's tree names every module of `dsr/` under its package, and nothing
    that is gone."""
    text = (ROOT.parent / "docs" / "internals.md").read_text()
    tree = text[text.index("## The tree"):].split("```")[1]
    listed, stack = set(), []
    for line in tree.splitlines():
        name = line.strip().split(" ")[0]
        if not name.endswith((".py", "/")):
            continue
        depth = (len(line) - len(line.lstrip())) // 2
        stack[depth:] = [name.rstrip("/")]
        if name.endswith(".py"):
            listed.add("/".join(stack))
    listed = {p for p in listed if p.startswith("dsr/")}  # data_gen's part follows dsr's
    actual = {str(p.relative_to(ROOT.parent)) for p in ROOT.rglob("*.py")
              if p.name != "__init__.py" or p.parent == ROOT}
    assert actual - listed == set(), "not in the tree: " + ", ".join(sorted(actual - listed))
    assert listed - actual == set(), "gone: " + ", ".join(sorted(listed - actual))


def test_fit_arguments_are_fits_keyword_arguments():
    """`FitArguments` (what `fit` hands its pipeline, typed and frozen) has exactly `fit`'s
    keyword arguments, with the same defaults."""
    import dataclasses
    import inspect

    from dsr._training._arguments import FitArguments

    params = inspect.signature(dsr.fit).parameters
    kw = {k: p.default for k, p in params.items() if p.kind is p.KEYWORD_ONLY}
    fields = {f.name: f.default for f in dataclasses.fields(FitArguments)}
    assert fields == kw
    a = FitArguments()
    try:
        a.steps = 3
    except dataclasses.FrozenInstanceError:
        pass
    else:
        raise AssertionError("FitArguments is not frozen")
    assert a.replace(steps=3).steps == 3 and a.steps == 1000
