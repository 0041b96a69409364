"""kit.sqlite: every agent's SQLite store opened read-only, with one-line errors (the agents'
tests cover a locked database and one read from a copy)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from chinvex.models.sources import SourceError, UnrecognisedSource
from chinvex_adapters.kit.sqlite import columns, read_only, tables


def test_reads_without_writing_and_checks_the_schema(tmp_path: Path):
    path = tmp_path / "store.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE sessions (id TEXT, title TEXT)")
        conn.execute("INSERT INTO sessions VALUES ('s1', 'caf\xe9')")
    before = path.stat().st_mtime_ns
    with read_only(path, "a test store") as conn:
        assert tables(conn) == {"sessions"} and columns(conn, "sessions") == {"id", "title"}
        assert conn.execute("SELECT title FROM sessions").fetchone() == ("caf\xe9",)
        with pytest.raises(sqlite3.OperationalError):
            conn.execute("INSERT INTO sessions VALUES ('s2', 'x')")
    assert path.stat().st_mtime_ns == before
    with pytest.raises(UnrecognisedSource, match=r"store\.db: not a test store \(no messages table\)"):
        with read_only(path, "a test store", check=lambda c: "no messages table"):
            pass


def test_not_sqlite_missing_and_damaged(tmp_path: Path):
    text = tmp_path / "notes.db"
    text.write_text("just text")
    with pytest.raises(UnrecognisedSource, match="not a SQLite database"):
        with read_only(text, "a test store"):
            pass
    with pytest.raises(SourceError, match="disappeared"):
        with read_only(tmp_path / "gone.db", "a test store"):
            pass
    damaged = tmp_path / "damaged.db"
    with sqlite3.connect(damaged) as conn:
        conn.execute("CREATE TABLE t (x)")
        conn.executemany("INSERT INTO t VALUES (?)", [("y" * 500,)] * 200)
    data = bytearray(damaged.read_bytes())
    data[4096:8192] = b"\xff" * 4096
    damaged.write_bytes(bytes(data))
    with pytest.raises(SourceError) as info:  # one line, whichever of the two it is
        with read_only(damaged, "a test store") as conn:
            conn.execute("SELECT count(*) FROM t").fetchall()
    assert "\n" not in str(info.value) and str(damaged) in str(info.value)
