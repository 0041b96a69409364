"""Transactions on hybrid.db, so that no module outside storage/ spells BEGIN or COMMIT.

Connections are opened with `isolation_level=None` (autocommit), so every multi-statement write
opens its own transaction. `write` takes the write lock at once (BEGIN IMMEDIATE), which keeps
two writers from both reading and then one failing to upgrade; `read` pins one snapshot across
several queries (a search reads chunks, documents and FTS rows that must agree).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def write(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE … COMMIT, rolled back on any exception (which is re-raised)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


@contextmanager
def read(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One snapshot for several reads; a no-op inside a transaction already open."""
    if conn.in_transaction:
        yield conn
        return
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")


def begin_write(conn: sqlite3.Connection) -> None:
    """For code whose transaction spans calls that cannot sit inside one `with` block."""
    conn.execute("BEGIN IMMEDIATE")


def begin_read(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN")


def commit(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        conn.execute("COMMIT")


def rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        conn.execute("ROLLBACK")
