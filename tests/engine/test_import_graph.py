"""The engine's import graph, read from the source: no cycle, no Django, no board.

Every import counts: module-level ones, those under ``if TYPE_CHECKING:`` and those in
function bodies, so neither a type-only nor a lazy import can hide a cycle. An import
is an edge to the module it names: ``from .x import y`` is an edge to ``x.y`` when that
is a module, else to ``x`` (a package's ``__init__`` when ``x`` is a package). Parent
packages a Python import runs implicitly are not edges: every module would otherwise
depend on ``oqronkit/__init__.py``, the public API that imports them all.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENGINE = "oqronkit"
BOARD = frozenset({"oqronboard", "runs", "jobs", "definitions", "demo"})
# The only Django imports the engine may hold: lazy ones, for the methods that only mean
# something inside a Django project (add_on_commit, publish_on_commit).
DJANGO_ALLOWED = frozenset({("oqronkit.queues.queue", "Queue.add_on_commit"),
                            ("oqronkit.topics.topic", "Topic.publish_on_commit"),
                            ("oqronkit.webhooks.webhook", "Webhook.fire_on_commit"),
                            # The receiver's view decorator, a module the engine never imports.
                            ("oqronkit.webhooks.django_view", "verified_webhook.decorate.view"),
                            # The rate limiters' view decorator and middleware, likewise never imported.
                            ("oqronkit.ratelimit.django_view", "too_many_requests"),
                            ("oqronkit.ratelimit.django_view", "RateLimitMiddleware.__init__")})


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    line: int
    target: str  # the dotted name imported: a module, or a module's attribute
    scope: str  # the enclosing function or class ("" at module level, TYPE_CHECKING blocks included)


def module_names(root: Path = ROOT, package: str = ENGINE) -> dict[str, Path]:
    """Every module of ``package`` by dotted name (a package by its own name)."""
    found = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


class _Imports(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool) -> None:
        self.module = module
        self.found: list[Import] = []
        self._scope: list[str] = []
        self.package = module if is_package else module.rpartition(".")[0]

    def _nested(self, node: ast.AST, name: str) -> None:
        self._scope.append(name)
        self.generic_visit(node)
        self._scope.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._nested(node, node.name)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._nested(node, node.name)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._nested(node, node.name)

    def _add(self, node: ast.stmt, target: str) -> None:
        self.found.append(Import(self.module, node.lineno, target, ".".join(self._scope)))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        origin = node.module or ""
        if node.level:
            parts = self.package.split(".")
            anchor = ".".join(parts[: len(parts) - node.level + 1])
            origin = f"{anchor}.{origin}" if origin else anchor
        for alias in node.names:
            self._add(node, f"{origin}.{alias.name}")


def imports_of(source: str, module: str, *, is_package: bool = False) -> list[Import]:
    """Every import statement of ``source``, wherever it stands."""
    visitor = _Imports(module, is_package)
    visitor.visit(ast.parse(source))
    return visitor.found


def all_imports(modules: dict[str, Path]) -> list[Import]:
    return [found for name, path in modules.items()
            for found in imports_of(path.read_text(encoding="utf-8"), name, is_package=path.name == "__init__.py")]


def resolve(target: str, modules: dict[str, Path] | set[str]) -> str | None:
    """The module ``target`` names: itself, else its longest prefix that is a module."""
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target or None


def import_graph(imports: list[Import], modules: dict[str, Path] | set[str]) -> dict[str, dict[str, int]]:
    """``{module: {imported module: first line}}`` over the modules given."""
    graph: dict[str, dict[str, int]] = {name: {} for name in modules}
    for found in imports:
        target = resolve(found.target, modules)
        if target is not None and target != found.module:
            graph[found.module].setdefault(target, found.line)
    return graph


def strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            child = next(edges, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    return [c for c in strongly_connected(graph) if len(c) > 1]


def describe(component: list[str], graph: dict[str, dict[str, int]]) -> str:
    """One cycle through ``component``, edge by edge with the importing line."""
    members, path, seen = set(component), [component[0]], {component[0]}
    while True:
        here = path[-1]
        following = [t for t in graph[here] if t in members]
        closing = component[0] if component[0] in following else None
        step = closing or next((t for t in following if t not in seen), following[0])
        path.append(step)
        if step in seen:
            break
        seen.add(step)
    start = path.index(path[-1])
    loop = path[start:]
    return " -> ".join(f"{a} (line {graph[a][b]})" for a, b in pairwise(loop)) + f" -> {loop[-1]}"


def report(found: list[list[str]], graph: dict[str, dict[str, int]]) -> str:
    return "\n".join(f"cycle among {', '.join(c)}:\n  {describe(c, graph)}" for c in found)


MODULES = module_names()
IMPORTS = all_imports(MODULES)
GRAPH = import_graph(IMPORTS, MODULES)
CYCLES = cycles(GRAPH)


def test_the_engine_has_no_import_cycle() -> None:
    assert not CYCLES, report(CYCLES, GRAPH)


def test_the_engine_imports_django_nowhere_but_add_on_commit() -> None:
    """No module-level (or TYPE_CHECKING) Django import outside ``oqronkit.contrib``, the
    integration's corner; lazy ones only where listed."""
    django = [i for i in IMPORTS if i.target.partition(".")[0] == "django" and not in_contrib(i.module)]
    assert [f"{i.module}:{i.line} {i.target}" for i in django if not i.scope] == []
    assert {(i.module, i.scope) for i in django} == DJANGO_ALLOWED


