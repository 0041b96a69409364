"""Imports run one way: no module of the package imports one that imports it back (directly or
through others), counting the imports made inside functions (kept there for start-up speed) as
well as those at the top of a module. A cycle makes import order matter and hides which module
owns what (issue 21 found `chinvex.cli` importing, at its bottom, the command modules that
import `app` from it, and `chinvex.redaction` with its `structured`; both are gone. The
function-level cycle of `answer/base.py` building the generators that import it went too: the
registry is `answer/generators.py`)."""

from __future__ import annotations

import ast

from helpers import REPO_ROOT


def _graph() -> dict[str, set[str]]:
    modules: dict[str, set[str]] = {}
    for package, prefix in (("chinvex", "chinvex"), ("chinvex_adapters", "chinvex_adapters")):
        for path in (REPO_ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(REPO_ROOT / package).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            name = ".".join([prefix, *parts])
            imports: list[tuple[str, list[str]]] = []
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):  # function level too
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    imports.append((node.module, [alias.name for alias in node.names]))
                elif isinstance(node, ast.Import):
                    imports.extend((alias.name, []) for alias in node.names)
            modules[name] = imports  # type: ignore[assignment]
    graph: dict[str, set[str]] = {}
    for name, imports in modules.items():
        deps: set[str] = set()
        for module, names in imports:  # type: ignore[misc]
            submodules = [f"{module}.{n}" for n in names if f"{module}.{n}" in modules]
            # `from pkg import submodule` needs the submodule, not what pkg/__init__ imports
            deps.update(submodules if submodules and len(submodules) == len(names) else [module, *submodules])
        graph[name] = {d for d in deps if d in modules and d != name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_no_import_cycles():
    graph = _graph()
    assert len(graph) > 100
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_the_check_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_models_depend_on_nothing_above_them():
    graph = _graph()
    shared = {"chinvex.errors", "chinvex.ids", "chinvex.timeutil"}  # the small utilities below everything
    above = {dep for name, deps in graph.items() if name.startswith("chinvex.models") for dep in deps
             if not dep.startswith("chinvex.models") and dep not in shared}
    assert above == set(), above
