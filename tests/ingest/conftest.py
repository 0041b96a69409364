"""Fixtures shared by the ingest tests: a small repository, and the helpers that ingest a
context and read what its index holds (hybrid.db rows, Chroma ids)."""

from __future__ import annotations

import sqlite3
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import assert_no_traceback, run_cli_in_process


def _db(home: Path, context: str) -> sqlite3.Connection:
    conn = sqlite3.connect(home / "indexes" / context / "hybrid.db")
    conn.row_factory = sqlite3.Row
    return conn


def _chunk_ids(home: Path, context: str) -> set[str]:
    with _db(home, context) as conn:
        return {r[0] for r in conn.execute("SELECT chunk_id FROM chunks")}


def _vector_ids(home: Path, context: str) -> set[str]:
    import chromadb
    from chromadb.config import Settings

    with _db(home, context) as conn:
        name = conn.execute("SELECT value FROM meta WHERE key='chroma_collection'").fetchone()[0]
    client = chromadb.PersistentClient(path=str(home / "indexes" / context / "chroma"),
                                       settings=Settings(anonymized_telemetry=False))
    try:
        return set(client.get_collection(name).get(include=[])["ids"])
    finally:
        client.close()  # the next command reads the store from its files, not through this client


def _ingest(context: str, *extra: str):
    result = run_cli_in_process("ingest", "--context", context, "--json", *extra)
    assert_no_traceback(result)
    return result


def _write_functions(path: Path, count: int, changed: int | None = None) -> None:
    parts = ['"""A module with many independent functions."""\n']
    for i in range(count):
        body = f"return value * {i} + {i * 7}" if i != changed else "return sum(range(value)) - 42  # edited"
        parts.append(textwrap.dedent(f'''
            def compute_metric_{i}(value: int) -> int:
                """Compute metric number {i} for the quarterly {['sales', 'churn', 'growth', 'margin'][i % 4]} report.

                It exists so that each function is its own chunk in this test; the text is long
                enough that neighbouring functions are not merged into one chunk by the chunker,
                which merges small siblings up to the embedder's window.
                """
                adjusted = value + {i}
                if adjusted > {i * 13}:
                    adjusted -= {i}
                {body}
            '''))
    path.write_text("".join(parts))

@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "hello.py").write_text("def greet(name):\n    return f'hello {name}'\n")
    (root / "README.md").write_text("# Demo\n\nThe frobnicator turns widgets into gadgets.\n")
    return root


@pytest.fixture
def index_db() -> Callable[[Path, str], sqlite3.Connection]:
    """(chinvex home, context) -> a connection to the context's hybrid.db."""
    return _db


@pytest.fixture
def chunk_ids() -> Callable[[Path, str], set[str]]:
    """(chinvex home, context) -> the chunk ids in hybrid.db."""
    return _chunk_ids


@pytest.fixture
def vector_ids() -> Callable[[Path, str], set[str]]:
    """(chinvex home, context) -> the ids of the vectors in its Chroma store."""
    return _vector_ids


@pytest.fixture
def ingest_json() -> Callable[..., object]:
    """(context, *extra arguments) -> the in-process result of `chinvex ingest --json`."""
    return _ingest


@pytest.fixture
def write_functions() -> Callable[..., None]:
    """(path, count, changed=None): a module of `count` functions, each its own chunk."""
    return _write_functions
