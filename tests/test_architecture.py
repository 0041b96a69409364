"""The house rules, checked on the source: SQL lives in storage/, the engine never reaches up into
the front ends (CLI, MCP server, web UI), the front ends open no index and build no searcher of
their own (they go through `chinvex.api`), the package root holds only entry points and small
shared utilities, and no module or function grows past the size where it stops being readable.

Import cycles (function-level imports included) are checked in test_import_graph.py."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from helpers import REPO_ROOT

PACKAGE = REPO_ROOT / "chinvex"
FRONT_ENDS = ("cli", "mcp", "web")
ROOT_FILES = {  # entry points and the small utilities everything else may import
    "__init__.py", "__main__.py", "api.py", "entry.py",
    "errors.py", "ids.py", "paths.py", "timeutil.py", "jsonio.py", "fmt.py", "plugins.py", "locking.py",
}
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
SIZE_ROOTS = ("chinvex", "chinvex_adapters", "tests", "bench", "scripts")

# A statement, not prose that happens to start with a keyword ("Update the ..." is not SQL).
SQL = re.compile(
    r"^\s*(SELECT\b[\s\S]*\bFROM\b|INSERT\s+(OR\s+[A-Z]+\s+)?INTO\b|REPLACE\s+INTO\b|UPDATE\s+\S+\s+SET\b"
    r"|DELETE\s+FROM\b|CREATE\s+(VIRTUAL\s+|TEMP\s+|TEMPORARY\s+|UNIQUE\s+)?(TABLE|INDEX|TRIGGER|VIEW)\b"
    r"|DROP\s+(TABLE|INDEX|TRIGGER|VIEW)\b|ALTER\s+TABLE\b|PRAGMA\s+[a-z_]+|WITH\s+(RECURSIVE\s+)?\w+\s*(\(|AS\b)"
    r"|(BEGIN(\s+IMMEDIATE|\s+DEFERRED|\s+EXCLUSIVE)?|COMMIT|ROLLBACK|VACUUM)\s*;?\s*$|SAVEPOINT\s|RELEASE\s)"
)
EXECUTE = {"execute", "executemany", "executescript"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append((node.lineno, node.value))
        elif isinstance(node, ast.JoinedStr):  # f-strings: placeholders stand in as a name
            text = "".join(v.value if isinstance(v, ast.Constant) else "x" for v in node.values)
            found.append((node.lineno, text))
    return found


def sql_outside_storage(source: str) -> list[str]:
    """Lines of `source` that run SQL or spell a statement."""
    tree = ast.parse(source)
    hits = [f"{line}: {text.strip()[:50]!r}" for line, text in _strings(tree) if SQL.match(text)]
    hits += [f"{node.lineno}: .{node.func.attr}(" for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in EXECUTE]
    return hits


def _imports(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):  # function-level imports too
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def _is_front_end(module: str) -> bool:
    return any(module == f"chinvex.{f}" or module.startswith(f"chinvex.{f}.") for f in FRONT_ENDS)


def test_sql_lives_in_storage():
    offenders = {}
    for path in _package_files():
        if path.is_relative_to(PACKAGE / "storage"):
            continue
        hits = sql_outside_storage(path.read_text(encoding="utf-8"))
        if hits:
            offenders[str(path.relative_to(REPO_ROOT))] = hits
    assert offenders == {}, offenders


def test_the_sql_check_finds_sql_and_ignores_prose():
    assert sql_outside_storage('conn.execute("SELECT 1 FROM chunks")')
    assert sql_outside_storage('Q = f"DELETE FROM {table} WHERE id=?"')
    assert sql_outside_storage('x = "BEGIN IMMEDIATE"')
    assert sql_outside_storage('cur.executemany(q, rows)')
    assert not sql_outside_storage('"""Update the summary, then select from the results."""')
    assert not sql_outside_storage('msg = "Begin by running chinvex ingest"')


def test_the_engine_never_imports_a_front_end():
    offenders = {}
    for path in _package_files():
        module = _module_name(path)
        if _is_front_end(module) or module.startswith("chinvex.dev") or module in ("chinvex", "chinvex.api", "chinvex.entry", "chinvex.__main__"):
            continue
        up = sorted(name for name in _imports(ast.parse(path.read_text(encoding="utf-8"))) if _is_front_end(name))
        if up:
            offenders[module] = up
    assert offenders == {}, offenders


def test_front_ends_open_no_index_and_build_no_searcher():
    """They go through chinvex.api (Context, open_index, searcher) for both."""
    offenders = {}
    for path in _package_files():
        module = _module_name(path)
        if not _is_front_end(module):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        hits = sorted(name for name in _imports(tree) if name == "chinvex.storage.db.connect")
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("Searcher", "SharedSearcher") or (
                    name == "connect" and isinstance(func, ast.Attribute)
                    and isinstance(func.value, ast.Name) and func.value.id in ("db", "sqlite3")):
                hits.append(f"{node.lineno}: {name}(")
        if hits:
            offenders[module] = hits
    assert offenders == {}, offenders


def test_the_package_root_holds_only_entry_points_and_small_utilities():
    assert {p.name for p in PACKAGE.glob("*.py")} <= ROOT_FILES


def oversized(source: str) -> list[str]:
    """Why `source` is too big: its length, and each function longer than the limit."""
    problems = []
    lines = source.count("\n") + (0 if source.endswith("\n") or not source else 1)
    if lines > MAX_MODULE_LINES:
        problems.append(f"{lines} lines")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                problems.append(f"{node.name}() at line {node.lineno}: {length} lines")
    return problems


def _sized_files() -> list[Path]:
    files = []
    for root in SIZE_ROOTS:
        for path in (REPO_ROOT / root).rglob("*.py"):
            rel = path.relative_to(REPO_ROOT).parts
            if "out" in rel[:2] or ".venv" in rel or "fixtures" in rel:  # bench output, data files
                continue
            files.append(path)
    return files


def test_no_module_or_function_too_long():
    offenders = {}
    for path in _sized_files():
        problems = oversized(path.read_text(encoding="utf-8"))
        if problems:
            offenders[str(path.relative_to(REPO_ROOT))] = problems
    assert offenders == {}, offenders


def test_the_size_check_finds_long_functions():
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    assert oversized(f"def f():\n{body}\n") == [f"f() at line 1: {MAX_FUNCTION_LINES + 1} lines"]
    assert oversized("x = 1\n" * (MAX_MODULE_LINES + 1)) == [f"{MAX_MODULE_LINES + 1} lines"]
    assert oversized("def f():\n    return 1\n") == []
