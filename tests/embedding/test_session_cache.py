"""The built-in model's optimised graph kept on disk (chinvex.embedding.session_cache), with the
real model and onnxruntime: a session loaded from it must give exactly the vectors of a session
made from the model file, and an entry that is damaged or out of date must never be used."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import orjson
import pytest

from chinvex.embedding import session_cache
from chinvex.embedding.builtin import MODEL_SHA256, BuiltinEmbedder
from chinvex.embedding.quantized import ENV_MODELS_DIR

TEXTS = [
    "def parse_config(path):\n    with open(path) as fh:\n        return json.load(fh)",
    "Hybrid search blends BM25 with vector similarity.",
    "x",
    "The quick brown fox jumps over the lazy dog. " * 30,
    "日本語のテキストも埋め込める。",
    "cache_zanzibar_mode=1 ERR_CONN_RESET --no-rerank",
]


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "models"
    monkeypatch.setenv(ENV_MODELS_DIR, str(folder))
    monkeypatch.delenv(session_cache.ENV_SWITCH, raising=False)
    return folder


def _entry(cache_dir: Path) -> Path:
    return session_cache.entry_folder(MODEL_SHA256, cache_dir)


def _loaded(**kwargs) -> BuiltinEmbedder:
    embedder = BuiltinEmbedder(**kwargs)
    embedder.load()
    return embedder


def _graph_of(embedder: BuiltinEmbedder) -> str:
    return Path(embedder._session._model_path).name  # the file the session was made from


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    """Vectors from a session made from the model file, with the cache off."""
    os.environ[session_cache.ENV_SWITCH] = "0"
    try:
        embedder = _loaded()
        return np.concatenate([embedder.embed_documents(TEXTS),
                               np.stack([embedder.embed_query(t) for t in TEXTS])])
    finally:
        del os.environ[session_cache.ENV_SWITCH]


def _vectors(embedder: BuiltinEmbedder) -> np.ndarray:
    return np.concatenate([embedder.embed_documents(TEXTS), np.stack([embedder.embed_query(t) for t in TEXTS])])


def test_the_first_load_keeps_the_graph_and_the_next_loads_it_with_identical_vectors(cache_dir, reference):
    first = _loaded()
    assert _graph_of(first) == "model.onnx" and Path(first._session._model_path).parent.name != "sessions"
    entry = _entry(cache_dir)
    assert sorted(p.name for p in entry.iterdir()) == ["manifest.json", "model.data", "model.onnx"]
    assert not [p for p in entry.parent.iterdir() if p.name.startswith(session_cache.SCRATCH_PREFIX)]
    second = _loaded()
    assert Path(second._session._model_path) == entry / "model.onnx"
    assert np.array_equal(_vectors(first), reference)
    assert np.array_equal(_vectors(second), reference)
    parallel = _loaded(threads=2)  # batches run concurrently on one session
    assert np.array_equal(_vectors(parallel), reference)


def test_a_damaged_weight_file_fails_the_probe_and_is_made_again(cache_dir, reference):
    _loaded()
    weights = _entry(cache_dir) / "model.data"
    before = weights.stat()
    with open(weights, "r+b") as handle:  # flip bytes in the middle, keep size and mtime
        handle.seek(before.st_size // 2)
        data = handle.read(4096)
        handle.seek(before.st_size // 2)
        handle.write(bytes(b ^ 0x5A for b in data))
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert session_cache.find(BuiltinEmbedder()._locate(), MODEL_SHA256, cache_dir) is not None
    again = _loaded()
    assert np.array_equal(_vectors(again), reference)
    assert _graph_of(again) == "model.onnx" and Path(again._session._model_path).parent != _entry(cache_dir)
    assert Path(_loaded()._session._model_path) == _entry(cache_dir) / "model.onnx"  # the new entry


def test_an_entry_made_from_another_file_state_is_not_used(cache_dir):
    _loaded()
    manifest_path = _entry(cache_dir) / "manifest.json"
    manifest = orjson.loads(manifest_path.read_bytes())
    manifest["source"]["mtime_ns"] += 1  # the installed model file changed since
    manifest_path.write_bytes(orjson.dumps(manifest))
    source = BuiltinEmbedder()._locate()
    assert session_cache.find(source, MODEL_SHA256, cache_dir) is None
    embedder = _loaded()
    assert Path(embedder._session._model_path) == source
    assert session_cache.find(source, MODEL_SHA256, cache_dir) is not None  # made again


def test_a_load_that_missed_a_usable_entry_keeps_it_instead_of_replacing_it(cache_dir, reference):
    """A process that did not find the entry (it was published meanwhile) saves its own graph
    too; publishing it must keep the entry in place, which readers may be loading from."""
    _loaded()
    entry = _entry(cache_dir)
    before = entry.stat().st_ino, (entry / "model.data").stat().st_ino
    late = BuiltinEmbedder()
    session = late._open_session(late._locate(), None)  # as if `find` had missed the entry
    assert Path(session._model_path) == late._locate()
    assert (entry.stat().st_ino, (entry / "model.data").stat().st_ino) == before
    assert not [p for p in entry.parent.iterdir() if p.name.startswith(session_cache.SCRATCH_PREFIX)]
    assert np.array_equal(_vectors(_loaded()), reference)


def test_no_cache_folder_or_the_switch_off_loads_as_before(tmp_path, monkeypatch, reference):
    monkeypatch.setenv(ENV_MODELS_DIR, "/proc/chinvex-no-such-folder")
    assert np.array_equal(_vectors(_loaded()), reference)
    monkeypatch.setenv(ENV_MODELS_DIR, str(tmp_path / "models"))
    monkeypatch.setenv(session_cache.ENV_SWITCH, "0")
    assert np.array_equal(_vectors(_loaded()), reference)
    assert not (tmp_path / "models").exists()


def test_other_model_files_are_never_cached(cache_dir, tmp_path, monkeypatch):
    import shutil

    from chinvex.embedding.builtin import ENV_MODEL_PATH

    copy = tmp_path / "copy.onnx"
    shutil.copyfile(BuiltinEmbedder()._locate(), copy)
    monkeypatch.setenv(ENV_MODEL_PATH, str(copy))
    embedder = _loaded()
    assert Path(embedder._session._model_path) == copy
    assert not (cache_dir / "sessions").exists() or not any((cache_dir / "sessions").iterdir())
