"""An embedded store's index loaded ahead for a cold search (chinvex.storage.chroma_warm), on a
real Chroma store written by a real ingest: handed over only at the gate token it was loaded
at, and never for a store the process could only read from a copy."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import run_cli_in_process

from chinvex.storage import chroma_warm


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> tuple[str, str]:
    root = tmp_path_factory.mktemp("warm")
    notes = root / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Otter\n\nThe otter keeps a pebble near the river bank.\n" * 20)
    env = {"CHINVEX_HOME": str(root / "home")}
    assert run_cli_in_process("context", "create", "W", "--note-root", str(notes), env=env).code == 0
    assert run_cli_in_process("ingest", "--context", "W", env=env).code == 0
    index = root / "home" / "indexes" / "W"
    return str(index / "chroma"), str(index / "hybrid.db")


def _token(folder: str) -> bytes:
    from chinvex.storage.vector_gate import StoreGate

    gate = StoreGate(Path(folder))
    try:
        gate.acquire(exclusive=False, timeout=5)
        try:
            return gate.token()
        finally:
            gate.release()
    finally:
        gate.close()


def test_a_warmed_reader_is_handed_over_once_at_its_token(store):
    folder, sqlite_path = store
    name, dimension, signature = chroma_warm.store_meta(sqlite_path)
    assert signature is not None  # the ingest signed the vector files
    assert name.startswith("chinvex_") and dimension == 384
    chroma_warm.warm(folder, sqlite_path)
    reader = chroma_warm.take(folder, _token(folder))
    assert reader is not None
    found = reader.get_collection(name).query([[1.0] + [0.0] * 383], 3)
    assert 1 <= len(found["ids"][0]) <= 3
    assert chroma_warm.take(folder, _token(folder)) is None  # handed out once


def test_a_write_after_the_load_makes_the_reader_stale(store):
    from chinvex.storage.vector_gate import StoreGate

    folder, sqlite_path = store
    chroma_warm.warm(folder, sqlite_path)
    gate = StoreGate(Path(folder))
    try:
        gate.acquire(exclusive=True, timeout=5)
        gate.bump()  # what a writer does before writing
        gate.release()
    finally:
        gate.close()
    assert chroma_warm.take(folder, _token(folder)) is None


def test_take_waits_for_a_load_under_way(store):
    import threading

    folder, sqlite_path = store
    chroma_warm.begin(folder)
    threading.Timer(0.2, chroma_warm.warm, args=(folder, sqlite_path)).start()
    assert chroma_warm.take(folder, _token(folder), wait=30) is not None


def test_nothing_is_loaded_for_a_missing_index_or_store(store, tmp_path):
    folder, sqlite_path = store
    chroma_warm.warm(folder, str(tmp_path / "missing.db"))
    chroma_warm.warm(str(tmp_path / "no-store"), sqlite_path)
    assert not chroma_warm._WARMED and not chroma_warm._PENDING
    assert chroma_warm.take(folder, _token(folder), wait=1) is None


def test_nothing_is_loaded_for_a_read_only_store(store, tmp_path):
    import shutil

    folder, sqlite_path = store
    copy = tmp_path / "chroma"
    shutil.copytree(folder, copy)
    database = copy / "chroma.sqlite3"
    database.chmod(0o444)
    try:
        if os.access(database, os.W_OK):
            pytest.skip("running as a user who may write any file")
        chroma_warm.warm(str(copy), sqlite_path)
        assert chroma_warm.take(str(copy), b"", wait=1) is None and not chroma_warm._WARMED
    finally:
        database.chmod(0o644)


def test_vector_files_changed_outside_chinvex_are_not_warmed(tmp_path, store):
    """A store whose segment files differ from the signature the last ingest recorded is left
    for the search to open on its own thread: a failing Chroma call on the warm-up thread would
    import chromadb's exception types while other threads import, which can abort the process."""
    import shutil

    folder, sqlite_path = store
    copy = tmp_path / "chroma"
    shutil.copytree(folder, copy)
    chroma_warm.warm(str(copy), sqlite_path)  # the copy's files have other inodes and times
    assert chroma_warm.take(str(copy), _token(str(copy))) is None
    chroma_warm.warm(folder, sqlite_path)  # the original is still warmed
    assert chroma_warm.take(folder, _token(folder)) is not None
