"""chinvex.embedding.heavy_imports: large stacks import one thread at a time, and what has finished
importing is free for every other thread (a cold search overlaps chromadb's import with the
model load only because of the second property)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from chinvex.embedding import heavy_imports


@contextmanager
def _lock_held_elsewhere() -> Iterator[None]:
    """Another thread holds the import lock for the block, as chromadb's ~0.7 s import would."""
    holding = threading.Event()
    release = threading.Event()

    def slow_import() -> None:
        with heavy_imports._IMPORT_LOCK:
            holding.set()
            release.wait(10)

    other = threading.Thread(target=slow_import)
    other.start()
    try:
        assert holding.wait(10)
        yield
    finally:
        release.set()
        other.join()


def _in_fresh_interpreter(script: str) -> None:
    """Run `script` where nothing is imported yet; it prints "ok" when its assertions held."""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_a_loaded_module_does_not_wait_for_an_import_in_progress():
    heavy_imports.load("json")  # stands for numpy: already imported by the prefetch
    with _lock_held_elsewhere():
        started = time.monotonic()
        heavy_imports.load("json")
        assert time.monotonic() - started < 1.0


def test_a_module_not_yet_loaded_waits_for_the_import_in_progress():
    done = threading.Event()

    def load_new() -> None:
        heavy_imports.load("colorsys")
        done.set()

    loader = threading.Thread(target=load_new)
    try:
        with _lock_held_elsewhere():
            loader.start()
            assert not done.wait(0.3)  # serialised behind the import in progress
    finally:
        loader.join(10)
    assert done.is_set()


def test_a_missing_module_raises_import_error_and_is_not_remembered():
    with pytest.raises(ImportError):
        heavy_imports.load("chinvex_no_such_module")
    assert "chinvex_no_such_module" not in heavy_imports._loaded


def test_the_real_stacks_import_cleanly_from_several_threads_at_once():
    """Four threads released together, importing what a cold search's threads import (chromadb
    on one, the model's stack on others), in a fresh interpreter where nothing is imported yet.
    With the lock replaced by a no-op this fails nearly every run here with "cannot import name
    'NDArray' from partially initialized module 'numpy._typing'": the race behind a cold search
    that once silently lost its vector leg."""
    script = r"""
import threading
from chinvex.embedding import heavy_imports

errors = []
barrier = threading.Barrier(4)

def run(names):
    try:
        barrier.wait()
        heavy_imports.load(*names)
        import numpy, onnxruntime, tokenizers
        numpy.asarray([1.0]) @ numpy.asarray([1.0])
        onnxruntime.SessionOptions()
    except Exception as exc:
        errors.append(repr(exc))

threads = [threading.Thread(target=run, args=(names,)) for names in
           (("chromadb",), ("onnxruntime", "numpy"), ("numpy", "tokenizers"), ("chromadb", "onnxruntime"))]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert not errors, errors
print("ok")
"""
    for _ in range(2):
        _in_fresh_interpreter(script)


def test_prefetch_leaves_the_embedder_stack_imported_and_starts_chromadb():
    script = r"""
import sys, time
from chinvex.embedding import heavy_imports

heavy_imports.prefetch_search_stack(embedder=True)
assert {"numpy", "onnxruntime", "tokenizers"} <= set(sys.modules), "embedder stack not imported"
deadline = time.monotonic() + 60
while "chromadb" not in heavy_imports._loaded and time.monotonic() < deadline:
    time.sleep(0.05)
assert "chromadb" in heavy_imports._loaded, "chromadb was not imported in the background"
print("ok")
"""
    _in_fresh_interpreter(script)


def test_prefetch_without_the_builtin_embedder_skips_its_stack():
    script = r"""
import sys
from chinvex.embedding import heavy_imports

heavy_imports.prefetch_search_stack(embedder=False)
assert "onnxruntime" not in heavy_imports._loaded
print("ok")
"""
    _in_fresh_interpreter(script)