def in_contrib(module: str) -> bool:
    return module == "oqronkit.contrib" or module.startswith("oqronkit.contrib.")


def test_nothing_outside_contrib_imports_contrib() -> None:
    """The engine stands without its integrations: contrib imports the engine, never the reverse."""
    found = [f"{i.module}:{i.line} imports {i.target}" for i in IMPORTS
             if in_contrib(i.target) and not in_contrib(i.module)]
    assert found == []


def test_the_engine_imports_no_board_module() -> None:
    found = [f"{i.module}:{i.line} imports {i.target}" for i in IMPORTS if i.target.partition(".")[0] in BOARD]
    assert found == []


def test_every_engine_module_is_read() -> None:
    assert len(MODULES) > 50 and {"oqronkit", "oqronkit.engine", "oqronkit.worker.process"} <= set(MODULES)
    assert "oqronkit.queues.queue" in GRAPH["oqronkit.engine"]  # guards the parse itself


def test_the_check_sees_every_kind_of_import() -> None:
    """Guards the test itself: TYPE_CHECKING, lazy, relative and ``from package import
    module`` imports all become edges, to the module they name."""
    modules = {"p", "p.a", "p.b", "p.c", "p.sub", "p.sub.d"}
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from .b import Thing\n"
        "def later():\n    from .c import helper\n"
        "from . import sub\n"
        "from .sub import d, name_in_init\n"
        "import p.sub.d\n"
    )
    found = imports_of(source, "p.a")
    assert [(i.target, i.scope) for i in found] == [
        ("typing.TYPE_CHECKING", ""), ("p.b.Thing", ""), ("p.c.helper", "later"), ("p.sub", ""),
        ("p.sub.d", ""), ("p.sub.name_in_init", ""), ("p.sub.d", ""),
    ]
    assert import_graph(found, modules)["p.a"] == {"p.b": 3, "p.c": 5, "p.sub": 6, "p.sub.d": 7}
    assert [i.target for i in imports_of("from .. import a\n", "p.sub", is_package=True)] == ["p.a"]


def test_the_check_finds_and_prints_a_cycle() -> None:
    graph = {"p.a": {"p.b": 3}, "p.b": {"p.c": 4}, "p.c": {"p.a": 9, "p.d": 2}, "p.d": {}}
    assert cycles(graph) == [["p.a", "p.b", "p.c"]]
    assert describe(["p.a", "p.b", "p.c"], graph) == "p.a (line 3) -> p.b (line 4) -> p.c (line 9) -> p.a"
    assert cycles({"p.a": {"p.b": 1}, "p.b": {}}) == []


def test_the_graph_finder_needs_no_recursion() -> None:
    chain = {f"m{i}": {f"m{i + 1}": 1} for i in range(sys.getrecursionlimit() * 2)}
    chain[f"m{len(chain)}"] = {"m0": 1}
    assert len(cycles(chain)) == 1
